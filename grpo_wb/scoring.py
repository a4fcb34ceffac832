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
its own child process), keeps at most ``window`` (default 512 per worker) jobs in flight so memory
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

from .errors import UserError
from .extraction import extract_program
from .rewards import RewardConfig, compute_reward
from .sandbox import RawOutcome, SandboxLimits, WorkerPool, build_job
from .tasks import Task
from .verdicts import PlannedTest, decode_value, evaluate_rest, plan_test, stdio_matches

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


def plan_task(task: Task) -> tuple[list[PlannedTest], bool]:
    """Plan every test of a task; also say whether ``check`` must run in the child.

    ``check`` holds the expected values of every assert it contains, so it is sent
    only when some test could not be made a value test (or the task was not split).
    """
    plans = [PlannedTest(kind="stdio", input=t.input, expected_output=t.output) if t.type == "stdio"
             else plan_test(t.code, task.entry_point) for t in task.tests]
    send_check = bool(task.check) and any(p.kind == "exec" for p in plans)
    return plans, send_check


def verdict_from_outcome(task: Task, outcome: RawOutcome, mode: str,
                         plans: list[PlannedTest] | None = None, check_sent: bool | None = None) -> Verdict:
    """Decide the status from the events the child reported (never from its exit code).

    Value tests are decided here, from the returned values; an event for a test
    index that arrives twice, a value that does not decode, or a tamper report
    from the harness all count against the completion.
    """
    if plans is None:
        plans, send = plan_task(task)
        check_sent = send if check_sent is None else check_sent
    elif check_sent is None:
        check_sent = bool(task.check)
    total = len(task.tests)
    if outcome.sandbox_error:
        return Verdict("sandbox_error", False, 0, total, outcome.duration, mode,
                       error=outcome.sandbox_error, stderr_tail=outcome.stderr_tail)
    seen: dict[int, int] = {}
    ok_idx: set[int] = set()
    errors: dict[int, str] = {}
    load_error = None
    check_ok = None
    check_error = ""
    tamper: list[str] = []
    finished = loaded = False
    for ev in outcome.events:
        kind = ev.get("event")
        idx = ev.get("index")
        if kind in ("test", "values", "stdout"):
            if type(idx) is not int or not 0 <= idx < total:
                tamper.append("event for an unknown test")
                continue
            seen[idx] = seen.get(idx, 0) + 1
            if seen[idx] > 1:
                tamper.append(f"test {idx} reported twice")
                continue
            plan = plans[idx]
            if kind != {"values": "values", "stdio": "stdout"}.get(plan.kind, "test"):
                tamper.append(f"test {idx}: event of the wrong kind")
                continue
            if plan.kind == "stdio":
                out = ev.get("output")
                if "error" in ev or not isinstance(out, str):
                    errors[idx] = str(ev.get("error", "no output"))
                elif stdio_matches(out, plan.expected_output):
                    ok_idx.add(idx)
                else:
                    errors[idx] = "wrong output"
                continue
            if plan.kind == "values":
                if "error" in ev or not isinstance(ev.get("values"), list) or len(ev["values"]) != len(plan.exprs):
                    errors[idx] = str(ev.get("error", "malformed values"))
                    continue
                try:
                    values = [decode_value(v) for v in ev["values"]]
                    good = evaluate_rest(plan.rest, values)
                except Exception as e:  # a value the comparison cannot handle fails the test
                    good = False
                    errors[idx] = f"{type(e).__name__}: {e}"[:300]
                if good:
                    ok_idx.add(idx)
                else:
                    errors.setdefault(idx, "AssertionError")
            else:
                if ev.get("ok") is True:
                    ok_idx.add(idx)
                else:
                    errors[idx] = str(ev.get("error", "failed"))
        elif kind == "load_error" and load_error is None:
            load_error = str(ev.get("error", "load error"))
        elif kind == "loaded":
            loaded = True
        elif kind == "check":
            if check_ok is not None:
                tamper.append("check reported twice")
            else:
                check_ok = ev.get("ok") is True
                check_error = str(ev.get("error", ""))
        elif kind == "tamper":
            what = ev.get("what")
            tamper.append(f"{ev.get('where', '?')}: {', '.join(map(str, what)) if isinstance(what, list) else what}")
        elif kind == "done":
            finished = True
    n_ok = len(ok_idx)
    failed = tuple(t.name for i, t in enumerate(task.tests) if i not in ok_idx)
    first_err = next((errors[i] for i in sorted(errors)), "")

    def v(status: str, error: str, n: int = n_ok) -> Verdict:
        return Verdict(status, status == "pass", n, total, outcome.duration, mode, error=error,
                       failed_tests=failed if n == n_ok else tuple(t.name for t in task.tests),
                       stderr_tail=outcome.stderr_tail)

    if tamper:
        return v("fail", "tampering detected: " + "; ".join(tamper[:5]), 0)
    if outcome.overflow:
        return v("fail", "flooded the result channel", 0)
    if outcome.timed_out or (not finished and outcome.signal_name in _CPU_KILL_SIGNALS
                             and outcome.duration >= 0.5):
        return v("timeout", "timed out" if outcome.timed_out else f"killed by {outcome.signal_name} (CPU limit)")
    if load_error is not None:
        return v("error", load_error)
    if not finished:
        how = outcome.signal_name or f"exit code {outcome.returncode}"
        where = "while loading" if not loaded else "during the tests"
        return v("error", f"process ended {where} before finishing ({how})")
    passed = n_ok == total and (check_ok is True if check_sent else True)
    if passed:
        return v("pass", "")
    if check_sent and check_ok is not True and n_ok == total:
        return v("fail", check_error or "check failed")
    return v("fail", first_err)


def _imported_modules(task: Task) -> list[str]:
    """Modules the tests rely on: the harness checks the completion did not patch them."""
    import ast

    names = {"math"}
    for src in [task.test_setup, task.check or "", *(t.code for t in task.tests)]:
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
    return sorted(names)


def _task_fingerprint(task: Task) -> str:
    """Everything about a task that changes a verdict."""
    return hashlib.sha256(json.dumps([task.task_id, task.entry_point, [t.to_json() for t in task.tests],
                                      task.test_setup, task.check, task.prelude]).encode()).hexdigest()


def _cache_key(fingerprint: str, program: str, limits: SandboxLimits) -> str:
    h = hashlib.sha256()
    h.update(fingerprint.encode())
    h.update(repr(limits.timeout).encode())
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
                 workers: int | None = None, cache: bool = True, window: int | None = None):
        self.limits = limits
        self.reward = reward
        self.workers = workers or default_workers()
        self.window = window or 512 * self.workers
        self.cache_enabled = cache
        self._cache: dict[str, Verdict] = {}
        self._inflight: dict[str, Future] = {}
        self._lock = threading.Lock()
        # More threads than sandboxes: a thread waiting for an identical completion already running
        # (the verdict cache) must not leave a sandbox idle; the pool of workers bounds real work.
        self._pool = ThreadPoolExecutor(max_workers=4 * self.workers, thread_name_prefix="grpo_wb_score")
        self.sandbox = WorkerPool(self.workers, limits)
        self._plans: dict[str, tuple[list[PlannedTest], bool, list[str]]] = {}
        self._by_id: dict[int, tuple[Task, tuple[str, list[PlannedTest], bool, list[str]]]] = {}
        self.executed = 0
        self.cache_hits = 0

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.sandbox.close()

    def isolation(self) -> dict[str, Any]:
        """The isolation this scorer's workers achieve (measured)."""
        from .sandbox import isolation_report

        return isolation_report(self.sandbox)

    def executor_info(self) -> dict[str, Any]:
        """Where scoring runs (recorded in run manifests; the Ray executor reports every node)."""
        import socket

        return {"executor": "local", "nodes": 1, "workers": self.workers,
                "per_node": [{"hostname": socket.gethostname(), "workers": self.workers,
                              "isolation": self.isolation()}]}

    def _plan(self, task: Task) -> tuple[str, list[PlannedTest], bool, list[str]]:
        """(fingerprint, planned tests, send check?, watched modules), computed once per task."""
        with self._lock:
            hit = self._by_id.get(id(task))
        if hit is not None and hit[0] is task:
            return hit[1]
        key = _task_fingerprint(task)  # not the task_id: two task files may reuse ids
        with self._lock:
            plan = self._plans.get(key)
        if plan is None:
            plans, send = plan_task(task)
            plan = (plans, send, _imported_modules(task))
            with self._lock:
                self._plans[key] = plan
        out = (key, *plan)
        with self._lock:
            self._by_id[id(task)] = (task, out)  # the task is kept alive, so its id is not reused
        return out

    def __enter__(self) -> "Scorer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def verdict(self, task: Task, completion: str) -> tuple[Verdict, bool]:
        """Execute (or reuse) the verdict for one completion; returns ``(verdict, cached)``."""
        total = len(task.tests)
        try:
            ext = extract_program(task.prompt, task.entry_point, completion)
        except (RecursionError, MemoryError, ValueError, SystemError) as e:
            return Verdict("parse_failure", False, 0, total, 0.0, "none", error=f"unparseable: {type(e).__name__}",
                           failed_tests=tuple(t.name for t in task.tests)), False
        if not ext.ok:
            return Verdict("parse_failure", False, 0, total, 0.0, ext.mode, error=ext.reason,
                           failed_tests=tuple(t.name for t in task.tests)), False
        limits = self.limits.with_timeout(task.timeout)
        fingerprint, plans, send_check, watch = self._plan(task)
        key = _cache_key(fingerprint, ext.program, limits)
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
            program = (task.prelude.rstrip("\n") + "\n" + ext.program) if task.prelude else ext.program
            job = build_job(program, task.entry_point, [p.for_child() for p in plans], script=task.is_script,
                            test_setup=task.test_setup, check=task.check if send_check else None, limits=limits,
                            watch_modules=watch)
            outcome = self.sandbox.run(job)
            v = verdict_from_outcome(task, outcome, ext.mode, plans, send_check)
        except Exception as e:  # the scorer survives; the completion is not blamed
            v = Verdict("sandbox_error", False, 0, total, 0.0, ext.mode, error=f"{type(e).__name__}: {e}")
        with self._lock:
            self.executed += 1
            if self.cache_enabled:
                if v.status != "sandbox_error":  # a sandbox failure is transient: a long-lived scorer retries it
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
        # Results leave in input order, so a completion that runs into its deadline holds up the
        # ones behind it; a deep window lets the other workers go on meanwhile (about 3 s x ~250
        # completions/s per worker). Memory stays bounded by the window, not by the input size.
        limit = self.window
        for req in requests:
            window.append(self._pool.submit(self._score_one, req))
            while len(window) >= limit:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


EXECUTORS = ("local", "ray")


def open_scorer(limits: SandboxLimits = SandboxLimits(), reward: RewardConfig = RewardConfig(), *,
                workers: int | None = None, cache: bool = True, executor: str = "local",
                ray_address: str | None = None) -> Any:
    """A scorer for ``executor``: the local pool, or :class:`~grpo_wb.ray_executor.RayScorer` (same interface).

    On Ray, ``workers`` is per node (default: each node's CPUs); ``ray_address``
    None starts a local Ray instance.
    """
    if executor == "local":
        if ray_address:
            raise UserError("--ray-address needs --executor ray")
        return Scorer(limits, reward, workers=workers, cache=cache)
    if executor == "ray":
        from .ray_executor import RayScorer

        return RayScorer(limits, reward, address=ray_address, workers=workers, cache=cache)
    raise UserError(f"unknown executor {executor!r} (choose {', '.join(EXECUTORS)})")
