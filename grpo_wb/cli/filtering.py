"""``grpo-wb filter``: the pass-rate filter teams write by hand, with an interval, a sample floor and the
informative fraction it buys at G; the published recipes side by side."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from grpo_wb.cli.common import Command, refuse_to_overwrite
from grpo_wb.cli.headroom import Export, manifest_tasks_file
from grpo_wb.config import cli, fraction, from_args
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_write_json
from grpo_wb.runs.exports import export_tasks
from grpo_wb.runs.scored import load_samples
from grpo_wb.runs.task_audit import read_task_audit
from grpo_wb.signal.filters import RECIPES, FilterResult, FilterRule, compare_rules
from grpo_wb.signal.headroom import analyze
from grpo_wb.signal.testflags import check_flags, drop_step

if TYPE_CHECKING:  # RECIPES' names are read at import time, which a checker cannot do: a plain string to it
    Recipe = str
else:  # argparse's choices and check_choices read it
    Recipe = Literal[tuple(RECIPES)]


def flag_list(s: str) -> list[str]:
    """``--drop broken,flaky``: test-audit flags."""
    try:
        return check_flags(x.strip() for x in s.split(",") if x.strip())
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


@dataclass(frozen=True, kw_only=True)
class FilterArgs(FilterRule):
    """``grpo-wb filter``."""

    input: str = field(metadata=cli(positional=True, metavar="INPUT"))
    """scored completions file (grpo-wb score output) or a run directory"""
    recipe: list[Recipe] = field(default_factory=list)
    """a published rule instead (open-r1, skywork, prime, dapo); repeat to compare them side by side"""
    tasks: str | None = None
    """canonical task file the samples were scored against, for --out (default for a run: its task file)"""
    out: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write the kept tasks to PATH, as --format says (one rule or one recipe)"""
    format: Export = "canonical"
    """what --out holds (see grpo-wb headroom --help)"""
    json: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write every rule's result (kept ids, drops by reason) as JSON"""
    force: bool = False
    """replace --out and --json if they exist"""
    audit: str | None = field(default=None, metadata=cli(metavar="DIR"))
    """a grpo-wb tasks audit folder: --drop and --min-mutation-score read it, and --out's rows get its
    grpo_wb_test_* columns"""
    drop: list[str] = field(default_factory=list, metadata=cli(type=flag_list, metavar="FLAG,..."))
    """with --audit: first drop the tasks that carry any of these flags (broken, flaky, hackable, weak,
    false_positive, rejects_reference, few_tests, only_examples, duplicate, contaminated, ...); tasks the audit did
    not see are dropped too, counted apart"""
    min_mutation_score: float | None = field(default=None, metadata=cli(type=fraction, metavar="X"))
    """with --audit: first drop the tasks whose mutation score (without likely equivalent mutants) is below X"""

    def __post_init__(self) -> None:
        super().__post_init__()
        audited = bool(self.drop) or self.min_mutation_score is not None
        if audited and not self.audit:
            raise UserError("--drop and --min-mutation-score read a test audit: add --audit DIR (grpo-wb tasks audit)")
        if not self.has_rule and not self.recipe and not audited:
            raise UserError(
                "nothing to filter on: give --band LOW HIGH, --min-p-informative X, --min-samples N, "
                "--recipe NAME or --audit DIR --drop FLAG,..."
            )
        if self.out and (len(self.recipe) + (self.has_rule or audited)) > 1:
            raise UserError("--out writes the tasks one rule keeps: give one rule or one --recipe")


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _print(res: FilterResult) -> None:
    print(
        f"{res.name}: kept {len(res.kept)} of {res.n_tasks} tasks; expected informative fraction at "
        f"G={res.group_size}: {_fmt(res.informative_after_held_out)} held-out, {_fmt(res.informative_after)} "
        f"in-sample (unfiltered {res.informative_before:.3f})"
    )
    print(f"  held-out: {res.held_out}")
    for s in res.steps:
        why = ", ".join(f"{n} {r}" for r, n in sorted(s.reasons.items(), key=lambda x: -x[1]))
        print(f"  {s.rule:<40} drops {s.dropped:>6}  keeps {s.kept:>6}" + (f"  ({why})" if why else ""))


def filter_cmd(args: argparse.Namespace) -> int:
    a = from_args(FilterArgs, args)
    refuse_to_overwrite(a.out, a.force)
    refuse_to_overwrite(a.json, a.force)
    tasks_file = None
    if a.out:
        tasks_file = a.tasks or (manifest_tasks_file(Path(a.input)) if Path(a.input).is_dir() else None)
        if not tasks_file:
            raise UserError("--out needs --tasks FILE (the task file the samples were scored against)")
    audit = read_task_audit(a.audit) if a.audit else None
    samples = load_samples(a.input)
    first = (
        [drop_step(audit, a.drop, a.min_mutation_score)]
        if audit is not None and (a.drop or a.min_mutation_score is not None)
        else []
    )
    results = compare_rules(samples, from_args(FilterRule, args), a.recipe, first)
    print(f"{len(samples)} tasks, {sum(s.n for s in samples)} samples (min {min(s.n for s in samples)} per task)")
    for res in results:
        _print(res)
    if a.json:
        atomic_write_json(a.json, {"input": a.input, "results": [r.to_json() for r in results]})
        print(f"wrote {a.json}")
    if a.out and tasks_file:  # tasks_file is set whenever --out is (checked above)
        (res,) = results
        if not res.kept:
            raise UserError(f"{res.name} keeps no task; nothing written to {a.out}")
        report = analyze(samples, confidence=a.confidence)
        print(
            "wrote "
            + export_tasks(report, res.kept, tasks_file, a.out, fmt=a.format, group_size=a.group_size, audit=audit)
        )
    return 0


COMMANDS = [
    Command(
        ("filter",),
        FilterArgs,
        filter_cmd,
        "keep the tasks a pass-rate rule or a published recipe keeps, and say what that buys at G",
    )
]
