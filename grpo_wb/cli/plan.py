"""``grpo-wb plan``: data strategies (filters, dynamic sampling, per-prompt budgets) simulated on recorded samples."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Literal, cast

from grpo_wb.cli.common import Command, refuse_to_overwrite
from grpo_wb.cli.headroom import Export
from grpo_wb.config import cli, from_args, int_list
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_open, atomic_write_json
from grpo_wb.reports.plots import ratio_by_budget, strategy_curves
from grpo_wb.runs.exports import export_tasks, trl_path_for
from grpo_wb.runs.scored import load_samples
from grpo_wb.signal.headroom import analyze
from grpo_wb.signal.plan import (
    PER_PROMPT,
    PlanConfig,
    RolloutPlan,
    budget_sweep,
    epoch_budgets,
    expected_dapo_batches,
    simulate,
    unfit_reason,
)
from grpo_wb.tasks.records import load_tasks


@dataclass(frozen=True, kw_only=True)
class PlanArgs(PlanConfig):
    """``grpo-wb plan``."""

    input: str = field(metadata=cli(positional=True, metavar="SCORED"))
    """recorded samples: a grpo-wb score results file or a run directory"""
    tasks: str | None = None
    """canonical task file: plan over exactly its tasks (each must have samples)"""
    json: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write every figure of the table, per strategy, as JSON"""
    plot: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write the rollouts-vs-informative-groups plot (PNG)"""
    budget_plot: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write the effective-gradient ratio and informative groups per 1,000 rollouts against G, each strategy
    simulated again at every --sweep size (PNG)"""
    sweep: list[int] = field(default_factory=lambda: [4, 8, 16, 32], metadata=cli(type=int_list))
    """group sizes G of --budget-plot (comma-separated)"""
    export: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """write every task with its per-prompt budget (grpo_wb_rollouts, from --export-strategy at G and B) next to
    the pass-rate columns, as --format says (needs --tasks)"""
    export_strategy: Literal["knapsack", "vip"] = "knapsack"
    """the allocation behind grpo_wb_rollouts"""
    format: Export = "trl"
    """what --export writes (see grpo-wb headroom --help; canonical keeps grpo_wb_rollouts in each task's
    metadata)"""
    force: bool = False
    """replace --json, --plot, --budget-plot and --export if they exist"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.export and not self.tasks:
            raise UserError("--export needs --tasks FILE (the task file the samples were scored against)")
        if any(g < 2 for g in self.sweep):
            raise UserError(f"--sweep group sizes must be at least 2, got {self.sweep}")
        if self.export and (why := unfit_reason(self.export_strategy, self)):
            raise UserError(f"--export-strategy {self.export_strategy}: {why}")
        for g in self.sweep if self.budget_plot else ():
            if all(unfit_reason(name, self, g) for name in self.strategies):
                # a str: every strategy is unfit at g, the first one included
                raise UserError(f"--sweep {g}: " + cast(str, unfit_reason(self.strategies[0], self, g)))


def _fmt(v, spec: str) -> str:
    """``v`` formatted, or a dash as wide as the spec asks."""
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return "-".rjust(width) if v is None else format(v, spec)


def print_plan(plan: RolloutPlan, out=print) -> None:
    cfg = plan.config
    out(
        f"{plan.n_tasks} tasks ({plan.n_frontier} frontier); G={cfg.group_size}, B={cfg.batch_size}; target "
        f"{plan.target_informative_groups} informative groups (E={cfg.epochs} epochs of informative signal over the "
        "frontier)"
    )
    out("a replay of recorded samples under today's policy: no weights are updated")
    for name, why in cfg.left_out.items():
        out(f"{name}: left out of the default strategies ({why})")
    dapo = expected_dapo_batches(plan.q, cfg.batch_size)
    out(
        f"q(G={cfg.group_size}) = {plan.q:.3f}; closed forms: none {_fmt(cfg.group_size / plan.q, '.2f')} rollouts "
        f"per informative group, dapo {_fmt(dapo, '.2f')} generation batches per step (independent draws)"
    )
    head = (
        f"{'strategy':<13} {'rollouts/inf':>12} {'eff ratio':>9} {'inf/1k':>6} {'inf/step':>8} {'inf frac':>8} "
        f"{'covered':>7} {'frontier missed':>15} {'wasted':>8} {'rollouts':>9} {'steps to target':>15} "
        f"{'batches/step':>12}"
    )
    out(head)
    out("-" * len(head))
    for name, r in plan.strategies.items():
        out(
            f"{name:<13} {_fmt(r.rollouts_per_informative_group, '12.2f')} {_fmt(r.effective_gradient_ratio, '9.3f')} "
            f"{_fmt(r.informative_per_1000, '6.1f')} {_fmt(r.informative_groups_per_step, '8.2f')} "
            f"{_fmt(r.informative_fraction, '8.3f')} {r.tasks_covered:>7} {r.frontier_never_reached:>15} "
            f"{r.wasted_rollouts:>8} {r.rollouts:>9} {_fmt(r.steps_to_target, '>15')} "
            f"{_fmt(r.generation_batches_per_step, '12.2f')}"
        )
    out(
        "eff ratio: share of rollouts in trained groups with reward variance; inf/1k: informative groups per 1,000 "
        "rollouts"
    )
    if plan.zero_variance:
        out(
            "all-pass / all-fail groups at n (prompts drawn uniformly): "
            + "; ".join(f"n={n}: {a:.1%} / {f:.1%}" for n, (a, f) in plan.zero_variance.items())
        )
    for name, r in plan.strategies.items():
        if name == "static":
            k = cfg.static_samples or cfg.group_size
            out(
                f"static: kept {r.tasks_kept} of {plan.n_tasks} tasks (band [{cfg.band[0]:g}, {cfg.band[1]:g}] on the "
                f"first {k} samples, {r.filter_rollouts} rollouts); dropped {r.wrongly_dropped} whose pass rate over "
                "all samples is inside the band"
            )
        if name in ("dapo", "greso"):
            out(
                f"{name}: {r.cap_hits} steps reached max_num_gen_batches ({cfg.max_num_gen_batches}) short of B "
                f"informative groups; {r.surplus_rollouts} rollouts of surplus informative groups discarded"
                + (f"; {r.skipped_prompts} prompts skipped before rollout" if name == "greso" else "")
            )
        if name in PER_PROMPT:
            hist = ", ".join(f"{k}: {v}" for k, v in r.budget_histogram().items())
            out(
                f"{name}: rollouts per prompt per step (prompts): {hist}"
                + (f"; {r.reused_responses} earlier passes reused" if name == "ar3po" else "")
            )
        if r.replacement_draws:
            out(f"{name}: {r.replacement_draws} groups drawn with replacement (the task's samples ran out in an epoch)")
        if r.steps_to_target is None:
            out(f"{name}: did not reach the target within {r.steps} steps")


def plan_cmd(args: argparse.Namespace) -> int:
    a = from_args(PlanArgs, args)
    trl_sibling = trl_path_for(a.export) if a.export and a.format == "canonical" else None
    for path in (a.json, a.plot, a.budget_plot, a.export, trl_sibling):
        refuse_to_overwrite(path, a.force)
    samples = load_samples(a.input)
    if a.tasks:
        ids = [t.task_id for t in load_tasks(a.tasks)]
        have = {s.task_id for s in samples}
        missing = [t for t in ids if t not in have]
        if missing:
            raise UserError(
                f"{a.tasks}: task {missing[0]!r} has no samples in {a.input}"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
            )
        keep = set(ids)
        samples = [s for s in samples if s.task_id in keep]
    cfg = from_args(PlanConfig, args)
    plan = simulate(samples, cfg)
    print_plan(plan)
    # everything computed before anything is written: a failure leaves no output behind
    sweep = budget_sweep(samples, cfg, a.sweep) if a.budget_plot else None
    budgets = epoch_budgets(samples, cfg, a.export_strategy) if a.export else {}
    if a.export and a.tasks:  # __post_init__ refuses --export without --tasks
        print(
            "wrote "
            + export_tasks(
                analyze(samples),
                [s.task_id for s in samples],
                a.tasks,
                a.export,
                fmt=a.format,
                group_size=cfg.group_size,
                extra={t: {"grpo_wb_rollouts": n} for t, n in budgets.items()},
            )
        )
        print(
            f"grpo_wb_rollouts: {a.export_strategy} at G={cfg.group_size}, B={cfg.batch_size} "
            f"(one epoch: {sum(budgets.values())} rollouts over {len(budgets)} tasks, "
            f"{min(budgets.values())} to {max(budgets.values())} per task)"
        )
    if a.json:
        atomic_write_json(a.json, plan.to_json())
        print(f"wrote {a.json}")
    if a.plot:
        with atomic_open(a.plot, "wb") as f:
            strategy_curves(plan.curves_frame()).savefig(f, format="png", dpi=110)
        print(f"wrote {a.plot}")
    if sweep is not None and a.budget_plot:  # a sweep is run for --budget-plot only
        with atomic_open(a.budget_plot, "wb") as f:
            ratio_by_budget(sweep).savefig(f, format="png", dpi=110)
        print(f"wrote {a.budget_plot}")
    return 0


COMMANDS = [
    Command(
        ("plan",),
        PlanArgs,
        plan_cmd,
        "filters, DAPO, GRESO and per-prompt budgets: rollouts per informative group, simulated on recorded samples",
    )
]
