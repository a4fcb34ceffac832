"""``grpo-wb plan``: static filter, DAPO dynamic sampling or GRESO skipping, simulated on recorded samples."""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from grpo_wb.cli.common import Command, refuse_to_overwrite
from grpo_wb.config import cli, from_args
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_open, atomic_write_json
from grpo_wb.reports.plots import strategy_curves
from grpo_wb.signal.headroom import load_samples
from grpo_wb.signal.plan import Plan, PlanConfig, expected_dapo_batches, simulate
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
    force: bool = False
    """replace --json and --plot if they exist"""


def _fmt(v, spec: str) -> str:
    """``v`` formatted, or a dash as wide as the spec asks."""
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return "-".rjust(width) if v is None else format(v, spec)


def print_plan(plan: Plan, out=print) -> None:
    cfg = plan.config
    out(f"{plan.n_tasks} tasks ({plan.n_frontier} frontier); G={cfg.group_size}, B={cfg.batch_size}; target "
        f"{plan.target_informative_groups} informative groups (E={cfg.epochs} epochs of informative signal over the "
        "frontier)")
    out("a replay of recorded samples under today's policy: no weights are updated")
    dapo = expected_dapo_batches(plan.q, cfg.batch_size)
    out(f"q(G={cfg.group_size}) = {plan.q:.3f}; closed forms: none {_fmt(cfg.group_size / plan.q, '.2f')} rollouts "
        f"per informative group, dapo {_fmt(dapo, '.2f')} generation batches per step (independent draws)")
    head = (f"{'strategy':<8} {'rollouts/inf':>12} {'inf/step':>8} {'inf frac':>8} {'covered':>7} "
            f"{'frontier missed':>15} {'wasted':>8} {'rollouts':>9} {'steps to target':>15} {'batches/step':>12}")
    out(head)
    out("-" * len(head))
    for name, r in plan.strategies.items():
        out(f"{name:<8} {_fmt(r.rollouts_per_informative_group, '12.2f')} {_fmt(r.informative_groups_per_step, '8.2f')} "
            f"{_fmt(r.informative_fraction, '8.3f')} {r.tasks_covered:>7} {r.frontier_never_reached:>15} "
            f"{r.wasted_rollouts:>8} {r.rollouts:>9} {_fmt(r.steps_to_target, '>15')} "
            f"{_fmt(r.generation_batches_per_step, '12.2f')}")
    for name, r in plan.strategies.items():
        if name == "static":
            k = cfg.static_samples or cfg.group_size
            out(f"static: kept {r.tasks_kept} of {plan.n_tasks} tasks (band [{cfg.band[0]:g}, {cfg.band[1]:g}] on the "
                f"first {k} samples, {r.filter_rollouts} rollouts); dropped {r.wrongly_dropped} whose pass rate over "
                "all samples is inside the band")
        if name in ("dapo", "greso"):
            out(f"{name}: {r.cap_hits} steps reached max_num_gen_batches ({cfg.max_num_gen_batches}) short of B "
                f"informative groups; {r.surplus_rollouts} rollouts of surplus informative groups discarded"
                + (f"; {r.skipped_prompts} prompts skipped before rollout" if name == "greso" else ""))
        if r.replacement_draws:
            out(f"{name}: {r.replacement_draws} groups drawn with replacement (the task's samples ran out in an epoch)")
        if r.steps_to_target is None:
            out(f"{name}: did not reach the target within {r.steps} steps")


def plan_cmd(args: argparse.Namespace) -> int:
    a = from_args(PlanArgs, args)
    refuse_to_overwrite(a.json, a.force)
    refuse_to_overwrite(a.plot, a.force)
    samples = load_samples(a.input)
    if a.tasks:
        ids = [t.task_id for t in load_tasks(a.tasks)]
        have = {s.task_id for s in samples}
        missing = [t for t in ids if t not in have]
        if missing:
            raise UserError(f"{a.tasks}: task {missing[0]!r} has no samples in {a.input}"
                            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        keep = set(ids)
        samples = [s for s in samples if s.task_id in keep]
    plan = simulate(samples, from_args(PlanConfig, args))
    print_plan(plan)
    if a.json:
        atomic_write_json(a.json, plan.to_json())
        print(f"wrote {a.json}")
    if a.plot:
        with atomic_open(a.plot, "wb") as f:
            strategy_curves(plan.curves_frame()).savefig(f, format="png", dpi=110)
        print(f"wrote {a.plot}")
    return 0


COMMANDS = [Command(("plan",), PlanArgs, plan_cmd,
                    "static filter vs DAPO vs GRESO: rollouts per informative group, simulated on recorded samples")]
