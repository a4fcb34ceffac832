"""Headroom's forecast beside a run's realized zero-spread fractions (``signal.forecast``), read from its files.

The forecast's pass rates come from a scored file (or a run) measured before training; the run gives each step's
groups (``groups.jsonl``: which tasks it drew, and how many of each group passed) and the realized
``frac_reward_zero_std``: TRL's own logged value where the run is a TRL run (``trl_log.jsonl``), else the one
grpo_wb computed the same way (``metrics.jsonl``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.formats import schema
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.layout import RunFiles
from grpo_wb.runs.scored import load_samples
from grpo_wb.signal.forecast import (
    Counts,
    DapoForecast,
    StepForecast,
    coverage,
    dapo_forecast,
    drift,
    reforecast,
    zero_std_forecast,
)
from grpo_wb.signal.plan import PlanConfig, simulate


@dataclass
class ForecastCheck:
    """A run's steps, forecast before training and re-forecast from its own rollouts, beside what it logged."""

    group_size: int
    """G: completions per group in the run."""
    pre: list[StepForecast]
    """Each step forecast from the pass rates measured before training."""
    re: list[StepForecast]
    """Each step forecast from those and the run's rollouts before it."""
    source: str
    """Where the realized values come from (TRL's log or grpo_wb's metrics)."""
    dapo: DapoForecast | None = None
    """DAPO's generation batches forecast from the same rates (with :attr:`dapo_simulated`)."""
    dapo_simulated: dict[str, Any] = field(default_factory=dict)
    """``plan.simulate``'s DAPO sampler replayed on the same recorded samples: batches per step, cap hits."""
    whole_run: StepForecast | None = None
    """Every step's groups pooled (its ``step``: the steps pooled): a few groups a step make wide bands, the run's
    mean zero-spread fraction is the sharper test of the rates."""
    pass_rates: dict[str, float] = field(default_factory=dict)
    """The drawn groups' pass rate measured before training (``before``) and in the run (``run``), each half of the
    run's (``first_half``, ``second_half``), and the policy's drift over the run as one log-odds shift of every
    task's rate (``drift_logit``, :func:`~grpo_wb.signal.forecast.drift`)."""

    def headline(self) -> dict[str, Any]:
        inside, judged = coverage(self.pre)
        re_inside, _ = coverage(self.re)
        out: dict[str, Any] = {
            "steps": len(self.pre),
            "group_size": self.group_size,
            "inside_band": inside,
            "judged_steps": judged,
            "inside_band_reforecast": re_inside,
            "realized_from": self.source,
        }
        if self.whole_run is not None:
            out["whole_run"] = self.whole_run.to_json()
        if self.pass_rates:
            out["pass_rates"] = self.pass_rates
        if self.dapo is not None:
            out["dapo"] = {**self.dapo.to_json(), "simulated": self.dapo_simulated}
        return out


def markdown(check: ForecastCheck) -> str:
    """The step-by-step table as docs/forecast.md shows it (Markdown): forecast, band and realized per step, then the
    whole run."""

    def band(f: StepForecast) -> str:
        return f"[{f.lo:.2f}, {f.hi:.2f}]"

    def real(f: StepForecast) -> str:
        return "-" if f.realized is None else f"{f.realized:.2f}"

    def mark(f: StepForecast) -> str:
        return {True: "yes", False: "**no**", None: "-"}[f.inside]

    lines = [
        "| step | groups | realized | forecast | band | inside | re-forecast | band | inside |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f, r in zip(check.pre, check.re):
        lines.append(
            f"| {f.step} | {f.groups} | {real(f)} | {f.expected:.2f} | {band(f)} | {mark(f)} | {r.expected:.2f} | "
            f"{band(r)} | {mark(r)} |"
        )
    if check.whole_run is not None:
        w = check.whole_run
        lines.append(f"| all {w.step} | {w.groups} | {real(w)} | {w.expected:.2f} | {band(w)} | {mark(w)} | | | |")
    return "\n".join(lines) + "\n"


def _step_groups(run_dir: Path) -> dict[int, list[tuple[str, int, int]]]:
    path = run_dir / RunFiles.GROUPS
    if not path.exists():
        raise UserError(f"{run_dir}: not a grpo_wb run directory (no {RunFiles.GROUPS})")
    steps: dict[int, list[tuple[str, int, int]]] = {}
    for lineno, obj in iter_jsonl(path):
        g = schema.check_group(obj)
        if g is None or not isinstance(obj.get("step"), int):
            raise UserError("not a group record of a run step", path=str(path), line=lineno)
        steps.setdefault(obj["step"], []).append((g.task_id, g.n_total, g.n_correct))
    if not steps:
        raise UserError(f"{path}: the run logged no groups")
    return steps


# TRL logs after the optimizer step, under ``state.global_step`` already counted (1-based); grpo_wb writes a batch's
# groups under the step it trains (0-based, as the reward saw ``global_step``): TRL's line N is groups' step N - 1
_LOG_STEP_SHIFT = {RunFiles.TRL_LOG: 1, RunFiles.METRICS: 0}


def _realized(run_dir: Path) -> tuple[dict[int, float], str]:
    """Each step's ``frac_reward_zero_std``, keyed by the groups' step: TRL's own log where it has it, else grpo_wb's
    metrics."""
    for name, label in ((RunFiles.TRL_LOG, "TRL's log"), (RunFiles.METRICS, "grpo_wb's metrics")):
        path = run_dir / name
        if not path.exists():
            continue
        found = {
            int(obj["step"]) - _LOG_STEP_SHIFT[name]: float(obj["frac_reward_zero_std"])
            for _, obj in iter_jsonl(path)
            if isinstance(obj, dict)
            and isinstance(obj.get("step"), int)
            and isinstance(obj.get("frac_reward_zero_std"), (int, float))
        }
        if found:
            return found, label
    return {}, "nothing logged"


def forecast_check(
    before: str | Path,
    run_dir: str | Path,
    *,
    window: int | None = None,
    confidence: float = 0.95,
    sims: int = 4000,
    seed: int = 0,
    max_num_gen_batches: int = 10,
) -> ForecastCheck:
    """Hold the pass rates of ``before`` (a scored file or a run) against the run in ``run_dir``."""
    run = Path(run_dir)
    samples = load_samples(before)
    counts = {s.task_id: (s.n, s.n_correct) for s in samples}
    steps = _step_groups(run)
    order = sorted(steps)
    sizes = {n for groups in steps.values() for _, n, _ in groups}
    if len(sizes) != 1:
        raise UserError(f"{run}: groups of several sizes ({sorted(sizes)}): one G per run is forecast")
    (g,) = sizes
    realized, source = _realized(run)
    values = [realized.get(s) for s in order]
    pre = zero_std_forecast(
        counts,
        [[t for t, _, _ in steps[s]] for s in order],
        g,
        realized=values,
        confidence=confidence,
        sims=sims,
        seed=seed,
        steps=order,
    )
    re = reforecast(
        counts,
        [steps[s] for s in order],
        g,
        realized=values,
        window=window,
        confidence=confidence,
        sims=sims,
        seed=seed,
        steps=order,
    )
    batch = max(len(v) for v in steps.values())
    # DAPO draws from the run's own pool (the tasks its steps drew: a frontier export, say), not from every task
    # the rates were measured on
    pool = {t for groups in steps.values() for t, _, _ in groups}
    dapo = dapo_forecast(
        {t: v for t, v in counts.items() if t in pool}, g, batch, max_num_gen_batches=max_num_gen_batches
    )
    sim = simulate(
        [s for s in samples if s.task_id in pool],
        PlanConfig(
            group_size=g,
            batch_size=batch,
            epochs=10_000,  # the steps bound the simulation: enough of them for its rates
            max_steps=max(len(order), 200),
            strategies=["dapo"],
            max_num_gen_batches=max_num_gen_batches,
            seed=seed,
        ),
    ).strategies["dapo"]
    simulated = {
        "steps": len(sim.batch_counts),
        "batches_per_step": sim.generation_batches_per_step,
        "cap_hit_rate": sim.cap_hits / len(sim.batch_counts) if sim.batch_counts else None,
    }
    groups = [t for s in order for t, _, _ in steps[s]]
    logged = [(v, len(steps[s])) for s, v in zip(order, values) if v is not None]
    pooled = sum(v * n for v, n in logged) / len(groups) if len(logged) == len(order) else None
    (whole,) = zero_std_forecast(
        counts, [groups], g, realized=[pooled], confidence=confidence, sims=sims, seed=seed, steps=[len(order)]
    )
    return ForecastCheck(g, pre, re, source, dapo, simulated, whole, _pass_rates(counts, [steps[s] for s in order]))


def _pass_rates(counts: Counts, step_groups: list[list[tuple[str, int, int]]]) -> dict[str, float]:
    """What the rates were before and became: the run's passes beside the measured rates of the tasks it drew."""
    flat = [grp for groups in step_groups for grp in groups if grp[0] in counts]
    half = len(step_groups) // 2

    def rate(groups: list[tuple[str, int, int]]) -> float:
        return sum(c for _, _, c in groups) / max(1, sum(n for _, n, _ in groups))

    before = sum(counts[t][1] / counts[t][0] * n for t, n, _ in flat) / max(1, sum(n for _, n, _ in flat))
    return {
        "before": before,
        "run": rate(flat),
        "first_half": rate([g for groups in step_groups[:half] for g in groups if g[0] in counts]),
        "second_half": rate([g for groups in step_groups[half:] for g in groups if g[0] in counts]),
        "drift_logit": drift(counts, flat),
    }
