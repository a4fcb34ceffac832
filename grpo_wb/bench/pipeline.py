"""``grpo-wb bench --pipeline``: does streaming hide generation behind scoring (or scoring behind generation)?

A loopback OpenAI-compatible server (:class:`~grpo_wb.testing.loopback.ReplayServerProcess`, in a process of its
own as a real server is) replays the bundled CodeGen-16B samples, 16 per HumanEval task, and makes each request
cost ``latency + tokens / tokens_per_s`` of wall time, so generation takes real time without taking the CPU. On
the same 164 x 16 completions the benchmark times, at each operating point: generation alone (``grpo-wb
sample``), scoring alone (``grpo-wb score`` of what was generated), the sequential path (the two one after the
other), the streamed path (``grpo-wb sample --score``), and the smoke loop over the same requests (G = 16, 4 steps
of 41 prompts) with ``--no-overlap`` and with its default overlap. It prints the walls and, last for each point,
``pipeline ratio (streamed / max): R``: 1.00 is perfect overlap; the sequential path's and the smoke loops' ratios
are printed before it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_wb.bundled import CODEGEN_SAMPLES, bundled
from grpo_wb.jsonio import atomic_write_jsonl, iter_jsonl
from grpo_wb.runs.sample import SampleConfig, run_sample
from grpo_wb.runs.smoke import SmokeConfig, SmokeRun
from grpo_wb.scoring.executors import open_scorer
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import sample_requests
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.records import Task, write_tasks
from grpo_wb.testing.loopback import ReplayServerProcess

N_PER_TASK = 16
POINTS = {"generation-bound": (2.0, 500.0), "scoring-bound": (0.6, 4000.0)}
"""operating point -> (per-request latency in s, tokens per second)."""


@dataclass(frozen=True)
class PointResult:
    point: str
    latency_s: float
    tokens_per_s: float
    generation_s: float
    scoring_s: float
    sequential_s: float
    streamed_s: float
    smoke_sequential_s: float | None = None
    smoke_overlapped_s: float | None = None

    @property
    def ratio(self) -> float:
        return self.streamed_s / max(self.generation_s, self.scoring_s)

    @property
    def sequential_ratio(self) -> float:
        return self.sequential_s / max(self.generation_s, self.scoring_s)

    def smoke_ratio(self, wall: float) -> float:
        return wall / max(self.generation_s, self.scoring_s)


def _score_file(tasks: dict[str, Task], samples: Path, workers: int | None, timeout: float) -> int:
    with open_scorer(SandboxLimits(timeout=timeout), RewardConfig(), workers=workers) as scorer:
        return sum(1 for _ in scorer.score(sample_requests(samples, tasks)))


def bench_pipeline(
    *,
    workers: int | None = None,
    timeout: float = 3.0,
    concurrency: int = 16,
    points: dict[str, tuple[float, float]] | None = None,
    n_tasks: int | None = None,
    smoke: bool = True,
    out: Callable[[str], None] = print,
) -> list[PointResult]:
    """Run the benchmark at each operating point (on the first ``n_tasks`` tasks); print and return the walls."""
    tasks = import_humaneval()[0][:n_tasks]
    ids = {t.task_id for t in tasks}
    samples: dict[str, list[str]] = {}
    for _, row in iter_jsonl(bundled(CODEGEN_SAMPLES)):
        pool = samples.setdefault(row["task_id"], [])
        if len(pool) < N_PER_TASK and row["task_id"] in ids:
            pool.append(row["completion"])
    batch = next(b for b in range(min(41, len(tasks)), 0, -1) if len(tasks) % b == 0)
    results = []
    with tempfile.TemporaryDirectory(prefix="grpo_wb_bench_pipeline_") as tmp:
        tmp_path = Path(tmp)
        tasks_file, samples_file = tmp_path / "humaneval.jsonl", tmp_path / "replayed.jsonl"
        write_tasks(tasks_file, tasks)
        atomic_write_jsonl(
            samples_file, [{"task_id": t.task_id, "completion": c} for t in tasks for c in samples[t.task_id]]
        )
        by_id = {t.task_id: t for t in tasks}
        out(
            f"== pipeline: {len(tasks)} tasks x {N_PER_TASK} completions (CodeGen-16B, replayed by a loopback "
            f"server in its own process), {concurrency} requests in flight, scoring timeout {timeout:g} s"
        )
        for name, (latency, tps) in (points or POINTS).items():

            def server() -> ReplayServerProcess:
                return ReplayServerProcess(tasks_file, samples_file, latency_s=latency, tokens_per_s=tps)  # noqa: B023

            def served(srv: ReplayServerProcess) -> dict[str, Any]:
                """The settings both loops share: the tasks, the loopback server as their backend, the sandbox."""
                return {
                    "tasks": str(tasks_file),
                    "backend": "openai",
                    "model": "replay",
                    "base_url": srv.base_url,
                    "max_concurrency": concurrency,
                    "timeout": timeout,
                    "workers": workers,
                    "temperature": 0.8,
                }

            def sample(path: Path, score: bool) -> float:
                with server() as srv:
                    cfg = SampleConfig(**served(srv), out=str(path), n=N_PER_TASK, score=score)
                    t0 = time.perf_counter()
                    run_sample(cfg, progress=False, log=lambda m: None)
                    return time.perf_counter() - t0

            def smoke_run(path: Path, overlap: bool) -> float:
                with server() as srv:
                    cfg = SmokeConfig(
                        **served(srv),
                        out=str(path),
                        group_size=N_PER_TASK,
                        batch_size=batch,
                        steps=len(tasks) // batch,
                        min_informative_fraction=0.0,
                        overlap=overlap,
                    )
                    t0 = time.perf_counter()
                    SmokeRun(cfg, progress=False, log=lambda m: None).run()
                    return time.perf_counter() - t0

            gen = sample(tmp_path / f"{name}-gen.jsonl", False)
            t0 = time.perf_counter()
            _score_file(by_id, tmp_path / f"{name}-gen.jsonl", workers, timeout)
            scoring = time.perf_counter() - t0
            t0 = time.perf_counter()
            sample(tmp_path / f"{name}-seq.jsonl", False)
            _score_file(by_id, tmp_path / f"{name}-seq.jsonl", workers, timeout)
            sequential = time.perf_counter() - t0
            streamed = sample(tmp_path / f"{name}-stream.jsonl", True)
            smoke_seq = smoke_run(tmp_path / f"{name}-smoke-seq", False) if smoke else None
            smoke_ovl = smoke_run(tmp_path / f"{name}-smoke-overlap", True) if smoke else None
            r = PointResult(name, latency, tps, gen, scoring, sequential, streamed, smoke_seq, smoke_ovl)
            results.append(r)
            out(f"-- {name}: latency {latency:g} s per request + completion tokens at {tps:g} tokens/s")
            out(
                f"   generation alone {gen:7.1f} s   scoring alone {scoring:7.1f} s   "
                f"sequential {sequential:7.1f} s   streamed {streamed:7.1f} s"
            )
            if smoke_seq is not None and smoke_ovl is not None:
                out(
                    f"   smoke loop, {len(tasks) // batch} steps of {batch} x {N_PER_TASK}: --no-overlap "
                    f"{smoke_seq:7.1f} s   overlapped {smoke_ovl:7.1f} s"
                )
                out(
                    f"   smoke ratios (wall / max): --no-overlap {r.smoke_ratio(smoke_seq):.2f}   "
                    f"overlapped {r.smoke_ratio(smoke_ovl):.2f}"
                )
            out(f"   sequential ratio (sequential / max): {r.sequential_ratio:.2f}")
            out(f"   pipeline ratio (streamed / max): {r.ratio:.2f}")
    return results
