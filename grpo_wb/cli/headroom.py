"""``grpo-wb headroom``: per-task pass rates, informative-group probabilities, a recommended G, the frontier."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from grpo_wb.cli.common import Command
from grpo_wb.config import cli, from_args, non_negative_int, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_write_json
from grpo_wb.layout import RunFiles
from grpo_wb.runs.exports import EXPORTS, export_tasks
from grpo_wb.runs.scored import load_samples
from grpo_wb.runs.task_audit import read_task_audit
from grpo_wb.signal.clusters import FailureClusters, cluster_source
from grpo_wb.signal.headroom import HeadroomConfig, HeadroomReport, analyze
from grpo_wb.signal.testflags import audit_lines

if TYPE_CHECKING:  # EXPORTS is a tuple built at import time, which a checker cannot read: a plain string to it
    Export = str
else:  # argparse's choices and check_choices read it
    Export = Literal[EXPORTS]


@dataclass(kw_only=True)
class HeadroomArgs(HeadroomConfig):
    """``grpo-wb headroom``."""

    input: str = field(metadata=cli(positional=True, metavar="INPUT"))
    """scored completions file (grpo-wb score output) or a run directory"""
    tasks: str | None = None
    """canonical task file, for --export-frontier (default for a run: its task file)"""
    export_frontier: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write the frontier tasks to PATH, as --format says"""
    format: Export = "canonical"
    """canonical: task records plus PATH's .trl.jsonl sibling (TRL dataset); jsonl: each task's source row as it
    was read; verl, open-r1, taco: that trainer's rows; trl: a TRL dataset. Rows gain grpo_wb_* columns, and PATH
    says their container: .jsonl, .jsonl.gz or .json: JSON lines; .parquet: Parquet; .arrow: an Arrow stream
    (Dataset.from_file); a PATH ending in / (or an existing save_to_disk folder): a save_to_disk folder
    (load_from_disk); any other PATH is refused for rows"""
    group_size: int | None = field(default=None, metadata=cli(type=positive_int, metavar="G"))
    """G of the exported grpo_wb_p_informative_G column (default: the recommended G)"""
    json: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write the whole report as JSON"""
    clusters: int = field(default=0, metadata=cli(type=non_negative_int, metavar="N"))
    """print the N largest failure clusters (kind and message shape, with counts and an example) and the tasks whose
    samples all fail the same way (a scored results file; a run: every step's rollouts)"""
    audit: str | None = field(default=None, metadata=cli(metavar="DIR"))
    """a grpo-wb tasks audit folder: say how many too-hard tasks are broken and how many frontier or too-easy ones
    have tests that pass wrong code; the export gets its grpo_wb_test_* columns"""


def manifest_tasks_file(run_dir: Path) -> str | None:
    """The task file a run directory's manifest names, else None (then ``--tasks`` is needed)."""
    try:
        return json.loads((run_dir / RunFiles.MANIFEST).read_text())["config"]["tasks"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def print_report(rep: HeadroomReport) -> None:
    """The headroom report as ``grpo-wb headroom`` prints it."""
    print(
        f"{rep.n_tasks} tasks, {rep.n_samples} samples ({rep.samples_per_task()}); mean pass rate "
        f"{rep.mean_pass_rate:.3f}"
    )
    if rep.pass_at_k:
        print("pass@k: " + ", ".join(f"pass@{k} {v:.3f}" for k, v in rep.pass_at_k.items()))
    print(
        f"{'G':>3}  {'informative':>11}  {'model':>6}  {'variance':>8}  {'compl/informative group':>23}  "
        f"{'extrapolated':>12}"
    )
    for p in rep.curve:
        if p.g in (2, 4, 8, 16, 32) or p.g == rep.recommended_g:
            cost = f"{p.completions_per_informative_group:.1f}" if p.completions_per_informative_group else "inf"
            mark = "  <- recommended" if p.g == rep.recommended_g else ""
            print(
                f"{p.g:>3}  {p.expected_informative:>11.3f}  {p.expected_informative_model:>6.3f}  "
                f"{p.expected_variance:>8.3f}  {cost:>23}  {p.n_tasks_extrapolated:>12}{mark}"
            )
    print(f"recommended: {rep.recommendation}" if rep.recommended_g else f"no recommendation: {rep.recommendation}")

    def few(ids: list[str]) -> str:
        return ", ".join(ids[:5]) + (f", ... (+{len(ids) - 5})" if len(ids) > 5 else "")

    for name, ids in (("too easy", rep.too_easy), ("too hard", rep.too_hard), ("frontier", rep.frontier)):
        print(f"{name}: {len(ids)}" + (f" ({few(ids)})" if ids else ""))
    if rep.unrewardable:  # rows whose trainer's reward is 0 whatever the answer: no signal, whatever they pass
        why = next(t.unrewardable for t in rep.tasks if t.unrewardable)
        print(f"the trainer cannot reward: {len(rep.unrewardable)} ({few(rep.unrewardable)}); e.g. {why}")


def print_clusters(fc: FailureClusters, n: int) -> None:
    """The largest failure clusters and the tasks that fail one way, as ``headroom --clusters`` prints them."""
    print(
        f"failures: {fc.failures} of {fc.rows} completions, in {len(fc.clusters)} clusters; "
        f"the {min(n, len(fc.clusters))} "
        "largest (failures, tasks, kind, message):"
    )
    for c in fc.top(n):
        print(f"  {c.rows:>7} {len(c.tasks):>5}  {c.kind:<12}  {c.shape}  (e.g. {c.example.get('completion_id')})")
    same = fc.same_way()
    print(f"tasks whose samples all fail the same way: {len(same)}")
    for s in same[:n]:
        print(
            f"  {s.task_id} ({s.samples} samples, {s.kind}: {s.shape}{', test ' + s.test if s.test else ''}): {s.why}"
        )


def headroom(args: argparse.Namespace) -> int:
    """Print the headroom report; export the frontier when asked."""
    a = from_args(HeadroomArgs, args)
    audit = read_task_audit(a.audit) if a.audit else None
    rep = analyze(load_samples(a.input), **asdict(from_args(HeadroomConfig, args)))
    print_report(rep)
    if audit is not None:
        print("test audit: " + "; ".join(audit_lines({t.task_id: t.category for t in rep.tasks}, audit)))
    if a.clusters:
        print_clusters(cluster_source(a.input), a.clusters)
    if a.json:
        atomic_write_json(a.json, rep.to_json())
        print(f"wrote {a.json}")
    if a.export_frontier:
        tasks_file = a.tasks or (manifest_tasks_file(Path(a.input)) if Path(a.input).is_dir() else None)
        if not tasks_file:
            raise UserError("--export-frontier needs --tasks FILE (the task file the samples were scored against)")
        if not rep.frontier:
            raise UserError("no frontier tasks to export: every task is too easy or too hard in these samples")
        print(
            "wrote "
            + export_tasks(
                rep, rep.frontier, tasks_file, a.export_frontier, fmt=a.format, group_size=a.group_size, audit=audit
            )
        )
    return 0


COMMANDS = [
    Command(
        ("headroom",),
        HeadroomArgs,
        headroom,
        "per-task pass rates, informative-group probabilities and a recommended G",
    )
]
