"""``grpo-wb reward-audit`` (formerly ``grpo-wb audit``): which published reward hacks does a reward function fall
for? With ``--completions``: does it agree with grpo_wb's verdicts on real completions?"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from grpo_wb.cli.common import Command
from grpo_wb.config import from_args
from grpo_wb.reward_audit.agreement import print_agreement, run_agreement
from grpo_wb.reward_audit.run import Audit, AuditConfig, run_audit


@dataclass(kw_only=True)
class RewardAuditArgs(AuditConfig):
    """``grpo-wb reward-audit``."""

    no_progress: bool = False
    """no progress line on stderr"""


def _reward(v) -> str:
    return "-" if v is None else f"{v:g}"


def print_audit(a: Audit, out=print) -> None:
    """The controls, one line per exploit, then the verdict (last)."""
    out("controls (the function's honest rewards):")
    for c in a.controls:
        mark = "correct" if c["correct"] else "wrong"
        out(
            f"  {c['task']:<20} {c['control']:<14} {mark:<8} reward {_reward(c['reward']):>5}"
            + (f"   {c['error']}" if c["error"] else "")
        )
    for kind, why in a.skipped_kinds.items():
        out(f"  {kind} tasks not audited: {why}")
    head = f"{'exploit':<24} {'goal':<8} {'outcome':<8} {'reward':>6} {'wrong':>6}  what happened"
    out(head)
    out("-" * len(head))
    for e in a.exploits:
        out(
            f"{e['name']:<24} {e['goal']:<8} {e['outcome']:<8} {_reward(e['reward']):>6} "
            f"{_reward(e['wrong_reward']):>6}"
            f"  {'; '.join(e['notes'])[:110]}"
        )
    out(a.verdict)


def reward_audit(args: argparse.Namespace) -> int:
    # the config is built once, from the flags: built again from its own fields, a style's defaults that
    # __post_init__ filled in (trl_format "standard" for --style verl) would read as flags the user gave
    cfg = from_args(AuditConfig, args)
    if cfg.completions:
        print_agreement(run_agreement(cfg, progress=not args.no_progress))
        return 0
    result = run_audit(cfg, progress=not args.no_progress)
    print_audit(result)
    return 0


COMMANDS = [
    Command(
        ("reward-audit",), RewardAuditArgs, reward_audit, "put a reward function through a red team of reward hacks"
    )
]
