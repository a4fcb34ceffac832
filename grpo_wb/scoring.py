"""Score completions: extract code, run it in the sandbox, decide a status and a reward.

Statuses (one per completion):

``pass``           the program loaded and passed (``check`` when the task has one, else all tests)
``fail``           it loaded and ran, but some test failed or raised
``error``          it could not be loaded: syntax error, exception at import time, missing
                   entry point, or the process died (memory limit, crash, early exit)
``timeout``        the wall-clock deadline (or the CPU limit) stopped it
``parse_failure``  no usable code was found in the completion; nothing was executed
``sandbox_error``  the sandbox itself failed; the completion is not to blame

Scoring runs completions in parallel (one thread per worker, each waiting on
its own child process), keeps at most ``2 x workers`` jobs in flight so memory
stays flat, yields results in input order, and executes identical
``(task, program)`` pairs once per scorer (duplicates are common at low
temperature).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator

from .extraction import extract_program
from .rewards import RewardConfig, compute_reward
from .sandbox import RawOutcome, SandboxLimits, run_program
from .tasks import Task

STATUSES = ("pass", "fail", "error", "timeout", "parse_failure", "sandbox_error")
_CPU_KILL_SIGNALS = {"SIGXCPU", "SIGKILL"}


@dataclass(frozen=True)
class Verdict:
    """The outcome of executing one program against one task (reward-independent)."""

    status: str
    """One of :data:`STATUSES`."""
    passed: bool
    """True only for ``pass``."""
    tests_passed: int
    """Individually counted tests that passed."""
    tests_total: int
    """Number of tests of the task."""
    duration_s: float
    """Wall-clock seconds the child process ran."""
    extraction_mode: str
    """``continuation``, ``full_function`` or ``none``."""
    error: str = ""
    """Why it did not pass (first failing test's error, load error, timeout ...)."""
    failed_tests: tuple[str, ...] = ()
    """Names of the tests that did not pass."""
    stderr_tail: str = ""
    """The last characters the program wrote to stderr."""


@dataclass(frozen=True)
class ScoredCompletion:
    """One scored completion; its JSON form is one line of ``score`` output and of ``last_rollouts.jsonl``."""

    task_id: str
    """The task it answers."""
    completion_id: str
    """Stable id: ``task_id#sample_index`` unless the input names one."""
    sample_index: int
    """Position within its task's group (or within the task's samples)."""
    completion: str
    """The raw completion text."""
    status: str
    """One of :data:`STATUSES`."""
    passed: bool
    """Whether it passed."""
    reward: float | None
    """Reward under the run's :class:`RewardConfig`; None means unscored."""
    tests_passed: int
    """Tests passed."""
    tests_total: int
    """Tests in the task."""
    duration_s: float
    """Execution wall time in seconds (0 for parse failures and cache hits report the first run)."""
    extraction_mode: str
    """How the program was built from the completion."""
    error: str = ""
    """Short reason it did not pass."""
    failed_tests: list[str] = field(default_factory=list)
    """Names of failed tests."""
    stderr_tail: str = ""
    """Capped tail of the program's stderr."""
    cached: bool = False
    """True when an identical program for this task was already executed in this scorer."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Backend metadata (backend, model, seed, sampling, finish_reason) and anything else carried along."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def verdict_from_outcome(task: Task, outcome: RawOutcome, mode: str) -> Verdict:
    """Decide the status from the events the child reported (never from its exit code)."""
    total = len(task.tests)
    if outcome.sandbox_error:
        return Verdict("sandbox_error", False, 0, total, outcome.duration, mode,
                       error=outcome.sandbox_error, stderr_tail=outcome.stderr_tail)
    results: dict[int, dict[str, Any]] = {}
    load_error = check_ok = None
    check_error = ""
    finished = loaded = False
    for ev in outcome.events:
        kind = ev.get("event")
        if kind == "test" and isinstance(ev.get("index"), int) and 0 <= ev["index"] < total:
            results.setdefault(ev["index"], ev)
        elif kind == "load_error" and load_error is None:
            load_error = str(ev.get("error", "load error"))
        elif kind == "loaded":
            loaded = True
        elif kind == "check" and check_ok is None:
            check_ok = ev.get("ok") is True
            check_error = str(ev.get("error", ""))
        elif kind == "done":
            finished = True
    ok_idx = {i for i, ev in results.items() if ev.get("ok") is True}
    failed = tuple(t.name for i, t in enumerate(task.tests) if i not in ok_idx)
    n_ok = len(ok_idx)
    first_err = next((str(results[i].get("error", "")) for i in sorted(results) if i not in ok_idx), "")

    def v(status: str, error: str) -> Verdict:
        return Verdict(status, status == "pass", n_ok, total, outcome.duration, mode, error=error,
                       failed_tests=failed, stderr_tail=outcome.stderr_tail)

    if outcome.timed_out or (not finished and outcome.signal_name in _CPU_KILL_SIGNALS
                             and outcome.duration >= 0.5):
        return v("timeout", "timed out" if outcome.timed_out else f"killed by {outcome.signal_name} (CPU limit)")
    if load_error is not None:
        return v("error", load_error)
    if not finished:
        how = outcome.signal_name or f"exit code {outcome.returncode}"
        where = "while loading" if not loaded else "during the tests"
        return v("error", f"process ended {where} before finishing ({how})")
    passed = check_ok if task.check else n_ok == total
    if passed:
        return v("pass", "")
    return v("fail", check_error if task.check and not check_ok else first_err)


def _cache_key(task: Task, program: str, limits: SandboxLimits) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([task.task_id, task.entry_point, [t.to_json() for t in task.tests],
                         task.test_setup, task.check, limits.timeout]).encode())
    h.update(b"\0")
    h.update(program.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@dataclass(frozen=True)
class ScoreRequest:
    """A completion to score."""

    task: Task
    """The task it answers."""
    completion: str
    """Raw completion text."""
    sample_index: int = 0
    """Position in its group."""
    completion_id: str | None = None
    """Optional stable id; defaults to ``task_id#sample_index``."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Carried into the result unchanged."""


class Scorer:
    """Scores completions in parallel with per-run verdict caching."""

    def __init__(self, limits: SandboxLimits = SandboxLimits(), reward: RewardConfig = RewardConfig(),
                 workers: int | None = None, cache: bool = True):
        self.limits = limits
        self.reward = reward
        self.workers = workers or default_workers()
        self.cache_enabled = cache
        self._cache: dict[str, Verdict] = {}
        self._inflight: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="grpo_wb_score")
        self.executed = 0
        self.cache_hits = 0

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> "Scorer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def verdict(self, task: Task, completion: str) -> tuple[Verdict, bool]:
        """Execute (or reuse) the verdict for one completion; returns ``(verdict, cached)``."""
        ext = extract_program(task.prompt, task.entry_point, completion)
        total = len(task.tests)
        if not ext.ok:
            return Verdict("parse_failure", False, 0, total, 0.0, ext.mode, error=ext.reason,
                           failed_tests=tuple(t.name for t in task.tests)), False
        limits = self.limits.with_timeout(task.timeout)
        key = _cache_key(task, ext.program, limits)
        owner = False
        if self.cache_enabled:
            with self._lock:
                if key in self._cache:
                    self.cache_hits += 1
                    return self._cache[key], True
                fut = self._inflight.get(key)
                if fut is None:
                    fut = Future()
                    self._inflight[key] = fut
                    owner = True
            if not owner:
                v = fut.result()
                with self._lock:
                    self.cache_hits += 1
                return v, True
        try:
            outcome = run_program(ext.program, task.entry_point, [t.to_json() for t in task.tests],
                                  test_setup=task.test_setup, check=task.check, limits=limits)
            v = verdict_from_outcome(task, outcome, ext.mode)
        except Exception as e:  # the scorer survives; the completion is not blamed
            v = Verdict("sandbox_error", False, 0, total, 0.0, ext.mode, error=f"{type(e).__name__}: {e}")
        with self._lock:
            self.executed += 1
            if self.cache_enabled:
                self._cache[key] = v
                self._inflight.pop(key).set_result(v)
        return v, False

    def _score_one(self, req: ScoreRequest) -> ScoredCompletion:
        v, cached = self.verdict(req.task, req.completion)
        reward = compute_reward(self.reward, status=v.status, passed=v.passed,
                                tests_passed=v.tests_passed, tests_total=v.tests_total)
        return ScoredCompletion(
            task_id=req.task.task_id,
            completion_id=req.completion_id or f"{req.task.task_id}#{req.sample_index}",
            sample_index=req.sample_index, completion=req.completion, status=v.status,
            passed=v.passed, reward=reward, tests_passed=v.tests_passed, tests_total=v.tests_total,
            duration_s=round(v.duration_s, 6), extraction_mode=v.extraction_mode, error=v.error,
            failed_tests=list(v.failed_tests), stderr_tail=v.stderr_tail, cached=cached,
            meta=dict(req.meta))

    def score(self, requests: Iterable[ScoreRequest]) -> Iterator[ScoredCompletion]:
        """Score in parallel; yield results in input order with a bounded window."""
        window: deque[Future] = deque()
        limit = 2 * self.workers
        for req in requests:
            window.append(self._pool.submit(self._score_one, req))
            while len(window) >= limit:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
