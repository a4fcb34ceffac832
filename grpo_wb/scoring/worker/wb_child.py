"""How a job's child is set up before it runs anything (session, descriptors, uid, limits, seccomp), and what a
probe child set up the same way measures (the isolation report's facts)."""
import ctypes
import os
import resource
import signal
import sys

import wb_harness
import wb_protocol as protocol
import wb_remote

_LIBC = None
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
OWN_PID_NS = False
"""Set by the worker: it is pid 1's child in a PID namespace other than its caller's (observed, never told)."""


def _prctl(option, value):
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        return _LIBC.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _seccomp_program(hexed):
    """A seccomp program (built by the scorer with libseccomp, sent as hex) ready for :func:`_load_seccomp`."""
    if not hexed:
        return None
    code = ctypes.create_string_buffer(bytes.fromhex(hexed))
    prog = _SockFprog(len(code.raw) // 8, ctypes.cast(code, ctypes.c_void_p))
    return prog, code  # the buffer kept alive with the struct that points at it


def _load_seccomp(program):
    """Install a seccomp filter on this process and every process it makes (needs no_new_privs); True when loaded."""
    if program is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program[0]), 0, 0) == 0


HASH_SEED = None
"""The worker's ``PYTHONHASHSEED`` (set in main(), before it empties its environment): a candidate's process gets
the same, so a set's order is the same in every process of every worker."""
_CHILD_FILTER = None
"""Set in main(): the filter each job's child loads after its own setsid (``sandbox.child_filter``)."""

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
    if wfd != protocol.EVENT_FD:
        os.dup2(wfd, protocol.EVENT_FD)
    _close_above(protocol.EVENT_FD)
    os.chdir(jobdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = jobdir
    uid = cfg.get("child_uid")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _set_limits(limits)
    _load_seccomp(_CHILD_FILTER)  # no more sessions: all of this job's processes share one CPU autogroup
    # sys.stdin/stdout/stderr wrap fds 0/1/2, which now point at /dev/null and the stderr file.


def _emit_to(wfd):
    def emit(ev):
        data = protocol.event_line(ev)
        while data:
            n = os.write(wfd, data)
            data = data[n:]
    return emit


def child_main(job, wfd, errfd, jobdir, cfg):
    _child_setup(job["limits"], wfd, errfd, jobdir, cfg)
    emit = _emit_to(protocol.EVENT_FD)
    try:
        tester = start_candidate(job, cfg) if wb_harness.needs_tester(job) else None
        wb_harness.run_harness(job, emit, tester)
    except BaseException:
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    try:
        emit({"event": protocol.DONE})  # after the flush: the worker reads stderr as soon as it sees this
    except BaseException:
        pass
    os._exit(0)


CANDIDATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidate.py")
"""The candidate's process of a split job (:func:`wb_harness.needs_tester`)."""


def start_candidate(job, cfg):
    """Start the candidate's process of a split job: forked from this child after its set-up (uid, limits, seccomp,
    session: all inherited), then exec'd, so that it holds nothing of this process's memory (the job's tests and
    expected values, earlier jobs' leftovers) and not the event channel (descriptor 3 becomes its request pipe).
    This process is made non-dumpable: the candidate, same uid, can neither trace it nor open its descriptors."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            hi_r, hi_w = os.dup(req_r), os.dup(rep_w)  # above 4, whatever the pipes got
            os.dup2(hi_r, 3)  # over the event channel
            os.dup2(hi_w, 4)
            _close_above(4)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            env = dict(os.environ, **({"PYTHONHASHSEED": HASH_SEED} if HASH_SEED else {}))  # the worker's set order
            os.execve(sys.executable, [sys.executable, "-s", "-P", "-S", "-B", CANDIDATE], env)
        finally:
            os._exit(127)
    os.close(req_r)
    os.close(rep_w)
    _prctl(PR_SET_DUMPABLE, 0)
    tester = wb_remote.Tester(rep_r, req_w)
    tester.send({"program": job["program"], "entry_point": job["entry_point"],
                 "extra_sys_path": cfg.get("extra_sys_path", [])})
    return tester


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
    facts["sysv_ipc"] = _sysv_ipc()
    try:
        os.setsid()
        facts["new_session"] = "open (setsid succeeded)"
    except OSError as e:
        facts["new_session"] = f"closed ({e.strerror})"
    facts["userns"] = _userns()  # last: where it succeeds, this child is in a user namespace of its own
    return facts


def _sysv_ipc():
    """Whether a child can make a SysV shared-memory segment (it must not: it would outlive the job)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        shmid = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        if shmid >= 0:
            libc.shmctl(shmid, 0, None)  # IPC_RMID
            return "open (shmget succeeded)"
        return f"closed ({os.strerror(ctypes.get_errno())})"
    except BaseException as e:
        return f"unknown ({type(e).__name__})"


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


def _pid_ns():
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
