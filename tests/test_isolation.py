"""Isolation that fails closed: asked-for isolation that cannot be had is an error, never a fallback.

Every test here that could reach a dangerous path runs inside a PID namespace of its own
(``unshare --pid --fork --mount-proc``): a worker that wrongly believed it owned a namespace would
``kill(-1)`` as root, which outside one kills every process on the machine.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import TOY, write_jsonl

from grpo_wb.scoring import sandbox
from grpo_wb.scoring.sandbox import STRICT_PROOFS, SandboxLimits, SandboxUnavailable, WorkerPool, unproved

pytestmark = [pytest.mark.sandbox]

ROOT = Path(__file__).resolve().parents[1]
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="uid drops and sibling uids need root")  # CI runs as root


def in_pid_namespace(code: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    """Run Python ``code`` as pid 1 of a fresh PID namespace (its own /proc), with ``env``."""
    return subprocess.run(
        [shutil.which("unshare"), "--pid", "--fork", "--mount-proc", sys.executable, "-c", code],
        env={"LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture
def no_bwrap_path(tmp_path):
    """A PATH with the usual tools but no bwrap."""
    d = tmp_path / "bin"
    d.mkdir()
    for f in Path("/usr/bin").iterdir():
        if f.name != "bwrap":
            (d / f.name).symlink_to(f)
    return str(d)


SCORE = textwrap.dedent("""
    import subprocess, sys
    sib = subprocess.Popen(["sleep", "30"])            # a bystander in this namespace
    from grpo_wb.cli.main import main
    rc = main(["score", "--tasks", {tasks!r}, "--completions", {samples!r},
               "--out", {out!r}, "--no-progress"])
    alive = sib.poll() is None
    sib.kill()
    print("RESULT", rc, alive)
""")


def _score_in_namespace(tmp_path, env):
    samples = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "toy/add", "completion": "    return a + b\n"}])
    out = tmp_path / "r.jsonl"
    code = SCORE.format(tasks=str(TOY), samples=str(samples), out=str(out))
    p = in_pid_namespace(code, env)
    last = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
    assert last, p.stdout + p.stderr
    _, rc, alive = last[-1].split()
    return int(rc), alive == "True", p.stderr, out


def test_forced_bwrap_without_bwrap_is_an_error(tmp_path, no_bwrap_path):
    """GRPO_WB_SANDBOX=bwrap on a machine without bubblewrap: one line, exit 1, nothing scored, nothing killed."""
    rc, alive, err, out = _score_in_namespace(tmp_path, {"PATH": no_bwrap_path, "GRPO_WB_SANDBOX": "bwrap"})
    assert rc == 1 and alive and not out.exists()
    assert err.strip().splitlines()[-1] == (
        "grpo-wb: error: GRPO_WB_SANDBOX=bwrap but bubblewrap (bwrap) is not on "
        "PATH; install it (Debian/Ubuntu: apt-get install bubblewrap) or unset "
        "GRPO_WB_SANDBOX"
    )


def test_strict_refuses_a_sandbox_that_cannot_prove_its_isolation(tmp_path):
    """Fork mode proves none of PID namespace, network, private /tmp (and, as root with the interpreter
    under a 0700 home, no uid drop): strict says which and runs nothing."""
    rc, alive, err, out = _score_in_namespace(
        tmp_path, {"PATH": os.environ["PATH"], "GRPO_WB_SANDBOX": "fork", "GRPO_WB_ISOLATION": "strict"}
    )
    line = err.strip().splitlines()[-1]
    assert rc == 1 and alive and not out.exists()
    assert line.startswith(
        "grpo-wb: error: --isolation strict: the sandbox could not prove its own PID namespace; "
        "no network (the child's connection to 127.0.0.1: reachable)"
    ), line
    assert "a private /tmp" in line


def test_best_falls_back_visibly_and_strict_passes_with_bubblewrap(monkeypatch):
    assert shutil.which("bwrap"), "make test installs bubblewrap"
    rep = sandbox.isolation_report(WorkerPool(1, SandboxLimits(isolation="strict")))
    assert rep["mode"] == "bwrap" and rep["isolation"] == "strict" and rep["missing"] == []
    assert rep["pid_namespace"] and rep["network_isolated"] and rep["private_tmp"] and rep["limits_set"]
    monkeypatch.setattr(sandbox, "bwrap_command", lambda limits: None)  # bubblewrap gone, isolation best
    rep = sandbox.isolation_report(WorkerPool(1, SandboxLimits(isolation="best")))
    assert rep["mode"] == "unshare" and "bubblewrap" in rep["fallback_reason"], rep
    assert rep["missing"] and rep["missing"][0].startswith("the caller's files hidden"), rep  # said, not hidden


@pytest.fixture
def bare_path(tmp_path):
    """A PATH with the usual tools but neither bwrap nor unshare: no namespaces to be had."""
    d = tmp_path / "bare"
    d.mkdir()
    for f in Path("/usr/bin").iterdir():
        if f.name not in ("bwrap", "unshare"):
            (d / f.name).symlink_to(f)
    return str(d)


@needs_root
def test_without_bubblewrap_best_still_gives_namespaces_and_a_leased_uid(no_bwrap_path, tmp_path):
    """Issue 25 point 11: util-linux's unshare instead of bubblewrap; a completion runs as a leased uid, in PID,
    network and mount namespaces of its own, with a private /tmp: it cannot see the host's processes, write the
    caller's files or reach a listener on 127.0.0.1, and the standard library still imports (the interpreter may
    live under a 0700 /root)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    canary = tmp_path / "canary"
    canary.write_text("untouched")
    canary.chmod(0o666)  # writable by any uid: only a mount namespace's view, or none, keeps it
    probe = (
        f"import os, socket, fractions, statistics\nseen = []\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), timeout=1)\n"
        f"    seen.append('network')\nexcept OSError:\n    pass\n"
        f"try:\n    open({str(canary)!r}, 'w').write('written')\n    seen.append('wrote')\nexcept OSError:\n    pass\n"
        "seen += [] if b'worker' in open('/proc/1/cmdline', 'rb').read() else ['host processes']\n"
        "print(' '.join(seen) or 'ok')\n"
    )
    code = textwrap.dedent(f"""
        import json, os
        os.environ["PATH"] = {no_bwrap_path!r}
        from grpo_wb.scoring.sandbox import SandboxLimits, isolation_report
        from grpo_wb.scoring.scorer import Scorer, ScoreRequest
        from grpo_wb.tasks.records import Task, TestCase
        T = Task("iso/ok", "Print ok.", "", (TestCase("a", type="stdio", input="", output="ok\\n"),))
        with Scorer(SandboxLimits(timeout=10.0), workers=1, cache=False) as sc:
            rep = sc.isolation()
            (r,) = list(sc.score([ScoreRequest(T, {probe!r})]))
        print("RESULT", json.dumps([rep["mode"], rep["missing"], rep["unprivileged_uid"], r.status, r.error]))
    """)
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    listener.close()
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
    assert line, p.stdout + p.stderr
    mode, missing, unprivileged, status, error = json.loads(line[-1][7:])
    assert mode == "unshare" and unprivileged and [m.split(" (")[0] for m in missing] == ["the caller's files hidden"]
    assert (status, error) == ("pass", ""), error
    assert canary.read_text() == "untouched"


def test_with_no_isolation_to_be_had_best_refuses_and_none_must_be_asked_for(tmp_path, bare_path):
    """No bubblewrap, no unshare: ``best`` runs nothing and says how to ask for no isolation, and what that allows;
    ``none`` runs, saying so."""
    rc, alive, err, out = _score_in_namespace(tmp_path, {"PATH": bare_path})
    line = err.strip().splitlines()[-1]
    assert rc == 1 and alive and not out.exists(), err
    assert line.startswith("grpo-wb: error: no isolation could be had here") and "--isolation none" in line, line
    rc, alive, err, out = _score_in_namespace(tmp_path, {"PATH": bare_path, "GRPO_WB_ISOLATION": "none"})
    assert rc == 0 and out.exists() and json.loads(out.read_text().splitlines()[0])["status"] == "pass", err


def test_the_report_is_measured_in_a_child():
    """Limits in force as the child reads them (getrlimit), its environment, uid and /tmp -- not constants."""
    limits = SandboxLimits(timeout=1.5, memory_bytes=1 << 30, max_open_files=40)
    rep = sandbox.isolation_report(WorkerPool(1, limits))
    assert rep["limits"]["RLIMIT_AS"] == {"requested": 1 << 30, "in_force": 1 << 30}
    assert rep["limits"]["RLIMIT_NOFILE"] == {"requested": 40, "in_force": 40}
    assert rep["limits"]["RLIMIT_CPU"]["in_force"] == limits.for_child()["cpu_seconds"]
    assert set(rep["environment"]) == {"HOME", "LANG", "PATH", "TMPDIR"}
    assert rep["child_uid"] != rep["caller_uid"] or os.getuid() != 0


def test_a_limit_setrlimit_refused_shows_as_not_set():
    """A hard limit below the requested value cannot be raised by the child: the report says it is not set."""
    rep = {
        "mode": "bwrap",
        "pid_namespace": True,
        "network_isolated": True,
        "child_uid": 61000,
        "caller_uid": 0,
        "private_tmp": True,
        "userns_closed": True,
        "ipc_closed": True,
        "one_session": True,
        "limits": {"RLIMIT_NOFILE": {"requested": 64, "in_force": 16}},
    }
    assert unproved(rep) == ["the limits in force (not set: RLIMIT_NOFILE)"]
    assert len(unproved({})) == len(STRICT_PROOFS)


WORKER_WITHOUT_NAMESPACE = textwrap.dedent("""
    import json, os, socket, struct, subprocess, sys, tempfile, time
    from grpo_wb.scoring import sandbox
    from grpo_wb.scoring.sandbox import SandboxLimits, build_job

    def sibling(uid):
        return subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "60"])

    nobody, stranger = sibling(65534), sibling(62001)   # an existing user's uid, and a uid no worker holds

    def uid_of(pid):
        try:
            return int(open(f"/proc/{pid}/status").read().split("Uid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            return None

    until = time.monotonic() + 30  # both run as their uid before the worker starts (not after a guessed delay)
    while (uid_of(nobody.pid), uid_of(stranger.pid)) != (65534, 62001) and time.monotonic() < until:
        time.sleep(0.01)
    root = tempfile.mkdtemp(); os.chmod(root, 0o711)
    lst = socket.socket(); lst.bind(("127.0.0.1", 0)); lst.listen(1)
    limits = SandboxLimits(timeout=2.0)
    tmp = os.stat(tempfile.gettempdir())
    # The configuration an old caller sent: "pid_namespace": True although the worker runs in none.
    # The worker must decide from what it observes, and the uid it kills with must be no user's.
    cfg = {"child_uid": int(sys.argv[1]), "extra_sys_path": [], "job_root": root, "probe_port": lst.getsockname()[1],
           "probe_limits": limits.for_child(), "pid_namespace": True,
           "caller_pid_ns": os.readlink("/proc/self/ns/pid"), "caller_tmp": [tmp.st_dev, tmp.st_ino], "caller_uid": 0}
    w = subprocess.Popen([sys.executable, "-s", "-P", "-S", "-B", sandbox.WORKER, json.dumps(cfg)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})

    def recv():
        (n,) = struct.unpack(">I", w.stdout.read(4)); return json.loads(w.stdout.read(n))

    def send(obj):
        data = json.dumps(obj).encode(); w.stdin.write(struct.pack(">I", len(data)) + data); w.stdin.flush()

    hello = recv()["hello"]
    # the daemon leaves the child's process group before the job goes on (no race with the killpg)
    daemon = ("import os, time\\nr, w = os.pipe()\\nif os.fork() == 0:\\n    os.setsid()\\n    os.write(w, b'x')\\n"
              "    time.sleep(30)\\n    os._exit(0)\\nos.read(r, 1)\\ndef f():\\n    return 1\\n")
    send(build_job(daemon, "f", [{"kind": "exec", "code": "assert candidate() == 1"}], limits=limits))
    result = recv()
    # the worker cleans up after it answers, before it reads the next job: a second job's answer means the
    # first job's clean-up is done; then the kills it sent get time to land (the wait ends once they have)
    send(build_job("def f():\\n    return 1\\n", "f", [{"kind": "exec", "code": "assert candidate() == 1"}],
                   limits=limits))
    recv()

    def left_now():
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        uids = {}
        for p in pids:
            try:
                status = open(f"/proc/{p}/status").read()
            except OSError:
                continue
            if "State:\tZ" not in status:  # killed but not reaped (pid 1 here is this script) is dead
                uids[p] = int(status.split("Uid:")[1].split()[0])
        return sorted(p for p, u in uids.items() if u == cfg["child_uid"] and p not in (nobody.pid, stranger.pid))

    left, until = left_now(), time.monotonic() + (10 if sys.argv[2] == "killed" else 0)
    while left and time.monotonic() < until:
        time.sleep(0.02)
        left = left_now()
    print("RESULT", json.dumps({"pid_namespace": hello["pid_namespace"], "nobody": nobody.poll() is None,
                                "stranger": stranger.poll() is None, "left": left,
                                "events": result.get("events_raw", "")[-200:]}))
    for p in (nobody, stranger, w):
        p.kill()
""")


def _worker_run(child_uid: int, daemon: str) -> dict:
    """``daemon``: ``killed`` (wait for the clean-up's kills to land) or ``kept`` (look once the clean-up is done)."""
    # (as in_pid_namespace, with the child uid as the script's argv[1])
    p = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            sys.executable,
            "-c",
            WORKER_WITHOUT_NAMESPACE,
            str(child_uid),
            daemon,
        ],
        env={"LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, p.stdout + p.stderr
    return json.loads(lines[-1][len("RESULT ") :])


@needs_root
def test_a_worker_without_a_pid_namespace_never_signals_minus_one():
    """Told ``pid_namespace: True`` by its caller but running in none, the worker kills by uid, never kill(-1):
    bystanders of other uids survive the clean-up, the completion's daemon does not."""
    r = _worker_run(62002, "killed")
    assert r["pid_namespace"] is False
    assert r["nobody"] and r["stranger"], r
    assert r["left"] == [], r  # the daemon of uid 62002 was killed
    assert '"ok": true' in r["events"]


@needs_root
def test_the_worker_never_kills_by_the_uid_of_an_existing_user():
    """A child uid that belongs to a user (65534, nobody) is never the uid a worker kills with."""
    r = _worker_run(65534, "kept")
    assert '"ok": true' in r["events"], r  # the job ran
    assert r["nobody"] and r["stranger"], r
    assert r["left"], r  # nothing was killed by that uid: the completion's daemon (uid 65534) is still there


def test_uid_leases_are_unique_and_skip_existing_users():
    import pwd

    a, b = sandbox._UidLease(65530), sandbox._UidLease(65530)
    try:
        assert a.uid != b.uid
        for lease in (a, b):
            with pytest.raises(KeyError):
                pwd.getpwuid(lease.uid)
    finally:
        a.release()
        b.release()


@pytest.mark.sandbox_breaks
def test_strict_pool_never_falls_back(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_command", lambda limits: None)
    pool = WorkerPool(1, SandboxLimits(isolation="strict"), mode="bwrap")
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        pool.worker_hello()
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):  # a job asks again, and nothing runs weaker
        pool.run(sandbox.build_job("x = 1\ndef f():\n    return 1\n", "f", [], limits=SandboxLimits()))
    assert pool.mode == "bwrap" and pool.started_mode is None
    pool.close()
