"""How a job's child is set up before it runs anything (session, descriptors, uid, limits, seccomp), and what a
probe child set up the same way measures (the isolation report's facts)."""

import ctypes
import json
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
    """A seccomp program (built by the scorer with libseccomp, sent as hex) ready for :func:`_load_seccomp`: its
    struct's address and libc's ``prctl`` are looked up here, once in the worker, so a job's child only makes the
    call (with a ``CDLL`` made and ``prctl`` looked up in each child, its seccomp step took 0.47 ms)."""
    if not hexed:
        return None
    code = ctypes.create_string_buffer(bytes.fromhex(hexed))
    prog = _SockFprog(len(code.raw) // 8, ctypes.cast(code, ctypes.c_void_p))
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong)
    return prctl, ctypes.addressof(prog), prog, code  # the struct and its buffer kept alive with the address


def _load_seccomp(program):
    """Install a seccomp filter on this process and every process it makes (needs no_new_privs); True when loaded."""
    if program is None:
        return False
    prctl, address = program[0], program[1]
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, address, 0, 0) == 0


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


RLIMITS = {
    "RLIMIT_AS": "memory_bytes",
    "RLIMIT_CPU": "cpu_seconds",
    "RLIMIT_FSIZE": "max_file_bytes",
    "RLIMIT_NOFILE": "max_open_files",
    "RLIMIT_NPROC": "max_processes",
    "RLIMIT_CORE": None,
}
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


TESTS_FD = 4
"""In a split job's tester, until it has read its tests: the worker's stdin, where they wait."""


def _child_setup(limits, wfd, errfd, jobdir, cfg, keep_stdin=False):
    """Everything a job's child does before it runs anything: the probe child does exactly the same.
    ``keep_stdin``: a split job's tester keeps the worker's stdin as :data:`TESTS_FD`."""
    # Each line here costs copy-on-write page faults in a fresh fork: what can be set once in
    # the worker (environment, no_new_privs, sys.path, signal dispositions) is set there.
    tests_src = os.dup(0) if keep_stdin else None
    os.setsid()
    if not OWN_PID_NS:  # in a PID namespace the child dies with the worker anyway
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(errfd, 2)
    if wfd != protocol.EVENT_FD:
        os.dup2(wfd, protocol.EVENT_FD)
    if tests_src is not None and tests_src != TESTS_FD:
        os.dup2(tests_src, TESTS_FD)
    _close_above(protocol.EVENT_FD if tests_src is None else TESTS_FD)
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
    split = bool(job.get("tester"))
    _child_setup(job["limits"], wfd, errfd, jobdir, cfg, keep_stdin=split)
    emit = _emit_to(protocol.EVENT_FD)
    try:
        tester = start_candidate(job, emit) if split else None
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


def start_candidate(job, emit):
    """In a split job's child (the tester): fork the process that runs the candidate, then read the tests.

    The fork comes first: this process then holds nothing a test needs to hide (the worker never read the tests,
    :func:`wb_protocol.split_job`), and the candidate's process inherits exactly that. It gets no event channel
    (its descriptor 3 is its request pipe) and waits until the tests are read, so it cannot disturb the reading.
    This process is not dumpable: the candidate, same uid, can neither trace it nor open its descriptors."""
    _prctl(PR_SET_DUMPABLE, 0)
    _one_cpu()
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            keep = [os.dup(req_r), os.dup(rep_w), os.dup(go_r)]  # above everything, whatever numbers the pipes got
            for fd, at in zip(keep, (protocol.EVENT_FD, TESTS_FD, TESTS_FD + 1)):
                os.dup2(fd, at)  # over the event channel and the worker's stdin
            _close_above(TESTS_FD + 1)
            if not OWN_PID_NS:
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            os.read(TESTS_FD + 1, 1)  # the tests are read (or the tester is gone)
            os.close(TESTS_FD + 1)
            wb_harness.serve_candidate(job, wb_remote.Server(protocol.EVENT_FD, TESTS_FD))
        finally:
            os._exit(0)
    for fd in (req_r, rep_w, go_r):
        os.close(fd)
    job.update(_read_tests(job["tester"]))
    emit({"event": protocol.TESTS_READ})  # the worker's stdin is the worker's again
    os.write(go_w, b"g")
    os.close(go_w)
    return wb_remote.Tester(rep_r, req_w)


def _one_cpu():
    """Keep the tester and the candidate's process (which take turns, never run together) on the CPU this process
    is on: a call then hands over on one core, not by waking another (measured: 150 us a call across cores)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            cpu = int(f.read().rsplit(b")", 1)[1].split()[36])  # field 39, "processor"
        os.sched_setaffinity(0, {cpu})
    except (OSError, ValueError, IndexError):
        pass


def _read_tests(size):
    """The tests the scorer sent after the job, from the worker's stdin (then closed here)."""
    buf = protocol.read_exact(TESTS_FD, size)
    if buf is None:
        raise EOFError("the worker's stdin ended before the tests")
    os.close(TESTS_FD)
    (n,) = protocol.HEADER.unpack(buf[: protocol.HEADER.size])
    return json.loads(bytes(buf[protocol.HEADER.size : protocol.HEADER.size + n]))


def _measure(cfg):
    """What a job's child actually runs under, measured from inside it (the isolation report's facts)."""
    import socket

    limits = {}
    for name, key in RLIMITS.items():
        soft, _ = resource.getrlimit(getattr(resource, name))
        limits[name] = {
            "requested": _requested(cfg["probe_limits"], key),
            "in_force": None if soft == resource.RLIM_INFINITY else soft,
        }
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
    facts = {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": os.getgroups(),
        "limits": limits,
        "network": net,
        "tmp_private": tmp_private,
        "environment": sorted(os.environ),
        "cwd": os.getcwd(),
        "pid_ns": _pid_ns(),
        "root_entries": sorted(os.listdir("/")),
    }
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
