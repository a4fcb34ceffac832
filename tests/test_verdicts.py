"""Test planning: which asserts become value tests, and what the scorer then evaluates."""
from __future__ import annotations

import warnings

import pytest

from grpo_wb.verdicts import evaluate_rest, plan_test


@pytest.mark.parametrize("code, value, holds", [
    ("assert candidate(1, 2) == 3", 3, True),
    ("assert candidate(1)in[1, 2]", 2, True),  # no space between the call and the keyword
    ("assert candidate(1)if True else False", 0, False),
    ("assert (candidate([1,\n   2])  # a comment\n        == 3)", 3, True),
    ("assert candidate('é') == 'é'\r\n", "é", True),
])
def test_candidate_calls_are_cut_out_and_the_rest_is_decided_here(code, value, holds):
    plan = plan_test(code, "f")
    assert plan.kind == "values" and len(plan.exprs) == 1 and plan.exprs[0].startswith("candidate(")
    assert "candidate" not in plan.rest
    assert evaluate_rest(plan.rest, [value]) is holds


@pytest.mark.parametrize("code", ["for i in range(2):\n    assert candidate(i) == i",
                                  "assert f'{candidate(1)}' == '1'", "assert candidate(1) == os.sep"])
def test_what_cannot_be_decided_here_runs_in_the_child(code):
    assert plan_test(code, "f").kind == "exec"


def test_planning_a_test_with_a_dubious_escape_warns_nothing():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_test('assert candidate(1) == "\\w"', "f")
    assert plan.kind == "values" and not caught, [str(w.message) for w in caught]
