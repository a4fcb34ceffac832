"""``grpo-wb smoke``: the GRPO data path for N steps, no weights updated (the flags are SmokeConfig's fields)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from grpo_wb.cli.common import Command, print_step_table
from grpo_wb.config import from_args
from grpo_wb.errors import UserError
from grpo_wb.runs.smoke import SmokeConfig, SmokeRun


@dataclass(kw_only=True)
class SmokeArgs(SmokeConfig):
    """``grpo-wb smoke``: a smoke run's settings and how this invocation treats its directory."""

    resume: bool = False
    """continue the run in --out from its last complete step"""
    overwrite: bool = False
    """replace an existing run in --out"""
    no_progress: bool = False
    """no progress bar"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.resume and self.overwrite:
            raise UserError("--resume and --overwrite contradict each other")


def smoke(args: argparse.Namespace) -> int:
    a = from_args(SmokeArgs, args)
    summary = SmokeRun(
        from_args(SmokeConfig, args), resume=a.resume, overwrite=a.overwrite, progress=not a.no_progress
    ).run()
    print_step_table(a.out)
    print()
    verdict = ("STOPPED EARLY: " + summary["stop_reason"]) if summary["stopped_early"] else "completed"
    mi = summary["mean_informative_fraction"]
    print(f"{summary['steps_completed']}/{summary['steps_requested']} steps, {verdict}")
    print(
        f"mean informative-prompt fraction {mi:.3f}, mean pass rate {summary['mean_pass_rate']:.3f}, "
        f"mean parse-failure rate {summary['mean_parse_failure_rate']:.3f}"
    )
    print(
        f"results: {Path(a.out).resolve()}/ (metrics.jsonl, groups.jsonl, rollouts.jsonl, last_rollouts.jsonl, "
        "checkpoint_manifest.json, summary.json)"
    )
    return 0


COMMANDS = [Command(("smoke",), SmokeArgs, smoke, "run the GRPO data path for N steps without updating weights")]
