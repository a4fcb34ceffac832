"""Figures for runs, headroom reports and run comparisons.

Every function takes tables from :mod:`grpo_wb.runs` or :mod:`grpo_wb.signal.headroom`
and returns a :class:`matplotlib.figure.Figure` built without pyplot: no global
figure state, no backend needed, nothing shown twice in a notebook (a Figure
that ends a cell is displayed once by the inline backend) and usable from
scripts (``fig.savefig("x.png")``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:  # matplotlib is imported by the first plot, so that the command line starts without it
    import pandas as pd
    from matplotlib.figure import Figure

np = lazy_loader.load("numpy")  # imported by the first plot, as matplotlib is

INFORMATIVE_COLOR = "#1f77b4"
FLAT_COLOR = "#bbbbbb"
STATUS_COLORS = {
    "pass": "#2ca02c",
    "fail": "#d62728",
    "error": "#ff7f0e",
    "timeout": "#9467bd",
    "parse_failure": "#8c564b",
    "sandbox_error": "#7f7f7f",
}
CATEGORY_COLORS = {"frontier": "#1f77b4", "too_easy": "#2ca02c", "too_hard": "#d62728"}


MAX_ROWS = 40
"""Per-task bar charts show at most this many tasks (labels stay legible); the title says how many of how many."""


def _figure(figsize: tuple[float, float]) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def _height(n_rows: int) -> float:
    return max(2.5, min(12.0, 0.28 * n_rows + 1.2))


def _shown(n_shown: int, n_all: int, which: str) -> str:
    return f" ({n_shown} of {n_all} tasks: {which})" if n_shown < n_all else ""


def _empty(fig: Figure, ax, what: str) -> Figure:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def task_reward_bars(tasks: pd.DataFrame) -> Figure:
    """Per-task reward mean and within-group reward variance, sorted by variance; informative tasks coloured."""
    from matplotlib.patches import Patch

    fig = _figure((10, _height(min(len(tasks), MAX_ROWS))))
    ax_m, ax_v = fig.subplots(1, 2, sharey=True)
    if tasks.empty:
        return _empty(fig, ax_m, "tasks")
    t = tasks.sort_values("reward_var", ascending=True).tail(MAX_ROWS)
    y = np.arange(len(t))
    colors = [INFORMATIVE_COLOR if inf else FLAT_COLOR for inf in t["informative"]]
    ax_m.barh(y, t["reward_mean"].fillna(0), color=colors)
    ax_v.barh(y, t["reward_var"].fillna(0), color=colors)
    ax_m.set_yticks(y, [str(i) for i in t.index], fontsize=8)
    ax_m.set_xlabel("mean reward")
    ax_m.set_xlim(0, 1)
    ax_v.set_xlabel("mean within-group reward variance")
    ax_v.legend(
        handles=[
            Patch(color=INFORMATIVE_COLOR, label="informative in some step"),
            Patch(color=FLAT_COLOR, label="never informative"),
        ],
        loc="lower right",
        fontsize=8,
    )
    fig.suptitle("Per-task reward (sorted by reward variance)" + _shown(len(t), len(tasks), "the highest variance"))
    return fig


def informative_by_step(steps: pd.DataFrame, threshold: float | None = None) -> Figure:
    """Informative-prompt and reward-variance fractions per step, with the early-stop threshold."""
    fig = _figure((8, 3.5))
    ax = fig.subplots()
    ax.plot(steps["step"], steps["informative_fraction"], marker="o", label="informative-prompt fraction")
    ax.plot(
        steps["step"], steps["reward_variance_fraction"], marker="s", linestyle="--", label="reward-variance fraction"
    )
    if threshold:
        ax.axhline(threshold, color="#d62728", linestyle=":", label=f"early-stop threshold ({threshold:g})")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("step")
    ax.set_ylabel("fraction of groups")
    ax.set_xticks(list(steps["step"]))
    ax.legend(fontsize=8)
    ax.set_title("Learning signal per step")
    return fig


def forecast_band(frame: pd.DataFrame) -> Figure:
    """Each step's forecast zero-spread fraction with its band (and the re-forecast's), and what the run logged
    (``signal.forecast.forecast_frame``): a realized point outside its band is marked."""
    fig = _figure((10, 3.5))
    ax = fig.subplots()
    if frame.empty:
        return _empty(fig, ax, "no steps")
    ax.fill_between(frame["step"], frame["lo"], frame["hi"], alpha=0.25, step="mid", label="forecast band")
    ax.plot(frame["step"], frame["forecast"], drawstyle="steps-mid", label="forecast before training")
    if "re_lo" in frame:
        ax.plot(frame["step"], frame["re_lo"], ":", color="#555555", drawstyle="steps-mid", label="re-forecast band")
        ax.plot(frame["step"], frame["re_hi"], ":", color="#555555", drawstyle="steps-mid")
    real = frame[frame["realized"].notna()]
    inside = real["inside"].astype(bool)
    ax.scatter(real["step"][inside], real["realized"][inside], color="#2ca02c", zorder=3, label="realized, inside")
    ax.scatter(
        real["step"][~inside],
        real["realized"][~inside],
        color="#d62728",
        marker="x",
        zorder=3,
        label="realized, outside",
    )
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("step")
    ax.set_ylabel("groups with zero reward spread")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("frac_reward_zero_std: forecast and realized")
    fig.tight_layout()
    return fig


def status_breakdown(status: pd.DataFrame) -> Figure:
    """Stacked completions per task by status (pass / fail / error / timeout / parse failure / sandbox error)."""
    fig = _figure((9, _height(min(len(status), MAX_ROWS))))
    ax = fig.subplots()
    if status.empty:
        return _empty(fig, ax, "completions")
    t = status.head(MAX_ROWS).iloc[::-1]
    left = np.zeros(len(t))
    y = np.arange(len(t))
    for col in t.columns:
        vals = t[col].to_numpy(dtype=float)
        if vals.sum() == 0 and col == "sandbox_error":
            continue
        ax.barh(y, vals, left=left, color=STATUS_COLORS.get(col), label=col.replace("_", " "))
        left += vals
    ax.set_yticks(y, [str(i) for i in t.index], fontsize=8)
    ax.set_xlabel("completions")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Status per task" + _shown(len(t), len(status), "the most passes"))
    return fig


def reward_advantage_hist(rewards: pd.Series, advantages: pd.Series) -> Figure:
    """Distributions of rewards and of group-relative advantages (a spike at 0 = no signal)."""
    fig = _figure((10, 3.2))
    ax_r, ax_a = fig.subplots(1, 2)
    if len(rewards):
        ax_r.hist(rewards, bins=np.linspace(0, 1, 21), color="#2ca02c")
    ax_r.set_xlabel("reward")
    ax_r.set_ylabel("completions")
    ax_r.set_title("Rewards")
    if len(advantages):
        ax_a.hist(advantages, bins=30, color=INFORMATIVE_COLOR)
        zero = float((advantages.abs() < 1e-12).mean())
        ax_a.set_title(f"Advantages ({zero:.0%} exactly zero)")
    else:
        ax_a.set_title("Advantages")
    ax_a.set_xlabel("advantage")
    return fig


def pass_rate_intervals(tasks: pd.DataFrame, confidence: float = 0.95, band: Sequence[float] | None = None) -> Figure:
    """Per-task pass rates, sorted, with their Jeffreys intervals as a band; and their histogram by category
    (``band``: a filter's LOW and HIGH, drawn on both).

    Readable at any number of tasks: one line and one band, not one error bar per task (task ids
    label the axis only for a few tasks)."""
    fig = _figure((11, 4.0))
    ax, ax_h = fig.subplots(1, 2, width_ratios=[1.6, 1])
    if tasks.empty:
        ax_h.set_axis_off()
        return _empty(fig, ax, "tasks")
    t = tasks.sort_values(["pass_rate", "ci_high"], kind="stable").reset_index(drop=True)
    x = np.arange(len(t))
    for cat, color in CATEGORY_COLORS.items():
        idx = x[(t["category"] == cat).to_numpy()]
        if len(idx):
            ax.axvspan(idx.min() - 0.5, idx.max() + 0.5, color=color, alpha=0.08, lw=0)
    ax.fill_between(
        x,
        t["ci_low"],
        t["ci_high"],
        step="mid",
        color="#1f77b4",
        alpha=0.25,
        lw=0,
        label=f"{confidence:.0%} Jeffreys interval",
    )
    ax.step(x, t["pass_rate"], where="mid", color="#1f77b4", lw=1.5, label="pass rate c/n")
    if len(t) <= 30:
        ax.set_xticks(x, t["task_id"], rotation=90, fontsize=7)
    else:
        ax.set_xlabel(f"{len(t)} tasks, sorted by pass rate")
    ax.set_xlim(-0.5, len(t) - 0.5)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("pass rate")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("Per-task pass rate (shading: too hard / frontier / too easy)")
    bins = np.linspace(0, 1, 21)
    bottom = np.zeros(len(bins) - 1)
    for cat, color in CATEGORY_COLORS.items():
        vals = t.loc[t["category"] == cat, "pass_rate"].to_numpy(dtype=float)
        counts, _ = np.histogram(vals, bins=bins)
        ax_h.bar(
            bins[:-1],
            counts,
            width=np.diff(bins),
            align="edge",
            bottom=bottom,
            color=color,
            label=f"{cat.replace('_', ' ')}: {len(vals)}",
        )
        bottom += counts
    if band is not None:
        for edge in band:
            ax.axhline(edge, color="black", ls="--", lw=1)
            ax_h.axvline(edge, color="black", ls="--", lw=1)
        ax.plot([], [], color="black", ls="--", lw=1, label=f"band [{band[0]:g}, {band[1]:g}]")
        ax.legend(fontsize=8, loc="upper left")
    ax_h.set_xlim(0, 1)
    ax_h.set_xlabel("pass rate")
    ax_h.set_ylabel("tasks")
    ax_h.legend(fontsize=8, loc="upper center")
    ax_h.set_title("Distribution")
    return fig


def informative_curve(curve: pd.DataFrame, recommended_g: int | None = None) -> Figure:
    """Expected informative fraction over G (estimate and model) and the DAPO over-sampling cost."""
    fig = _figure((10, 3.5))
    ax, ax_c = fig.subplots(1, 2)
    g = curve.index.to_numpy()
    ax.plot(g, curve["expected_informative"], marker="o", ms=3, label="estimate (unbiased where G <= n)")
    ax.plot(g, curve["expected_informative_model"], linestyle="--", label="model 1 - p^G - (1-p)^G")
    if "expected_variance" in curve and not np.allclose(curve["expected_variance"], curve["expected_informative"]):
        ax.plot(g, curve["expected_variance"], linestyle=":", label="reward variance (partial credit)")
    extrap = curve.index[curve["n_tasks_extrapolated"] > 0]
    if len(extrap):
        ax.axvspan(
            extrap.min() - 0.5, g.max() + 0.5, color="#eeeeee", zorder=0, label="G > n for some tasks (model used)"
        )
    cost = curve["completions_per_informative_group"].astype(float)
    ax_c.plot(g, cost, marker="o", ms=3, color="#ff7f0e")
    for a in (ax, ax_c):
        if recommended_g:
            a.axvline(recommended_g, color="#d62728", linestyle=":", label=f"recommended G={recommended_g}")
        a.set_xlabel("group size G")
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("expected informative fraction")
    ax.legend(fontsize=8)
    ax.set_title("Informative groups vs G")
    ax_c.set_ylabel("completions per informative group")
    ax_c.set_title("DAPO dynamic-sampling cost")
    return fig


def compare_steps(steps: pd.DataFrame) -> Figure:
    """Informative and reward-variance fraction per step, one line per run (``run`` column)."""
    from matplotlib.ticker import MaxNLocator

    fig = _figure((10, 3.5))
    ax_i, ax_v = fig.subplots(1, 2, sharey=True)
    for run, s in steps.groupby("run", sort=False):
        ax_i.plot(s["step"], s["informative_fraction"], marker="o", label=str(run))
        ax_v.plot(s["step"], s["reward_variance_fraction"], marker="o", label=str(run))
    ax_i.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_v.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_i.set_title("Informative-prompt fraction")
    ax_v.set_title("Reward-variance fraction")
    for a in (ax_i, ax_v):
        a.set_xlabel("step")
        a.set_ylim(-0.02, 1.02)
    ax_i.legend(fontsize=8)
    return fig


def compare_bars(
    table: pd.DataFrame,
    metrics: Sequence[str] = ("informative_fraction", "reward_variance_fraction", "pass_rate", "parse_failure_rate"),
) -> Figure:
    """Grouped bars of the per-run means (rows of :func:`grpo_wb.runs.load.compare_table`)."""
    fig = _figure((10, 3.5))
    ax = fig.subplots()
    x = np.arange(len(metrics))
    width = 0.8 / max(1, len(table))
    for i, (run, row) in enumerate(table.iterrows()):
        ax.bar(x + i * width, [float(row[m] or 0) for m in metrics], width, label=str(run))
    ax.set_xticks(x + width * (len(table) - 1) / 2, [m.replace("_", " ") for m in metrics], fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    ax.set_title("Runs side by side (means over steps)")
    return fig


def task_shift_bars(shifts: pd.DataFrame, n: int = 20) -> Figure:
    """The tasks whose metric moved most between the first and the last run."""
    top = shifts.head(n).iloc[::-1]
    fig = _figure((8, _height(len(top))))
    ax = fig.subplots()
    if top.empty:
        return _empty(fig, ax, "tasks seen by every run")
    colors = ["#2ca02c" if v >= 0 else "#d62728" for v in top["shift"]]
    ax.barh(np.arange(len(top)), top["shift"], color=colors)
    ax.set_yticks(np.arange(len(top)), [str(i) for i in top.index], fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("shift (last run minus first)")
    ax.set_title("Per-task shifts")
    return fig


def filter_comparison(results: pd.DataFrame) -> Figure:
    """Rules side by side (``filters.results_frame``): tasks each keeps, and the informative fraction at G it
    buys against the unfiltered set's, measured on samples the rule did not choose with and (paler) on those
    it did."""
    fig = _figure((11, 3.6))
    ax_k, ax_i = fig.subplots(1, 2)
    if results.empty:
        ax_i.set_axis_off()
        return _empty(fig, ax_k, "rules")
    names = list(results.index)
    y = np.arange(len(names))
    ax_k.barh(y, results["kept"], color="#2ca02c", label="kept")
    ax_k.barh(y, results["dropped"], left=results["kept"], color="#d62728", alpha=0.6, label="dropped")
    ax_k.set_yticks(y, names, fontsize=8)
    ax_k.invert_yaxis()
    ax_k.set_xlabel("tasks")
    ax_k.legend(fontsize=8)
    ax_k.set_title("Tasks each rule keeps")
    held_col = next(c for c in results.columns if c.endswith("(kept, held-out)"))
    in_col = next(c for c in results.columns if c.endswith("(kept, in-sample)"))
    all_col = next(c for c in results.columns if c.endswith("(all)"))
    ax_i.barh(y - 0.2, results[held_col].fillna(0.0), height=0.4, color="#1f77b4", label="kept set, held-out")
    ax_i.barh(
        y + 0.2,
        results[in_col].fillna(0.0),
        height=0.4,
        color="#1f77b4",
        alpha=0.35,
        label="kept set, in-sample (biased up)",
    )
    ax_i.axvline(float(results[all_col].iloc[0]), color="black", ls="--", lw=1, label="unfiltered")
    ax_i.set_yticks(y, names, fontsize=8)
    ax_i.invert_yaxis()
    ax_i.set_xlim(0, 1)
    ax_i.set_xlabel(held_col.replace(" (kept, held-out)", ""))
    ax_i.legend(fontsize=8)
    ax_i.set_title("Expected informative fraction")
    return fig


def strategy_curves(curves: pd.DataFrame) -> Figure:
    """Rollouts spent against informative groups gathered, one line per strategy (``RolloutPlan.curves_frame``): the
    steeper the line, the less a strategy pays for each group that teaches something."""
    fig = _figure((7.5, 4.2))
    ax = fig.subplots()
    if curves.empty:
        return _empty(fig, ax, "steps")
    for name, c in curves.groupby("strategy", sort=False):
        ax.plot(c["rollouts"], c["informative_groups"], marker=".", ms=3, label=str(name))
    ax.set_xlabel("rollouts generated")
    ax.set_ylabel("informative groups trained on")
    ax.set_title("Data strategies on recorded samples (policy fixed: no weights updated)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def ratio_by_budget(sweep: pd.DataFrame) -> Figure:
    """Effective-gradient ratio and informative groups per 1,000 rollouts against G, the rollouts per prompt
    (``plan.budget_sweep``): the same per-step budget B x G for ``none``, ``knapsack`` and ``vip``; the others
    spend what their rules ask."""
    fig = _figure((10, 4.0))
    left, right = fig.subplots(1, 2)
    if sweep.empty:
        return _empty(fig, left, "strategies")
    for name, c in sweep.groupby("strategy", sort=False):
        left.plot(c["group_size"], c["effective_gradient_ratio"], marker="o", ms=3, label=str(name))
        right.plot(c["group_size"], c["informative_per_1000"], marker="o", ms=3, label=str(name))
    for ax, label in ((left, "effective-gradient ratio"), (right, "informative groups per 1,000 rollouts")):
        ax.set_xscale("log", base=2)
        sizes = sorted(sweep["group_size"].unique())
        ax.set_xticks(sizes, [str(g) for g in sizes])
        ax.set_xlabel("G: rollouts per prompt (budget B x G per step)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    left.legend(fontsize=7)
    fig.suptitle("Per-prompt budgets on recorded samples (policy fixed: no weights updated)")
    return fig


OUTCOME_COLORS = {"won": "#d62728", "harmed": "#ff7f0e", "crashed": "#9467bd", "held": "#2ca02c"}


def audit_outcomes(exploits: pd.DataFrame) -> Figure:
    """Each exploit's reward next to the plainly-wrong control's (the dashed line), coloured by outcome."""
    from matplotlib.patches import Patch

    fig = _figure((9, _height(len(exploits))))
    ax = fig.subplots()
    if exploits.empty:
        return _empty(fig, ax, "exploits")
    t = exploits.iloc[::-1]
    y = np.arange(len(t))
    ax.barh(y, t["reward"].fillna(0), color=[OUTCOME_COLORS.get(o, FLAT_COLOR) for o in t["outcome"]])
    wrong = t["wrong_reward"].dropna()
    if not wrong.empty:
        ax.axvline(float(wrong.max()), color="#333333", linestyle="--", linewidth=1)
    ax.set_yticks(y, list(t["exploit"]), fontsize=8)
    ax.set_xlabel("reward the function gave the exploit (dashed: the plainly-wrong control's)")
    ax.set_xlim(0, max(1.0, float(t["reward"].fillna(0).max())))
    ax.legend(handles=[Patch(color=c, label=o) for o, c in OUTCOME_COLORS.items()], loc="lower right", fontsize=8)
    return fig


def mutation_scores(tasks: pd.DataFrame) -> Figure:
    """The spread of the tasks' mutation scores: as run (every survivor a gap) and without the survivors that
    agree with the reference on every input tried (likely equivalent)."""
    fig = _figure((9, 3.2))
    ax = fig.subplots()
    if tasks.empty or tasks["mutation score"].dropna().empty:
        return _empty(fig, ax, "mutation scores")
    bins = np.linspace(0, 1, 11)
    ax.hist(
        [tasks["mutation score"].dropna(), tasks["without equivalent"].dropna()],
        bins=bins,
        label=["killed / run", "killed / (run - likely equivalent)"],
        color=[FLAT_COLOR, INFORMATIVE_COLOR],
    )
    ax.set_xlabel("mutation score of the task's tests")
    ax.set_ylabel("tasks")
    ax.legend(fontsize=8, loc="upper left")
    return fig
