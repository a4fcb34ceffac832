"""``grpo-wb report`` (one notebook, executed strictly and rendered) and ``grpo-wb batch`` (a plan of them)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grpo_wb.cli.common import Command
from grpo_wb.config import cli, from_args, positive_float, positive_int
from grpo_wb.errors import UserError
from grpo_wb.layout import BatchFiles
from grpo_wb.reports.batch import ReportJob, load_batch_plan, report_runner, run_batch, run_report_job
from grpo_wb.reports.notebooks import ReportResult, run_report
from grpo_wb.scoring.executors import ExecutorConfig
from grpo_wb.scoring.sandbox import Isolation, default_isolation


def parse_cli_parameters(pairs: list[list[str]] | None) -> dict[str, str]:
    """``-p NAME VALUE`` pairs as a dict; a repeated name is an error."""
    out: dict[str, str] = {}
    for name, value in pairs or []:
        if name in out:
            raise UserError(f"parameter {name!r} given twice")
        out[name] = value
    return out


@dataclass(kw_only=True)
class ReportArgs:
    """``grpo-wb report``."""

    notebook: str = field(metadata=cli(positional=True, metavar="NOTEBOOK"))
    """the notebook template to execute"""
    parameters: list[list[str]] = field(
        default_factory=list, metadata=cli(flags=("-p", "--parameter"), nargs=2, metavar=("NAME", "VALUE"))
    )
    """set a parameter (checked against the notebook's declared names and types)"""
    out: str | None = None
    """report directory (default reports/NOTEBOOK_STEM)"""
    name: str | None = None
    """report title (default: the notebook's file name)"""
    cell_timeout: float = field(default=600.0, metadata=cli(type=positive_float))
    """seconds a single cell may run before the report fails"""


def report(args: argparse.Namespace) -> int:
    """Run one report; print where it is; exit 1 with the failing cell's error when it failed."""
    a = from_args(ReportArgs, args)
    nb = Path(a.notebook)
    out = Path(a.out) if a.out else Path("reports") / nb.stem
    res = run_report(nb, out, parse_cli_parameters(a.parameters), name=a.name, raw=True, cell_timeout=a.cell_timeout)
    if not res.ok:
        see = f" (see {res.html})" if res.html else ""
        print(f"grpo-wb: error: {nb}: {res.error}{see}", file=sys.stderr)
        return 1
    print(f"report: {res.html} ({res.seconds:.1f}s)")
    print(f"executed notebook: {res.ipynb}")
    return 0


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


COMMANDS = [
    Command(("report",), ReportArgs, report, "validate parameters, execute a notebook with papermill, render HTML"),
    Command(("batch",), BatchArgs, batch, "run a plan of notebooks x parameter grids and write an index page"),
]
