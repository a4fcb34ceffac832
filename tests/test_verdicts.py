"""Test planning: which asserts become value tests, and what the scorer then evaluates."""

from __future__ import annotations

import warnings

import pytest

from grpo_wb.scoring.verdicts import evaluate_rest, plan_test


@pytest.mark.parametrize(
    "code, value, holds",
    [
        ("assert candidate(1, 2) == 3", 3, True),
        ("assert candidate(1)in[1, 2]", 2, True),  # no space between the call and the keyword
        ("assert candidate(1)is None", None, True),  # no space before the keyword either
        ("assert (candidate([1,\n   2])  # a comment\n        == 3)", 3, True),
        ("assert candidate('é') == 'é'\r\n", "é", True),
    ],
)
def test_candidate_calls_are_cut_out_and_the_rest_is_decided_here(code, value, holds):
    plan = plan_test(code, "f")
    assert plan.kind == "values" and len(plan.exprs) == 1 and plan.exprs[0].startswith("candidate(")
    assert "candidate" not in plan.rest
    assert evaluate_rest(plan.rest, [value]) is holds


@pytest.mark.parametrize(
    "code",
    [
        "for i in range(2):\n    assert candidate(i) == i",
        "assert f'{candidate(1)}' == '1'",
        "assert candidate(1) == os.sep",
    ],
)
def test_what_cannot_be_decided_here_runs_in_the_child(code):
    assert plan_test(code, "f").kind == "exec"


def test_planning_a_test_with_a_dubious_escape_warns_nothing():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_test('assert candidate(1) == "\\w"', "f")
    assert plan.kind == "values" and not caught, [str(w.message) for w in caught]


# ----------------------------------------------------------------------------- Python's evaluation order


@pytest.mark.parametrize(
    "code",
    [
        "assert candidate(0) == 0 or candidate(1 // 0) == 1",  # or: the second call may never happen
        "assert candidate(1) == 1 and candidate(2) == 2",  # and
        "assert candidate(1) if flag else candidate(2)",  # a branch of a conditional expression
        "assert (candidate(1) if True else 0) == 1",
        "assert 0 < candidate(1) < candidate(2)",  # after the first link of a chained comparison
        "assert all(candidate(x) for x in (1, 2))",  # a generator
        "assert [candidate(x) for x in (1, 2)] == [1, 2]",  # a comprehension
        "assert (lambda: candidate(1))() == 1",  # a lambda
    ],
)
def test_calls_python_might_not_make_keep_the_test_in_the_child(code):
    assert plan_test(code, "f").kind == "exec"


@pytest.mark.parametrize(
    "code, n_calls",
    [
        ("assert candidate(1) < 2 < 3", 1),  # the first link always runs
        ("assert candidate(1) == 1 or False", 1),  # the first operand always runs
        ("assert (1 if candidate(0) else 2) == 1", 1),  # the condition always runs
        ("assert candidate(1) + candidate(2) == candidate(3)", 3),
        ("assert sorted(candidate([2, 1])) == [1, 2]", 1),
    ],
)
def test_calls_python_always_makes_are_still_decided_here(code, n_calls):
    plan = plan_test(code, "f")
    assert plan.kind == "values" and len(plan.exprs) == n_calls


# ----------------------------------------------------------------------------- bounded evaluation


@pytest.mark.parametrize(
    "code, value",
    [
        ("assert ' ' * candidate(3) == '   '", 10**9),
        ("assert 'ab' * candidate(2) == 'abab'", 10**9),
        ("assert candidate(1) * [0] == [0]", 10**9),
        ("assert 2 ** candidate(3) == 8", 10**9),
        ("assert candidate(3) ** candidate(3) == 27", 10**6),
        ("assert sum(range(candidate(1))) == 0", 10**18),
        ("assert len(list(range(candidate(1)))) == 1", 10**9),
        ("assert '%*d' % (candidate(1), 5) == '5'", 10**9),
        ("assert sum(candidate(1), []) == [1]", [[1]] * 1000),
    ],
)
def test_values_the_completion_chose_cannot_make_the_scorer_explode(code, value):
    import time
    import tracemalloc

    from grpo_wb.scoring.verdicts import EvalBudget

    plan = plan_test(code, "f")
    assert plan.kind == "values"
    tracemalloc.start()  # the peak of this evaluation alone (the process's peak RSS may have been set earlier)
    t0 = time.process_time()  # this process's CPU, which other processes on a busy machine do not inflate
    try:
        with pytest.raises(EvalBudget):
            evaluate_rest(plan.rest, [value] * len(plan.exprs))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.process_time() - t0 < 0.5  # refused before the work, not after it
    assert peak < 20 << 20  # under 20 MiB allocated


@pytest.mark.parametrize(
    "value",
    ["x" * (2 << 20), list(range(2 << 20)), 1 << (1 << 17), {i: i for i in range(2 << 20)}],
    ids=["str", "list", "int", "dict"],
)
def test_oversized_values_are_refused_before_any_evaluation(value):
    from grpo_wb.scoring.verdicts import EvalBudget

    with pytest.raises(EvalBudget):
        evaluate_rest(plan_test("assert candidate(1) == 1", "f").rest, [value])


@pytest.mark.parametrize(
    "code, values, holds",
    [
        ("assert ' ' * candidate(3) == '   '", [3], True),
        ("assert 2 ** candidate(3) == 8", [3], True),
        ("assert sum(range(candidate(4))) == 6", [4], True),
        ("assert '%d items' % candidate(1) == '3 items'", [3], True),
        ("assert candidate(1) * 3 == [1, 1, 1]", [[1]], True),
        ("assert round(candidate(1), 2) == 0.33", [1 / 3], True),
        ("assert 2 ** candidate(3) == 9", [3], False),
    ],
)
def test_the_budgeted_evaluator_gives_python_s_answers(code, values, holds):
    plan = plan_test(code, "f")
    assert evaluate_rest(plan.rest, values) is holds


def test_big_ints_cross_the_pipe_in_hex_past_the_decimal_digit_limit():
    from grpo_wb.scoring.verdicts import decode_value

    big = 7**9000  # 25,000 digits: str() refuses past 4,300
    assert decode_value({"$": "bigint", "v": hex(big)}) == big
    assert decode_value({"$": "bigint", "v": hex(-big)}) == -big


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "test, status",
    [
        ("assert candidate(0) == 0 or candidate(-1) == 1", "pass"),  # Python never makes the second call
        ("assert 1 < candidate(0) < candidate(-1)", "fail"),  # nor the second one here
        ("assert candidate(-1) == 0 if False else True", "pass"),
    ],
)
def test_a_call_python_would_not_make_is_not_made(test, status):
    """The completion hangs on -1: a scorer that called it anyway would report a timeout (the status says so)."""
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, ScoreRequest
    from grpo_wb.tasks.records import Task, TestCase

    task = Task(task_id="order", prompt="def f(x):\n", entry_point="f", tests=(TestCase(name="t", code=test),))
    hang = "    while x < 0:\n        pass\n    return x\n"
    with Scorer(SandboxLimits(timeout=3.0), workers=1, cache=False) as sc:
        (r,) = sc.score([ScoreRequest(task, hang)])
    assert (r.status, r.error if r.status == "fail" else "") in ((status, ""), (status, "AssertionError")), r
