"""``grpo-wb sample``: n samples per task from a backend, scored as they arrive, and the headroom they show."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field

from grpo_wb.cli.common import Command
from grpo_wb.cli.headroom import Export, print_report
from grpo_wb.config import cli, from_args, positive_int
from grpo_wb.errors import UserError
from grpo_wb.runs.exports import export_tasks
from grpo_wb.runs.sample import SampleConfig, SampleSummary, run_sample
from grpo_wb.runs.scored import load_samples
from grpo_wb.signal.headroom import HeadroomConfig, analyze, count_spread


@dataclass(kw_only=True)
class SampleArgs(SampleConfig, HeadroomConfig):
    """``grpo-wb sample``."""

    headroom: bool = False
    """with --score: print the headroom report of the scored samples"""
    export_frontier: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """with --headroom: write the frontier tasks to PATH, as --format says"""
    format: Export = "canonical"
    """what --export-frontier writes (see grpo-wb headroom --help)"""
    group_size: int | None = field(default=None, metadata=cli(type=positive_int, metavar="G"))
    """G of the exported grpo_wb_p_informative_G column (default: the recommended G)"""
    no_progress: bool = False
    """no progress bar"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.headroom and not self.score:
            raise UserError("--headroom reads the scores: add --score")
        if self.export_frontier and not self.headroom:
            raise UserError("--export-frontier goes with --headroom")


def sample_cmd(args: argparse.Namespace) -> int:
    a = from_args(SampleArgs, args)
    s = run_sample(a, progress=not a.no_progress and sys.stderr.isatty())
    tok = f"; {s.completion_tokens / s.generation_s:.0f} tokens/s" if s.completion_tokens and s.generation_s else ""
    print(
        f"wrote {s.completions} completions to {a.out} ({s.requests} requests in {s.generation_s:.1f}s{tok}"
        + (f"; {s.resumed} were there already" if s.resumed else "")
        + ")"
    )
    if s.refused:
        print(
            f"the server refused {len(s.refused)} task(s) {a.max_refusals} times; they have no samples (see "
            f"{a.requests_path()}): "
            + "; ".join(f"{k}: {v}" for k, v in list(s.refused.items())[:3])
            + (" ..." if len(s.refused) > 3 else "")
        )
    if a.score:
        print(
            f"scored {s.scored} into {a.scored_path()} ("
            + ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items()))
            + f"); "
            f"wall {s.wall_s:.1f}s, generation and scoring overlapped"
        )
    if a.adaptive:
        print_adaptive(a, s)
    if a.headroom:
        rep = analyze(load_samples(a.scored_path()), budget=a.budget, ks=a.ks, confidence=a.confidence)
        print_report(rep)
        if a.export_frontier:
            if not rep.frontier:
                raise UserError("no frontier tasks to export: every task is too easy or too hard in these samples")
            print(
                "wrote "
                + export_tasks(rep, rep.frontier, a.tasks, a.export_frontier, fmt=a.format, group_size=a.group_size)
            )
    return 0


def print_adaptive(a: SampleArgs, s: SampleSummary, shown: int = 10) -> None:
    """How many samples each task took under the rule, and what it decided."""
    d = s.decided
    ns = sorted(n for n, _ in d.values())
    rule = f"{a.decide}" + (f" [{a.band[0]:g}, {a.band[1]:g}]" if a.decide == "band" else "")
    print(
        f"adaptive ({rule}, rounds of {a.round_size}, max error {a.max_error:g}): {sum(ns)} of {a.n * len(d)} "
        f"generations (n x tasks) for {len(d)} decided tasks, {s.rounds} rounds in this call; "
        f"{sum(n < a.n for n in ns)} decided before n={a.n}" + (f"; samples per task {count_spread(ns)}" if ns else "")
    )
    if s.stalled:
        print(
            f"{len(s.stalled)} task(s) left undecided: a round brought no new completion from the backend: "
            + ", ".join(s.stalled[:5])
            + (" ..." if len(s.stalled) > 5 else "")
        )
    counts = Counter(label for _, label in d.values())
    print("decisions: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    items = list(d.items())
    print(
        "samples per task: "
        + ", ".join(f"{t} {n} ({label})" for t, (n, label) in items[:shown])
        + (f", ... (+{len(items) - shown})" if len(items) > shown else "")
    )


COMMANDS = [
    Command(("sample",), SampleArgs, sample_cmd, "n samples per task from a backend, scored as they arrive (resumable)")
]
