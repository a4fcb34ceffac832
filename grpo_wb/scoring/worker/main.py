"""A warm sandbox worker: forks one child per completion (standard library only).

Started by :mod:`grpo_wb.scoring.sandbox` as ``python -s -P -S -B worker/main.py CONFIG``,
inside bubblewrap when available (own PID, network, IPC and UTS namespaces, a
minimal read-only filesystem, a size-limited tmpfs ``/tmp``). The worker itself
never runs untrusted code (it compiles it, which executes none of it). Per job it:

1. makes a fresh job directory, compiles the job's sources (see
   :func:`wb_harness.compile_ahead`: a compile in a fresh fork pays for its page faults) and forks;
2. in the child: new session, stdin/stdout to /dev/null, stderr to a capped
   file, every other descriptor closed except the event pipe, resource limits,
   drop to an unprivileged uid (when running as root), ``no_new_privs``,
   parent-death signal; then the harness below runs the completion;
3. enforces the wall-clock deadline, kills the child's process group and
   (inside a PID namespace) every process left in the namespace, removes the
   job directory, and sends the child's raw events back to the scorer.

With ``stream_after`` set in the job, the worker also forwards the child's complete
event lines as they arrive (``{"partial": LINES}``, once the child has run that long:
fast completions cost no extra message) and listens for ``{"stop": true}`` from the
scorer, which has seen a failing test: it then kills the child as on a timeout and
sends the final result with ``"stopped": true``. That result carries only the lines
not streamed yet.

The scorer -- never this worker or the child -- decides the verdict from those
events. For value tests the child only reports the values its calls produced,
encoded from builtin types; the expected values never reach this process.

The protocol with the scorer and the child: :mod:`wb_protocol`; the child's set-up: :mod:`wb_child`;
what it runs: :mod:`wb_harness`.
"""

import gc
import json
import os
import pwd
import select
import shutil
import signal
import sys
import time

# Warm the modules completions commonly import, so a fork finds them loaded. Not more: every MiB the worker holds
# costs each fork (page tables copied, pages faulted in the child and torn down at its exit) some 0.1 ms on the
# 2-core machine, twice for a job split into tester and candidate, while a completion that imports a module left out
# pays its import once (dataclasses, hashlib and statistics, 1.8 MiB between them, left out: issue 45, point 4).
for _name in (
    "math",
    "re",
    "collections",
    "itertools",
    "functools",
    "heapq",
    "bisect",
    "string",
    "typing",
    "fractions",
    "decimal",
    "random",
    "copy",
    "operator",
    "datetime",
    "array",
    "numbers",
    "enum",
    "textwrap",
    "unicodedata",
    "cmath",
    "builtins",
    "atexit",
    "traceback",
    "io",
):
    try:
        __import__(_name)
    except ImportError:
        pass

# The sibling modules, loaded as top-level modules (this directory holds nothing else); forks inherit them.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wb_child  # noqa: E402
import wb_harness  # noqa: E402
import wb_mounts  # noqa: E402
import wb_protocol as protocol  # noqa: E402

del sys.path[0]

STDERR_TAIL = 2000


# ----------------------------------------------------------------------------- the worker loop


def _recv():
    """The next message from the scorer, or None at EOF."""
    head = protocol.read_exact(0, protocol.HEADER.size)
    if head is None:
        return None
    (n,) = protocol.HEADER.unpack(head)
    data = protocol.read_exact(0, n)
    if data is None:
        return None
    msg = json.loads(data)
    del data
    sizes = msg.pop("blobs", None)
    if sizes:  # the stdin of stdio tests, raw, in test order (sandbox.Worker._send)
        stdio = [t for t in msg["tests"] if t.get("kind") == "stdio"]
        for t, size in zip(stdio, sizes):
            blob = protocol.read_exact(0, size)
            if blob is None:
                return None
            t["input"] = blob.decode("utf-8", "surrogatepass")
            del blob
    return msg


def _send(obj):
    protocol.write_all(1, protocol.frame(obj))


def _kill_leftovers(cfg, pgid):
    """Kill the child's process group and whatever else it started; the child's ``(wait status,
    rusage)`` when it was reaped here (else None)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if wb_child.OWN_PID_NS:
        # Observed, never taken from the caller: this worker is the child of pid 1 in a PID namespace
        # other than the caller's, and its child subreaper: every process a completion started,
        # orphaned or not, is its descendant. Kill everything in the namespace, reap, and repeat until
        # waitpid says no child is left: then nothing is (no /proc scan, no polling).
        status = None
        for _ in range(10000):  # a fork bomb may still be forking during a sweep
            try:
                os.kill(-1, signal.SIGKILL)  # everything in our PID namespace except us and its init
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p, st, ru = os.wait4(-1, 0)  # everything alive was just sent SIGKILL: this returns
            except ChildProcessError:
                break
            if p == pgid:
                status = (st, ru)
        return status
    if KILL_UID is not None:
        # No PID namespace: kill every process of the per-worker uid, a uid no user of this machine has
        # (and the scorer holds a lock on, so no other worker shares it); never kill(-1) as root.
        pid = os.fork()
        if pid == 0:
            try:
                os.setresuid(KILL_UID, KILL_UID, 0)
                os.kill(-1, signal.SIGKILL)
            except BaseException:
                pass
            os._exit(0)
        os.waitpid(pid, 0)
    _reap()
    return None


def _is_user(uid):
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break


def probe_child(cfg):
    """Fork a child set up exactly as a job's child is and bring back what it measured (or why not)."""
    jobdir = _make_jobdir(cfg, "probe")
    errfd = os.open(os.path.join(jobdir, ".stderr"), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rfd)
            wb_child._child_setup(cfg["probe_limits"], wfd, errfd, jobdir, cfg)
            wb_child._emit_to(protocol.EVENT_FD)(wb_child._measure(cfg))
        finally:
            os._exit(0)
    os.close(wfd)
    buf = bytearray()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r, _, _ = select.select([rfd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(rfd, 65536) if r else b""
        if not chunk:
            break
        buf += chunk
    _kill_leftovers(cfg, pid)
    os.close(rfd)
    os.close(errfd)
    _wipe(jobdir)
    try:
        return json.loads(buf)
    except ValueError:
        return {"error": "the probe child reported nothing"}


def _probe(cfg):
    """What this worker can actually enforce, measured here and in a probe child (sent to the scorer once)."""
    return {
        "pid": os.getpid(),
        "uid": os.getuid(),
        "child_uid": cfg.get("child_uid"),
        "pid_namespace": wb_child.OWN_PID_NS,
        "child": probe_child(cfg),
    }


_DIRTY: list[str] = []
"""What the last clean-up could not remove (the worker retires after sending the job's result)."""
_UNREAD: list[bool] = []
"""Set when a split job's tester never said it read its tests: stdin is out of step (the worker retires)."""


def _wipe(path, keep_top=False):
    """Remove ``path`` (only its entries with ``keep_top``) whatever a job left there: any depth (past Python's
    recursion limit and PATH_MAX), 10^5 entries, FIFOs, sockets, modes the job chose. Symlinks are removed, never
    followed. True when nothing is left; else the path is noted in ``_DIRTY``."""
    if not os.path.lexists(path):
        return True
    try:
        if keep_top:
            for entry in os.listdir(path):
                full = os.path.join(path, entry)
                if os.path.isdir(full) and not os.path.islink(full):
                    shutil.rmtree(full)
                else:
                    os.unlink(full)
        else:
            shutil.rmtree(path)
        return True
    except (OSError, RecursionError):
        pass
    # Coreutils walk trees of any depth (fts, by descriptor); chmod first: a job may have made its dirs 000
    # (root in the sandbox needs no such help, a worker running as the caller does).
    import subprocess

    targets = [os.path.join(path, e) for e in os.listdir(path)] if keep_top else [path]
    protocol.remove_by_coreutils(targets, 120, ignore=(OSError, subprocess.SubprocessError))
    left = bool(os.listdir(path)) if keep_top and os.path.isdir(path) else os.path.lexists(path)
    if left:
        _DIRTY.append(path)
    return not left


def _space_back(cfg):
    """In a private tmpfs (bubblewrap), the jobs' space is all back: else something outlived its job."""
    if BASE_FREE is None:
        return True
    try:
        st = os.statvfs(cfg.get("job_root", "/tmp"))
    except OSError:
        return False
    blocks, inodes = BASE_FREE
    return st.f_bfree * st.f_frsize >= blocks - (256 << 10) and st.f_ffree >= inodes - 16


BASE_FREE = None
"""(free bytes, free inodes) of the worker's private tmpfs after its probe: what every job must give back."""


def _make_jobdir(cfg, name):
    jobdir = os.path.join(cfg.get("job_root", "/tmp"), name)
    try:
        os.mkdir(jobdir, 0o700)
    except FileExistsError:  # left by a job whose clean-up failed: it must not carry over
        if not _wipe(jobdir):
            raise OSError(f"cannot remove {jobdir}, left by an earlier job") from None
        os.mkdir(jobdir, 0o700)
    uid = cfg.get("child_uid")
    if uid is not None:
        os.chown(jobdir, uid, uid)
    return jobdir


def run_job(job, cfg, seq):
    jobdir = _make_jobdir(cfg, f"job{seq}")
    # The worker opens the child's stderr and reads it back through this descriptor, never by
    # path: the job directory is the child's, and a symlink planted there must not make the
    # worker (root in the sandbox) read a file the child cannot.
    errfd = os.open(os.path.join(jobdir, ".stderr"), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    rfd, wfd = os.pipe()
    t0 = time.monotonic()
    payload = job
    del job
    try:
        wb_harness.compile_ahead(payload)
        pid = os.fork()
    except BaseException:
        wb_harness._CODE.clear()
        raise
    if pid == 0:
        try:
            os.close(rfd)
            job = payload
            wb_child.child_main(job, wfd, errfd, jobdir, cfg)
        finally:
            os._exit(1)
    wb_harness._CODE.clear()
    os.close(wfd)
    timeout = payload["limits"]["timeout"]
    stream_after = payload.get("stream_after")
    # A split job's tests follow on stdin, for the tester alone: stdin is not ours again until it says it read them
    # (its first event). If it never does, where stdin stands is unknown: the worker retires after this job.
    split = bool(payload.get("tester"))
    del payload
    deadline = t0 + timeout
    # streaming: complete lines of buf[:sent] went to the scorer already; buf[:ready] are complete lines
    flush_at = None if stream_after is None else t0 + stream_after
    sent = ready = 0
    listen = [rfd] if flush_at is None or split else [rfd, 0]
    buf = bytearray()
    timed_out = overflow = done = stopped = False
    while True:
        now = time.monotonic()
        left = deadline - now
        if left <= 0:
            timed_out = True
            break
        if ready > sent:
            left = min(left, max(0.0, flush_at - now))
        r, _, _ = select.select(listen, [], [], left)
        if rfd in r:
            chunk = os.read(rfd, 65536)
            if not chunk:
                break
            buf += chunk
            if split and 0 not in listen and flush_at is not None:
                listen.append(0)
            if len(buf) > protocol.MAX_EVENT_BYTES:
                overflow = True
                break
            if protocol.DONE_MARK in buf[-len(chunk) - 64 :]:
                done = True  # a background process may keep the pipe open: do not wait for EOF
                break
            if flush_at is not None:
                ready = buf.rfind(b"\n", sent) + 1 or sent
        if 0 in r:
            msg = _recv()
            if msg is None or msg.get("stop"):  # the scorer has its verdict (or is gone)
                stopped = True
                break
        if ready > sent and time.monotonic() >= flush_at:
            _send({"partial": bytes(buf[sent:ready]).decode("utf-8", "replace")})
            sent = ready
            flush_at = time.monotonic() + protocol.STREAM_EVERY

    def read_tail():
        try:
            size = os.fstat(errfd).st_size
            return os.pread(errfd, STDERR_TAIL, max(0, size - STDERR_TAIL)).decode("utf-8", "replace") if size else ""
        except OSError:
            return ""

    def cleanup(status=None):
        reaped = _kill_leftovers(cfg, pid)
        if status is None:
            status = reaped
        if status is None:
            try:
                _, st, ru = os.wait4(pid, 0)
                status = (st, ru)
            except ChildProcessError:
                status = None
        os.close(rfd)
        os.close(errfd)
        _wipe(jobdir)
        for shared in cfg.get("wipe_after_job", ()):  # /dev/shm, where a job may write (``shm_bytes``)
            _wipe(shared, keep_top=True)
        return status

    if split and not buf:
        _UNREAD.append(True)
    if done and not overflow:
        # The child said it is done (after flushing stderr): answer now, and let it exit and
        # clean up while the scorer reads the answer. Nothing is left running at the next job.
        result = {
            "events_raw": bytes(buf[sent:]).decode("utf-8", "replace"),
            "timed_out": False,
            "returncode": None,
            "duration": time.monotonic() - t0,
            "stderr_tail": read_tail(),
            "overflow": False,
            "stopped": False,
        }
        return result, cleanup
    status = None
    if not (timed_out or stopped or overflow):  # a flood is decided too: no need to wait for the deadline
        # the pipe closed: the child is exiting; give it until the deadline
        while time.monotonic() < deadline:
            p, st, ru = os.wait4(pid, os.WNOHANG)
            if p:
                status = (st, ru)
                break
            time.sleep(0.0005)
        else:
            timed_out = True
    duration = time.monotonic() - t0
    tail = read_tail()
    status = cleanup(status)
    rc = cpu = rss = None
    if status is not None:
        st, ru = status
        rc = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
        cpu, rss = ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024  # the child's own CPU seconds; peak RSS in MiB
    return {
        "events_raw": bytes(buf[sent:]).decode("utf-8", "replace"),
        "timed_out": timed_out,
        "returncode": rc,
        "duration": duration,
        "stderr_tail": tail,
        "overflow": overflow,
        "stopped": stopped,
        "cpu_s": cpu,
        "max_rss_mb": rss,
    }, None


KILL_UID = None
"""Set in main() when the worker runs as root: the children's uid, when it is not 0 and belongs to no user of
this machine; without a PID namespace, leftovers are killed as that uid (never by ``kill(-1)`` as root)."""


def main():
    global KILL_UID, BASE_FREE
    cfg = json.loads(sys.argv[1])
    ns = wb_child._pid_ns()
    # bubblewrap's init is pid 1 and this worker its child; under util-linux's unshare this worker is pid 1 itself
    wb_child.OWN_PID_NS = ns is not None and ns != cfg.get("caller_pid_ns") and 1 in (os.getppid(), os.getpid())
    if cfg.get("mounts"):
        wb_mounts.setup(cfg)  # before anything is written to /tmp: the private tmpfs goes over it first
    uid = cfg.get("child_uid")
    if uid is not None and uid != 0 and os.getuid() == 0 and not _is_user(uid):
        KILL_UID = uid  # checked once: the uid is this worker's for its whole life
    wb_child._prctl(wb_child.PR_SET_DUMPABLE, 0)  # children (same uid or not) cannot ptrace or read our memory
    wb_child._prctl(wb_child.PR_SET_PDEATHSIG, signal.SIGKILL)
    os.makedirs(cfg.get("job_root", "/tmp"), exist_ok=True)
    # Set once here what every child inherits (cheaper than per fork).
    os.environ.clear()
    home = cfg.get("job_root", "/tmp")
    os.environ.update({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home})
    wb_child._prctl(wb_child.PR_SET_NO_NEW_PRIVS, 1)  # no setuid binary ever grants privileges to a child
    wb_child._CHILD_FILTER = wb_child._seccomp_program(cfg.get("child_filter"))
    if cfg.get("worker_filter") and not wb_child._load_seccomp(wb_child._seccomp_program(cfg["worker_filter"])):
        raise SystemExit("grpo_wb worker: could not load the sandbox's seccomp filter")
    if wb_child.OWN_PID_NS:
        wb_child._prctl(
            wb_child.PR_SET_CHILD_SUBREAPER, 1
        )  # orphans of a completion become ours to reap (and to count)
    wb_child._find_close_range()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversize write fails with EFBIG instead
    sys.path.extend(cfg.get("extra_sys_path", []))
    hello = _probe(cfg)
    if cfg.get("private_tmp"):
        st = os.statvfs(cfg.get("job_root", "/tmp"))
        BASE_FREE = (st.f_bfree * st.f_frsize, st.f_ffree)
    wb_harness.take_baseline()
    gc.collect()
    gc.freeze()  # forks then share these objects without the collector touching their pages
    _send({"hello": hello})
    seq = 0
    while True:
        job = _recv()
        if job is None:
            return
        if job.get("stop"):
            continue  # it crossed the result of the job it was meant for
        seq += 1
        cleanup = None
        try:
            result, cleanup = run_job(job, cfg, seq)
        except Exception as e:  # report, stay alive
            result = {"sandbox_error": f"worker: {type(e).__name__}: {e}"}
        _send(result)
        if cleanup is not None:
            cleanup()
        if _DIRTY or _UNREAD or not _space_back(cfg):
            # What this job left cannot be removed: never hand it to the next job. The result is sent; the
            # next job, still unread, goes to a fresh worker with a fresh tmpfs (the scorer sees RETIRED).
            os._exit(protocol.RETIRED)
        # No live object of this job (program, values) may reach the next job's child.
        del job, result, cleanup
        gc.collect()


if __name__ == "__main__":
    main()
