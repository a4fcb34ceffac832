"""A completion cannot choose ``sandbox_error`` through the task's checker (issue 42, point 5).

A wrong answer that prints a count the checker trusts (``-1``, ``2000000000``) can make a testlib checker abort
(``std::length_error``, ``std::bad_alloc``) or call ``quitf(_fail, ...)``. A checker that fails on the test's own
expected output is the task's fault (``sandbox_error``, reward None); one that accepts the expected output and fails
on a completion's output has rejected that output: the completion's ``fail``, reward 0. The scorer tells the two
apart by running the checker once more, on the expected output, once per test and scorer. A Python special judge
(open-r1, klear, hardtests) that raises on an output has rejected it too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grpo_wb.scoring.sandbox import RawOutcome, SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.scoring.trainer_reward import ExecutionReward
from grpo_wb.tasks.records import Task, task_from_json

GRPO_WB = str(Path(sys.executable).with_name("grpo-wb"))

# The divisors of n: their count, then the divisors in increasing order.
TESTS = [
    {"name": "six", "type": "stdio", "input": "6\n", "output": "4\n1 2 3 6\n"},
    {"name": "seven", "type": "stdio", "input": "7\n", "output": "2\n1 7\n"},
]
RIGHT = "```python\nn = int(input())\nd = [i for i in range(1, n + 1) if n % i == 0]\nprint(len(d))\nprint(*d)\n```"


def printing(text: str) -> str:
    """A wrong completion: it prints ``text`` whatever the input."""
    return f"```python\ninput()\nprint({text!r})\n```"


def counting_checker(guard: str = "", count: str = "k") -> str:
    """A testlib checker that trusts the completion's count: ``std::vector<int> got(COUNT)`` with ``k`` as read."""
    return (
        '#include "testlib.h"\n#include <vector>\n'
        "int main(int argc, char* argv[]) {\n    registerTestlibCmd(argc, argv);\n"
        "    int n = inf.readInt();\n    int k = ouf.readInt();\n"
        f"    {guard}\n"
        f"    std::vector<int> got({count});\n"
        "    for (int& x : got) x = ouf.readInt();\n"
        "    std::vector<int> want(ans.readInt());\n    for (int& x : want) x = ans.readInt();\n"
        '    if (got != want) quitf(_wa, "not the divisors of %d", n);\n'
        '    quitf(_ok, "%d divisors", k);\n}\n'
    )


TRUSTING = counting_checker()
"""Aborts on a count of -1 (``std::length_error``) or 2000000000 (8 GB: ``std::bad_alloc`` under the address-space
limit)."""
GUARDED = counting_checker(guard='if (k < 0) quitf(_fail, "negative count %d", k);')
"""testlib's FAIL (exit 3) on a negative count."""
BROKEN_ON_EXPECTED = counting_checker(count="k - 100")
"""Aborts on every count below 100: on the expected output as well (the task's fault)."""

OPEN_R1 = (  # checker.py INPUT EXPECTED ACTUAL, accepts stdout 1
    "import sys\n"
    "expected, actual = open(sys.argv[2]).read().split(), open(sys.argv[3]).read().split()\n"
    "k = int(actual[0])  # raises on garbage\n"
    "print(1 if [int(x) for x in actual[1 : 1 + k]] == [int(x) for x in expected[1:]] else 0)\n"
)
OPEN_R1_ABORT = (  # dies by a signal on garbage
    "import os, sys\n"
    "expected, actual = open(sys.argv[2]).read().split(), open(sys.argv[3]).read().split()\n"
    "if not actual[0].lstrip('-').isdigit():\n    os.abort()\n"
    "print(1 if actual == expected else 0)\n"
)
KLEAR = (
    "def is_valid_output(input_str, output_str, reference_output_str):\n"
    "    k = int(output_str.split()[0])  # raises on garbage\n"
    "    return [int(x) for x in output_str.split()[1 : 1 + k]] == [int(x) for x in reference_output_str.split()[1:]]\n"
)
HARDTESTS = (
    "def output_judging_function(input_str, candidate_output, reference_output):\n"
    "    k = int(candidate_output.split()[0])  # raises on garbage\n"
    "    return candidate_output.split()[1 : 1 + k] == reference_output.split()[1:]\n"
)


def task(name: str, checker: str, style: str) -> Task:
    return task_from_json(
        {
            "task_id": f"crash/{name}",
            "prompt": "Print the number of divisors of n, then the divisors in increasing order.",
            "entry_point": "",
            "tests": TESTS,
            "checker": checker,
            "checker_style": style,
            "canonical_solution": RIGHT.split("\n", 1)[1].rsplit("```", 1)[0],
        }
    )


TASKS = {
    "length_error": task("length_error", TRUSTING, "testlib"),
    "bad_alloc": task("bad_alloc", TRUSTING, "testlib"),
    "testlib_fail": task("testlib_fail", GUARDED, "testlib"),
    "open-r1": task("open-r1", OPEN_R1, "open-r1"),
    "open-r1-abort": task("open-r1-abort", OPEN_R1_ABORT, "open-r1"),
    "klear": task("klear", KLEAR, "klear"),
    "hardtests": task("hardtests", HARDTESTS, "hardtests"),
    "broken_on_expected": task("broken_on_expected", BROKEN_ON_EXPECTED, "testlib"),
}
ATTACKS = {  # variant: (what the wrong completion prints, what the checker said when it failed)
    "length_error": ("-1", "length_error"),
    "bad_alloc": ("2000000000", "bad_alloc"),
    "testlib_fail": ("-1", "negative count -1"),
    "open-r1": ("garbage", "the checker ended with exit code 1"),
    "open-r1-abort": ("garbage", "the checker ended with killed by SIGABRT"),
    "klear": ("garbage", "the checker ended with exit code 1"),
    "hardtests": ("garbage", "the checker ended with exit code 1"),
}
TESTLIB = {name for name, t in TASKS.items() if t.checker_style == "testlib"}


@pytest.fixture(scope="module")
def reward():
    """The trainer's reward function; its scorer scores the status tests too (one compile per checker)."""
    with ExecutionReward(
        list(TASKS.values()), limits=SandboxLimits(timeout=5.0, check_timeout=3.0, compile_timeout=60.0), workers=2
    ) as fn:
        yield fn


def need_gxx_for(variant: str) -> None:
    if variant in TESTLIB:
        from test_cpp import need_gxx as need

        need()


def need_gxx() -> None:
    need_gxx_for("length_error")


def score(reward: ExecutionReward, variant: str, completion: str):
    return next(reward.scorer.score([ScoreRequest(TASKS[variant], completion)]))


# ----------------------------------------------------------------------------- the attacks, in the sandbox


@pytest.mark.sandbox
@pytest.mark.parametrize("variant", list(ATTACKS))
def test_a_checker_that_fails_on_a_wrong_output_is_that_completions_fail(reward, variant):
    need_gxx_for(variant)
    printed, said = ATTACKS[variant]
    r = score(reward, variant, printing(printed))
    assert (r.status, r.tests_passed) == ("fail", 0), (r.status, r.error)
    assert said in r.error, r.error


@pytest.mark.sandbox
@pytest.mark.parametrize("variant", sorted(TESTLIB - {"broken_on_expected"}))
def test_the_fail_says_the_checker_crashed_on_this_output_and_shows_it(reward, variant):
    need_gxx_for(variant)
    printed = ATTACKS[variant][0]
    r = score(reward, variant, printing(printed))
    assert "the checker crashed or failed on this output" in r.error, r.error
    assert (r.failure["test"], r.failure["actual"]) == ("six", printed + "\n"), r.failure


@pytest.mark.sandbox
@pytest.mark.parametrize("variant", list(ATTACKS))
def test_the_trainers_reward_for_the_attack_is_0_not_none(reward, variant):
    need_gxx_for(variant)
    tid = TASKS[variant].task_id
    assert reward(prompts=["p"], completions=[printing(ATTACKS[variant][0])], task_id=[tid]) == [0.0]


@pytest.mark.sandbox
@pytest.mark.parametrize("variant", list(ATTACKS))
def test_the_right_answer_still_passes(reward, variant):
    need_gxx_for(variant)
    tid = TASKS[variant].task_id
    assert reward(prompts=["p"], completions=[RIGHT], task_id=[tid]) == [1.0]


@pytest.mark.sandbox
@pytest.mark.parametrize("completion", [printing("-1"), RIGHT], ids=["wrong", "right"])
def test_a_checker_that_fails_on_the_expected_output_is_still_the_tasks_fault(reward, completion):
    need_gxx_for("broken_on_expected")
    r = score(reward, "broken_on_expected", completion)
    assert r.status == "sandbox_error" and "the checker failed on test six" in r.error, (r.status, r.error)
    assert "length_error" in r.error, r.error


@pytest.mark.sandbox
def test_the_trainers_reward_for_a_task_whose_checker_fails_on_the_expected_output_is_none(reward):
    need_gxx_for("broken_on_expected")
    tid = TASKS["broken_on_expected"].task_id
    assert reward(prompts=["p"] * 2, completions=[printing("-1"), RIGHT], task_id=[tid] * 2) == [None, None]


@pytest.mark.sandbox
def test_the_expected_output_is_checked_once_per_test_per_scorer(reward):
    need_gxx()
    once = task_from_json({**TASKS["length_error"].to_json(), "task_id": "crash/once"})
    sc = reward.scorer
    before = sc.expected_checks
    wrong = [printing("-1").replace("input()", f"input()  # {i}") for i in range(6)]  # six programs, none cached
    got = list(sc.score([ScoreRequest(once, w, sample_index=i) for i, w in enumerate(wrong)]))
    assert [r.status for r in got] == ["fail"] * 6 and not any(r.cached for r in got)
    assert sc.expected_checks - before == len(TESTS)


@pytest.mark.sandbox
def test_tasks_audit_still_names_a_checker_that_fails_on_the_reference_as_the_tasks_fault(tmp_path):
    need_gxx()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASKS["broken_on_expected"].to_json()) + "\n")
    p = subprocess.run(
        [GRPO_WB, "tasks", "audit", str(tasks), "--out", str(tmp_path / "audit")]
        + ["--compile-timeout", "60", "--mutants", "0", "--repeat", "1", "--workers", "2", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    (rec,) = map(json.loads, (tmp_path / "audit" / "tasks.jsonl").read_text().splitlines())
    assert "broken" in rec["flags"] and "the checker failed on test six" in rec["broken"], rec


# ----------------------------------------------------------------------------- the same decisions, without a sandbox


class _FakeCheckerPool:
    """Stands for the sandbox: a completion prints what its ``print(...)`` says; the checker accepts the expected
    output, rejects an output it can read, and is ``broken`` on one that starts with ``-`` (or on every output when
    ``broken_on_expected``). Counts the checker jobs that ran on the expected outputs."""

    def __init__(self, broken_on_expected: bool = False, delay: float = 0.0):
        self.broken_on_expected, self.delay = broken_on_expected, delay
        self.reference_jobs: list[list[int]] = []
        self.lock = threading.Lock()

    def run(self, job, watch=None):
        if job.get("language") != "checker":
            out = re.search(r"print\('(.*)'\)", job["program"]).group(1) + "\n"
            events = [{"event": "stdout", "index": i, "output": out} for i in range(len(job["tests"]))]
            return RawOutcome(events=[{"event": "loaded"}, *events, {"event": "done"}], returncode=0)
        if all(c["actual"] == c["expected"] for c in job["tests"]):
            with self.lock:
                self.reference_jobs.append([c["index"] for c in job["tests"]])
            time.sleep(self.delay)  # the other threads ask meanwhile
        events = []
        for c in job["tests"]:
            broken = c["actual"].startswith("-") or self.broken_on_expected
            ok = c["actual"] == c["expected"] and not broken
            ev = {"event": "checked", "index": c["index"], "ok": ok, "message": "said"}
            events.append({**ev, "broken": True} if broken else ev)
        return RawOutcome(events=events, returncode=0)

    def close(self):
        pass


def _fake_scorer(pool: _FakeCheckerPool) -> Scorer:
    sc = Scorer(SandboxLimits(timeout=1.0), workers=4)
    sc.sandbox.close()
    sc.sandbox = pool  # type: ignore[assignment]
    return sc


FAKE = task("fake", "print(1)\n", "open-r1")
"""Its checker never runs: :class:`_FakeCheckerPool` answers for it."""


def test_a_broken_verdict_on_an_output_the_checker_accepts_as_expected_is_a_fail():
    sc = _fake_scorer(_FakeCheckerPool())
    try:
        (r,) = list(sc.score([ScoreRequest(FAKE, "```python\nprint('-1')\n```")]))
    finally:
        sc.close()
    assert (r.status, r.reward) == ("fail", 0.0), r.error
    assert (
        r.error
        == "rejected by the checker: the checker crashed or failed on this output, not on the expected one: said"
    )


def test_a_broken_verdict_that_recurs_on_the_expected_output_is_a_sandbox_error():
    sc = _fake_scorer(_FakeCheckerPool(broken_on_expected=True))
    try:
        (r,) = list(sc.score([ScoreRequest(FAKE, "```python\nprint('-1')\n```")]))
    finally:
        sc.close()
    assert r.status == "sandbox_error" and "the checker failed on test six" in r.error, r.error


def test_threads_that_meet_the_same_broken_test_at_once_share_one_check_of_the_expected_output():
    pool = _FakeCheckerPool(delay=0.3)
    sc = _fake_scorer(pool)
    wrong = [f"```python\nprint('-{i}')\n```" for i in range(8)]
    try:
        got = list(sc.score([ScoreRequest(FAKE, w, sample_index=i) for i, w in enumerate(wrong)]))
        got += list(sc.score([ScoreRequest(FAKE, "```python\nprint('-9')\n```")]))
    finally:
        sc.close()
    assert [r.status for r in got] == ["fail"] * 9
    assert sorted(i for job in pool.reference_jobs for i in job) == [0, 1], pool.reference_jobs
