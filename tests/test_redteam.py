"""Red team: hostile completions. Each is a wrong answer that tries to pass or to do harm.

Every case asserts: reward 0 (no forged pass), no side effect outside the sandbox,
and a scorer that still scores the next completion correctly. Controls show that
correct completions still pass, through value tests and through exec tests.
"""

import os
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from hostile import assert_task as _task
from hostile import loopback_listener, reachable_scan
from hostile import score_one as score

from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer

pytestmark = [pytest.mark.sandbox]


# value tests: decided in the scoring process
DOUBLE = _task(
    "rt/double",
    'def double(x):\n    """Return 2*x."""\n',
    "double",
    ["assert candidate(2) == 4", "assert candidate(-3) == -6", "assert candidate(10) == 20"],
)
MAGIC = _task(
    "rt/magic", 'def magic():\n    """Return the magic number."""\n', "magic", ["assert candidate() == 982451653"]
)
CLOSE = _task(
    "rt/close",
    'def half(x):\n    """Return x / 2."""\n',
    "half",
    ["assert math.isclose(candidate(1.0), 0.5)", "assert abs(candidate(3.0) - 1.5) < 1e-9"],
)
# an exec test (a loop cannot be turned into a value check): runs in the child, with a check
EXEC = _task(
    "rt/exec",
    'def double(x):\n    """Return 2*x."""\n',
    "double",
    ["for i in range(5):\n    assert candidate(i) == 2 * i"],
    check="def check(candidate):\n    for i in range(5):\n        assert candidate(i) == 2 * i\n",
)
GOOD = "    return 2 * x\n"
WRONG = "    return x + 1\n"


@pytest.fixture(scope="module")
def scorer():
    sc = Scorer(SandboxLimits(timeout=2.0), RewardConfig("partial"), workers=2, cache=False)
    iso = sc.isolation()
    assert iso["mode"] == "bwrap", f"these tests need the bubblewrap sandbox (install Debian's 'bubblewrap'); got {iso}"
    yield sc
    sc.close()


def assert_harmless(scorer, r):
    assert r.reward == 0.0 and not r.passed, (r.status, r.error, r.tests_passed)
    # the scorer is alive and still right
    assert score(scorer, DOUBLE, GOOD).status == "pass"
    assert score(scorer, DOUBLE, WRONG).status == "fail"


def body(src):
    return textwrap.indent(textwrap.dedent(src).strip("\n"), "    ") + "\n"


# ----------------------------------------------------------------------------- controls


def test_controls_correct_completions_pass(scorer):
    assert score(scorer, DOUBLE, GOOD).status == "pass"
    assert score(scorer, EXEC, GOOD).status == "pass"
    assert score(scorer, CLOSE, "    return x / 2\n").status == "pass"
    assert score(scorer, MAGIC, "    return 982451653\n").status == "pass"
    # and ordinary wrong answers fail in both modes
    assert score(scorer, EXEC, WRONG).status == "fail"


# ----------------------------------------------------------------------------- forged equality


def test_always_equal_object(scorer):
    r = score(
        scorer,
        DOUBLE,
        "class _E:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "def double(x):\n    return _E()\n",
    )
    assert "non-builtin" in r.error
    assert_harmless(scorer, r)


def test_always_equal_int_subclass(scorer):
    r = score(
        scorer,
        DOUBLE,
        "class _I(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n"
        "def double(x):\n    return _I(0)\n",
    )
    assert_harmless(scorer, r)


def test_always_equal_in_an_exec_test(scorer):
    r = score(
        scorer,
        EXEC,
        "class _E(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n"
        "def double(x):\n    return _E(0)\n",
    )
    assert_harmless(scorer, r)


def test_patching_math_isclose_does_not_help(scorer):
    r = score(
        scorer,
        CLOSE,
        "import math\nmath.isclose = lambda *a, **k: True\n"
        "import builtins\nbuiltins.abs = lambda x: 0\ndef half(x):\n    return 0.0\n",
    )
    assert_harmless(scorer, r)


# ----------------------------------------------------------------------------- early exits


@pytest.mark.parametrize(
    "exit_code",
    [
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        "raise SystemExit(0)\n",
        "import atexit, os\natexit.register(os._exit, 0)\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "import posix\nposix._exit(0)\n",
    ],
)
def test_early_exit_passes_nothing(scorer, exit_code):
    r = score(scorer, DOUBLE, "def double(x):\n    return x + 1\n" + exit_code)
    assert r.tests_passed == 0
    assert_harmless(scorer, r)


def test_exit_from_inside_the_call(scorer):
    r = score(scorer, DOUBLE, body("import os\nos._exit(0)"))
    assert_harmless(scorer, r)
    r = score(scorer, EXEC, body("import os\nos._exit(0)"))
    assert_harmless(scorer, r)


# ----------------------------------------------------------------------------- forged protocol output


def test_forged_events_on_inherited_descriptors(scorer):
    forged = (
        "import os, json\n"
        "for fd in range(0, 20):\n"
        "    for i in range(3):\n"
        "        for ev in ({'event': 'values', 'index': i, 'values': [4]},\n"
        "                   {'event': 'test', 'index': i, 'ok': True}):\n"
        "            try: os.write(fd, (json.dumps(ev) + '\\n').encode())\n"
        "            except OSError: pass\n"
        "    for ev in ({'event': 'loaded'}, {'event': 'check', 'ok': True}, {'event': 'done'}):\n"
        "        try: os.write(fd, (json.dumps(ev) + '\\n').encode())\n"
        "        except OSError: pass\n"
        "os._exit(0)\n"
    )
    r = score(scorer, DOUBLE, "def double(x):\n    return 0\n" + forged)
    assert_harmless(scorer, r)
    r = score(scorer, EXEC, "def double(x):\n    return 0\n" + forged)
    assert_harmless(scorer, r)


def test_flooding_the_result_channel(scorer):
    r = score(
        scorer,
        DOUBLE,
        'import os\nfor _ in range(200000):\n    os.write(3, b\'{"event": "done"}\\n\' * 50)\n'
        "def double(x):\n    return 0\n",
    )
    assert_harmless(scorer, r)


# ----------------------------------------------------------------------------- patching builtins and the harness


def test_patching_builtins_reaches_no_exec_test(scorer):
    # the exec test's loop would run zero times with range patched: it runs in the tester, not beside the candidate
    r = score(scorer, EXEC, "import builtins\nbuiltins.range = lambda *a: []\ndef double(x):\n    return 0\n")
    assert r.error == "AssertionError", r.error
    assert_harmless(scorer, r)


def test_patching_builtins_at_call_time_reaches_no_exec_test(scorer):
    r = score(scorer, EXEC, body("import builtins\nbuiltins.range = lambda *a: []\nreturn 0"))
    assert r.error == "AssertionError", r.error
    assert_harmless(scorer, r)


def test_patching_the_harness(scorer):
    hack = (
        "import sys\nh = sys.modules['__main__']\n"
        "h.encode = lambda v, *a, **k: 4\n"
        "h._tampered = lambda snap: []\n"
        'import json\njson.dumps = lambda *a, **k: \'{"event": "done"}\'\n'
        "def double(x):\n    return 0\n"
    )
    r = score(scorer, DOUBLE, hack)
    assert_harmless(scorer, r)
    r = score(scorer, EXEC, hack)
    assert_harmless(scorer, r)


# ----------------------------------------------------------------------------- reading expected values


def test_frame_walking_finds_no_expected_values(scorer):
    walk = body("""
        import sys
        f = sys._getframe()
        seen = []
        while f is not None:
            for v in list(f.f_locals.values()) + list(f.f_globals.values()):
                if isinstance(v, (int,)) and not isinstance(v, bool) and v > 1000:
                    seen.append(v)
                if isinstance(v, dict):
                    for w in v.values():
                        if isinstance(w, int) and not isinstance(w, bool) and w > 1000:
                            seen.append(w)
            f = f.f_back
        return seen[0] if seen else -1
    """)
    r = score(scorer, MAGIC, walk)
    assert_harmless(scorer, r)


def test_memory_scan_finds_no_expected_values(scorer):
    # The scan must not contain the number itself: it looks for any 9-digit value starting with 9.
    scan = body("""
        import gc, re
        pat = re.compile(r'(?<![0-9])9[0-9]{8}(?![0-9])')
        for o in gc.get_objects():
            for v in (o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()):
                if type(v) is int and 900000000 < v < 1000000000:
                    return v
                if type(v) is str:
                    m = pat.search(v)
                    if m:
                        return int(m.group(0))
        return -1
    """)
    # a sibling that returned the number just before, in the same worker, must not leak either
    for _ in range(2):
        assert score(scorer, MAGIC, "    return 982451653\n").status == "pass"
    r = score(scorer, MAGIC, scan)
    assert_harmless(scorer, r)


def test_nothing_reachable_holds_the_expected_value(scorer):
    # Everything reachable from the modules, the collector's objects and the frames above the
    # call: the expected value is in none of them (gc.get_objects alone misses untracked containers).
    # The value is rebuilt for each comparison, never stored: the scan itself holds no copy.
    value = 'int("356154289"[::-1])'
    scan = reachable_scan(
        f'(kind == "int" and 900000000 < o < 1000000000 and o == {value}) or (kind == "str" and str({value}) in o)',
        value,
        "-1",
    )
    r = score(scorer, MAGIC, scan)
    assert r.status == "fail" and "AssertionError" in r.error, (r.status, r.error)
    assert_harmless(scorer, r)


def test_emitting_forged_values_through_the_harness_emit(scorer):
    hijack = body("""
        import sys
        f = sys._getframe()
        while f is not None and 'emit' not in f.f_locals:
            f = f.f_back
        if f is not None:
            for i in range(3):
                f.f_locals['emit']({'event': 'test', 'index': i, 'ok': True})
            f.f_locals['emit']({'event': 'check', 'ok': True})
            f.f_locals['emit']({'event': 'done'})
            import os
            os._exit(0)
        return 0
    """)
    r = score(scorer, DOUBLE, hijack)
    # value tests are decided from values, so an "ok" the child asserts counts for nothing
    assert r.tests_passed == 0
    assert_harmless(scorer, r)


# ----------------------------------------------------------------------------- timers, bombs, disk


@pytest.mark.slow
def test_disarming_timers_does_not_escape_the_deadline(scorer):
    """It never ends by itself: a timeout at all is the deadline's doing (60 s: a hang guard, 30x the limit)."""
    t0 = time.monotonic()
    r = score(
        scorer,
        DOUBLE,
        "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nimport time\n"
        "def double(x):\n    while True:\n        time.sleep(0.01)\n",
    )
    assert r.status == "timeout" and time.monotonic() - t0 < 60
    assert_harmless(scorer, r)


def test_fork_bomb(scorer):
    r = score(
        scorer,
        DOUBLE,
        "import os\nfor _ in range(10000):\n    try:\n        os.fork()\n"
        "    except OSError:\n        pass\ndef double(x):\n    return 0\n",
    )
    assert_harmless(scorer, r)
    assert not _sandbox_uid_processes(scorer), "fork bomb processes outlived their scoring"


def test_memory_bomb(scorer):
    r = score(scorer, DOUBLE, "x = bytearray(8 << 30)\ndef double(x):\n    return 2 * x\n")
    assert r.status == "error" and "MemoryError" in r.error
    assert_harmless(scorer, r)


def test_disk_filling(scorer, tmp_path):
    r = score(
        scorer,
        DOUBLE,
        "import os\n"
        "for i in range(200):\n    try:\n        open(f'fill{i}', 'wb').write(b'x' * (8 << 20))\n"
        "    except OSError:\n        break\n"
        "def double(x):\n    return 0\n",
    )
    assert_harmless(scorer, r)


def test_leftover_daemon_is_killed(scorer):
    r = score(
        scorer,
        DOUBLE,
        body("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(60)
            os._exit(0)
        return 0
    """),
    )
    assert_harmless(scorer, r)
    assert not _sandbox_uid_processes(scorer), "a daemon started by a completion outlived its scoring"


def _sandbox_uid_processes(scorer, grace: float = 20.0):
    """Live processes descended from this scorer's workers other than the workers' own processes.

    A worker answers as soon as its child says it is done and cleans up right after (before it reads the
    next job), so leftovers get ``grace`` seconds to disappear (a hang guard: the wait ends when they are gone);
    a daemon that survives them is reported."""
    deadline = time.monotonic() + grace
    while True:
        left = _descendants(scorer)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _pids_with(token: str) -> list[int]:
    """Live processes whose command line holds ``token`` (the host sees them whatever the namespace)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and token.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                found.append(int(name))
        except OSError:
            pass
    return found


def _descendants(scorer):
    roots = {w.proc.pid for w in scorer.sandbox._workers if w is not None}
    info = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        info[int(pid)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]), fields["State"].split()[0])
    left = []
    for pid, (ppid, uid, state) in info.items():
        if uid < 61000 or state == "Z":
            continue
        p = ppid
        while p > 1 and p not in roots:
            p = info.get(p, (0, 0, ""))[0]
        if p in roots:
            left.append(pid)
    return left


# ----------------------------------------------------------------------------- network, environment, files, parent


@pytest.mark.slow
def test_network_is_blocked(scorer):
    with loopback_listener() as (port, got):
        r = score(
            scorer,
            DOUBLE,
            body(f"""
            import socket
            try:
                s = socket.create_connection(('127.0.0.1', {port}), timeout=1)
                s.sendall(b'leak')
                return 2 * x
            except OSError:
                return 0
        """),
        )
    assert got == [], "the completion reached a listener on the host"
    assert_harmless(scorer, r)


def test_callers_environment_is_not_visible(scorer, monkeypatch):
    monkeypatch.setenv("GRPO_WB_SECRET", "hunter2")
    secret = _task("rt/secret", 'def secret():\n    """?"""\n', "secret", ["assert candidate() == 'hunter2'"])
    r = score(
        scorer,
        secret,
        body("""
        import os
        v = os.environ.get('GRPO_WB_SECRET')
        if v:
            return v
        for p in ('/proc/1/environ', '/proc/self/environ', f'/proc/{os.getppid()}/environ'):
            try:
                data = open(p, 'rb').read()
            except OSError:
                continue
            for kv in data.split(b'\\0'):
                if kv.startswith(b'GRPO_WB_SECRET='):
                    return kv.split(b'=', 1)[1].decode()
        return None
    """),
    )
    assert_harmless(scorer, r)


def test_callers_files_are_not_readable_or_writable(scorer, tmp_path):
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text("s3cr3t")
    target = tmp_path / "pwned"
    task = _task("rt/file", 'def peek():\n    """?"""\n', "peek", ["assert candidate() == 's3cr3t'"])
    r = score(
        scorer,
        task,
        body(f"""
        for p in ({str(target)!r}, '/tmp/grpo_wb_pwned', {str(Path.cwd() / "pwned")!r}):
            try:
                open(p, 'w').write('x')
            except OSError:
                pass
        try:
            return open({str(secret_file)!r}).read()
        except OSError:
            return None
    """),
    )
    assert not target.exists() and not Path("/tmp/grpo_wb_pwned").exists() and not (Path.cwd() / "pwned").exists()
    assert_harmless(scorer, r)


def test_a_file_planted_in_place_of_stderr_is_not_read_by_the_worker(scorer):
    # The job directory is the completion's: it can replace its stderr file with a symlink.
    # The worker (root in the sandbox) must read back what the child wrote to fd 2, not
    # follow the link on the completion's behalf (here to the worker's own environment).
    r = score(
        scorer,
        DOUBLE,
        body("""
        import os, sys
        sys.stderr.write("REAL-STDERR\\n")
        sys.stderr.flush()
        os.unlink(".stderr")
        os.symlink("/proc/self/environ", ".stderr")
        return 0
    """),
    )
    assert_harmless(scorer, r)
    assert r.stderr_tail and set(r.stderr_tail.splitlines()) == {"REAL-STDERR"}, r.stderr_tail  # once a call


def test_killing_the_parent(scorer):
    r = score(
        scorer,
        DOUBLE,
        body("""
        import os, signal
        for pid in (os.getppid(), 1, -1):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return 0
    """),
    )
    assert_harmless(scorer, r)


@pytest.mark.sandbox_breaks
def test_a_killed_worker_is_replaced_and_the_run_goes_on():
    # Kill a worker from outside while it scores a slow completion: the job runs again in a fresh worker (a death
    # is not provably the sandbox's fault, so it is retried before anything is reported); killed there too, the
    # completion gets ``error`` (reward 0: a completion cannot buy a ``sandbox_error``, whose reward is None, by
    # killing its worker), the workers are replaced, and the next completions score normally.
    import signal as _signal

    # The kill lands once the completion runs (its sleeper, token in argv, shows in /proc), never by a guess
    # at how long a worker takes to start it; the 60 s deadline leaves the kill, not the clock, to end it.
    with Scorer(SandboxLimits(timeout=60.0), RewardConfig("partial"), workers=2, cache=False) as scorer:
        before = scorer.sandbox.replaced
        token = f"grpo-wb-killed-worker-{uuid.uuid4().hex}"
        slow = (
            "import os, sys, time\ndef double(x):\n    if os.fork() == 0:\n"
            "        os.execv(sys.executable,\n"
            f"                 [sys.executable, '-S', '-c', 'import time; time.sleep(60)', {token!r}])\n"
            "    time.sleep(60)\n    return 2 * x\n"
        )
        res = []
        th = threading.Thread(target=lambda: res.append(score(scorer, DOUBLE, slow)))
        th.start()
        for attempt in range(2):
            until = time.monotonic() + 60
            while not _pids_with(token) and th.is_alive() and time.monotonic() < until:
                time.sleep(0.02)
            assert _pids_with(token), f"the slow completion never started (attempt {attempt + 1})"
            for w in scorer.sandbox._workers:
                if w is not None and w.alive():
                    os.killpg(w.proc.pid, _signal.SIGKILL)
            until = time.monotonic() + 30
            while _pids_with(token) and time.monotonic() < until:  # gone with its namespace
                time.sleep(0.02)
        th.join()
        for pid in _pids_with(token):  # never left behind even when the test fails
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        assert (res[0].status, res[0].reward) == ("error", 0.0), (res[0].status, res[0].error)
        assert "died" in res[0].error and "twice" in res[0].error
        assert score(scorer, DOUBLE, GOOD).status == "pass"
        assert scorer.sandbox.replaced >= before + 2


# ----------------------------------------------------------------------------- the scorer's own evaluation


REPEAT = _task(
    "rt/repeat",
    'def count(x):\n    """Return 3."""\n',
    "count",
    [
        "assert ' ' * candidate(3) == '   '",
        "assert 2 ** candidate(3) == 8",
        "assert sum(range(candidate(3))) == 3",
        "assert candidate(3) * [0] == [0, 0, 0]",
    ],
)


@pytest.mark.parametrize("value", ["10 ** 9", "10 ** 18", "-(10 ** 12)"])
def test_a_returned_value_cannot_make_the_scorer_allocate_or_hang(scorer, value):
    """The rest of each assert runs in the scoring process on the value the completion chose: bounded."""
    import tracemalloc

    tracemalloc.start()  # what the scoring process allocates for this completion (peak RSS may be older)
    t0 = time.process_time()  # this process's CPU (the child's is not in it), not inflated by a busy machine
    try:
        r = score(scorer, REPEAT, f"    return {value}\n")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.status == "fail" and r.tests_passed == 0, (r.status, r.error)
    assert time.process_time() - t0 < 3.0
    assert peak < 50 << 20  # under 50 MiB allocated
    assert score(scorer, REPEAT, "    return 3\n").status == "pass"


def test_a_forged_huge_value_is_refused_by_the_scorer():
    """A child that writes its own 3 MB value event (the encoder would refuse it): the scorer sizes it first."""
    from grpo_wb.scoring.sandbox import RawOutcome
    from grpo_wb.scoring.scorer import plan_task, verdict_from_outcome

    events = [
        {"event": "loaded"},
        {"event": "values", "index": 0, "values": ["x" * (3 << 20)]},
        {"event": "values", "index": 1, "values": [-6]},
        {"event": "values", "index": 2, "values": [20]},
        {"event": "done"},
    ]
    v = verdict_from_outcome(DOUBLE, RawOutcome(events=events), "continuation", *plan_task(DOUBLE))
    assert v.status == "fail" and v.tests_passed == 2 and "more than the scorer evaluates" in v.error, v


# ----------------------------------------------------------------------------- one reply must never crash a run


SURROGATES = {  # lone surrogates, which UTF-8 cannot encode, through every channel a reply has (toy/add)
    "exception message": r'    raise ValueError("\ud800 and \udfff")' + "\n",
    "stdout": r'    import sys; sys.stdout.reconfigure(errors="surrogatepass"); print("\ud800")'
    + "\n"
    + r'    raise ValueError("\ud800")'
    + "\n",
    "stderr": r'    import os, sys; sys.stderr.reconfigure(errors="surrogatepass"); sys.stderr.write("\ud800\n")'
    + "\n"
    + r'    os.write(2, b"\xed\xa0\x80\n"); raise ValueError("\ud800")'
    + "\n",
    "value repr": "    class V:\n"
    + r'        def __repr__(self): return "\ud800"'
    + "\n"
    + "    assert a + b == V(), V()\n",
    "completion text": "    return a + b  # \ud800 in the reply itself\n",
    "dict key": r'    return {"\ud800": a + b}' + "\n",
}


def _strings(obj):
    """Every string of a JSON value, keys included."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _assert_readable(rows):
    assert [r["completion_id"].split("#")[0] for r in rows] == ["toy/add"] * (len(SURROGATES) + 1)
    for r in rows:
        for s in _strings(r):
            s.encode("utf-8")  # no lone surrogate reached the file or came back from it
    by = dict(zip(SURROGATES, rows))
    assert by["exception message"]["error"] == "ValueError: \\ud800 and \\udfff"  # the escape, readable
    for attack in ("stdout", "stderr", "value repr"):
        assert by[attack]["status"] == "fail" and "\\ud800" in by[attack]["error"], by[attack]
    assert by["dict key"]["status"] == "fail", by["dict key"]
    # text scored is text recorded: the escape in a comment, which changes nothing
    assert "# \\ud800 in the reply" in by["completion text"]["completion"] and by["completion text"]["passed"]
    assert rows[-1]["status"] == "pass"  # the run went on and still scores right


def test_lone_surrogates_in_a_reply_never_crash_score_or_smoke(tmp_path):
    """``raise ValueError("\\ud800")`` once killed ``grpo-wb score`` (results left in ``.partial``) and ``smoke``
    (writing last_rollouts.jsonl): every variant, through the real CLI, exits 0 with every result written."""
    import json
    import subprocess
    import sys

    from conftest import TOY, read_jsonl, write_jsonl

    tasks = write_jsonl(tmp_path / "tasks.jsonl", [r for r in read_jsonl(TOY) if r["task_id"] == "toy/add"])
    replies = [*SURROGATES.values(), GOOD.replace("2 * x", "a + b")]
    samples = tmp_path / "samples.jsonl"  # json.dumps writes each surrogate as a \ud800 escape
    samples.write_text("".join(json.dumps({"task_id": "toy/add", "completion": c}) + "\n" for c in replies))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}

    def cli(*argv):
        p = subprocess.run(
            [sys.executable, "-m", "grpo_wb.cli", *map(str, argv), "--no-progress", "--timeout", "2"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-3000:]

    out = tmp_path / "results.jsonl"
    cli("score", "--tasks", tasks, "--completions", samples, "--out", out)
    assert out.exists() and not out.with_name(out.name + ".partial").exists()
    _assert_readable(read_jsonl(out))

    run = tmp_path / "run"
    cli(
        "smoke",
        "--tasks",
        tasks,
        "--backend",
        "replay",
        "--completions",
        samples,
        "--out",
        run,
        "--group-size",
        len(replies),
        "--batch-size",
        "1",
        "--steps",
        "1",
        "--min-informative-fraction",
        "0",
    )
    _assert_readable(read_jsonl(run / "last_rollouts.jsonl"))
