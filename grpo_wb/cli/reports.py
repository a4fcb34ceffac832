"""``grpo-wb report``: one notebook (a path, or the name of one the package ships: ``grpo-wb report --list``), its
parameters checked, executed strictly and rendered (``grpo-wb batch``, a plan of them, is :mod:`grpo_wb.cli.batch`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grpo_wb.cli.common import Command
from grpo_wb.config import cli, from_args, positive_float
from grpo_wb.errors import UserError
from grpo_wb.reports.notebooks import find_notebook, first_markdown_line, run_report, shipped_notebooks


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

    notebook: str | None = field(default=None, metadata=cli(positional=True, metavar="NOTEBOOK"))
    """the notebook template to execute: a path, or a shipped notebook's name (task_headroom; see --list)"""
    list_notebooks: bool = field(default=False, metadata=cli(flags=("--list",)))
    """print the notebooks the package ships, each with its title, and exit"""
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
    if a.list_notebooks:
        if a.notebook is not None:
            raise UserError("--list takes no NOTEBOOK")
        shipped = shipped_notebooks()
        width = max(map(len, shipped), default=0)
        for stem, path in shipped.items():
            print(f"{stem:<{width}}  {first_markdown_line(path)}")
        return 0
    if a.notebook is None:
        raise UserError("give a NOTEBOOK: a path, or a shipped notebook's name (grpo-wb report --list names them)")
    nb = find_notebook(a.notebook)
    out = Path(a.out) if a.out else Path("reports") / nb.stem
    res = run_report(
        nb,
        out,
        parse_cli_parameters(a.parameters),
        name=a.name,
        raw=True,
        cell_timeout=a.cell_timeout,
        check_defaults=True,
    )
    if not res.ok:
        see = f" (see {res.html})" if res.html else ""
        print(f"grpo-wb: error: {a.notebook}: {res.error}{see}", file=sys.stderr)
        return 1
    print(f"report: {res.html} ({res.seconds:.1f}s)")
    print(f"executed notebook: {res.ipynb}")
    return 0


COMMANDS = [
    Command(("report",), ReportArgs, report, "validate parameters, execute a notebook with papermill, render HTML")
]
