"""Sandbox and scoring behaviour on small hand-made tasks.

Every check here runs real child processes through ``grpo_wb.scoring.scorer.Scorer`` /
``grpo_wb.scoring.sandbox.run_program``; nothing is mocked.
"""

from __future__ import annotations

import os
import re
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from hostile import assert_task, reachable_scan, score_one

from grpo_wb.scoring.rewards import RewardConfig, compute_reward
from grpo_wb.scoring.sandbox import SandboxLimits, WorkerPool, build_job, run_program
from grpo_wb.scoring.scorer import STATUSES, Scorer, ScoreRequest
from grpo_wb.tasks.records import Task, TestCase

pytestmark = [pytest.mark.sandbox]

PROMPT = "def f(x):\n"
GOOD = "    return x * 2\n"
HANG_GUARD_S = 30.0  # a 1 s limit that waited for the 100 s payload; how quickly it stops is `grpo-wb bench`'s


def make_task(
    *tests: str, prompt: str = PROMPT, entry_point: str = "f", task_id: str = "toy/f", timeout: float | None = None
) -> Task:
    return assert_task(task_id, prompt, entry_point, tests, timeout=timeout)


DOUBLE = make_task("assert candidate(1) == 2", "assert candidate(3) == 6")
THREE = make_task("assert candidate(1) == 2", "assert candidate(2) == 4", "assert candidate(5) == 10")


@pytest.fixture(scope="module")
def scorer():
    # cache=False so that tests sharing a program never see each other's verdicts
    with Scorer(SandboxLimits(timeout=5.0), workers=2, cache=False) as s:
        yield s


@pytest.fixture(scope="module")
def fast_scorer():
    with Scorer(SandboxLimits(timeout=1.0), workers=2, cache=False) as s:
        yield s


# ----------------------------------------------------------------------------- statuses


def test_pass(scorer):
    r = score_one(scorer, DOUBLE, GOOD)
    assert r.status == "pass", r
    assert r.passed is True
    assert (r.tests_passed, r.tests_total) == (2, 2)
    assert r.failed_tests == []
    assert r.error == ""
    assert r.extraction_mode == "continuation"
    assert r.reward == 1.0
    assert r.completion_id == "toy/f#0"
    assert r.duration_s > 0


def test_fail_assertion(scorer):
    r = score_one(scorer, DOUBLE, "    return x + 1\n")  # right for x=1, wrong for x=3
    assert r.status == "fail", r
    assert r.passed is False
    assert (r.tests_passed, r.tests_total) == (1, 2)
    assert r.failed_tests == ["t1"]
    assert "AssertionError" in r.error
    assert r.reward == 0.0


def test_fail_exception_inside_test(scorer):
    r = score_one(scorer, DOUBLE, "    return {}[x]\n")
    assert r.status == "fail", r
    assert r.tests_passed == 0
    assert r.failed_tests == ["t0", "t1"]
    assert r.error.startswith("KeyError"), r.error


@pytest.mark.parametrize(
    "completion, prompt, expect_in_error",
    [
        pytest.param("    return (x\n", PROMPT, "SyntaxError", id="syntax-error"),
        pytest.param(
            "    return x * 2\nraise RuntimeError('boom at load')\n",
            PROMPT,
            "RuntimeError: boom at load",
            id="exception-at-load",
        ),
        pytest.param("def g(x):\n    return x * 2\n", "", "entry point 'f' is not defined", id="missing-entry-point"),
        pytest.param("    return x * 2\nimport sys\nsys.exit(0)\n", PROMPT, "SystemExit", id="sys-exit-at-load"),
        pytest.param(
            "    return x * 2\nimport os\nos._exit(0)\n", PROMPT, "process ended while loading", id="os-exit-at-load"
        ),
    ],
)
def test_error_at_load(scorer, completion, prompt, expect_in_error):
    task = make_task("assert candidate(1) == 2", prompt=prompt)
    r = score_one(scorer, task, completion)
    assert r.status == "error", r
    assert r.passed is False
    assert r.tests_passed == 0
    assert r.failed_tests == ["t0"]
    assert expect_in_error in r.error, r.error
    assert r.reward == 0.0


def test_process_exit_during_tests_is_error(scorer):
    r = score_one(scorer, DOUBLE, "    import os\n    os._exit(0)\n")
    assert r.status == "error", r
    assert "during the tests" in r.error, r.error


@pytest.mark.parametrize(
    "completion",
    [
        pytest.param("    return x * 2\nwhile True:\n    pass\n", id="busy-loop-at-load"),
        pytest.param("    while True:\n        pass\n", id="busy-loop-in-test"),
        pytest.param("    import time\n    time.sleep(100)\n", id="sleep-in-test"),
        pytest.param("    return x * 2\nimport time\ntime.sleep(100)\n", id="sleep-at-load"),
    ],
)
def test_timeout(fast_scorer, completion):
    t0 = time.monotonic()
    r = score_one(fast_scorer, DOUBLE, completion)
    elapsed = time.monotonic() - t0
    assert r.status == "timeout", r
    assert r.passed is False
    assert r.reward == 0.0
    assert elapsed < HANG_GUARD_S, f"a 1 s limit took {elapsed:.1f}s"
    assert elapsed >= 0.9, f"stopped after {elapsed:.2f}s, before the 1 s deadline"


def test_task_timeout_overrides_run_default(scorer):
    """A correct answer after 2 s: a timeout under the task's 0.5 s, a pass under the run's 5 s default."""
    task = make_task("assert candidate(1) == 2", timeout=0.5, task_id="toy/short")
    r = score_one(scorer, task, "    import time\n    time.sleep(2)\n    return x * 2\n")
    assert r.status == "timeout", r


@pytest.mark.parametrize("where, status", [("test", "fail"), ("load", "error")])
def test_memory_limit(where, status):
    alloc = "bytearray(4 << 30)"
    completion = f"    x = {alloc}\n    return len(x)\n" if where == "test" else f"    return x * 2\n_big = {alloc}\n"
    with Scorer(SandboxLimits(timeout=10.0, memory_bytes=512 << 20), workers=1, cache=False) as s:
        r = score_one(s, DOUBLE, completion)
        assert r.status == status, r
        assert not r.passed
        assert "MemoryError" in r.error, r.error
        # the scorer survives and still scores the next completion
        ok = score_one(s, DOUBLE, GOOD)
        assert ok.status == "pass", ok


# ----------------------------------------------------------------------------- isolation
#
# These checks read what happened inside the sandbox through the verdict itself (a deliberately failing
# test whose AssertionError message carries the observation, capped at 300 chars) and through /proc, not
# through files the completion writes for the test: a sandbox with a private /tmp, an unprivileged uid
# or a PID namespace must pass them too.


def _observe(r, key: str) -> str:
    """The value a probe test reported as ``KEY=value|`` in its AssertionError message."""
    m = re.search(rf"{key}=(.*?)\|", r.error)
    assert m, f"no {key}= in the probe's message: {r.status}: {r.error!r}"
    return m.group(1)


def test_code_never_runs_in_scoring_process(scorer):
    # the exec test asks the candidate's process what it sees (its pid, its module code's effect) and adds its own pid
    probe = make_task(
        "assert candidate(1) == 2",
        "import os\nassert False, 'TESTER=%d|' % os.getpid() + _observed()",
        task_id="iso/pid",
    )
    completion = GOOD + (
        "import os, sys, textwrap\ntextwrap.GRPO_WB_TOUCHED = True\nGRPO_WB_FLAG = 1\n"
        "def _observed():\n"
        "    return 'PID=%d|TOUCHED=%r|' % (os.getpid(), getattr(sys.modules.get('textwrap'), "
        "'GRPO_WB_TOUCHED', None))\n"
    )
    r = score_one(scorer, probe, completion)
    assert (r.status, r.tests_passed, r.failed_tests) == ("fail", 1, ["t1"]), r
    assert _observe(r, "TOUCHED") == "True", "the completion's module code did not run before the tests"
    assert int(_observe(r, "PID")) != os.getpid()
    assert int(_observe(r, "TESTER")) not in (os.getpid(), int(_observe(r, "PID"))), (
        "the exec test ran in the candidate's process"
    )
    assert not hasattr(textwrap, "GRPO_WB_TOUCHED"), "the completion changed a module of the scoring process"
    assert "GRPO_WB_FLAG" not in globals()


def test_environment_is_scrubbed(monkeypatch):
    monkeypatch.setenv("GRPO_WB_SECRET", "x")
    assert os.environ["GRPO_WB_SECRET"] == "x"
    absent = make_task("import os\nassert 'GRPO_WB_SECRET' not in os.environ", task_id="env/absent")
    present = make_task("import os\nassert os.environ.get('GRPO_WB_SECRET') == 'x'", task_id="env/present")
    listing = make_task("import os\nassert False, 'ENV=%s|' % ','.join(sorted(os.environ))", task_id="env/list")
    # a scorer started after the variable was set, so whatever it starts could inherit it
    with Scorer(SandboxLimits(timeout=5.0), workers=1, cache=False) as s:
        r_absent = score_one(s, absent, GOOD)
        r_present = score_one(s, present, GOOD)
        r_list = score_one(s, listing, GOOD)
    assert r_absent.status == "pass", r_absent
    assert r_present.status == "fail", r_present  # the control: the same check can fail
    keys = set(_observe(r_list, "ENV").split(","))
    assert keys <= {"PATH", "LANG", "HOME", "TMPDIR", "LC_CTYPE"}, sorted(keys)


CWD_PROBE = make_task(
    # the test reads the candidate's names by name: only names a test reads reach it (tester_scope)
    "import os\ntry:\n    prev = _PREV_GONE\nexcept NameError:\n    prev = None\n"
    "assert False, 'CWD=%s|HOME=%s|FILES=%s|PREV_GONE=%s|' % (os.getcwd(), os.environ.get('HOME'), _FILES, prev)",
    task_id="iso/cwd",
)


def test_fresh_working_directory_removed_afterwards():
    load = "import os\n_FILES = ','.join(sorted(os.listdir('.')))\nopen('scratch.txt', 'w').write('x')\n"
    # one worker, two completions: the second looks for the first one's directory next to its own
    with Scorer(SandboxLimits(timeout=5.0), workers=1, cache=False) as s:
        a = score_one(s, CWD_PROBE, GOOD + load)
        cwd_a = _observe(a, "CWD")
        b = score_one(
            s,
            CWD_PROBE,
            GOOD + load + "_here = os.path.dirname(os.getcwd())\n"
            "_SEES_OWN = os.path.basename(os.getcwd()) in os.listdir(_here)\n"
            f"_PREV_GONE = (not os.path.exists({cwd_a!r})) and _SEES_OWN and _here == {os.path.dirname(cwd_a)!r}\n",
        )
        cwd_b = _observe(b, "CWD")
    for r, cwd in ((a, cwd_a), (b, cwd_b)):
        assert r.tests_passed == 0 and r.status == "fail", r
        assert os.path.isabs(cwd)
        assert cwd != os.getcwd()
        assert not os.path.exists(cwd), f"working directory {cwd} was not removed"
        assert _observe(r, "HOME") == cwd
        assert set(_observe(r, "FILES").split(",")) - {"", ".stderr"} == set(), "the directory was not fresh"
    assert cwd_a != cwd_b, "each completion needs its own directory"
    # True only if the second completion could list its own parent directory, that directory also held
    # the first one's, and the first one's was gone
    assert _observe(b, "PREV_GONE") == "True", f"{cwd_a} still existed (or was not checkable) for the next run"


def test_stderr_tail_captured_and_capped(scorer):
    small = score_one(scorer, DOUBLE, GOOD + "import sys\nprint('hello from the candidate', file=sys.stderr)\n")
    assert small.status == "pass"
    assert small.stderr_tail == "hello from the candidate\n"
    big = score_one(
        scorer,
        DOUBLE,
        GOOD + "import sys\nsys.stderr.write('BEGIN' + 'x' * 20000 + '\\n')\nsys.stderr.write('END-MARKER\\n')\n",
    )
    assert big.status == "pass"
    assert big.stderr_tail.endswith("END-MARKER\n")
    assert "BEGIN" not in big.stderr_tail
    assert 1500 <= len(big.stderr_tail) <= 2100, len(big.stderr_tail)


def test_stderr_without_trailing_newline_is_captured(scorer):
    # regression: the child used to os._exit(0) without flushing sys.stderr (fixed in 6a1b282)
    r = score_one(scorer, DOUBLE, GOOD + "import sys\nsys.stderr.write('partial line, no newline')\n")
    assert r.status == "pass"
    assert r.stderr_tail == "partial line, no newline"


def _pids_with(token: bytes) -> list[int]:
    """Live processes (zombies have an empty cmdline) whose command line holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if token in f.read():
                    found.append(int(name))
        except OSError:
            pass
    return found


@pytest.mark.parametrize(
    "parent_tail, status",
    [
        pytest.param("", ("pass", "timeout"), id="program-finishes"),  # the status itself: next test
        pytest.param("while True:\n    pass\n", ("timeout",), id="program-times-out"),
    ],
)
def test_forked_grandchild_is_killed(fast_scorer, parent_tail, status):
    token = f"grpo-wb-grandchild-{uuid.uuid4().hex}"
    # the grandchild execs a sleeping interpreter whose argv carries the token, so the host can see it in
    # /proc whatever PID namespace the sandbox uses
    completion = (
        GOOD + "import os, sys, time\n"
        "_pid = os.fork()\n"
        "if _pid == 0:\n"
        "    try:\n"
        f"        os.execv(sys.executable, [sys.executable, '-S', '-c', 'import time; time.sleep(60)', {token!r}])\n"
        "    finally:\n"
        "        os._exit(0)\n"
        "time.sleep(0.6)\n" + parent_tail
    )
    box: dict = {}
    th = threading.Thread(target=lambda: box.update(r=score_one(fast_scorer, DOUBLE, completion)))
    th.start()
    seen: set[int] = set()
    while th.is_alive():
        seen.update(_pids_with(token.encode()))
        time.sleep(0.02)
    th.join()
    assert box["r"].status in status, box["r"]
    assert seen, "the grandchild never showed up in /proc: the check would be vacuous"
    assert os.getpid() not in seen
    deadline = time.monotonic() + 3.0
    while (alive := _pids_with(token.encode())) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:  # do not leave it behind even when the test fails
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    assert not alive, f"grandchild {alive} forked by the completion survived its scoring"
    for pid in seen:
        try:
            os.kill(pid, 0)
            still = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (ProcessLookupError, OSError):
            continue  # gone
        assert token.encode() not in still, f"pid {pid} still runs the grandchild"


def test_background_process_does_not_turn_a_finished_run_into_a_timeout():
    """A verdict that waited for the leftover would wait out the 30 s deadline: a timeout, 30 s of run time."""
    completion = GOOD + "import os, time\nif os.fork() == 0:\n    time.sleep(120)\n    os._exit(0)\n"
    with Scorer(SandboxLimits(timeout=30.0), workers=1, cache=False) as s:
        r = score_one(s, DOUBLE, completion)
    assert r.status == "pass", r
    assert r.duration_s < 15, f"the verdict waited {r.duration_s:.1f}s for a process the completion left behind"


# ----------------------------------------------------------------------------- verdict details


def test_partial_credit_counts_tests():
    cases = {
        "    return x * 2\n": 3,  # all right
        "    return 10 if x == 5 else x + x * (x > 1)\n": 2,  # wrong for x=1 only
        "    return 10 if x == 5 else -1\n": 1,
        "    return None\n": 0,
    }
    with Scorer(SandboxLimits(timeout=5.0), RewardConfig(kind="partial"), workers=2) as s:
        res = list(s.score([ScoreRequest(THREE, c, sample_index=i) for i, c in enumerate(cases)]))
    for r, (c, n) in zip(res, cases.items()):
        assert r.completion == c
        assert r.tests_passed == n, (c, r)
        assert r.tests_total == 3
        assert r.status == ("pass" if n == 3 else "fail")
        assert r.reward == pytest.approx(n / 3)
    assert res[1].failed_tests == ["t0"]
    assert res[2].failed_tests == ["t0", "t1"]


@pytest.mark.parametrize(
    "completion",
    [
        pytest.param("    return x + 1\nimport atexit, os\natexit.register(os._exit, 0)\n", id="atexit-os-exit-0"),
        pytest.param("    import sys\n    sys.exit(0)\n", id="sys-exit-0-in-test"),
        pytest.param("    raise SystemExit(0)\n", id="systemexit-in-test"),
    ],
)
def test_exit_code_is_ignored(scorer, completion):
    r = score_one(scorer, DOUBLE, completion)
    assert r.status == "fail", r
    assert not r.passed
    assert r.tests_passed < r.tests_total


def test_nonzero_exit_after_passing_is_still_pass(scorer):
    r = score_one(scorer, DOUBLE, GOOD + "import atexit, os\natexit.register(os._exit, 3)\n")
    assert r.status == "pass", r


_RENDEZVOUS = """
    import os, sys, time
    _pid = os.fork()
    if _pid == 0:  # a sleeper whose argv carries the token: the host sees it in /proc, whatever the namespace
        os.execv(sys.executable, [sys.executable, '-S', '-c', 'import time; time.sleep(60)', {token!r}])
    _until = time.monotonic() + 30
    while not os.path.exists({go!r}) and time.monotonic() < _until:
        time.sleep(0.01)
    os.kill(_pid, 9)
    os.waitpid(_pid, 0)
"""


def test_results_in_input_order_in_parallel(tmp_path):
    """Results come in input order; and two workers run two completions at once, shown by events, not by the
    wall time: the first two each start a sleeper the host sees in /proc and wait for a go that the host gives
    only once it has seen both sleepers alive together (one completion at a time would never get it)."""
    task = make_task("assert candidate(0) % 2 == 0", task_id="order/even")
    n = 8
    token = f"grpo-wb-overlap-{uuid.uuid4().hex}-"
    go_dir = tmp_path / "go"
    go_dir.mkdir()
    go_dir.chmod(0o755)  # read by the sandbox's own uid, bound read-only at its own path
    go = go_dir / "go"
    # the first requests are the slowest, so completion order differs from input order
    comps = [
        (_RENDEZVOUS.format(token=token + str(i), go=str(go)) if i < 2 else "")
        + f"    import time\n    time.sleep({(n - i) * 0.06:.2f})\n    return {i}\n"
        for i in range(n)
    ]
    box: dict = {}
    both = False
    with Scorer(SandboxLimits(timeout=40.0, ro_binds=(str(go_dir),)), workers=2) as s:
        th = threading.Thread(
            target=lambda: box.update(
                res=list(s.score([ScoreRequest(task, c, sample_index=i) for i, c in enumerate(comps)]))
            )
        )
        th.start()
        while th.is_alive() and not both:
            both = all(_pids_with((token + str(i)).encode()) for i in range(2))
            time.sleep(0.02)
        go.write_text("go\n")  # also when the two were never seen together: the run ends, the assert says why
        go.chmod(0o644)
        th.join()
        assert s.executed == n
    res = box["res"]
    assert both, "the host never saw the first two completions running at the same time"
    assert [r.sample_index for r in res] == list(range(n))
    assert [r.completion for r in res] == comps
    assert [r.completion_id for r in res] == [f"order/even#{i}" for i in range(n)]
    assert [r.status for r in res] == ["pass" if i % 2 == 0 else "fail" for i in range(n)]


def test_verdict_cache_executes_identical_pairs_once():
    other_task = make_task("assert candidate(1) == 2", "assert candidate(3) == 6", task_id="toy/other")
    reqs = [
        ScoreRequest(DOUBLE, GOOD, sample_index=0),
        ScoreRequest(DOUBLE, GOOD, sample_index=1),
        ScoreRequest(DOUBLE, "    return x + 1\n", sample_index=2),
        ScoreRequest(DOUBLE, GOOD, sample_index=3),
        ScoreRequest(DOUBLE, GOOD, sample_index=4),
        ScoreRequest(other_task, GOOD, sample_index=0),
        ScoreRequest(DOUBLE, "    return x + 1\n", sample_index=5),
    ]
    with Scorer(SandboxLimits(timeout=5.0), workers=2) as s:
        res = list(s.score(reqs))
        assert s.executed == 3, "distinct (task, program) pairs: DOUBLE/GOOD, DOUBLE/x+1, other/GOOD"
        assert s.cache_hits == 4
    assert [r.status for r in res] == ["pass", "pass", "fail", "pass", "pass", "pass", "fail"]
    assert sum(r.cached for r in res) == 4
    assert [r.sample_index for r in res] == [0, 1, 2, 3, 4, 0, 5]
    with Scorer(SandboxLimits(timeout=5.0), workers=2, cache=False) as s:
        res2 = list(s.score(reqs))
        assert (s.executed, s.cache_hits) == (len(reqs), 0)
    assert [r.status for r in res2] == [r.status for r in res]
    assert not any(r.cached for r in res2)


def test_fenced_function_body_scores_like_the_raw_body(scorer):
    # a fenced *body* continues the prompt with its indentation (an intermediate working-tree change
    # dedented it to column 0, turning this pass into an IndentationError)
    raw = score_one(scorer, DOUBLE, GOOD)
    fenced = score_one(scorer, DOUBLE, "Here you go:\n```python\n" + GOOD + "```\n")
    assert raw.status == "pass"
    assert fenced.extraction_mode == "continuation"
    assert fenced.status == "pass", fenced


def test_run_program_reports_events_directly():
    out = run_program(
        "def f(x):\n    return x * 2\n",
        "f",
        [
            {"name": "a", "type": "assert", "code": "assert candidate(2) == 4"},
            {"name": "b", "type": "assert", "code": "assert candidate(2) == 5"},
        ],
        limits=SandboxLimits(timeout=5.0),
    )
    assert out.sandbox_error is None
    assert not out.timed_out
    kinds = [e["event"] for e in out.events]
    # exec tests: the job is split, and the tester first says it has read its tests
    assert kinds[:2] == ["tests_read", "loaded"] and kinds[-1] == "done", kinds
    assert kinds.count("test") == 2, kinds
    assert [e["ok"] for e in out.events if e["event"] == "test"] == [True, False]


def test_degenerate_deeply_nested_completion_does_not_crash_scorer(scorer):
    # Regression: at commit 6d72afd extraction._compiles caught only SyntaxError/ValueError, ast.parse raised
    # RecursionError here and, extract_program being called outside Scorer.verdict's try, score() aborted.
    # degenerate model output: a run of 3000 '-' (about 200 BPE tokens) is 3000 nested unary minuses
    bad = "    return " + "-" * 3000 + "1\n"
    res = list(scorer.score([ScoreRequest(DOUBLE, bad, sample_index=0), ScoreRequest(DOUBLE, GOOD, sample_index=1)]))
    assert len(res) == 2
    assert res[0].status in ("error", "parse_failure", "fail")
    assert res[1].status == "pass"


# ----------------------------------------------------------------------------- rewards


def test_rewards_binary_vs_partial():
    comps = [GOOD, "    return 10 if x == 5 else -1\n", "    return (x\n", "I am not able to write this."]
    out = {}
    for kind in ("binary", "partial"):
        with Scorer(SandboxLimits(timeout=5.0), RewardConfig(kind=kind), workers=2) as s:
            out[kind] = list(s.score([ScoreRequest(THREE, c, sample_index=i) for i, c in enumerate(comps)]))
            assert s.executed == 3, "a parse failure is not executed"
    statuses = [r.status for r in out["binary"]]
    assert statuses == ["pass", "fail", "error", "parse_failure"]
    assert [r.reward for r in out["binary"]] == [1.0, 0.0, 0.0, 0.0]
    assert [r.reward for r in out["partial"]] == pytest.approx([1.0, 1 / 3, 0.0, 0.0])
    assert out["partial"][3].extraction_mode == "none"
    assert out["partial"][3].tests_passed == 0
    assert out["partial"][3].failed_tests == ["t0", "t1", "t2"]


@pytest.mark.parametrize("pf_reward", [0.0, -0.5, None])
def test_parse_failure_reward(pf_reward):
    with Scorer(
        SandboxLimits(timeout=5.0), RewardConfig(kind="partial", parse_failure_reward=pf_reward), workers=1
    ) as s:
        r, empty = list(
            s.score([ScoreRequest(DOUBLE, "Sorry, I cannot help with that."), ScoreRequest(DOUBLE, "   \n")])
        )
        assert s.executed == 0
    for x in (r, empty):
        assert x.status == "parse_failure", x
        assert x.passed is False
        assert x.reward == pf_reward


def test_compute_reward_rules():
    binary, partial = RewardConfig("binary"), RewardConfig("partial", parse_failure_reward=-1.0)
    kw = dict(tests_passed=3, tests_total=4)
    assert compute_reward(binary, status="fail", passed=False, **kw) == 0.0
    assert compute_reward(partial, status="fail", passed=False, **kw) == 0.75
    # a pass is 1.0 even when the split tests disagree with the task's check
    assert compute_reward(partial, status="pass", passed=True, **kw) == 1.0
    assert compute_reward(binary, status="pass", passed=True, **kw) == 1.0
    assert compute_reward(partial, status="parse_failure", passed=False, tests_passed=0, tests_total=4) == -1.0
    assert compute_reward(partial, status="timeout", passed=False, tests_passed=0, tests_total=0) == 0.0
    with pytest.raises(ValueError):
        RewardConfig(kind="fractional")
    assert set(STATUSES) == {"pass", "fail", "error", "timeout", "parse_failure", "sandbox_error"}


def test_set_order_and_so_verdicts_are_the_same_in_every_worker():
    """A completion whose answer depends on str hashing (set order) gets one verdict, not one per worker."""
    task = Task(
        task_id="t/order",
        prompt="def f():\n",
        entry_point="f",
        tests=(TestCase(name="t", code="x = candidate()\nassert x == 'never', x"),),
    )
    errors = set()
    for _ in range(3):  # each scorer starts fresh interpreters: with random str hashing the order would differ
        with Scorer(SandboxLimits(), workers=1) as sc:
            (r,) = sc.score([ScoreRequest(task, "    return ''.join(set('abcdefghij'))\n")])
        assert r.status == "fail" and sorted(r.error.split(": ")[-1]) == list("abcdefghij"), r.error
        errors.add(r.error)
    assert len(errors) == 1


def test_a_compile_time_warning_reaches_the_completions_stderr(scorer):
    # The worker compiles sources ahead of the fork; one that warns is left to the child,
    # so the warning lands in the completion's stderr tail as when the child compiled everything.
    r = score_one(scorer, DOUBLE, GOOD + "SAME = 1 is 1\n")
    assert r.status == "pass"
    assert "SyntaxWarning" in r.stderr_tail and '"is" with a literal' in r.stderr_tail, r.stderr_tail


def test_nothing_of_one_job_reaches_the_next_jobs_child():
    # The worker compiles a job's program and tests before the fork: none of those code objects
    # may still be in the worker at the next job, or its child could read another completion's
    # code or another task's exec tests (with their expected values).
    marker = f"MARK_{uuid.uuid4().hex}"
    first = make_task(f"for _ in range(1):\n    assert candidate(1) == 2, 'no {marker}'", task_id="toy/first")
    other = make_task("assert candidate(1) == 2", task_id="toy/other")
    # the marker is built at run time: the spy's own code holds none
    spy = reachable_scan(f'kind == "str" and {marker[::-1]!r}[::-1] in o', "-1", "2 * x")
    with Scorer(SandboxLimits(timeout=5.0), workers=1, cache=False) as sc:
        done, spied = sc.score(
            [ScoreRequest(first, f"    return 2 * x if '{marker}' else 0\n"), ScoreRequest(other, spy)]
        )
    assert done.status == "pass"
    assert spied.status == "pass", (spied.status, spied.error)


# ----------------------------------------------------------------------------- what killed it


def test_a_kill_below_the_cpu_limit_is_not_a_timeout():
    """SIGKILL after little CPU (the kernel's OOM killer looks like this): an ``error`` that says memory."""
    task = Task(
        task_id="sb/kill",
        prompt="def f():\n",
        entry_point="f",
        tests=(TestCase(name="t", code="assert candidate() == 1"),),
    )
    completion = "    return 1\nimport os, signal, time\ntime.sleep(0.7)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    with Scorer(SandboxLimits(timeout=3.0), workers=1, cache=False) as sc:
        (r,) = sc.score([ScoreRequest(task, completion)])
    assert r.status == "error", (r.status, r.error)
    assert "killed by SIGKILL after" in r.error and "out of memory" in r.error and "below the CPU limit" in r.error


def test_memory_error_at_load_says_which_limit():
    task = Task(
        task_id="sb/mem",
        prompt="def f():\n",
        entry_point="f",
        tests=(TestCase(name="t", code="assert candidate() == 1"),),
    )
    with Scorer(SandboxLimits(timeout=3.0, memory_bytes=256 << 20), workers=1, cache=False) as sc:
        (r,) = sc.score([ScoreRequest(task, "    return 1\nx = bytearray(1 << 30)\n")])
    assert r.status == "error" and "MemoryError" in r.error and "address-space limit 256 MiB" in r.error


def test_a_worker_outlives_the_thread_that_started_it():
    """bubblewrap's --die-with-parent fires when the *thread* that started the worker ends: a pool used from a
    caller's short-lived threads (the audit's) lost its workers to SIGKILL under the next job, until workers
    were started from a thread of the pool's own."""
    limits = SandboxLimits(timeout=10.0)
    job = build_job("print(input())", "", [{"kind": "stdio", "input": "hi\n"}], script=True, limits=limits)
    pool = WorkerPool(1, limits)
    try:
        first: list = []
        th = threading.Thread(target=lambda: first.append(pool.run(job)))
        th.start()
        th.join()
        second = pool.run(job)
    finally:
        pool.close()
    assert not first[0].sandbox_error and not second.sandbox_error, (first[0].sandbox_error, second.sandbox_error)
    assert pool.replaced == 0
