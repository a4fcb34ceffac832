"""Values a hostile child reports cost the scorer work linear in their size: no hash-collision blow-up.

Ints, floats and tuples hash deterministically (``n`` and ``n + k * (2**61 - 1)`` alike), so a child can report
a set, frozenset or dict whose members all share one hash; building it took the scorer quadratic time (60,000
members: about 50 s, with the GIL held, so other jobs' verdicts waited and one came back ``sandbox_error``).
Times are this process's CPU (``process_time``), which other work on a busy machine does not inflate.
"""

import time

import pytest

from grpo_wb.scoring.sandbox import RawOutcome, SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest, plan_task, verdict_from_outcome
from grpo_wb.scoring.verdicts import (
    MAX_SAME_HASH,
    DecodeError,
    EvalBudget,
    decode_value,
    evaluate_rest,
    plan_test,
    stdio_matches,
)
from grpo_wb.tasks.records import Task, TestCase

P = 2**61 - 1  # hash(n + k * P) == hash(n) for ints
N = 60_000
FAST = 2.0  # CPU seconds: generous (the fixed code takes well under 0.5 s; the old one tens of seconds)


def enc(x: int):
    """An int as the child's encoder writes it (hex past 2**63)."""
    return {"$": "bigint", "v": hex(x)} if abs(x) > 1 << 63 else x


def colliding_ints(n: int = N) -> list[int]:
    return [7 + k * P for k in range(1, n + 1)]


_X1, _X2, _X5, _M = 11400714785074694791, 14029467366897019727, 2870177450012600261, (1 << 64) - 1


def _after_first(h: int) -> int:
    """CPython's tuple hash (xxHash lanes) after its first element, of hash ``h``."""
    acc = (_X5 + (h & _M) * _X2) & _M
    return (((acc << 31) | (acc >> 33)) & _M) * _X1 & _M


def colliding_pairs(n: int) -> list[tuple[int, int]]:
    """``n`` distinct pairs of small ints (under 2**61: plain JSON) with one hash: the second element cancels
    what the first added to the hash."""
    target, inv = _after_first(0), pow(_X2, -1, 1 << 64)
    out, a = [(0, 0)], 1
    while len(out) < n:
        hb = (target - _after_first(a)) * inv & _M
        if hb < P:  # reachable as hash(b) by b = hb itself
            out.append((a, hb))
        a += 1
    return out


def cpu(fn, *args):
    t0 = time.process_time()
    try:
        return fn(*args)
    finally:
        cpu.last = time.process_time() - t0


# ----------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("tag", ["set", "frozenset"])
def test_a_set_of_colliding_ints_is_refused_in_linear_time(tag):
    items = colliding_ints()
    assert len({hash(x) for x in items}) == 1
    with pytest.raises(DecodeError, match="share one hash"):
        cpu(decode_value, {"$": tag, "v": [enc(x) for x in items]})
    assert cpu.last < FAST


def test_a_dict_with_colliding_keys_is_refused_in_linear_time():
    with pytest.raises(DecodeError, match="share one hash"):
        cpu(decode_value, {"$": "dict", "v": [[enc(x), 0] for x in colliding_ints()]})
    assert cpu.last < FAST


def test_colliding_tuples_of_small_ints_are_refused():
    pairs = colliding_pairs(20_000)
    assert len(set(map(hash, pairs))) == 1 and len(set(pairs[:100])) == 100  # the premise: distinct, one hash
    encoded = [{"$": "tuple", "v": list(p)} for p in pairs]
    with pytest.raises(DecodeError, match="share one hash"):
        cpu(decode_value, {"$": "set", "v": encoded})
    assert cpu.last < FAST
    with pytest.raises(DecodeError, match="share one hash"):
        decode_value({"$": "dict", "v": [[e, 1] for e in encoded]})


@pytest.mark.parametrize(
    "members",
    [
        [0.5 * 2.0 ** (61 * k) for k in range(-17, 17)],  # x and x * 2**61 hash alike
        [2.5] + [hash(2.5) + k * P for k in range(1, 40)],  # an n.5 float among ints
        [7.0] + colliding_ints(40),  # an integral float among ints
    ],
    ids=["floats", "half-float-and-ints", "integral-float-and-ints"],
)
def test_colliding_floats_are_refused(members):
    assert len(set(map(hash, members))) == 1 and len(set(members)) == len(members)
    with pytest.raises(DecodeError, match="share one hash"):
        decode_value({"$": "set", "v": [m if isinstance(m, float) else enc(m) for m in members]})


def test_up_to_the_bound_colliding_members_still_decode():
    items = colliding_ints(MAX_SAME_HASH)
    assert decode_value({"$": "set", "v": [enc(x) for x in items]}) == set(items)
    assert decode_value({"$": "dict", "v": [[enc(x), i] for i, x in enumerate(items)]}) == {
        x: i for i, x in enumerate(items)
    }
    with pytest.raises(DecodeError, match="share one hash"):
        decode_value({"$": "set", "v": [enc(x) for x in colliding_ints(MAX_SAME_HASH + 1)]})


def test_equal_members_count_once():
    """A set tells members apart by equality: copies of one value (1, 1.0, True) are one member, not a crowd."""
    big = colliding_ints(1)[0]
    assert decode_value({"$": "set", "v": [enc(big)] * 10_000 + [1, 1.0, True] * 100}) == {big, 1}
    assert decode_value({"$": "dict", "v": [[enc(big), i] for i in range(1000)]}) == {big: 999}  # last one wins


def test_ordinary_values_decode_and_compare_as_before():
    value = {
        "$": "dict",
        "v": [
            [{"$": "tuple", "v": [1, "a"]}, {"$": "frozenset", "v": [1, 2, 3]}],
            ["k", [1.5, {"$": "set", "v": ["x", "y"]}, None, True]],
            [{"$": "bigint", "v": hex(7**40)}, {"$": "float", "v": "inf"}],
        ],
    }
    want = {(1, "a"): frozenset({1, 2, 3}), "k": [1.5, {"x", "y"}, None, True], 7**40: float("inf")}
    got = decode_value(value)
    assert got == want and type(got["k"][1]) is set and type(got[(1, "a")]) is frozenset
    assert list(got) == list(want)  # key order kept
    assert decode_value({"$": "set", "v": list(range(100_000))}) == set(range(100_000))
    with pytest.raises(DecodeError, match="unhashable"):
        decode_value({"$": "set", "v": [[1, 2]]})
    with pytest.raises(DecodeError, match="unhashable"):
        decode_value({"$": "dict", "v": [[[1], 2]]})


# ----------------------------------------------------------------------------- sets built by the rest of a test


def test_a_rest_that_makes_a_set_of_a_colliding_list_is_refused():
    """``set(candidate(...))`` builds the set here, from a list the child chose: the same bound."""
    rest = plan_test("assert set(candidate(1)) == {1, 2, 3}", "f").rest
    with pytest.raises(EvalBudget, match="share one hash"):
        cpu(evaluate_rest, rest, [colliding_ints()])
    assert cpu.last < FAST
    assert evaluate_rest(rest, [[3, 2, 1] * 10_000]) is True  # repeats are no crowd
    assert evaluate_rest(plan_test("assert frozenset(candidate(1)) == {1}", "f").rest, [[1, 1.0, True]]) is True


def test_a_rest_that_makes_a_dict_of_colliding_pairs_is_refused():
    rest = plan_test("assert dict(candidate(1)) == {1: 2}", "f").rest
    with pytest.raises(EvalBudget, match="share one hash"):
        cpu(evaluate_rest, rest, [[[x, 0] for x in colliding_ints()]])
    assert cpu.last < FAST
    assert evaluate_rest(rest, [[[1, 0], (1, 2)]]) is True
    assert evaluate_rest(rest, [{1: 2}]) is True


# ----------------------------------------------------------------------------- the verdict


SETS = Task(
    task_id="hv/digits",
    prompt='def digits(n):\n    """The set of the decimal digits of n."""\n',
    entry_point="digits",
    tests=(
        TestCase(name="t0", code="assert candidate(123) == {1, 2, 3}"),
        TestCase(name="t1", code="assert candidate(4554) == {4, 5}"),
    ),
)


@pytest.mark.parametrize("early_stop", [False, True])
def test_a_forged_colliding_set_fails_the_completion_quickly(early_stop):
    forged = {"$": "set", "v": [enc(x) for x in colliding_ints()]}
    events = [
        {"event": "loaded"},
        {"event": "values", "index": 0, "values": [forged]},
        {"event": "values", "index": 1, "values": [{"$": "set", "v": [4, 5]}]},
        {"event": "done"},
    ]
    v = cpu(verdict_from_outcome, SETS, RawOutcome(events=events), "continuation", *plan_task(SETS), early_stop)
    assert cpu.last < FAST
    assert v.status == "fail" and "share one hash" in v.error and "t0" in v.failed_tests, v
    assert v.tests_passed == (0 if early_stop else 1)  # after an early stop, only what came before the failure


def test_a_huge_wrong_set_is_shown_cut_short():
    """The failure detail of a wrong answer costs the scoring process no more than the comparison did."""
    events = [
        {"event": "loaded"},
        {"event": "values", "index": 0, "values": [{"$": "set", "v": list(range(300_000, 0, -1))}]},
        {"event": "values", "index": 1, "values": [{"$": "set", "v": [4, 5]}]},
        {"event": "done"},
    ]
    v = cpu(verdict_from_outcome, SETS, RawOutcome(events=events), "continuation", *plan_task(SETS))
    assert cpu.last < FAST
    assert (
        v.status == "fail" and v.failure["test"] == "t0" and v.failure["code"] == "assert candidate(123) == {1, 2, 3}"
    )
    assert (
        v.failure["actual"].startswith("{") and v.failure["actual"].endswith("...}") and len(v.failure["actual"]) < 200
    )


# ----------------------------------------------------------------------------- tokens compared as numbers


def test_a_long_run_of_digits_is_compared_in_linear_time():
    """CodeContests' number pattern once backtracked quadratically over a long digit run that ends badly."""
    assert cpu(stdio_matches, "1" * 20_000 + "x", "5", "tokens") is False
    assert cpu.last < FAST
    for out, want, same in [
        ("1.0000001", "1", True),
        ("12.", "12", True),
        (".5", "0.5", True),
        ("1e3", "1000", True),
        ("-2.5E-1", "-0.25", True),
        ("1.5", "1.6", False),
        ("1.5.", "1.5", False),
    ]:
        assert stdio_matches(out, want, "tokens") is same, (out, want)


# ----------------------------------------------------------------------------- end to end


@pytest.mark.sandbox
def test_hostile_sets_neither_pass_nor_hold_up_correct_completions():
    """Two hostile completions among correct ones: a list of colliding ints that the test turns into a set here,
    and a colliding set forged through the harness's own ``emit``. They fail; the others pass, in a batch that
    takes seconds (the old scorer spent about 50 s of CPU on each hostile value, holding the GIL)."""
    task = Task(
        task_id="hv/digits-e2e",
        prompt=SETS.prompt,
        entry_point="digits",
        tests=(
            TestCase(name="t0", code="assert set(candidate(123)) == {1, 2, 3}"),
            TestCase(name="t1", code="assert candidate(4554) == {4, 5}"),
        ),
    )
    good = "    return {int(c) for c in str(n)}\n"
    as_list = (
        f"    if n == 123:\n        return [7 + k * {P} for k in range(1, {N + 1})]\n"  # one 2.8 MB event
        "    return {int(c) for c in str(n)}\n"
    )
    forged = (
        "    import sys\n"
        "    f = sys._getframe()\n"
        "    while f is not None and 'emit' not in f.f_locals:\n"
        "        f = f.f_back\n"
        "    if f is not None and n == 123:\n"
        f"        v = [{{'$': 'bigint', 'v': hex(7 + k * {P})}} for k in range(1, {N + 1})]\n"
        "        f.f_locals['emit']({'event': 'values', 'index': 0, 'values': [{'$': 'set', 'v': v}]})\n"
        "    return {int(c) for c in str(n)}\n"
    )
    batch = [good, as_list, good, forged, good, good]
    t0 = time.monotonic()
    with Scorer(SandboxLimits(timeout=10.0), workers=2, cache=False) as sc:
        results = list(sc.score([ScoreRequest(task, c) for c in batch]))
    wall = time.monotonic() - t0
    statuses = [r.status for r in results]
    assert statuses == ["pass", "fail", "pass", "fail", "pass", "pass"], [(r.status, r.error[:200]) for r in results]
    assert "share one hash" in results[1].error, results[1].error
    assert "share one hash" in results[3].error or "reported twice" in results[3].error, results[3].error
    assert all(r.reward == 0.0 for r in (results[1], results[3]))
    assert wall < 30.0, wall
