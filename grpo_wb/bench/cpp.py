"""``grpo-wb bench --set cpp``: real C++ solutions scored three ways in one run, side by side.

The solutions are the NWERC 2022 jury's and three Kattis problemtools examples' (``data/external/nwerc2022_cpp``,
its PROVENANCE.md), right and wrong by the folder the jury put each in; the problems whose output needs the package's
own validator are left out (grpo_wb scores them only with a checker of its formats), as are interactive ones. Each
solution is scored by:

* the plain loop a trainer's reward runs (open-r1's ``cf_code_reward`` through Piston's ``codeforces`` package): in
  a temporary folder, ``g++`` with grpo_wb's flags (:data:`~grpo_wb.scoring.worker.wb_protocol.CXX_FLAGS`), then
  each test run by ``subprocess`` with the time limit, the memory as address space and the stack raised to the
  hard limit (Piston's ``ulimit -s unlimited``), its stdout compared as Piston compares without a checker
  (:func:`plain_output_matches`), stopping at the first failing test; ``workers`` solutions at a time. The anchor.
  Each of its processes starts a session of its own, as each sandbox job does: one scheduler autogroup each, so on
  a shared machine neither side gets a smaller share of the CPU for the way it starts processes.
* grpo_wb with neither the precompiled ``bits/stdc++.h`` nor the compile cache on disk (``SandboxLimits``'
  ``precompiled_header`` and ``compile_cache`` off: ``--no-compile-cache`` of the scoring commands).
* grpo_wb with both, the cache empty at the start (a fresh ``$GRPO_WB_CACHE_DIR``: the first pass compiles every
  solution), then a second scorer on the same cache (a re-score, an audit, a resumed run: no compile left).

Every grpo_wb scorer first scores one warm-up program, untimed: its toolchain check, and for the cold scorer the
header's build in the fresh cache (said apart: once per machine and compiler). The wall times are the scoring of
the solutions alone. A solution's compile seconds are the job's own measure (g++ inside the sandbox, as the scorer
records each compile), the plain loop's the wall time of its ``g++``. Verdicts are compared as pass or not; every
disagreement is listed with both sides' reasons.

The tests are the problems' sample tests only (2-4 a problem, 18 for oddecho): many solutions the jury labels wrong
pass them. The jury's label is not what this measures; the three scorers' agreement and their throughput are.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grpo_wb.bundled import NWERC2022_CPP, bundled
from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.scoring.compile_cache import pch_eligible
from grpo_wb.scoring.sandbox import CACHE_ENV, SandboxLimits, cxx_compiler
from grpo_wb.scoring.scorer import Scorer, ScoreRequest, default_workers
from grpo_wb.scoring.worker import wb_protocol as protocol
from grpo_wb.tasks.records import Task, task_from_json

TIME_LIMIT = 5.0
"""Seconds a test may run, for every scorer (the bundled rows carry no limits; the jury's are 1 to 8 s). Not near
any solution's run time on these tests: at 2 s, problemtools' ``hello/run_time_error/memory_limit.cc`` (512 MB
written, some 1.5 s) passed or not with the machine's load, a flake of the deadline, not of a scorer."""
MEMORY_MB = 1024
"""Address space a test's run may map, for every scorer (a task's ``memory_limit_mb``)."""
COMPILE_TIMEOUT = 60.0
"""Seconds a compile may take, for every scorer: far past any of these, so load never makes a compile fail."""
_WARM_UP = '#include <cstdio>\nint main() { std::puts("42"); }\n'
"""What each grpo_wb scorer compiles first, untimed: any compile makes it check its toolchain and open its caches
(building the header in a fresh cache); a small one, so the warm-up costs little else."""


@dataclass(frozen=True)
class Solution:
    """One bundled solution, as a grpo_wb task and the program to score against it."""

    task: Task
    code: str
    label: str
    """``correct`` or ``incorrect``: the jury's folder (``accepted`` or another)."""
    path: str
    """Where the solution is in its source repository."""

    @property
    def key(self) -> str:
        return f"{self.task.task_id}:{self.path}"


@dataclass(frozen=True)
class Outcome:
    """One scorer's verdict on one solution."""

    passed: bool
    why: str
    """pass, or the first failure (compile error, wrong output, time limit, runtime error)."""


@dataclass
class ScorerRun:
    """One scorer's figures over the solutions."""

    name: str
    wall_s: float
    outcomes: list[Outcome]
    compile_s: list[float] | None
    """Each compile's seconds; None where the scorer records none (every compile answered by the cache)."""
    note: str = ""
    disagreements: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- the bundled problems


def load_solutions(path: Path | None = None) -> tuple[list[Solution], list[str]]:
    """The solutions of the problems a plain token comparison can judge, as grpo_wb tasks (stdio, C++, the
    :data:`TIME_LIMIT` and :data:`MEMORY_MB` each test, output compared by open-r1's Codeforces rule), ordered so any
    prefix mixes problems and labels; and a line per problem left out or compared more strictly than its jury does."""
    ranked: list[tuple[int, int, str, Solution]] = []  # (rank within its problem and label, problem, label, it)
    left_out: list[str] = []
    for n, (_, row) in enumerate(iter_jsonl(bundled(path or NWERC2022_CPP))):
        if row["validation"] != "default":
            left_out.append(
                f"left out: {row['problem_id']} ({len(row['solutions'])} solutions): needs its own output validator"
            )
            continue
        if row["validator_flags"]:
            left_out.append(f"compared as tokens, exactly: {row['problem_id']} (its jury: {row['validator_flags']})")
        task = task_from_json(
            {
                "task_id": row["problem_id"],
                "prompt": f"{row['name'] or row['problem_id']} (stdin to stdout)",
                "entry_point": "",
                "language": "cpp",
                "output_match": "codeforces",
                "time_limit": TIME_LIMIT,
                "memory_limit_mb": MEMORY_MB,
                "tests": [
                    {"name": t["name"], "type": "stdio", "input": t["input"], "output": t["output"]}
                    for t in row["tests"]
                ],
            }
        )
        seen: Counter[str] = Counter()
        for s in row["solutions"]:
            label = s["verdict_label"]
            ranked.append((seen[label], n, label, Solution(task, s["code"], label, s["path"])))
            seen[label] += 1
    ranked.sort(key=lambda r: r[:3])
    sols = [r[3] for r in ranked]
    return sols, left_out


# ----------------------------------------------------------------------------- the plain loop

_WORD_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def plain_output_matches(output: str, expected: str) -> bool:
    """What Piston's ``codeforces`` package (``run``, guipenedo/piston 7a38da2) compares when a problem has no
    checker: whole-word yes/no upper-cased, then the whitespace-separated tokens (blank lines, newlines and runs of
    spaces all alike), as its ``diff -b`` of the two normalised outputs decides."""

    def tokens(text: str) -> list[str]:
        return _WORD_YES_NO.sub(lambda m: m.group(1).upper(), text).split()

    return tokens(output) == tokens(expected)


def _limits(memory_bytes: int) -> Callable[[], None]:
    def apply() -> None:  # in the program's process, before exec (Piston: ulimit -v, ulimit -s unlimited)
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        _, hard = resource.getrlimit(resource.RLIMIT_STACK)
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))

    return apply


def plain_score(
    sol: Solution, compiler: str, *, compile_timeout: float = COMPILE_TIMEOUT
) -> tuple[Outcome, float | None]:
    """Compile ``sol`` with g++ in a temporary folder and run each test with its time limit: (outcome, compile
    seconds; None when the compile ran past its deadline)."""
    task = sol.task
    with tempfile.TemporaryDirectory(prefix="grpo_wb_plain_cpp_") as d:
        src, binary = os.path.join(d, "main.cpp"), os.path.join(d, "main")
        Path(src).write_text(sol.code, encoding="utf-8", errors="surrogateescape")
        t0 = time.perf_counter()
        try:
            built = subprocess.run(
                [compiler, *protocol.CXX_FLAGS, "-o", binary, src],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=compile_timeout,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            return Outcome(False, f"compilation ran past {compile_timeout:g} s"), None
        seconds = time.perf_counter() - t0
        if built.returncode != 0:
            return Outcome(False, "compile error"), seconds
        limit = _limits((task.memory_limit_mb or MEMORY_MB) << 20)
        for t in task.tests:
            try:
                ran = subprocess.run(
                    [binary],
                    input=t.input.encode("utf-8", "surrogateescape"),
                    capture_output=True,
                    cwd=d,
                    timeout=task.time_limit,
                    preexec_fn=limit,
                    start_new_session=True,
                )
            except subprocess.TimeoutExpired:
                return Outcome(False, f"test {t.name}: time limit exceeded"), seconds
            if ran.returncode != 0:
                return Outcome(False, f"test {t.name}: runtime error (exit {ran.returncode})"), seconds
            if not plain_output_matches(ran.stdout.decode("utf-8", "replace"), t.output):
                return Outcome(False, f"test {t.name}: wrong output"), seconds
        return Outcome(True, "pass"), seconds


def run_plain(sols: Sequence[Solution], workers: int, compiler: str) -> ScorerRun:
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        got = list(ex.map(lambda s: plain_score(s, compiler), sols))
    wall = time.monotonic() - t0
    return ScorerRun("plain loop (g++, subprocess)", wall, [o for o, _ in got], [c for _, c in got if c is not None])


# ----------------------------------------------------------------------------- grpo_wb


def _fenced(code: str) -> str:
    return f"```cpp\n{code}\n```\n"


def _outcome(r: Any) -> Outcome:
    if r.passed:
        return Outcome(True, "pass")
    test = f"test {r.failed_tests[0]}: " if r.failed_tests and r.status == "fail" else ""
    return Outcome(False, f"{r.status}: {test}{(r.error or '').splitlines()[0] if r.error else ''}"[:160])


def run_grpo_wb(name: str, sols: Sequence[Solution], limits: SandboxLimits, workers: int) -> tuple[ScorerRun, float]:
    """Score every solution with a fresh scorer of ``limits``: (its figures, seconds of its untimed warm-up)."""
    warm_task = sols[0].task
    with Scorer(limits, workers=workers) as sc:
        t0 = time.monotonic()
        next(sc.score([ScoreRequest(warm_task, _fenced(_WARM_UP), completion_id="warm-up")]))
        warm_up = time.monotonic() - t0
        before, compiles, hits = len(sc.compile_times), sc.compiles, sc.disk_hits
        t0 = time.monotonic()
        results = list(sc.score(ScoreRequest(s.task, _fenced(s.code), i) for i, s in enumerate(sols)))
        wall = time.monotonic() - t0
        n_compiles, n_disk = sc.compiles - compiles, sc.disk_hits - hits
        secs = sc.compile_times[before:] if n_compiles else None
        note = f"{n_compiles} compiles, {n_disk} from the disk cache; precompiled header {sc.pch_note.split(' (')[0]}"
    return ScorerRun(name, wall, [_outcome(r) for r in results], secs, note), warm_up


@contextmanager
def _cache_dir(path: str) -> Iterator[None]:
    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = path
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = old


# ----------------------------------------------------------------------------- the table


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def table_rows(runs: Sequence[ScorerRun], sols: Sequence[Solution]) -> list[dict[str, Any]]:
    """One row per scorer, the plain loop (``runs[0]``) first: its agreement with the plain loop's verdicts (each
    disagreement recorded on the run)."""
    plain = runs[0]
    rows = []
    for run in runs:
        run.disagreements = [
            f"{s.key} ({s.label}): plain {p.why}; {run.name.split(' (')[0]} {o.why}"
            for s, p, o in zip(sols, plain.outcomes, run.outcomes)
            if p.passed != o.passed
        ]
        n = len(run.outcomes)
        rows.append(
            {
                "scorer": run.name,
                "solutions": n,
                "passed": sum(o.passed for o in run.outcomes),
                "wall_s": run.wall_s,
                "per_s": n / run.wall_s if run.wall_s > 0 else float("inf"),
                "compile_median_s": statistics.median(run.compile_s) if run.compile_s else None,
                "compile_p90_s": _quantile(run.compile_s, 0.9) if run.compile_s else None,
                "speedup": plain.wall_s / run.wall_s if run.wall_s > 0 else float("inf"),
                "agree": n - len(run.disagreements),
                "disagreements": list(run.disagreements),
                "note": run.note,
            }
        )
    return rows


def print_table(rows: Sequence[Mapping[str, Any]], out: Callable[[str], None] = print) -> None:
    def sec(v: float | None) -> str:
        return f"{v:.2f}" if v is not None else "n/a"

    head = (
        f"{'scorer':<44} {'solutions':>9} {'passed':>6} {'wall s':>8} {'compl/s':>8} {'compile s median':>16} "
        f"{'p90':>6} {'vs plain':>8} {'agree':>9}"
    )
    out(head)
    out("-" * len(head))
    for r in rows:
        out(
            f"{r['scorer']:<44} {r['solutions']:>9} {r['passed']:>6} {r['wall_s']:>8.1f} {r['per_s']:>8.2f} "
            f"{sec(r['compile_median_s']):>16} {sec(r['compile_p90_s']):>6} {r['speedup']:>7.2f}x "
            f"{r['agree']:>4}/{r['solutions']:<4}"
        )
    for r in rows:
        if r["note"]:
            out(f"  {r['scorer']}: {r['note']}")
        for d in r["disagreements"]:
            out(f"  disagrees: {d}")


def bench_cpp(
    *,
    limit: int | None = None,
    workers: int | None = None,
    path: Path | None = None,
    out: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Score the bundled solutions (the first ``limit``) by the plain loop and by grpo_wb without and with the
    precompiled header and compile cache (cold, then warm), on ``workers`` each; print and return the table."""
    compiler = cxx_compiler()
    if compiler is None:
        raise UserError("bench --set cpp needs g++ (or $GRPO_WB_CXX): `make sandbox` installs it")
    sols, left_out = load_solutions(path)
    sols = sols[:limit] if limit else sols
    if not sols:
        raise UserError("bench --set cpp: no solutions to score")
    workers = workers or default_workers()
    eligible = sum(pch_eligible(s.code) for s in sols)
    labels = Counter(s.label for s in sols)
    out(
        f"== cpp: {len(sols)} C++ solutions of {len({s.task.task_id for s in sols})} problems "
        f"({labels['correct']} the jury accepts, {labels['incorrect']} it does not), sample tests only; "
        f"{workers} workers, {TIME_LIMIT:g} s and {MEMORY_MB} MiB a test"
    )
    for line in left_out:
        out(f"  {line}")
    out(f"  {eligible} of {len(sols)} sources start by including <bits/stdc++.h> (what the precompiled header serves)")
    runs = [run_plain(sols, workers, compiler)]
    out(f"  plain loop: {runs[0].wall_s:.1f} s")
    on = SandboxLimits(timeout=TIME_LIMIT, memory_bytes=MEMORY_MB << 20, compile_timeout=COMPILE_TIMEOUT)
    off = replace(on, compile_cache=False, precompiled_header=False)  # --no-compile-cache
    with tempfile.TemporaryDirectory(prefix="grpo_wb_bench_cpp_cache_") as cache, _cache_dir(cache):
        run, _ = run_grpo_wb("grpo_wb, no header, no cache", sols, off, workers)
        runs.append(run)
        out(f"  grpo_wb, no header, no cache: {run.wall_s:.1f} s")
        run, build = run_grpo_wb("grpo_wb, header + cache, cold", sols, on, workers)
        runs.append(run)
        out(f"  grpo_wb, header + cache, cold: {run.wall_s:.1f} s (its warm-up, the header's build: {build:.1f} s)")
        run, _ = run_grpo_wb("grpo_wb, header + cache, warm (a re-score)", sols, on, workers)
        runs.append(run)
    rows = table_rows(runs, sols)
    print_table(rows, out)
    right = [o.passed for s, o in zip(sols, runs[0].outcomes) if s.label == "correct"]
    wrong = [o.passed for s, o in zip(sols, runs[0].outcomes) if s.label == "incorrect"]
    out(
        f"  the jury's labels (not what this measures): the plain loop passes {sum(right)} of {len(right)} accepted "
        f"solutions and {sum(wrong)} of {len(wrong)} wrong ones (sample tests only)"
    )
    return rows
