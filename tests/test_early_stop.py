"""Early stop: with the binary reward a completion is killed once a test has failed.

Each test checks one property: the verdict is the one a run to the end would give
(minus the hang), partial reward still runs every test, and the streamed channel
decides nothing a child can forge. Real child processes throughout; nothing is mocked.
"""

from __future__ import annotations

import textwrap
from collections import Counter

import pytest
from conftest import read_jsonl
from hostile import score_one as score

from grpo_wb.bundled import CODEGEN_SAMPLES
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.records import Task, TestCase

pytestmark = [pytest.mark.sandbox]

TIMEOUT = 5.0
QUICK_S = TIMEOUT  # ended before the deadline: by the stop, not the clock (how soon: `grpo-wb bench`)
CODET = CODEGEN_SAMPLES


def _task(*tests: str, check: str | None = None) -> Task:
    return Task(
        task_id="es/double",
        prompt="def double(x):\n",
        entry_point="double",
        tests=tuple(TestCase(name=f"t{i}", code=c) for i, c in enumerate(tests)),
        check=check,
    )


DOUBLE = _task("assert candidate(1) == 2", "assert candidate(2) == 4", "assert candidate(3) == 6")
# loops cannot be split into value tests: these run (and are decided) in the child
EXEC = _task(
    "for i in (1,):\n    assert candidate(i) == 2 * i",
    "for i in (2,):\n    assert candidate(i) == 2 * i",
    check="def check(candidate):\n    for i in (1, 2):\n        assert candidate(i) == 2 * i\n",
)
STDIO = Task(
    task_id="es/echo2",
    prompt="",
    entry_point="",
    tests=tuple(TestCase(name=f"t{i}", type="stdio", input=f"{i}\n", output=f"{2 * i}\n") for i in (1, 2, 3)),
)
GOOD = "    return 2 * x\n"
HANG = "    while True:\n        pass\n"
FAIL_THEN_HANG = "    if x == 1:\n        return 0\n" + HANG


def body(src: str) -> str:
    return textwrap.indent(textwrap.dedent(src).strip("\n"), "    ") + "\n"


@pytest.fixture(scope="module")
def scorer():
    with Scorer(SandboxLimits(timeout=TIMEOUT), workers=2, cache=False) as s:
        assert s.early_stop
        yield s


def test_fail_then_hang_is_a_quick_fail(scorer):
    r = score(scorer, DOUBLE, FAIL_THEN_HANG)
    assert (r.status, r.error, r.tests_passed) == ("fail", "AssertionError", 0), r
    assert r.stopped_early and r.duration_s < QUICK_S, r.duration_s
    assert r.failed_tests == ["t0", "t1", "t2"]


@pytest.mark.slow
def test_partial_reward_runs_every_test():
    with Scorer(SandboxLimits(timeout=TIMEOUT), RewardConfig("partial"), workers=1, cache=False) as s:
        assert not s.early_stop
        r = score(s, DOUBLE, FAIL_THEN_HANG)
    assert r.status == "timeout" and not r.stopped_early and r.duration_s >= TIMEOUT, r


def test_early_stop_is_refused_with_partial_reward():
    with pytest.raises(ValueError, match="binary"):
        Scorer(SandboxLimits(timeout=TIMEOUT), RewardConfig("partial"), workers=1, early_stop=True)


@pytest.mark.parametrize(
    "completion", [GOOD, "    import time\n    time.sleep(0.05)\n    return 2 * x\n"], ids=["fast", "slow-streamed"]
)
def test_correct_completion_still_passes(scorer, completion):
    r = score(scorer, DOUBLE, completion)
    assert r.status == "pass" and r.tests_passed == 3 and not r.stopped_early, r


def test_first_passes_second_fails_counts_one(scorer):
    r = score(scorer, DOUBLE, "    if x == 1:\n        return 2\n    if x == 2:\n        return 0\n" + HANG)
    assert (r.status, r.tests_passed, r.failed_tests) == ("fail", 1, ["t1", "t2"]), r
    assert r.stopped_early and r.duration_s < QUICK_S


def test_tests_after_the_first_failure_do_not_count_whether_or_not_the_stop_was_needed(scorer):
    """A fast completion reports every test before any stop could land; the count must not depend on that."""
    r = score(scorer, DOUBLE, "    return 0 if x == 2 else 2 * x\n")  # t0 passes, t1 fails, t2 would pass
    assert (r.status, r.tests_passed, r.failed_tests) == ("fail", 1, ["t1", "t2"]), r
    with Scorer(SandboxLimits(timeout=TIMEOUT), RewardConfig(kind="partial"), workers=1, cache=False) as full:
        r = score(full, DOUBLE, "    return 0 if x == 2 else 2 * x\n")
    assert (r.status, r.tests_passed, r.failed_tests) == ("fail", 2, ["t1"]), r


def test_failing_exec_test_stops_early(scorer):
    r = score(scorer, EXEC, FAIL_THEN_HANG)
    assert (r.status, r.error, r.tests_passed) == ("fail", "AssertionError", 0), r
    assert r.stopped_early and r.duration_s < QUICK_S


def test_failing_stdio_test_stops_early(scorer):
    r = score(scorer, STDIO, "n = int(input())\nif n == 1:\n    print(0)\nelse:\n    while True:\n        pass\n")
    assert (r.status, r.error, r.tests_passed) == ("fail", "wrong output", 0), r
    assert r.stopped_early and r.duration_s < QUICK_S


def test_worker_serves_the_next_job_after_a_stop():
    # the stop may cross the end of the child (it fails at ~30 ms, then finishes at once): a stop
    # left in the pipe must not be taken for, or spill into, the next job
    slow_fail = "    import time\n    if x == 1:\n        time.sleep(0.03)\n        return 0\n    return 2 * x\n"
    with Scorer(SandboxLimits(timeout=TIMEOUT), workers=1, cache=False) as s:
        reqs = [ScoreRequest(DOUBLE, c, i) for i in range(15) for c in (slow_fail, GOOD, FAIL_THEN_HANG)]
        got = [(r.status, r.tests_passed) for r in s.score(reqs)]
    allowed = [{("fail", 0)}, {("pass", 3)}, {("fail", 0)}]  # only tests before the first failure count
    assert all(g in allowed[i % 3] for i, g in enumerate(got)), got


# ----------------------------------------------------------------------------- the streamed channel


_FORGE = """
import os, struct, sys, json
def _frame(obj):
    data = json.dumps(obj).encode()
    return struct.pack('>I', len(data)) + data
_lines = ''.join(json.dumps(e) + '\\n' for e in EVENTS)
_blob = _lines.encode() + _frame({'stop': True}) + _frame({'partial': _lines}) + \\
    _frame({'events_raw': _lines, 'timed_out': False, 'stopped': False, 'duration': 0.0})
def _forge():
    print(_lines, flush=True)
    print(_lines, file=sys.stderr, flush=True)
    for fd in FDS:
        try:
            os.write(fd, _blob)
        except OSError:
            pass
"""


def _forging(events: list[dict], fds: list[int], func: str) -> str:
    return _FORGE.replace("EVENTS", repr(events)).replace("FDS", repr(fds)) + "_forge()\ndef double(x):\n" + body(func)


def test_forged_failures_on_stdout_stderr_and_fds_do_not_stop_a_correct_completion(scorer):
    fails = [{"event": "values", "index": i, "error": "AssertionError"} for i in range(3)] + [
        {"event": "test", "index": 0, "ok": False},
        {"event": "check", "ok": False},
        {"event": "tamper", "what": "x"},
    ]
    # every descriptor but the event pipe (fd 3), written at load time and again in a slow, streamed call
    src = _forging(fails, [0, 1, 2, *range(4, 64)], "import time\n_forge()\ntime.sleep(0.05)\nreturn 2 * x")
    r = score(scorer, DOUBLE, src)
    assert r.status == "pass" and not r.stopped_early, r


def test_forged_passes_on_stdout_stderr_and_fds_do_not_rescue_a_failing_completion(scorer):
    passes = (
        [{"event": "values", "index": i, "values": [2 * (i + 1)]} for i in range(3)]
        + [{"event": "test", "index": i, "ok": True} for i in range(3)]
        + [{"event": "done"}]
    )
    src = _forging(passes, [0, 1, 2, *range(4, 64)], "_forge()\nif x == 1:\n    return 0\nwhile True:\n    pass")
    r = score(scorer, DOUBLE, src)
    assert (r.status, r.tests_passed) == ("fail", 0) and r.stopped_early and r.duration_s < QUICK_S, r


@pytest.mark.parametrize(
    "forged, why",
    [
        ({"event": "values", "index": 0, "values": [2]}, "test 0 reported twice"),
        ({"event": "test", "index": 1, "ok": True}, "test 1: event of the wrong kind"),
    ],
)
def test_forged_event_on_the_pipe_while_streaming_is_tampering(scorer, forged, why):
    # the forged line reaches the scorer streamed (after 50 ms), before the harness's own event
    src = body(f"""
        import os, time, json
        if x == 1:
            time.sleep(0.05)
            os.write(3, (json.dumps({forged!r}) + '\\n').encode())
            time.sleep(0.05)
        return 2 * x
    """)
    r = score(scorer, DOUBLE, src)
    assert r.status == "fail" and "tampering" in r.error and why in r.error, r


def test_flood_while_streaming_hits_the_overflow_guard(scorer):
    src = body("""
        import os, time
        time.sleep(0.05)
        for _ in range(100000):
            os.write(3, b'{"event": "start"}\\n' * 64)
        return 2 * x
    """)
    r = score(scorer, DOUBLE, src)
    assert (r.status, r.error) == ("fail", "flooded the result channel"), r
    assert r.duration_s < QUICK_S


# ----------------------------------------------------------------------------- real samples


@pytest.mark.data
@pytest.mark.slow
def test_real_samples_keep_their_pass_fail_verdicts():
    """CodeGen-16B samples of tasks where some fail and then hang: only ``timeout`` becomes ``fail``."""
    tasks = {t.task_id: t for t in import_humaneval()[0]}
    wanted = {"HumanEval/39", "HumanEval/97", "HumanEval/150"}
    samples = [s for s in read_jsonl(CODET) if s["task_id"] in wanted]
    assert len(samples) == 300
    out = {}
    for early_stop in (False, True):
        with Scorer(SandboxLimits(timeout=3.0), workers=2, early_stop=early_stop) as s:
            out[early_stop] = list(
                s.score(ScoreRequest(tasks[x["task_id"]], x["completion"], i) for i, x in enumerate(samples))
            )
    changed = Counter((a.status, b.status) for a, b in zip(out[False], out[True]) if a.status != b.status)
    assert [a.passed for a in out[False]] == [b.passed for b in out[True]]
    assert set(changed) == {("timeout", "fail")}, changed
    assert all(b.stopped_early for a, b in zip(out[False], out[True]) if a.status != b.status)
    assert sum(b.stopped_early for b in out[True]) >= 1 and not any(a.stopped_early for a in out[False])
