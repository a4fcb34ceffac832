"""Issue 46: a surviving mutant is called likely equivalent only after a real search of the input space, and each
real gap's witness comes back as a test that kills it.

The unit part checks the type-aware generator (grpo_wb/tasks/inputs.py) and the two sandbox programs' logic run as
plain Python; the sandbox part audits weak/strong twins (one assert in the middle branch against a suite that covers
every branch and boundary) through the real command line, then audits the set the witnesses strengthened. Without
samples ``weak`` is killed / run below ``--weak-below``; with ``--samples`` it is a passing sample that answers an
explored input differently from the reference (the score that ranks HumanEval's tasks best, docs/task-audit.md):
the grade pair again, with a wrong sample its one test lets through, and that sample's witness exported as a test."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import read_jsonl, write_jsonl

from grpo_wb.cli import main
from grpo_wb.runs.task_audit import agreement_program, domain_program, parse_agreement, parse_domain, witness_tests
from grpo_wb.scoring.scorer import ScoredCompletion
from grpo_wb.tasks.inputs import explore_inputs, literal, seed_inputs
from grpo_wb.tasks.records import Task, TestCase


def fn(tid: str, prompt: str, entry: str, asserts: list[str], solution: str) -> Task:
    return Task(
        tid, prompt, entry, tuple(TestCase(f"t{i}", c) for i, c in enumerate(asserts)), canonical_solution=solution
    )


def _grade(x):
    return "low" if x < 10 else "high" if x > 20 else "mid"


def _span(xs):
    return max(xs) - min(xs) if len(xs) > 1 else 0


def _temp(t):
    return "cold" if t < 0.0 else "hot" if t > 30.5 else "mild"


def _shout(s):
    return s.upper() + "!" if len(s) > 3 else s


def _clamp(x, lo, hi):
    return lo if x < lo else hi if x > hi else x


GRADE = ('def grade(x):\n    """Return "low" below 10, "high" above 20, else "mid"."""\n', "grade")
GRADE_SOL = '    if x < 10:\n        return "low"\n    if x > 20:\n        return "high"\n    return "mid"\n'
SPAN = ('def span(xs):\n    """The largest item of xs less the smallest (0 for fewer than two)."""\n', "span")
SPAN_SOL = (
    "    if len(xs) < 2:\n        return 0\n    lo = hi = xs[0]\n    for x in xs[1:]:\n        if x < lo:\n"
    "            lo = x\n        if x > hi:\n            hi = x\n    return hi - lo\n"
)
TEMP = ('def feel(t):\n    """"cold" below 0.0 degrees, "hot" above 30.5, else "mild"."""\n', "feel")
TEMP_SOL = '    if t < 0.0:\n        return "cold"\n    if t > 30.5:\n        return "hot"\n    return "mild"\n'
SHOUT = ('def shout(s):\n    """Upper-case s and add "!" when it is longer than 3 characters."""\n', "shout")
SHOUT_SOL = '    if len(s) > 3:\n        return s.upper() + "!"\n    return s\n'
CLAMP = ('def clamp(x, lo, hi):\n    """Clamp x into [lo, hi]."""\n', "clamp")
CLAMP_SOL = "    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"

PAIRS = {
    # the example: one assert whose input sits in the middle branch, against 9 on every branch and boundary
    "grade": (
        GRADE,
        GRADE_SOL,
        [15],
        [-5, 0, 9, 10, 15, 20, 21, 30, 1000],
        lambda a: f"assert candidate({a}) == {_grade(a)!r}",
    ),
    "span": (
        SPAN,
        SPAN_SOL,
        [[5]],
        [[], [5], [1, 2], [2, 1], [3, 1, 2], [5, 5], [-3, 4, 0], [1, 9, 1, 9]],
        lambda a: f"assert candidate({a!r}) == {_span(a)}",
    ),
    "feel": (
        TEMP,
        TEMP_SOL,
        [12.5],
        [-7.5, -0.5, 0.0, 0.25, 12.5, 30.5, 30.75, 41.0, 100.0],
        lambda a: f"assert candidate({a!r}) == {_temp(a)!r}",
    ),
    "shout": (
        SHOUT,
        SHOUT_SOL,
        ["ab"],
        ["hello", "", "abc", "abcd", "ab", "Hey!", "a b c", "xyz"],
        lambda a: f"assert candidate({a!r}) == {_shout(a)!r}",
    ),
    "clamp": (
        CLAMP,
        CLAMP_SOL,
        [(0, 0, 10)],
        [(5, 0, 10), (-1, 0, 10), (11, 0, 10), (0, 0, 10), (10, 0, 10), (3, 3, 3), (-5, -9, -2), (1, 0, 10)],
        lambda a: f"assert candidate{a!r} == {_clamp(*a)!r}",
    ),
}


def twins() -> list[Task]:
    out = []
    for name, ((prompt, entry), sol, weak, strong, assert_) in PAIRS.items():
        out.append(fn(f"{name}/weak", prompt, entry, [assert_(a) for a in weak], sol))
        out.append(fn(f"{name}/strong", prompt, entry, [assert_(a) for a in strong], sol))
    return out


# -- the generator ------------------------------------------------------------------------------------------------


def test_the_branches_boundaries_come_from_the_references_constants():
    t = twins()[0]
    xs = {a for (a,) in explore_inputs(t, t.canonical_solution, 256)}
    assert {9, 10, 11, 19, 20, 21} <= xs  # both branch boundaries, +-1
    assert {0, -1, 1} <= xs and min(xs) < -1000 and max(xs) >= 10**6  # zero, signs, large


def test_strings_are_spread_empty_long_cased_and_unicode():
    t = fn("s", SHOUT[0], "shout", ["assert candidate('hello') == 'HELLO!'"], SHOUT_SOL)
    ss = [a for (a,) in explore_inputs(t, t.canonical_solution, 256)]
    assert "" in ss and "HELLO" in ss and "hellohellohellohellohello" in ss
    assert any(len(s) == 3 for s in ss) and any(len(s) == 4 for s in ss)
    assert any(any(ord(c) > 127 for c in s) for s in ss)


def test_lists_are_spread_empty_sorted_reversed_duplicated_and_long():
    t = fn("l", "def count_above(xs, t):\n    pass\n", "count_above", ["assert candidate([3, 1, 2], 4) == 0"], "")
    lists = [a[0] for a in explore_inputs(t, t.canonical_solution, 256)]
    assert [] in lists and [1, 2, 3] in lists and [3, 2, 1] in lists and [2, 1, 3] in lists
    assert any(len(x) >= 20 for x in lists) and any(len(set(x)) < len(x) for x in lists)
    assert any(4 in x for x in lists)  # the other argument's value inside the list: where > and >= part
    empty = fn("e", "def f(xs):\n    pass\n", "f", ["assert candidate([]) == 0"], "    return 0\n")
    assert any(x and isinstance(x[0], int) for (x,) in explore_inputs(empty, empty.canonical_solution))


def test_tuples_keep_their_shape_dicts_and_nesting_are_spread():
    t = Task("n", "def f(p, d):\n    pass\n", "f", (TestCase("a", "assert candidate((1, 'a'), {'k': [1, 2]}) == 1"),))
    got = explore_inputs(t, None, 256)
    assert all(isinstance(p, tuple) and len(p) == 2 for p, _ in got)
    dicts = [d for _, d in got]
    assert {} in dicts and any(d.get("k") == [] for d in dicts) and any(len(d) == 2 for d in dicts)
    assert any(isinstance(p[1], str) and p[1] != "a" for p, _ in got)  # a tuple's element varied


def test_inputs_are_literals_within_budget_deterministic_seeds_first():
    t = fn("c", CLAMP[0], "clamp", ["assert candidate(5, 0, 10) == 5"], CLAMP_SOL)
    a = explore_inputs(t, t.canonical_solution, 64)
    assert len(a) == 64 and a[0] == (5, 0, 10) and len({repr(x) for x in a}) == 64
    assert all(literal(x) for x in a) and a == explore_inputs(t, t.canonical_solution, 64)
    assert explore_inputs(t, t.canonical_solution, 64, seed=1) != a
    assert explore_inputs(t, t.canonical_solution, 0) == []


def test_the_prompts_examples_are_seeds_and_no_literal_call_gives_none():
    t = Task(
        "d",
        'def triple(x):\n    """Triple x.\n\n    >>> triple(7)\n    21\n    """\n',
        "triple",
        (TestCase("a", "assert candidate(2) == 6"),),
    )
    assert seed_inputs(t) == [(2,), (7,)]
    assert explore_inputs(Task("x", "", "f", (TestCase("a", "assert candidate(g()) == 1"),)), None) == []


# -- the sandbox programs' logic, run here as plain Python ---------------------------------------------------------


def _run(program: str) -> ScoredCompletion:
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60).stdout
    return ScoredCompletion("t", "t#0", 0, "", "fail", False, 0.0, 0, 1, 0.0, "", failure={"actual": out})


def test_the_domain_is_where_the_reference_answers_alone_and_in_time_and_the_references_agree():
    t = Task("d", "", "f", ())
    ref = "import time\ndef f(x):\n    if x == 3:\n        time.sleep(5)\n    return 10 // x if x >= 0 else x % 3\n"
    other = "def f(x):\n    return 10 // x if x >= 0 else abs(x) % 3\n"  # agrees with ref where x >= 0
    d = parse_domain(_run(domain_program(t, [ref, other], [(1,), (0,), (3,), (-2,), (5,)], 10.0)))
    assert d == {"tried": 5, "reference_raises": 1, "reference_slow": 1, "references_disagree": 1, "defined": [0, 4]}


def test_a_program_that_prints_does_not_spoil_the_answer():
    t = Task("p", "", "f", ())
    ref = "print('loaded')\ndef f(x):\n    print('called')\n    return x\n"
    assert parse_domain(_run(domain_program(t, [ref], [(1,), (2,)], 10.0)))["defined"] == [0, 1]


def test_agreement_gives_the_shortest_literal_witness_and_how_many_inputs_were_met():
    t = Task("a", "", "grade", ())
    mut = GRADE[0] + GRADE_SOL.replace("x > 20", "x >= 20")
    ref = GRADE[0] + GRADE_SOL
    v = parse_agreement(_run(agreement_program(t, ref, mut, [(15,), (0,), (30,), (20,), (12,)], 10.0)))
    assert v == {"same": False, "k": 3, "met": 4, "literal": True, "reference": "'mid'", "mutant": "'high'"}
    same = parse_agreement(_run(agreement_program(t, ref, ref, [(15,), (0,)], 10.0)))
    assert same == {"same": True, "met": 2}


def test_a_mutant_that_loops_where_the_reference_answers_differs():
    t = Task("a", "", "f", ())
    ref, mut = "def f(x):\n    return x\n", "def f(x):\n    while x > 1:\n        pass\n    return x\n"
    v = parse_agreement(_run(agreement_program(t, ref, mut, [(0,), (5,)], 10.0)))
    assert v is not None and v["k"] == 1 and v["mutant"] == "slow None"


def test_floats_agree_within_evalplus_tolerance_and_differ_beyond_it():
    t = Task("a", "", "f", ())
    ref = "def f(x):\n    return [0.1 * x + 0.2 * x, (x, 1.0 / 3)]\n"
    close = "def f(x):\n    return [0.3 * x, (x, 0.3333333)]\n"  # off by 3e-8 at most: EvalPlus's 1e-6 holds it
    far = "def f(x):\n    return [0.3 * x, (x, 0.33)]\n"
    assert parse_agreement(_run(agreement_program(t, ref, close, [(1,), (7,)], 10.0))) == {"same": True, "met": 2}
    assert parse_agreement(_run(agreement_program(t, ref, far, [(1,), (7,)], 10.0)))["k"] == 0


def test_witnesses_become_assert_tests_once_per_input():
    t = twins()[0]
    rec = {
        "mutation": {
            "survivors": [
                {"witness_input": "(20,)", "witness_output": "'mid'"},
                {"witness_input": "(20,)", "witness_output": "'mid'"},
                {"witness_input": "([1, 2], 'a')", "witness_output": "[1, 2]"},
                {"witness_input": "(9,)"},  # no literal answer: no test
            ]
        }
    }
    assert [x.code for x in witness_tests(t, rec)] == [
        "assert candidate(20) == 'mid'",
        "assert candidate([1, 2], 'a') == [1, 2]",
    ]
    # a passing sample's witnesses too, after the mutants', where the reference's answer is a literal
    rec["samples_differential"] = {
        "witnesses": [
            {"input": "(20,)", "reference": "'mid'", "sample": "'high'", "literal": True},  # an input already tested
            {"input": "(10,)", "reference": "'mid'", "sample": "'low'", "literal": True},
            {"input": "(0,)", "reference": "<object at 0x1>", "sample": "'low'", "literal": False},
        ]
    }
    assert [x.code for x in witness_tests(t, rec)][2:] == ["assert candidate(10) == 'mid'"]


# -- the audit, through the command line ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    d = tmp_path_factory.mktemp("eqsearch")
    tasks = write_jsonl(d / "twins.jsonl", [t.to_json() for t in twins()])
    common = ["--mutants", "20", "--repeat", "1", "--workers", "2", "--no-progress"]
    assert (
        main(["tasks", "audit", str(tasks), "--out", str(d / "a"), "--add-witness-tests", str(d / "s.jsonl")] + common)
        == 0
    )
    before = {r["task_id"]: r for r in read_jsonl(d / "a" / "tasks.jsonl")}
    assert main(["tasks", "audit", str(d / "s.jsonl"), "--out", str(d / "b")] + common) == 0
    after = {r["task_id"]: r for r in read_jsonl(d / "b" / "tasks.jsonl")}
    summary = json.loads((d / "a" / "summary.json").read_text())
    return {"before": before, "after": after, "summary": summary, "strengthened": read_jsonl(d / "s.jsonl")}


@pytest.mark.sandbox
@pytest.mark.parametrize("name", list(PAIRS))
def test_the_weak_twin_is_flagged_and_ranked_below_the_strong_one(audited, name):
    """Without samples ``weak`` is killed / run below 0.5 (it ranked HumanEval's tasks at AUC 0.54, where killed /
    (run - likely equivalent), which this test read before, ranked them at 0.49: docs/task-audit.md); the twins
    are ordered by it as they were by the score without the likely equivalent mutants."""
    weak, strong = audited["before"][f"{name}/weak"], audited["before"][f"{name}/strong"]
    assert "weak" in weak["flags"] and "weak" not in strong["flags"], (weak["mutation"], strong["mutation"])
    assert weak["weak_rule"] == strong["weak_rule"] == "killed / run"
    assert weak["mutation"]["score"] < 0.5 <= strong["mutation"]["score"]
    assert weak["mutation"]["score_without_equivalent"] < strong["mutation"]["score_without_equivalent"]


@pytest.mark.sandbox
@pytest.mark.parametrize("name", list(PAIRS))
def test_the_weak_twins_survivors_have_witnesses_and_the_count_of_inputs_they_met(audited, name):
    m = audited["before"][f"{name}/weak"]["mutation"]
    assert m["survivors"] and all("witness_output" in s and s["inputs_met"] >= 1 for s in m["survivors"])
    assert m["inputs"]["budget"] == 256 and m["inputs"]["answered"] >= 20
    for s in m["equivalent"]:  # whatever is still called equivalent met every input the reference answers
        assert s["inputs_met"] == m["inputs"]["answered"]


@pytest.mark.sandbox
@pytest.mark.parametrize("name", list(PAIRS))
def test_the_strengthened_task_kills_the_survivors_that_had_witnesses(audited, name):
    before, after = audited["before"][f"{name}/weak"], audited["after"][f"{name}/weak"]
    assert after["references"]["passed"] == 1 and "broken" not in after["flags"]
    witnessed = {s["description"] for s in before["mutation"]["survivors"] if "witness_output" in s}
    still = {s["description"] for s in after["mutation"]["survivors"] + after["mutation"]["equivalent"]}
    assert witnessed and not witnessed & still
    assert "weak" not in after["flags"]
    assert after["mutation"]["score"] > before["mutation"]["score"]


@pytest.mark.sandbox
def test_the_summary_reports_the_search_and_the_witness_tests(audited):
    q = audited["summary"]["mutation"]["equivalence_search"]
    assert q["budget"] == 256 and q["tasks_explored"] == 2 * len(PAIRS)
    w = audited["summary"]["witness_tests"]
    assert w["tasks"] >= len(PAIRS) and w["tests"] >= 2 * len(PAIRS)
    n_new = sum(r.get("metadata", {}).get("grpo_wb_witness_tests", 0) for r in audited["strengthened"])
    assert n_new == w["tests"]


# -- with the policy's samples -------------------------------------------------------------------------------------

RIGHT_GRADE = 'def grade(x):\n    if 10 <= x <= 20:\n        return "mid"\n    return "low" if x < 10 else "high"\n'
WRONG_GRADE = 'def grade(x):\n    return "low" if x < 10 else "high" if x >= 20 else "mid"\n'  # grade(20): "high"


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """The grade twins, each with the same three samples scored by ``grpo-wb score`` (a right one twice, one wrong
    at 20 that only the weak twin's test at 15 lets through), audited with them (``--mutants 0``: the samples'
    rule alone), then the samples scored again on the set the audit strengthened with their witnesses."""
    d = tmp_path_factory.mktemp("sampled")
    pair = [t for t in twins() if t.task_id.startswith("grade/")]
    tasks = write_jsonl(d / "grade.jsonl", [t.to_json() for t in pair])
    comps = write_jsonl(
        d / "samples.jsonl",
        [{"task_id": t.task_id, "completion": c} for t in pair for c in (RIGHT_GRADE, WRONG_GRADE, RIGHT_GRADE)],
    )
    common = ["--workers", "1", "--no-progress"]
    assert (
        main(["score", "--tasks", str(tasks), "--completions", str(comps), "--out", str(d / "sc.jsonl")] + common) == 0
    )
    argv = ["tasks", "audit", str(tasks), "--out", str(d / "a"), "--samples", str(d / "sc.jsonl")]
    argv += ["--mutants", "0", "--repeat", "1", "--add-witness-tests", str(d / "s.jsonl")]
    assert main(argv + common) == 0
    assert (
        main(
            ["score", "--tasks", str(d / "s.jsonl"), "--completions", str(comps), "--out", str(d / "re.jsonl")] + common
        )
        == 0
    )
    return {
        "scored": read_jsonl(d / "sc.jsonl"),
        "recs": {r["task_id"]: r for r in read_jsonl(d / "a" / "tasks.jsonl")},
        "summary": json.loads((d / "a" / "summary.json").read_text()),
        "rescored": read_jsonl(d / "re.jsonl"),
    }


@pytest.mark.sandbox
def test_a_passing_sample_that_answers_an_explored_input_wrongly_flags_the_weak_twin_only(sampled):
    passed = {(r["task_id"], r["sample_index"]): r["passed"] for r in sampled["scored"]}
    assert passed[("grade/weak", 1)] and not passed[("grade/strong", 1)]  # the wrong sample: only 15 is tested
    weak, strong = sampled["recs"]["grade/weak"], sampled["recs"]["grade/strong"]
    assert weak["weak_rule"] == strong["weak_rule"] == "samples"
    assert "weak" in weak["flags"] and "weak" not in strong["flags"]
    d = weak["samples_differential"]
    assert (d["passing"], d["distinct"], d["compared"], d["wrong"], d["distinct_wrong"]) == (3, 2, 2, 1, 1)
    assert d["inputs"] >= 20
    (w,) = d["witnesses"]
    assert w["literal"] and w["input"] == "(20,)" and (w["reference"], w["sample"]) == ("'mid'", "'high'"), w
    s = strong["samples_differential"]
    assert (s["passing"], s["distinct"], s["wrong"], s["witnesses"]) == (2, 1, 0, [])
    assert sampled["summary"]["samples_differential"]["tasks_with_wrong"] == 1


@pytest.mark.sandbox
def test_the_samples_witness_exported_as_a_test_makes_that_sample_fail(sampled):
    assert sampled["summary"]["witness_tests"] == {
        "out": sampled["summary"]["witness_tests"]["out"],
        "tests": 1,
        "tasks": 1,
    }
    passed = {(r["task_id"], r["sample_index"]): r["passed"] for r in sampled["rescored"]}
    assert not passed[("grade/weak", 1)]  # the wrong sample: the test grade(20) == 'mid' now rejects it
    assert passed[("grade/weak", 0)] and passed[("grade/weak", 2)] and passed[("grade/strong", 0)]
