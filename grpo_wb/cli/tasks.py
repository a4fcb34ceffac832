"""``grpo-wb tasks validate|calibrate``: check a task file, set per-task limits (``tasks import`` and ``tasks audit``
are modules of their own: each command imports what it runs)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import cast

from grpo_wb.cli.common import Command, refuse_to_overwrite
from grpo_wb.config import cli, from_args, positive_int
from grpo_wb.scoring.calibrate import CalibrationConfig, calibrate
from grpo_wb.scoring.executors import SandboxConfig
from grpo_wb.scoring.extraction import reference_reply
from grpo_wb.scoring.sandbox import Isolation, default_isolation
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import check_task_file, load_tasks, write_tasks


@dataclass(kw_only=True)
class ValidateArgs(SandboxConfig):
    """``grpo-wb tasks validate``."""

    path: str = field(metadata=cli(positional=True))
    """the canonical task file to check"""
    no_run: bool = False
    """only check the format, run nothing"""


def validate(args: argparse.Namespace) -> int:
    a = from_args(ValidateArgs, args)
    tasks, problems = check_task_file(a.path)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {a.path}: {len(problems)} problem(s); nothing was run", file=sys.stderr)
        return 1
    with_solution = [(line, t) for line, t in tasks if t.canonical_solution is not None]
    if not a.no_run and with_solution:
        with Scorer(a.limits(), workers=a.workers, cache=False) as scorer:
            reqs = [
                ScoreRequest(
                    task=t,
                    # a str: with_solution holds the tasks that have one
                    completion=reference_reply(t.prompt, t.entry_point, cast(str, t.canonical_solution), t.language),
                )
                for _, t in with_solution
            ]
            for (line, t), res in zip(with_solution, scorer.score(reqs)):
                if res.status != "pass":
                    detail = f": {res.error}" if res.error else ""
                    problems.append(
                        f"{a.path}:{line}: canonical solution of {t.task_id!r} does not pass "
                        f"({res.status}, {res.tests_passed}/{res.tests_total} tests){detail}"
                    )
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {a.path}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    ran = "format only" if a.no_run else f"{len(with_solution)} canonical solution(s) pass"
    no_sol = len(tasks) - len(with_solution)
    extra = f"; {no_sol} task(s) have no canonical solution" if no_sol else ""
    print(f"{a.path}: {len(tasks)} task(s) OK ({ran}{extra})")
    return 0


@dataclass(frozen=True, kw_only=True)
class CalibrateArgs(CalibrationConfig):
    """``grpo-wb tasks calibrate``."""

    path: str = field(metadata=cli(positional=True))
    """the canonical task file"""
    out: str
    """calibrated task file to write"""
    workers: int | None = field(default=None, metadata=cli(type=positive_int))
    """parallel sandboxes (default: one per core)"""
    isolation: Isolation = field(default_factory=default_isolation)
    """best, strict or none (see grpo-wb score --help)"""
    force: bool = False
    """replace --out if it exists"""


def calibrate_cmd(args: argparse.Namespace) -> int:
    a = from_args(CalibrateArgs, args)
    refuse_to_overwrite(a.out, a.force)
    cfg = from_args(CalibrationConfig, args)
    tasks, problems = calibrate(load_tasks(a.path), cfg, workers=a.workers, isolation=a.isolation)
    write_tasks(a.out, tasks)
    for p in problems:
        print(f"note: {p}", file=sys.stderr)
    limits = sorted(t.timeout for t in tasks if t.timeout is not None)
    if limits:
        print(
            f"wrote {len(tasks)} tasks to {a.out}; limits {limits[0]:g}-{limits[-1]:g} s, "
            f"median {limits[len(limits) // 2]:g} s (factor {cfg.factor:g}, floor {cfg.floor:g}, "
            f"ceiling {cfg.ceiling:g})"
        )
    return 0


COMMANDS = [
    Command(
        ("tasks", "validate"),
        ValidateArgs,
        validate,
        "check a canonical task file; runs canonical solutions when it is well formed",
    ),
    Command(
        ("tasks", "calibrate"),
        CalibrateArgs,
        calibrate_cmd,
        "set each task's time limit from its canonical solution's runtime",
    ),
]
