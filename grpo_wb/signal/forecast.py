"""Headroom's forecast held against a run: each step's fraction of zero-spread groups, and DAPO's batches.

Before training, headroom measures each task's pass rate from n samples (c passes). A GRPO step that draws tasks S
with G completions each leaves ``Z = |{i in S: all G pass or all G fail}| / |S|`` groups without a gradient (TRL's
``frac_reward_zero_std``, binary reward). Its forecast:

* the point: ``mean over i in S of [C(c_i, G) + C(n_i - c_i, G)] / C(n_i, G)``, the unbiased estimate of
  ``p_i^G + (1 - p_i)^G`` (headroom's ``informative_estimate``; the plug-in at ``c/n`` where G > n);
* the band: the central ``confidence`` interval of Z over simulations that draw each ``p_i`` from its Jeffreys
  posterior ``Beta(c + 1/2, n - c + 1/2)`` and each group's passes from ``Binomial(G, p_i)``, so both the
  uncertainty of the measured rates and the chance of a step's few groups are in it.

The tasks a step draws come from the run (its groups file): the sampler's draw does not depend on the policy, so
the forecast is conditioned on it. As the policy learns its pass rates drift and the realized fraction leaves the
band: :func:`reforecast` forecasts each step again from the run's rollouts before it (all of them, or the last
``window`` steps): every task's log-odds moved by the one shift that makes the rates predict the passes those
rollouts held (:func:`drift`), and each task they drew counted in. Where the re-forecast holds and the first did
not, the miss was the policy learning.

DAPO's dynamic sampling (verl's ``filter_groups``) in the trainer's own terms: a step draws generation batches of
``gen_batch_size`` prompts until ``train_batch_size`` informative groups are kept, and raises when
``max_num_gen_batches`` batches were not enough. With q the mean informative probability of a drawn prompt,
``E[batches] = sum_k P(Binomial(k * gen, q) < B)`` and ``P(raise) = P(Binomial(M * gen, q) < B)``;
:func:`dapo_forecast` gives both, and ``plan.simulate``'s ``dapo`` strategy replays the sampler on the same
recorded samples to check them.

Arithmetic only: the readers of runs and scored files are in ``grpo_wb.runs``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.signal.headroom import dataframe, informative_estimate
from grpo_wb.signal.plan import expected_dapo_batches

_LOGGED = 1e-6
"""How far a logged fraction may sit from the k/groups it is: TRL logs its metrics as float32 (2/3 as 0.6666667)."""


@dataclass(frozen=True)
class StepForecast:
    """One step's forecast of its zero-spread fraction, beside what the run logged."""

    step: int
    """The run's step, as its metrics number it."""
    groups: int
    """Groups the step had (prompts it drew that the forecast knows)."""
    expected: float
    """The point forecast: the mean over its groups of the unbiased P(all pass or all fail)."""
    lo: float
    """The band's lower end."""
    hi: float
    """The band's upper end."""
    realized: float | None = None
    """The run's ``frac_reward_zero_std`` at this step (None where not logged)."""
    unknown: int = 0
    """Groups of tasks with no measured rate (left out of the forecast)."""

    @property
    def inside(self) -> bool | None:
        """Whether the realized fraction falls inside the band (None without one)."""
        if self.realized is None:
            return None
        return self.lo - _LOGGED <= self.realized <= self.hi + _LOGGED

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "groups": self.groups,
            "expected": self.expected,
            "lo": self.lo,
            "hi": self.hi,
            "realized": self.realized,
            "inside": self.inside,
            "unknown": self.unknown,
        }


Counts = Mapping[str, tuple[float, float]]
"""Each task's measured ``(n, c)``: samples scored, samples that passed (whole numbers, but for a re-forecast's
shifted rates)."""


def _check(group_size: int, confidence: float, sims: int) -> None:
    if group_size < 2:
        raise UserError(f"group size must be >= 2 for a spread, got {group_size}")
    if not 0.0 < confidence < 1.0:
        raise UserError(f"confidence must be in (0, 1), got {confidence}")
    if sims < 100:
        raise UserError(f"sims must be >= 100, got {sims}")


def zero_std_forecast(
    counts: Counts,
    step_tasks: Sequence[Sequence[str]],
    group_size: int,
    *,
    realized: Sequence[float | None] | None = None,
    confidence: float = 0.95,
    sims: int = 4000,
    seed: int = 0,
    steps: Sequence[int] | None = None,
) -> list[StepForecast]:
    """Each step's forecast from ``counts``; ``step_tasks[k]``: the task of each group of the k-th step (a task
    drawn twice counts twice); ``realized``: what the run logged, step by step; ``steps``: their numbers (1...)."""
    import numpy as np  # here: grpo-wb commands that never forecast do not pay for numpy

    _check(group_size, confidence, sims)
    if realized is not None and len(realized) != len(step_tasks):
        raise UserError(f"{len(realized)} realized values for {len(step_tasks)} steps")
    rng = np.random.default_rng(seed)
    tasks = sorted({t for s in step_tasks for t in s if t in counts})
    index = {t: i for i, t in enumerate(tasks)}
    n = np.array([counts[t][0] for t in tasks], dtype=float)
    c = np.array([counts[t][1] for t in tasks], dtype=float)
    # every simulation draws each task's rate once (one policy for the whole run), from its Jeffreys posterior
    p = rng.beta(c + 0.5, n - c + 0.5, size=(sims, len(tasks))) if tasks else np.zeros((sims, 0))
    point = {t: _flat_point(counts[t][0], counts[t][1], group_size) for t in tasks}
    a = (1.0 - confidence) / 2.0
    out = []
    for k, drawn in enumerate(step_tasks):
        known = [index[t] for t in drawn if t in index]
        number = steps[k] if steps is not None else k + 1
        real = None if realized is None else realized[k]
        if not known:
            out.append(StepForecast(number, 0, float("nan"), float("nan"), float("nan"), real, len(drawn)))
            continue
        passes = rng.binomial(group_size, p[:, known])
        flat = ((passes == 0) | (passes == group_size)).mean(axis=1)
        out.append(
            StepForecast(
                step=number,
                groups=len(known),
                expected=float(np.mean([point[tasks[i]] for i in known])),
                lo=float(np.quantile(flat, a)),
                hi=float(np.quantile(flat, 1.0 - a)),
                realized=real,
                unknown=len(drawn) - len(known),
            )
        )
    return out


def _flat_point(n: float, c: float, g: int) -> float:
    """P(a group of g is all pass or all fail): unbiased from whole counts, the plug-in at c/n from shifted ones."""
    if float(n).is_integer() and float(c).is_integer():
        return 1.0 - informative_estimate(int(n), int(c), g)[0]
    p = c / n
    return p**g + (1.0 - p) ** g


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def drift(counts: Counts, groups: Iterable[tuple[str, int, int]]) -> float:
    """The policy's drift since ``counts`` were measured, as one shift of every task's log-odds: the shift under
    which the rates (Jeffreys-smoothed) predict as many passes in ``groups`` as they held (bisection)."""
    seen = [(counts[t], n, c) for t, n, c in groups if t in counts]
    if not seen:
        return 0.0
    passes = sum(c for _, _, c in seen)
    base = [(_logit((nc[1] + 0.5) / (nc[0] + 1.0)), n) for nc, n, _ in seen]

    def predicted(shift: float) -> float:
        return sum(n * _sigmoid(b + shift) for b, n in base)

    lo, hi = -20.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if predicted(mid) < passes else (lo, mid)
    return (lo + hi) / 2.0


def reforecast(
    counts: Counts,
    step_groups: Sequence[Sequence[tuple[str, int, int]]],
    group_size: int,
    *,
    realized: Sequence[float | None] | None = None,
    window: int | None = None,
    confidence: float = 0.95,
    sims: int = 4000,
    seed: int = 0,
    steps: Sequence[int] | None = None,
) -> list[StepForecast]:
    """Each step forecast from what the run did before it (the last ``window`` steps, or all): ``step_groups[k]``
    holds the k-th step's groups as ``(task, n, passes)``. Every task's rate moves by the policy's :func:`drift`
    over those steps (most tasks are not in a few steps' draws, but the policy that moved the others moved them
    too), and a task drawn there adds what it did. The first step has only ``counts``."""
    out = []
    for k, groups in enumerate(step_groups):
        start = 0 if window is None else max(0, k - window)
        recent = [g for earlier in step_groups[start:k] for g in earlier]
        shift = drift(counts, recent)
        seen: dict[str, list[float]] = {}
        for t, (n, c) in counts.items():
            seen[t] = [n, c] if shift == 0.0 else [n, n * _sigmoid(_logit((c + 0.5) / (n + 1.0)) + shift)]
        for task, n, c in recent:
            slot = seen.setdefault(task, [0, 0])
            slot[0] += n
            slot[1] += c
        (one,) = zero_std_forecast(
            {t: (v[0], v[1]) for t, v in seen.items() if v[0] > 0},
            [[g[0] for g in groups]],
            group_size,
            realized=None if realized is None else [realized[k]],
            confidence=confidence,
            sims=sims,
            seed=seed + k,
            steps=[steps[k] if steps is not None else k + 1],
        )
        out.append(one)
    return out


def coverage(forecasts: Iterable[StepForecast]) -> tuple[int, int]:
    """``(steps whose realized value is inside the band, steps with a realized value)``."""
    judged = [f.inside for f in forecasts if f.inside is not None]
    return sum(judged), len(judged)


def forecast_frame(pre: Sequence[StepForecast], re: Sequence[StepForecast] | None = None):
    """Pre-training forecast (and the re-forecast) beside the realized values, one row a step."""
    rows = []
    for i, f in enumerate(pre):
        row = {
            "step": f.step,
            "groups": f.groups,
            "realized": f.realized,
            "forecast": round(f.expected, 4),
            "lo": round(f.lo, 4),
            "hi": round(f.hi, 4),
            "inside": f.inside,
        }
        if re is not None:
            r = re[i]
            row.update(reforecast=round(r.expected, 4), re_lo=round(r.lo, 4), re_hi=round(r.hi, 4), re_inside=r.inside)
        rows.append(row)
    return dataframe(rows)


# ----------------------------------------------------------------------------- DAPO's dynamic sampling


@dataclass(frozen=True)
class DapoForecast:
    """What DAPO's dynamic sampling costs a step, forecast from the pass rates."""

    q: float
    """P(a drawn prompt's group is informative): the mean over the task pool."""
    train_batch_size: int
    """Informative groups a step needs (verl's ``data.train_batch_size``)."""
    gen_batch_size: int
    """Prompts per generation batch (verl's ``data.gen_batch_size``)."""
    max_num_gen_batches: int
    """verl's ``algorithm.filter_groups.max_num_gen_batches`` (0: no limit)."""
    expected_batches: float | None
    """E[generation batches per step] without the limit (None when no prompt is ever informative)."""
    p_exceed: float
    """P(a step has not found its groups after ``max_num_gen_batches`` batches): verl raises then."""

    def to_json(self) -> dict[str, Any]:
        return {
            "q": self.q,
            "train_batch_size": self.train_batch_size,
            "gen_batch_size": self.gen_batch_size,
            "max_num_gen_batches": self.max_num_gen_batches,
            "expected_batches": self.expected_batches,
            "p_exceed": self.p_exceed,
        }


def dapo_forecast(
    counts: Counts, group_size: int, train_batch_size: int, gen_batch_size: int | None = None, max_num_gen_batches=10
) -> DapoForecast:
    """DAPO's generation batches per step and its chance of raising, each drawn prompt informative with the pool's
    mean probability q, independently."""
    from scipy.stats import binom  # here, as in plan: scipy only where a forecast is made

    if not counts:
        raise UserError("no tasks to forecast over")
    if train_batch_size < 1:
        raise UserError(f"train_batch_size must be >= 1, got {train_batch_size}")
    gen = gen_batch_size or train_batch_size
    q = sum(1.0 - _flat_point(n, c, group_size) for n, c in counts.values()) / len(counts)
    expected = expected_dapo_batches(q, train_batch_size, gen_batch_size=gen)
    p_exceed = 0.0 if max_num_gen_batches <= 0 else float(binom.cdf(train_batch_size - 1, max_num_gen_batches * gen, q))
    return DapoForecast(q, train_batch_size, gen, max_num_gen_batches, expected, p_exceed)
