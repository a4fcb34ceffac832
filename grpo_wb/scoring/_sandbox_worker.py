"""A warm sandbox worker: forks one child per completion (standard library only).

Started by :mod:`grpo_wb.scoring.sandbox` as ``python -s -P -S -B _sandbox_worker.py CONFIG``,
inside bubblewrap when available (own PID, network, IPC and UTS namespaces, a
minimal read-only filesystem, a size-limited tmpfs ``/tmp``). The worker itself
never runs untrusted code (it compiles it, which executes none of it). Per job it:

1. makes a fresh job directory, compiles the job's sources (see
   :func:`compile_ahead`: a compile in a fresh fork pays for its page faults) and forks;
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

Protocol: 4-byte big-endian length + JSON, both directions, on stdin/stdout.
"""
import ctypes
import gc
import json
import os
import pwd
import resource
import select
import shutil
import signal
import struct
import sys
import time
import warnings

# Warm the modules completions commonly import, so a fork finds them loaded.
for _name in ("math", "re", "collections", "itertools", "functools", "heapq", "bisect", "string", "typing",
              "fractions", "decimal", "random", "hashlib", "statistics", "copy", "operator", "datetime",
              "array", "numbers", "enum", "dataclasses", "textwrap", "unicodedata", "cmath", "builtins",
              "atexit", "traceback", "io"):
    try:
        __import__(_name)
    except ImportError:
        pass
import builtins  # noqa: E402

_LIBC = None
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
MAX_EVENT_BYTES = 4 << 20
STREAM_EVERY = 0.005  # at most one streamed message per this many seconds: a chatty child cannot flood the scorer
STDERR_TAIL = 2000


def _prctl(option, value):
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        return _LIBC.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


_CLOSE_RANGE = None  # libc's close_range(2), when the kernel has it (checked once in the worker)


def _find_close_range():
    global _CLOSE_RANGE
    try:
        fn = ctypes.CDLL(None, use_errno=True).close_range
        fn.argtypes = (ctypes.c_uint, ctypes.c_uint, ctypes.c_int)
        if fn(1 << 30, 1 << 30, 0) == 0:  # no such descriptor: a no-op that says the call works
            _CLOSE_RANGE = fn
    except (OSError, AttributeError):
        pass


def _close_above(fd):
    """Close every descriptor above ``fd``: one system call where possible."""
    if _CLOSE_RANGE is not None and _CLOSE_RANGE(fd + 1, 0xFFFFFFFF, 0) == 0:
        return
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else range(fd + 1, 1024):
        if int(name) > fd:
            try:
                os.close(int(name))
            except OSError:
                pass


# ----------------------------------------------------------------------------- value encoding

import collections  # noqa: E402
import re  # noqa: E402

_DICT_LIKE = (collections.Counter, collections.OrderedDict, collections.defaultdict)


class NotBuiltin(Exception):
    pass


def encode(value, depth=0, budget=None):
    """Encode a value built only from builtin types (exact types: subclasses are rejected)."""
    if budget is None:
        budget = [200000]
    budget[0] -= 1
    if budget[0] < 0 or depth > 64:
        raise NotBuiltin("value too large or too deeply nested")
    t = type(value)
    if t is bool or t is type(None) or t is str:
        return value
    if t is int:
        if abs(value) > 1 << 63:  # hex: no digit limit (str() refuses past 4,300 digits), and fast
            return {"$": "bigint", "v": hex(value)}
        return value
    if t is float:
        if value != value or value in (float("inf"), float("-inf")):
            return {"$": "float", "v": repr(value)}
        return value
    if t is list:
        return [encode(v, depth + 1, budget) for v in value]
    if t is tuple:
        return {"$": "tuple", "v": [encode(v, depth + 1, budget) for v in value]}
    if t is dict:
        return {"$": "dict", "v": [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)]
                                   for k, v in value.items()]}
    if t is set or t is frozenset:
        return {"$": t.__name__, "v": [encode(v, depth + 1, budget) for v in value]}
    if t is bytes:
        return {"$": "bytes", "v": value.hex()}
    if t is complex:
        return {"$": "complex", "v": [repr(value.real), repr(value.imag)]}
    # Standard-library value types that references return: converted to their builtin
    # equivalent through the C-level dict/deque methods, so a patched method cannot run.
    if t in _DICT_LIKE:
        return {"$": "dict", "v": [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)]
                                   for k, v in dict.items(value)]}
    if t is collections.deque:
        return [encode(v, depth + 1, budget) for v in list(value)]
    if t is re.Match:
        return True  # a match object is only ever truthy; comparing it to a value fails
    raise NotBuiltin(f"returned a value of non-builtin type {t.__module__}.{t.__qualname__}")


# ----------------------------------------------------------------------------- the harness (runs in the child)


def _short(exc):
    try:
        msg = f"{type(exc).__name__}: {exc}"
    except BaseException:
        msg = type(exc).__name__
    return msg if len(msg) <= 300 else msg[:297] + "..."


def _snapshot(module_names):
    snap = {"builtins": dict(builtins.__dict__)}
    for name in module_names:
        mod = sys.modules.get(name)
        if mod is not None:
            snap[name] = dict(vars(mod))
    return snap


def _tampered(snap):
    """Names the completion changed in builtins or watched modules; restores them."""
    found = []
    for name, saved in snap.items():
        mod = builtins if name == "builtins" else sys.modules.get(name)
        if mod is None:
            found.append(f"module {name} removed")
            continue
        current = vars(mod)
        for k, v in saved.items():
            if current.get(k, _MISSING) is not v:
                found.append(f"{name}.{k}")
        if name == "builtins":
            for k in list(current):
                if k not in saved:
                    found.append(f"builtins.{k} added")
        # restore whatever we can
        try:
            for k in list(current):
                if k not in saved and name == "builtins":
                    del current[k]
            current.update(saved)
        except BaseException:
            pass
    return found


_MISSING = object()


# ----------------------------------------------------------------------------- compiling ahead

_CODE = {}  # (source, filename, mode) -> code object: this job's, compiled by the worker before it forks
COMPILE_AHEAD_MAX = 64 << 10  # larger sources are compiled in the child, under its limits


def _compile(src, filename, mode):
    """The code object the worker compiled ahead, else compiled here."""
    code = _CODE.get((src, filename, mode))
    return code if code is not None else compile(src, filename, mode)


def _ahead(src, filename, mode):
    key = (src, filename, mode)
    if key in _CODE or len(src) > COMPILE_AHEAD_MAX:
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = compile(src, filename, mode)
        except Exception:  # the child compiles it again and reports the error as always
            return
    if not caught:  # a warning is the child's to print (its stderr tail), so it compiles that itself
        _CODE[key] = code


def compile_ahead(job):
    """Compile the job's sources in the worker: a fresh fork's first ``compile`` pays for
    copy-on-write faults, the warm worker's does not. Only a clean compile is kept;
    the child compiles anything else under its own limits, with the same outcome as before.

    The worker empties ``_CODE`` as soon as the child is forked: nothing of one job (its
    program, its exec tests and their expected values) may reach another job's child."""
    for name, mode, src in (("<test_setup>", "exec", job.get("test_setup")), ("<check>", "exec", job.get("check"))):
        if src:
            _ahead(src, name, mode)
    for i, test in enumerate(job["tests"]):
        if test["kind"] == "values":
            for src in test["exprs"]:
                _ahead(src, f"<test {i}>", "eval")
        elif test["kind"] == "exec":
            _ahead(test["code"], f"<test {i}>", "exec")
    _ahead(job["program"], "<candidate>", "exec")


_BASELINE = None  # (snapshot, harness globals), taken once in the worker and inherited by every fork


def take_baseline():
    """Snapshot builtins, the preloaded modules and the harness once, before any job (cheap forks)."""
    global _BASELINE
    names = [n for n, m in sys.modules.items() if m is not None and "." not in n and not n.startswith("_")]
    _BASELINE = (_snapshot(names), dict(globals()))


def run_harness(job, emit):
    """Execute the program and its tests, emitting raw events (no verdicts here)."""
    if _BASELINE is None:
        take_baseline()
    full_snap, harness_globals = _BASELINE
    # Patched builtins or modules matter only to tests decided here (exec tests, check): a value test's
    # values are judged by the scorer, so patching gains nothing there. Snapshotting and checking touch
    # every watched object (copy-on-write faults: ~0.9 ms a fork), so value-only jobs skip both.
    decided_here = bool(job.get("check")) or any(t["kind"] != "values" for t in job["tests"])
    snap = {}
    if decided_here:
        watched = set(job.get("watch_modules", [])) | {"json", "os", "sys", "math", "builtins"}
        snap = {k: v for k, v in full_snap.items() if k in watched}
        late = [n for n in watched - set(snap) if n in sys.modules]
        if late:  # watched but not preloaded: snapshot them now
            snap.update(_snapshot(late))
    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        code = _compile(job["program"], "<candidate>", "exec")
    except (SyntaxError, ValueError, MemoryError) as e:
        emit({"event": "load_error", "error": _short(e)})
        return
    if job.get("script"):
        emit({"event": "loaded"})
        run_script_tests(job, code, emit)
        return
    try:
        exec(code, ns)
    except BaseException as e:  # SystemExit included: leaving early passes nothing
        emit({"event": "load_error", "error": _short(e)})
        return
    found = _tampered(snap) if decided_here else []
    if any(globals().get(k) is not v for k, v in harness_globals.items() if k not in ("__builtins__", "_BASELINE")):
        found.append("harness globals")
        globals().update(harness_globals)
    if found:
        emit({"event": "tamper", "where": "module level", "what": found[:20]})
    # LeetCode style: a class Solution with the entry point as a method is what is called, as APPS's, TACO's,
    # prime_code's and LiveCodeBench's harnesses call Solution().fn, before any module-level name of that name
    # (the APPS prelude's star imports bind merge, sqrt, product ...)
    entry = None
    cls = ns.get("Solution")
    if isinstance(cls, type) and callable(getattr(cls, job["entry_point"], None)):
        try:
            entry = getattr(cls(), job["entry_point"])
        except BaseException as e:
            emit({"event": "load_error", "error": _short(e)})
            return
    if entry is None:
        entry = ns.get(job["entry_point"])
    if not callable(entry):
        emit({"event": "load_error", "error": f"NameError: entry point {job['entry_point']!r} is not defined"})
        return
    emit({"event": "loaded"})
    setup = _compile(job["test_setup"], "<test_setup>", "exec") if job.get("test_setup") else None

    def guarded(*args, **kwargs):
        # In exec tests the comparison happens here, in the child: refuse return values
        # that are not plain builtins, so an object with a forged __eq__ never reaches it.
        result = entry(*args, **kwargs)
        encode(result)
        return result

    # A class entry point (KodCode's `from solution import Stack`) returns instances the tests inspect
    # themselves: there is no plain value to insist on, so a class is not guarded.
    guard = not isinstance(entry, type)

    def fresh_ns(exec_test=False):
        tns = dict(ns)
        tns["candidate"] = guarded if exec_test and guard else entry
        if exec_test and guard:
            tns[job["entry_point"]] = guarded
        if setup is not None:
            exec(setup, tns)
        return tns

    for i, test in enumerate(job["tests"]):
        t0 = time.perf_counter()
        if test["kind"] == "values":
            values = []
            try:
                tns = fresh_ns()
                for src in test["exprs"]:
                    values.append(encode(eval(_compile(src, f"<test {i}>", "eval"), tns)))
                ev = {"event": "values", "index": i, "values": values}
            except NotBuiltin as e:
                ev = {"event": "values", "index": i, "error": f"NotBuiltin: {e}"}
            except BaseException as e:
                ev = {"event": "values", "index": i, "error": _short(e)}
        else:
            try:
                tns = fresh_ns(exec_test=True)
                exec(_compile(test["code"], f"<test {i}>", "exec"), tns)
                ev = {"event": "test", "index": i, "ok": True}
            except BaseException as e:
                ev = {"event": "test", "index": i, "ok": False,
                      "error": "AssertionError" if isinstance(e, AssertionError) and not str(e) else _short(e)}
        if test["kind"] != "values":
            # value tests are decided by the scorer from the values; exec tests ran here, so
            # check (and undo) what the completion may have patched while they ran
            found = _tampered(snap)
            if found:
                emit({"event": "tamper", "where": f"test {i}", "what": found[:20]})
        ev["seconds"] = time.perf_counter() - t0
        emit(ev)
    if job.get("check"):
        try:
            tns = fresh_ns(exec_test=True)
            exec(_compile(job["check"], "<check>", "exec"), tns)
            tns["check"](guarded)
            ev = {"event": "check", "ok": True}
        except BaseException as e:
            ev = {"event": "check", "ok": False, "error": _short(e)}
        found = _tampered(snap)
        if found:
            emit({"event": "tamper", "where": "check", "what": found[:20]})
        emit(ev)


MAX_STDOUT = 1 << 20


def run_script_tests(job, code, emit):
    """stdin/stdout tests: run the whole program once per test on that test's input."""
    import io

    real_stdin, real_stdout = sys.stdin, sys.stdout
    for i, test in enumerate(job["tests"]):
        t0 = time.perf_counter()
        sys.stdin = io.TextIOWrapper(io.BytesIO(test["input"].encode()), encoding="utf-8")
        buf = io.BytesIO()
        out = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
        sys.stdout = out
        ev = {"event": "stdout", "index": i}
        try:
            exec(code, {"__name__": "__main__", "__builtins__": builtins})
        except SystemExit:
            pass  # a script may end with exit(); what it printed stands
        except BaseException as e:
            ev["error"] = _short(e)
        sys.stdin, sys.stdout = real_stdin, real_stdout
        try:
            out.flush()
            out.detach()  # keep buf open when the wrapper is collected
        except BaseException:
            pass
        try:
            data = buf.getvalue()
        except ValueError:  # the program closed its stdout
            data = b""
        if "error" not in ev:
            if len(data) > MAX_STDOUT:
                ev["error"] = "output too large"
            else:
                ev["output"] = data.decode("utf-8", "replace")
        ev["seconds"] = time.perf_counter() - t0
        emit(ev)


# ----------------------------------------------------------------------------- the child process


RLIMITS = {"RLIMIT_AS": "memory_bytes", "RLIMIT_CPU": "cpu_seconds", "RLIMIT_FSIZE": "max_file_bytes",
           "RLIMIT_NOFILE": "max_open_files", "RLIMIT_NPROC": "max_processes", "RLIMIT_CORE": None}
"""Each resource limit a child gets, and the job's limits key holding its value (core dumps: always 0)."""


def _requested(lim, key):
    return 0 if key is None else lim.get(key)


def _set_limits(lim):
    for name, key in RLIMITS.items():
        value = _requested(lim, key)
        if value is None:
            continue
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (ValueError, OSError):
            pass  # refused: the probe child reports it as not set


def _child_setup(limits, wfd, errfd, jobdir, cfg):
    """Everything a job's child does before it runs anything: the probe child does exactly the same."""
    # Each line here costs copy-on-write page faults in a fresh fork: what can be set once in
    # the worker (environment, no_new_privs, sys.path, signal dispositions) is set there.
    os.setsid()
    if not OWN_PID_NS:  # in a PID namespace the child dies with the worker anyway
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(errfd, 2)
    if wfd != 3:
        os.dup2(wfd, 3)
    _close_above(3)
    os.chdir(jobdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = jobdir
    uid = cfg.get("child_uid")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _set_limits(limits)
    # sys.stdin/stdout/stderr wrap fds 0/1/2, which now point at /dev/null and the stderr file.


def _emit_to(wfd):
    def emit(ev):
        data = (json.dumps(ev) + "\n").encode()
        while data:
            n = os.write(wfd, data)
            data = data[n:]
    return emit


def child_main(job, wfd, errfd, jobdir, cfg):
    _child_setup(job["limits"], wfd, errfd, jobdir, cfg)
    emit = _emit_to(3)
    try:
        run_harness(job, emit)
    except BaseException:
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    try:
        emit({"event": "done"})  # after the flush: the worker reads stderr as soon as it sees this
    except BaseException:
        pass
    os._exit(0)


def _measure(cfg):
    """What a job's child actually runs under, measured from inside it (the isolation report's facts)."""
    import socket

    limits = {}
    for name, key in RLIMITS.items():
        soft, _ = resource.getrlimit(getattr(resource, name))
        limits[name] = {"requested": _requested(cfg["probe_limits"], key),
                        "in_force": None if soft == resource.RLIM_INFINITY else soft}
    net = "reachable"
    try:
        s = socket.create_connection(("127.0.0.1", cfg["probe_port"]), timeout=1)
        s.close()
    except OSError as e:
        net = f"blocked ({e.strerror or e})"
    try:
        st = os.stat("/tmp")
        tmp_private = [st.st_dev, st.st_ino] != list(cfg.get("caller_tmp") or [])
    except OSError:
        tmp_private = False
    facts = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "limits": limits, "network": net,
             "tmp_private": tmp_private, "environment": sorted(os.environ), "cwd": os.getcwd(),
             "pid_ns": _pid_ns(), "root_entries": sorted(os.listdir("/"))}
    facts["userns"] = _userns()  # last: where it succeeds, this child is in a user namespace of its own
    return facts


def _userns():
    """Whether a child can make a user namespace of its own (it must not: mounts outside every limit)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER
            return "open (unshare succeeded)"
        return f"closed ({os.strerror(ctypes.get_errno())})"
    except BaseException as e:
        return f"unknown ({type(e).__name__})"


def probe_child(cfg):
    """Fork a child set up exactly as a job's child is and bring back what it measured (or why not)."""
    jobdir = _make_jobdir(cfg, "probe")
    errfd = os.open(os.path.join(jobdir, ".stderr"), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rfd)
            _child_setup(cfg["probe_limits"], wfd, errfd, jobdir, cfg)
            _emit_to(3)(_measure(cfg))
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
    shutil.rmtree(jobdir, ignore_errors=True)
    try:
        return json.loads(buf)
    except ValueError:
        return {"error": "the probe child reported nothing"}


# ----------------------------------------------------------------------------- the worker loop


def _read_exact(fd, n):
    """n bytes from fd, or None at EOF; read into one buffer (linear: a job can carry 200 MB of stdin)."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if not k:
            return None
        got += k
    return buf


def _recv():
    """The next message from the scorer, or None at EOF."""
    head = _read_exact(0, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    data = _read_exact(0, n)
    if data is None:
        return None
    msg = json.loads(data)
    del data
    sizes = msg.pop("blobs", None)
    if sizes:  # the stdin of stdio tests, raw, in test order (sandbox.Worker._send)
        stdio = [t for t in msg["tests"] if t.get("kind") == "stdio"]
        for t, size in zip(stdio, sizes):
            blob = _read_exact(0, size)
            if blob is None:
                return None
            t["input"] = blob.decode("utf-8", "surrogatepass")
            del blob
    return msg


def _send(obj):
    data = json.dumps(obj).encode()
    os.write(1, struct.pack(">I", len(data)))
    view = memoryview(data)
    while view:
        n = os.write(1, view)
        view = view[n:]


def _kill_leftovers(cfg, pgid):
    """Kill the child's process group and whatever else it started; the child's ``(wait status,
    rusage)`` when it was reaped here (else None)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if OWN_PID_NS:
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


def _pid_ns():
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break


def _probe(cfg):
    """What this worker can actually enforce, measured here and in a probe child (sent to the scorer once)."""
    return {"pid": os.getpid(), "uid": os.getuid(), "child_uid": cfg.get("child_uid"),
            "pid_namespace": OWN_PID_NS, "child": probe_child(cfg)}


def _make_jobdir(cfg, name):
    jobdir = os.path.join(cfg.get("job_root", "/tmp"), name)
    try:
        os.mkdir(jobdir, 0o700)
    except FileExistsError:  # left by a job whose clean-up failed: it must not carry over
        shutil.rmtree(jobdir)
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
        compile_ahead(payload)
        pid = os.fork()
    except BaseException:
        _CODE.clear()
        raise
    if pid == 0:
        try:
            os.close(rfd)
            job = payload
            child_main(job, wfd, errfd, jobdir, cfg)
        finally:
            os._exit(1)
    _CODE.clear()
    os.close(wfd)
    timeout = payload["limits"]["timeout"]
    stream_after = payload.get("stream_after")
    del payload
    deadline = t0 + timeout
    # streaming: complete lines of buf[:sent] went to the scorer already; buf[:ready] are complete lines
    flush_at = None if stream_after is None else t0 + stream_after
    sent = ready = 0
    listen = [rfd] if flush_at is None else [rfd, 0]
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
            if len(buf) > MAX_EVENT_BYTES:
                overflow = True
                break
            if b'{"event": "done"' in buf[-len(chunk) - 64:]:
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
            flush_at = time.monotonic() + STREAM_EVERY

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
        shutil.rmtree(jobdir, ignore_errors=True)
        return status

    if done and not overflow:
        # The child said it is done (after flushing stderr): answer now, and let it exit and
        # clean up while the scorer reads the answer. Nothing is left running at the next job.
        result = {"events_raw": bytes(buf[sent:]).decode("utf-8", "replace"), "timed_out": False,
                  "returncode": None, "duration": time.monotonic() - t0, "stderr_tail": read_tail(),
                  "overflow": False, "stopped": False}
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
    return {"events_raw": bytes(buf[sent:]).decode("utf-8", "replace"), "timed_out": timed_out, "returncode": rc,
            "duration": duration, "stderr_tail": tail, "overflow": overflow, "stopped": stopped,
            "cpu_s": cpu, "max_rss_mb": rss}, None


OWN_PID_NS = False
"""Observed in main(): this worker is pid 1's child in a PID namespace other than its caller's."""
KILL_UID = None
"""Set in main() when the worker runs as root: the children's uid, when it is not 0 and belongs to no user of
this machine; without a PID namespace, leftovers are killed as that uid (never by ``kill(-1)`` as root)."""


def main():
    global OWN_PID_NS, KILL_UID
    cfg = json.loads(sys.argv[1])
    ns = _pid_ns()
    OWN_PID_NS = ns is not None and ns != cfg.get("caller_pid_ns") and os.getppid() == 1
    uid = cfg.get("child_uid")
    if uid is not None and uid != 0 and os.getuid() == 0 and not _is_user(uid):
        KILL_UID = uid  # checked once: the uid is this worker's for its whole life
    _prctl(PR_SET_DUMPABLE, 0)  # children (same uid or not) cannot ptrace or read our memory
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.makedirs(cfg.get("job_root", "/tmp"), exist_ok=True)
    # Set once here what every child inherits (cheaper than per fork).
    os.environ.clear()
    home = cfg.get("job_root", "/tmp")
    os.environ.update({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home})
    _prctl(PR_SET_NO_NEW_PRIVS, 1)  # no setuid binary ever grants privileges to a child
    if OWN_PID_NS:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a completion become ours to reap (and to count)
    _find_close_range()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversize write fails with EFBIG instead
    sys.path.extend(cfg.get("extra_sys_path", []))
    hello = _probe(cfg)
    take_baseline()
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
        # No live object of this job (program, values) may reach the next job's child.
        del job, result, cleanup
        gc.collect()


if __name__ == "__main__":
    main()
