"""``grpo-wb batch``: a plan of notebooks x parameter grids, each report in a process of its own, and an index."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from grpo_wb.cli.common import Command
from grpo_wb.config import cli, from_args, positive_int
from grpo_wb.layout import BatchFiles
from grpo_wb.reports.batch import ReportJob, load_batch_plan, report_runner, run_batch, run_report_job
from grpo_wb.reports.notebooks import ReportResult
from grpo_wb.scoring.executors import ExecutorConfig
from grpo_wb.scoring.sandbox import Isolation, default_isolation


@dataclass(kw_only=True)
class BatchArgs(ExecutorConfig):
    """``grpo-wb batch``."""

    plan: str = field(metadata=cli(positional=True, metavar="PLAN"))
    """YAML or JSON plan (see docs/notebooks.md)"""
    workers: int | None = field(default=None, metadata=cli(type=positive_int))
    """parallel reports (default: the plan's, else 2)"""
    no_progress: bool = False
    """no progress bar"""
    isolation: Isolation = field(default_factory=default_isolation)
    """the isolation every report's sandbox must achieve: best, strict or none (see grpo-wb score --help)"""


def batch(args: argparse.Namespace) -> int:
    """Run the plan; list failures; end with the index path; exit 1 when any report failed."""
    a = from_args(BatchArgs, args)
    plan = load_batch_plan(a.plan, workers=a.workers)
    os.environ["GRPO_WB_ISOLATION"] = a.isolation  # every report's process (and kernel) inherits it
    runner: Callable[[ReportJob], ReportResult] = run_report_job
    where = ""
    if a.executor == "ray":
        runner, where = report_runner(a.ray_address, isolation=a.isolation), " on Ray"
    print(f"{len(plan.jobs)} reports, {plan.workers} at a time{where} -> {plan.out}", file=sys.stderr)
    results = run_batch(plan, progress=not a.no_progress, runner=runner)
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"FAILED {r.name}: {r.error}", file=sys.stderr)
    print(f"{len(results) - len(failed)}/{len(results)} reports ok")
    print(plan.out / BatchFiles.INDEX_HTML)
    return 1 if failed else 0


COMMANDS = [Command(("batch",), BatchArgs, batch, "run a plan of notebooks x parameter grids and write an index page")]
