"""``grpo-wb tasks audit``: are a task set's tests right? broken, flaky, weak and hackable tests, duplicated and
contaminated prompts."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from grpo_wb.cli.common import Command
from grpo_wb.config import from_args
from grpo_wb.runs.task_audit import FLAGS, TaskAuditConfig, run_task_audit


@dataclass(kw_only=True)
class TaskAuditArgs(TaskAuditConfig):
    """``grpo-wb tasks audit``."""

    no_progress: bool = False
    """no progress bar"""


def audit_cmd(args: argparse.Namespace) -> int:
    a = from_args(TaskAuditArgs, args)
    s = run_task_audit(a, progress=not a.no_progress and sys.stderr.isatty())
    n = s["tasks"]
    print(
        f"audited {n} tasks of {a.tasks} into {a.out}/ in {s['seconds']:.0f}s "
        f"({s['seconds_per_task'] or 0:.2f}s a task); {s['clean']} clean"
    )
    for f in FLAGS:
        if s["flags"][f]:
            print(f"  {f:<18} {s['flags'][f]:>5}  ({s['flags'][f] / n:.0%})")
    if s["broken_causes"]:
        print(
            "  broken by: " + ", ".join(f"{k} {v}" for k, v in sorted(s["broken_causes"].items(), key=lambda x: -x[1]))
        )
    m = s["mutation"]
    if m["tasks"]:
        raw, adj = m["score"], m["score_without_equivalent"]
        print(
            f"  mutation score over {m['tasks']} tasks: mean {raw['mean']:.2f}, median {raw['quantiles']['0.5']:.2f}"
            + (f"; without the likely equivalent mutants mean {adj['mean']:.2f}" if adj["mean"] is not None else "")
        )
        print(
            f"  {m['survived']} of {m['mutants_run']} mutants survived: {m['likely_equivalent']} agree with the "
            f"reference on every input tried (likely equivalent), {m['with_witness']} answer an input the tests "
            f"lack differently"
        )
        q = m.get("equivalence_search") or {}
        if q.get("tasks_explored"):
            ans = q["inputs_answered"]
            print(
                f"  equivalence search: up to {q['budget']} inputs a task (--equivalence-inputs), "
                f"{ans['mean']:.0f} answered by the reference on average (min {ans['min']})"
            )
    d = s.get("samples_differential")
    if d:
        print(
            f"  passing samples beside the reference on those inputs: {d['tasks_compared']} tasks compared, "
            f"{d['tasks_with_wrong']} with a passing sample that answers one differently ({d['wrong']} of "
            f"{d['passing']} passing samples); weak by the samples' rule (--weak-samples {d['weak_samples']}) "
            f"there, by killed / run (--weak-below) elsewhere"
        )
    w = s.get("witness_tests")
    if w:
        print(f"  wrote {w['out']}: {w['tests']} witness tests added to {w['tasks']} tasks")
    if s.get("by_flag"):
        print("  samples by flag (tasks: all pass / mixed / none pass):")
        for f, row in s["by_flag"].items():
            g = row["groups"]
            print(
                f"    {f:<18} {row['tasks']:>5}: {g.get('all pass', 0)} / {g.get('mixed', 0)} / {g.get('none pass', 0)}"
            )
    for note in s["notes"][:20]:
        print(f"note: {note}", file=sys.stderr)
    if len(s["notes"]) > 20:
        print(f"note: ... {len(s['notes']) - 20} more in {a.out}/summary.json", file=sys.stderr)
    return 0


COMMANDS = [
    Command(
        ("tasks", "audit"),
        TaskAuditArgs,
        audit_cmd,
        "are the tests right? broken, flaky, weak and hackable tests, duplicated and contaminated prompts",
    )
]
