"""The pass-rate filters teams run before GRPO, done with an interval and the informative fraction at G.

A rule keeps or drops each task from its scored samples. Ours:

* ``min_samples``: fewer samples than this is too little evidence (dropped first);
* ``band LOW HIGH``: keep ``LOW <= c/n <= HIGH`` (c/n is the unbiased pass rate); with
  ``conservative``, keep only tasks whose Jeffreys interval lies inside the band;
* ``min_p_informative X`` at ``G``: keep tasks whose unbiased P(a group of G is
  informative) is at least X; with ``conservative``, the smaller of the plug-in
  ``1 - p^G - (1-p)^G`` at the interval's two ends (the function is concave in p,
  so that is its minimum over the interval).

The published rules, reproduced as their code reads (``docs/data-strategies.md``):

* ``open-r1`` (huggingface/open-r1 ``scripts/pass_rate_filtering/compute_pass_rate.py``):
  keep iff ``0.1 < nanmean(rewards) < 0.9``, strict, rewards that are None as NaN;
* ``skywork`` (SkyworkAI/Skywork-OR1 ``download_and_filter_data_*.py``): keep iff
  ``1 <= d <= 15``, d the correct answers among 16 samples (the first 16 of each task);
* ``prime`` (verl-recipe ``prime/prime_ray_trainer.py``): keep iff ``0.2 <= mean accuracy <= 0.8``,
  inclusive;
* ``dapo`` (verl-recipe ``dapo/dapo_ray_trainer.py``, ``filter_groups`` on ``acc``): keep iff the
  accuracies are not all equal (std > 0), here over all of a task's samples.

These are arithmetic on scored rows: nothing here runs code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from grpo_wb.config import checked_band, cli, fraction, positive_int
from grpo_wb.errors import UserError
from grpo_wb.signal.diagnostics import informative_probability_model
from grpo_wb.signal.headroom import TaskSamples, dataframe, informative_estimate, jeffreys_interval

SKYWORK_N = 16


def _open_r1(s: TaskSamples) -> str | None:
    raw = s.raw_rewards or tuple(s.rewards)
    vals = [r for r in raw if r is not None and not math.isnan(r)]
    if not vals:
        return "no rewards (open-r1: nanmean is NaN)"
    m = sum(vals) / len(vals)
    return None if 0.1 < m < 0.9 else "mean reward outside (0.1, 0.9)"


def _skywork(s: TaskSamples) -> str | None:
    if len(s.passes) < SKYWORK_N:
        return f"fewer than {SKYWORK_N} ordered samples (Skywork counts correct answers of {SKYWORK_N})"
    d = sum(s.passes[:SKYWORK_N])
    return None if 1 <= d <= SKYWORK_N - 1 else f"{d} of the first {SKYWORK_N} correct (needs 1-15)"


def _prime(s: TaskSamples) -> str | None:
    acc = s.n_correct / s.n
    return None if 0.2 <= acc <= 0.8 else "accuracy outside [0.2, 0.8]"


def _dapo(s: TaskSamples) -> str | None:
    if s.n == 1 or 0 < s.n_correct < s.n:  # verl keeps a group of one member too
        return None
    return "all samples pass" if s.n_correct else "no sample passes"


RECIPES: dict[str, Callable[[TaskSamples], str | None]] = {
    "open-r1": _open_r1,
    "skywork": _skywork,
    "prime": _prime,
    "dapo": _dapo,
}
"""Each published rule: ``None`` keeps the task, else the reason it is dropped."""


@dataclass(frozen=True, kw_only=True)
class FilterRule:
    """Our rule: a sample floor, then a pass-rate band or an informative-probability floor at G."""

    band: tuple[float, float] | None = field(default=None, metadata=cli(metavar=("LOW", "HIGH")))
    """keep tasks whose pass rate lies in [LOW, HIGH]"""
    min_p_informative: float | None = field(default=None, metadata=cli(type=fraction, metavar="X"))
    """keep tasks whose P(a group of --group-size is informative) is at least X"""
    group_size: int = field(default=8, metadata=cli(type=positive_int, metavar="G"))
    """G for --min-p-informative, the informative fractions printed and the exported columns"""
    min_samples: int = field(default=1, metadata=cli(type=positive_int, metavar="N"))
    """drop tasks with fewer than N samples first"""
    conservative: bool = False
    """decide on the Jeffreys interval: keep only tasks whose whole interval passes the rule"""
    confidence: float = field(default=0.95, metadata=cli(type=fraction))
    """level of the Jeffreys interval"""

    def __post_init__(self) -> None:
        if self.band is not None:
            object.__setattr__(self, "band", checked_band(self.band, "--band"))
        if self.min_p_informative is not None and not 0.0 <= self.min_p_informative <= 1.0:
            raise UserError(f"--min-p-informative must be in [0, 1], got {self.min_p_informative}")
        if self.group_size < 2:
            raise UserError(f"--group-size must be at least 2, got {self.group_size}")
        if self.min_samples < 1:
            raise UserError(f"--min-samples must be at least 1, got {self.min_samples}")
        if not 0.0 < self.confidence < 1.0:
            raise UserError(f"--confidence must be in (0, 1), got {self.confidence}")

    @property
    def has_rule(self) -> bool:
        """Whether any part is set (a rule of defaults keeps everything)."""
        return self.band is not None or self.min_p_informative is not None or self.min_samples > 1

    def steps(self) -> list[tuple[str, Callable[[TaskSamples], str | None]]]:
        """The rule's parts in the order they apply, each with its name."""
        out: list[tuple[str, Callable[[TaskSamples], str | None]]] = []
        how = " (interval)" if self.conservative else ""
        if self.min_samples > 1:
            out.append(
                (
                    f"min-samples {self.min_samples}",
                    lambda s: None if s.n >= self.min_samples else f"fewer than {self.min_samples} samples",
                )
            )
        if self.band is not None:
            lo, hi = self.band
            out.append((f"band [{lo:g}, {hi:g}]{how}", lambda s: self._band(s, lo, hi)))
        if (floor := self.min_p_informative) is not None:
            out.append((f"P(informative at G={self.group_size}) >= {floor:g}{how}", lambda s: self._p_inf(s, floor)))
        return out

    def _band(self, s: TaskSamples, lo: float, hi: float) -> str | None:
        if self.conservative:
            a, b = jeffreys_interval(s.n, s.n_correct, self.confidence)
            return None if lo <= a and b <= hi else "interval not inside the band"
        p = s.n_correct / s.n
        return None if lo <= p <= hi else ("pass rate below the band" if p < lo else "pass rate above the band")

    def _p_inf(self, s: TaskSamples, floor: float) -> str | None:
        if self.conservative:
            a, b = jeffreys_interval(s.n, s.n_correct, self.confidence)
            q = min(
                informative_probability_model(a, self.group_size), informative_probability_model(b, self.group_size)
            )
        else:
            q = informative_estimate(s.n, s.n_correct, self.group_size)[0]
        return None if q >= floor else "too rarely informative"


@dataclass(frozen=True)
class FilterStep:
    """What one part of a rule dropped."""

    rule: str
    """The part, e.g. ``band [0.1, 0.9]``."""
    dropped: int
    """Tasks it dropped (of those the earlier parts kept)."""
    kept: int
    """Tasks left after it."""
    reasons: dict[str, int] = field(default_factory=dict)
    """Why, counted."""


@dataclass(frozen=True)
class FilterResult:
    """A rule applied to a task set; its JSON form is what ``grpo-wb filter --json`` writes."""

    name: str
    """The rule or recipe."""
    kept: list[str]
    """Kept task ids, in input order."""
    steps: list[FilterStep]
    """Each part, in order."""
    n_tasks: int
    """Tasks before filtering."""
    group_size: int
    """G of the informative fractions."""
    informative_before: float
    """Expected informative fraction at G of the unfiltered set (prompts drawn uniformly)."""
    informative_after: float | None
    """The same for the kept set, on the samples that chose it (in-sample: None when nothing is kept). Biased up:
    a task kept for its mixed samples is judged on those same samples (every dapo-kept task scores 1 here)."""
    informative_after_held_out: float | None = None
    """The kept set's informative fraction measured on samples the rule did not choose with (``held_out`` says
    how, or why there is none)."""
    held_out: str = ""
    """How ``informative_after_held_out`` was measured, or why it could not be."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n_tasks": self.n_tasks,
            "n_kept": len(self.kept),
            "group_size": self.group_size,
            "informative_before": self.informative_before,
            "informative_after": self.informative_after,
            "informative_after_held_out": self.informative_after_held_out,
            "held_out": self.held_out,
            "steps": [vars(s) for s in self.steps],
            "kept": self.kept,
        }


def expected_informative(samples: Sequence[TaskSamples], g: int) -> float | None:
    """Mean unbiased P(informative at G) over the tasks (None for no task)."""
    if not samples:
        return None
    return sum(informative_estimate(s.n, s.n_correct, g)[0] for s in samples) / len(samples)


def _run_steps(
    samples: Sequence[TaskSamples], steps: Sequence[tuple[str, Callable[[TaskSamples], str | None]]]
) -> tuple[list[TaskSamples], list[FilterStep]]:
    left = list(samples)
    done: list[FilterStep] = []
    for rule, decide in steps:
        keep: list[TaskSamples] = []
        reasons: dict[str, int] = {}
        for s in left:
            why = decide(s)
            if why is None:
                keep.append(s)
            else:
                reasons[why] = reasons.get(why, 0) + 1
        done.append(FilterStep(rule, len(left) - len(keep), len(keep), reasons))
        left = keep
    return left, done


def _half(s: TaskSamples, k: int) -> TaskSamples:
    """Samples ``k, k+2, k+4, ...`` of a task: its samples are independent draws of one policy, so either half
    is a smaller sample of the same thing."""
    passes = s.passes[k::2]
    raw = s.raw_rewards[k::2]
    return TaskSamples(
        s.task_id, len(passes), sum(passes), tuple(r for r in raw if r is not None), passes, raw, s.unrewardable
    )


def held_out_informative(
    samples: Sequence[TaskSamples], steps: Sequence[tuple[str, Callable[[TaskSamples], str | None]]], group_size: int
) -> tuple[float | None, str]:
    """The kept set's expected informative fraction at G on samples the rule did not choose with: two-fold
    cross-fitting, the rule run on each task's even-numbered samples and the kept tasks measured on the
    odd-numbered ones, then the other way round, averaged. It measures the rule as run on half the samples,
    which can keep a somewhat different set (dapo on 8 samples keeps fewer rarely-solved tasks than on 16); the
    in-sample figure measures nothing at all at n = G (every dapo-kept task counts as certainly informative)."""
    if any(len(s.passes) != s.n or len(s.raw_rewards) != s.n for s in samples):
        return None, "none: a run's pooled groups keep no per-sample order (score the samples to a file)"
    if min(s.n for s in samples) < 2:
        return None, "none: a task has a single sample"
    folds, extrapolated = [], False
    for choose, measure in ((0, 1), (1, 0)):
        kept, _ = _run_steps([_half(s, choose) for s in samples], steps)
        other = {s.task_id: _half(s, measure) for s in samples}
        if kept:
            est = [informative_estimate(other[k.task_id].n, other[k.task_id].n_correct, group_size) for k in kept]
            folds.append(sum(q for q, _ in est) / len(est))
            extrapolated = extrapolated or any(x for _, x in est)
    if not folds:
        return None, "none: the rule keeps no task on half of each task's samples"
    how = (
        f"2-fold cross-fit (chosen on half of each task's samples, measured on the other half; "
        f"{len(folds)} of 2 folds kept tasks)"
    )
    if extrapolated:
        how += f"; extrapolated: a half holds fewer than G={group_size} samples, so the plug-in model is used"
    return sum(folds) / len(folds), how


def apply_filter(
    samples: Sequence[TaskSamples],
    steps: Sequence[tuple[str, Callable[[TaskSamples], str | None]]],
    *,
    name: str,
    group_size: int,
) -> FilterResult:
    """Apply the parts in order; every dropped task is counted under the part and reason that dropped it."""
    if not samples:
        raise UserError("no tasks to filter")
    if any(s.unrewardable for s in samples):  # first, and counted: a task the trainer's reward cannot reward
        steps = [
            ("the trainer can reward it", lambda s: "the trainer cannot reward it" if s.unrewardable else None),
            *steps,
        ]
    left, done = _run_steps(samples, steps)
    held, how = held_out_informative(samples, steps, group_size)
    return FilterResult(
        name=name,
        kept=[s.task_id for s in left],
        steps=done,
        n_tasks=len(samples),
        group_size=group_size,
        # a float: samples is not empty (checked above)
        informative_before=cast(float, expected_informative(samples, group_size)),
        informative_after=expected_informative(left, group_size),
        informative_after_held_out=held,
        held_out=how,
    )


Step = tuple[str, Callable[[TaskSamples], "str | None"]]
"""A part of a rule: its name, and why it drops a task (None: kept)."""


def run_recipe(
    samples: Sequence[TaskSamples], recipe: str, group_size: int, first: Sequence[Step] = ()
) -> FilterResult:
    """A published rule (``RECIPES``) on the task set, after the parts ``first`` (a test audit's, say)."""
    if recipe not in RECIPES:
        raise UserError(f"unknown recipe {recipe!r} (choose {', '.join(RECIPES)})")
    return apply_filter(samples, [*first, (recipe, RECIPES[recipe])], name=recipe, group_size=group_size)


def run_rule(samples: Sequence[TaskSamples], rule: FilterRule, first: Sequence[Step] = ()) -> FilterResult:
    """Our rule on the task set, after the parts ``first``."""
    steps = [*first, *rule.steps()]
    if not steps:
        raise UserError(
            "nothing to filter on: give --band LOW HIGH, --min-p-informative X, --min-samples N or --recipe NAME"
        )
    return apply_filter(samples, steps, name="; ".join(n for n, _ in steps), group_size=rule.group_size)


def results_frame(results: Sequence[FilterResult]):
    """One row per rule: tasks kept, and the expected informative fraction at G before and after (a table): after
    on samples the rule did not choose with (held-out) and on those it did (in-sample, biased up)."""
    return dataframe(
        [
            {
                "rule": r.name,
                "kept": len(r.kept),
                "dropped": r.n_tasks - len(r.kept),
                f"informative at G={r.group_size} (kept, held-out)": r.informative_after_held_out,
                f"informative at G={r.group_size} (kept, in-sample)": r.informative_after,
                f"informative at G={r.group_size} (all)": r.informative_before,
            }
            for r in results
        ]
    ).set_index("rule")


def compare_rules(
    samples: Sequence[TaskSamples], rule: FilterRule, recipes: Sequence[str], first: Sequence[Step] = ()
) -> list[FilterResult]:
    """Our rule (when it has a part set, or ``first`` does) and each recipe, on the same samples, for a side-by-side
    table; the parts ``first`` (a test audit's) go before each."""
    ours = [run_rule(samples, rule, first)] if rule.has_rule or first else []
    return ours + [run_recipe(samples, r, rule.group_size, first) for r in recipes]


def pick(results: Sequence[FilterResult], name: str) -> FilterResult:
    """The result of rule ``name``: a recipe's name, or ``ours`` for our rule (the first of ``compare_rules``)."""
    by = {r.name: r for r in results}
    if name in by:
        return by[name]
    if name == "ours" and results and results[0].name not in RECIPES:
        return results[0]
    raise UserError(f"no result for rule {name!r} (have: {', '.join(['ours'] + [r for r in by if r in RECIPES])})")


def steps_frame(results: Sequence[FilterResult]):
    """One row per part of each rule: what it dropped, why, and what was left (a table)."""
    return dataframe(
        [
            {
                "rule": r.name,
                "part": s.rule,
                "dropped": s.dropped,
                "kept": s.kept,
                "why": "; ".join(f"{n} {why}" for why, n in sorted(s.reasons.items(), key=lambda x: -x[1])),
            }
            for r in results
            for s in r.steps
        ]
    ).set_index(["rule", "part"])
