"""``grpo-wb train --trainer trl``: real GRPO fine-tuning (LoRA) with the smoke run's reward and diagnostics."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from grpo_wb.cli.common import Command, print_step_table
from grpo_wb.config import from_args
from grpo_wb.training.config import TrlTrainConfig


@dataclass(kw_only=True)
class TrainArgs(TrlTrainConfig):
    """``grpo-wb train``."""

    overwrite: bool = False
    """replace an existing run in --out"""


def train(args: argparse.Namespace) -> int:
    """The ``train`` subcommand."""
    a = from_args(TrainArgs, args)
    from grpo_wb.training.train import (
        run_training,  # its bridge imports transformers when installed: seconds no other command should pay
    )

    cfg = from_args(TrlTrainConfig, args)
    summary = run_training(cfg, overwrite=a.overwrite)
    print_step_table(cfg.out)
    print()
    out = Path(cfg.out).resolve()
    ck = summary.get("final_checkpoint")
    print(
        f"{summary['global_step']}/{cfg.max_steps} steps trained; adapter: "
        f"{out / ck if ck else 'NONE (no checkpoint saved)'}"
    )
    mi = summary["mean_informative_fraction"]
    print(
        f"mean informative-prompt fraction {mi if mi is None else round(mi, 3)}, "
        f"mean pass rate {summary['mean_pass_rate']:.3f}"
    )
    chk = summary.get("trl_advantage_check")
    if chk:
        print(
            f"TRL's logged advantages vs grpo_wb's: {chk['steps_compared']} step(s), max |diff| "
            f"{chk['max_abs_advantage_diff']:.2e} ({'match' if chk['match'] else 'MISMATCH'})"
        )
    print(
        f"results: {out}/ (metrics.jsonl, groups.jsonl, rollouts.jsonl, last_rollouts.jsonl, checkpoint_manifest.json, "
        "summary.json, checkpoint-*/)"
    )
    return 0


COMMANDS = [
    Command(("train",), TrainArgs, train, "real GRPO fine-tuning (LoRA) with TRL, same reward and diagnostics as smoke")
]
