"""``grpo-wb tasks audit``: planted tasks of each kind come out flagged, clean ones clean, bad input one line each.

One audit of a planted set runs once (module fixture, through the real command line); each test reads one
property of it."""

from __future__ import annotations

import json

import pytest
from conftest import read_jsonl, write_jsonl

from grpo_wb.cli import main
from grpo_wb.tasks.importers import import_humaneval

pytestmark = pytest.mark.sandbox


def fn_task(tid, prompt, entry, asserts, solution, **kw):
    return {
        "task_id": tid,
        "prompt": prompt,
        "entry_point": entry,
        "tests": [{"name": f"t{i}", "type": "assert", "code": c} for i, c in enumerate(asserts)],
        "canonical_solution": solution,
        **kw,
    }


def io_task(tid, prompt, cases, solution, **kw):
    return {
        "task_id": tid,
        "prompt": prompt,
        "entry_point": "",
        "tests": [{"name": f"t{i}", "type": "stdio", "input": a, "output": b} for i, (a, b) in enumerate(cases)],
        "canonical_solution": solution,
        **kw,
    }


GOOD_ADD = [
    f"assert candidate({a}, {b}) == {a + b}" for a, b in [(1, 2), (0, 0), (-3, 7), (10, -4), (123, 456), (5, 5)]
]
CLAMP = '''def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
'''
CLAMP_SOL = "    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"
CLAMP_TESTS = [
    f"assert candidate({x}, {lo}, {hi}) == {min(max(x, lo), hi)}"
    for x, lo, hi in [(5, 0, 10), (-1, 0, 10), (11, 0, 10), (0, 0, 10), (10, 0, 10), (3, 3, 3), (-5, -9, -2)]
]


def planted(he0_prompt: str):
    return [
        # clean: enough tests that tell a right clamp from its mutants
        fn_task("clean/clamp", CLAMP, "clamp", CLAMP_TESTS, CLAMP_SOL),
        fn_task(
            "clean/add",
            'def add(a, b):\n    """Return the sum of a and b."""\n',
            "add",
            GOOD_ADD,
            "    r = a + b\n    return r * 1\n",
        ),  # `* 1` -> `/ 1` survives and is equivalent
        # broken: the expected output is wrong
        fn_task(
            "broken/value",
            'def mul(a, b):\n    """Product."""\n',
            "mul",
            ["assert candidate(2, 3) == 6", "assert candidate(4, 5) == 21"],
            "    return a * b\n",
        ),
        io_task(
            "broken/stdio",
            "Read two integers and print their sum.",
            [("1 2\n", "3\n"), ("2 2\n", "5\n")],
            "a, b = map(int, input().split())\nprint(a + b)\n",
        ),
        # broken by the environment: a module the sandbox has not
        io_task("broken/env", "Print 1.", [("", "1\n")], "import numpy\nprint(1)\n"),
        # broken by the time limit: passes with more time
        io_task(
            "broken/slow",
            "Print 1 after a while.",
            [("", "1\n")],
            "import time\ntime.sleep(0.8)\nprint(1)\n",
            timeout=0.5,
        ),
        # flaky: the expected output is one set order
        io_task(
            "flaky/set-order",
            "Print the fruits.",
            [("", "banana fig cherry apple elder date\n")],
            "print(' '.join({'apple', 'banana', 'cherry', 'date', 'elder', 'fig'}))\n",
        ),
        # hackable: a constant passes
        fn_task(
            "hack/const",
            'def is_prime(n):\n    """Is n prime?"""\n',
            "is_prime",
            ["assert candidate(4) == False", "assert candidate(9) == False"],
            "    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n",
        ),
        # only the prompt's example
        fn_task(
            "hack/example",
            'def triple(x):\n    """Triple x.\n\n    >>> triple(2)\n    6\n    """\n',
            "triple",
            ["assert candidate(2) == 6"],
            "    return 3 * x\n",
        ),
        # two near-identical prompts
        fn_task(
            "dup/a",
            'def count_vowels(s):\n    """Count the vowels a, e, i, o and u in the lower-case string s and '
            'return how many there are in total."""\n',
            "count_vowels",
            ["assert candidate('banana') == 3"],
            "    return sum(c in 'aeiou' for c in s)\n",
        ),
        fn_task(
            "dup/b",
            'def count_vowels(s):\n    """Count the vowels a, e, i, o and u in the lower-case string s and '
            'return how many there are altogether."""\n',
            "count_vowels",
            ["assert candidate('banana') == 3"],
            "    return sum(c in 'aeiou' for c in s)\n",
        ),
        # a HumanEval prompt copied into the set
        fn_task(
            "copied/he0",
            he0_prompt,
            "has_close_elements",
            ["assert candidate([1.0, 2.0, 3.9, 4.0], 0.3) == True"],
            "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n",
        ),
        # bad input: no reference, an unparsable reference
        fn_task("bad/no-ref", 'def neg(x):\n    """Negate."""\n', "neg", ["assert candidate(1) == -1"], None),
        fn_task("bad/unparsable", "Write f.", "f", ["assert candidate(1) == 1"], "def f(x:\n    return x\n"),
        # labelled wrong programs, one of which the tests let pass
        fn_task(
            "wrong/sq",
            'def sq(x):\n    """Square."""\n',
            "sq",
            [f"assert candidate({x}) == {x * x}" for x in (0, 1, 2, 3, 4)],
            "    return x * x\n",
            wrong_solutions=["def sq(x):\n    return x * abs(x)\n", "def sq(x):\n    return x + x\n"],
        ),
    ]


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    he0 = import_humaneval(None)[0][0].prompt
    tasks = write_jsonl(d / "tasks.jsonl", planted(he0))
    wrong = d / "wrong.jsonl"
    wrong.write_text("")
    scored = write_jsonl(
        d / "scored.jsonl",
        [
            *({"task_id": "hack/const", "status": "pass"} for _ in range(4)),
            {"task_id": "clean/add", "status": "pass"},
            {"task_id": "clean/add", "status": "fail"},
            *({"task_id": "broken/value", "status": "fail"} for _ in range(4)),
        ],
    )
    out = d / "out"
    argv = [
        "tasks",
        "audit",
        str(tasks),
        "--out",
        str(out),
        "--mutants",
        "12",
        "--repeat",
        "3",
        "--workers",
        "2",
        "--against",
        "humaneval",
        "--wrong",
        str(wrong),
        "--samples",
        str(scored),
        "--no-progress",
    ]
    rc = main(argv)
    assert rc == 0
    recs = {r["task_id"]: r for r in read_jsonl(out / "tasks.jsonl")}
    summary = json.loads((out / "summary.json").read_text())
    return {"dir": d, "out": out, "argv": argv, "recs": recs, "summary": summary}


def flags(audit, tid):
    return set(audit["recs"][tid]["flags"])


def test_clean_tasks_come_out_clean(audit):
    for tid in ("clean/clamp", "clean/add"):
        assert flags(audit, tid) == set(), audit["recs"][tid]
        m = audit["recs"][tid]["mutation"]
        assert m["run"] >= 3 and m["score"] >= 0.5


def test_a_wrong_expected_value_is_broken_with_the_value_shown(audit):
    r = audit["recs"]["broken/value"]
    assert "broken" in r["flags"] and r["broken"] == "expected output"
    f = r["references"]["results"][0]["failure"]
    assert f["code"] == "assert candidate(4, 5) == 21" and f["actual"] == "20"


def test_a_wrong_expected_output_is_shown_beside_the_references_output(audit):
    r = audit["recs"]["broken/stdio"]
    assert "broken" in r["flags"]
    f = r["references"]["results"][0]["failure"]
    assert (f["input"], f["expected"], f["actual"]) == ("2 2\n", "5\n", "4\n")


def test_a_missing_module_is_told_as_the_environment(audit):
    r = audit["recs"]["broken/env"]
    assert "broken" in r["flags"] and r["broken"].startswith("environment: module 'numpy'")


def test_a_reference_that_needs_more_time_is_told_as_the_time_limit(audit):
    r = audit["recs"]["broken/slow"]
    assert "broken" in r["flags"] and r["broken"] == "time limit: passes with 4x the limit"


def test_a_test_that_depends_on_set_order_is_flaky(audit):
    r = audit["recs"]["flaky/set-order"]
    assert "flaky" in r["flags"]
    assert r["flaky"][0]["statuses"] == ["pass", "fail", "fail"] and r["flaky"][0]["tests"] == ["t0"]


def test_tests_a_constant_passes_are_hackable(audit):
    r = audit["recs"]["hack/const"]
    assert {"hackable", "few_tests"} <= set(r["flags"])
    assert "return False" in [h["program"] for h in r["hackable"]]


def test_tests_that_are_only_the_prompts_example(audit):
    r = audit["recs"]["hack/example"]
    assert "only_examples" in r["flags"] and "hackable" in r["flags"]
    assert "answer the prompt's examples" in [h["program"] for h in r["hackable"]]


def test_near_identical_prompts_are_duplicates(audit):
    assert "duplicate" in flags(audit, "dup/a") and audit["recs"]["dup/a"]["duplicates"] == ["dup/b"]
    assert "duplicate" not in flags(audit, "clean/add")


def test_a_copied_humaneval_prompt_is_contaminated(audit):
    r = audit["recs"]["copied/he0"]
    assert "contaminated" in r["flags"]
    assert any(m["eval_id"] == "HumanEval/0" for m in r["contamination"])
    assert not any("contaminated" in r2["flags"] for t, r2 in audit["recs"].items() if t != "copied/he0")


def test_labelled_wrong_programs_give_the_false_positive_rate(audit):
    r = audit["recs"]["wrong/sq"]
    assert r["wrong"] == {"n": 2, "passed": 1, "false_positive_rate": 0.5, "passing": [0]}
    assert "false_positive" in r["flags"]


def test_bad_input_is_one_line_per_task_and_the_audit_goes_on(audit):
    notes = audit["summary"]["notes"]
    assert any(n.startswith("bad/no-ref: no reference solution") for n in notes)
    assert any(n.startswith("bad/unparsable: reference 0 is not a program") for n in notes)
    assert any(n.endswith("no wrong programs in the file; no false-positive rates from it") for n in notes)
    assert "no_reference" in flags(audit, "bad/no-ref") and "bad_reference" in flags(audit, "bad/unparsable")
    assert all("\n" not in n for n in notes)
    assert len(audit["recs"]) == len(planted("x"))


def test_surviving_mutants_are_kept_as_diffs(audit):
    m = audit["recs"]["hack/const"]["mutation"]
    assert m["survived"] >= 1
    s = m["survivors"][0]
    assert s["diff"].count("\n-") >= 1 and s["operator"]


def test_samples_are_split_by_flag(audit):
    by = audit["summary"]["by_flag"]
    assert by["hackable"]["groups"] == {"all pass": 1}
    assert by["broken"]["groups"] == {"none pass": 1}
    assert by["clean"]["groups"] == {"mixed": 1}
    # these scored rows carry no completion: no sample to compare, so weak falls back to killed / run
    assert not any("samples_differential" in r for r in audit["recs"].values())
    assert audit["recs"]["clean/add"]["weak_rule"] == "killed / run"


def test_a_rerun_resumes_and_other_settings_are_refused(audit, capsys):
    before = (audit["out"] / "tasks.jsonl").read_text()
    assert main(audit["argv"]) == 0
    assert (audit["out"] / "tasks.jsonl").read_text() == before
    capsys.readouterr()
    rc = main([*audit["argv"], "--mutants", "3"])
    err = capsys.readouterr().err
    assert rc != 0 and "holds an audit with other settings (mutants)" in err and "Traceback" not in err


def test_a_survivor_that_answers_an_input_differently_has_it_as_witness(audit):
    m = audit["recs"]["hack/const"]["mutation"]
    assert any(x.get("witness", "").startswith("differs on is_prime(") for x in m["survivors"])


def test_a_survivor_that_agrees_everywhere_is_reported_apart_as_equivalent(audit):
    m = audit["recs"]["clean/add"]["mutation"]
    assert [x["description"] for x in m["equivalent"]] == ["`*` -> `/` at line 4"]
    assert m["likely_equivalent"] == 1 and m["score"] < 1.0 and m["score_without_equivalent"] == 1.0
