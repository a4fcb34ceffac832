"""Group-relative advantages, computed as the real trainers compute them.

``grpo`` follows TRL's ``GRPOTrainer`` (``_generate_and_score_completions``):

* the baseline is the per-group mean (NaN rewards -- unscored completions -- left out);
* ``scale_rewards="group"``: divide by the per-group *sample* std (Bessel's correction,
  like TRL's ``nanstd``) plus ``epsilon`` (TRL: 1e-4; verl uses 1e-6);
* ``scale_rewards="batch"``: keep the per-group mean, divide by the std of the whole batch;
* ``scale_rewards="none"``: no division (Dr. GRPO);
* advantages of unscored completions are 0 (TRL's ``nan_to_num``).

``rloo`` uses the leave-one-out baseline ``(sum - r_i) / (n - 1)`` as TRL's RLOO
trainer and verl do. TRL's RLOO does not normalise by default
(``normalize_advantages=False``), so the CLI pairs ``rloo`` with ``scale_rewards="none"``
unless told otherwise; any scaling chosen here applies to both modes alike.

In every mode a group whose rewards have no variance (std at or below
``variance_tol``) gets all-zero advantages: it teaches nothing, and floating
point noise in its mean must not pretend otherwise.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import lazy_loader

if TYPE_CHECKING:
    import numpy

np = lazy_loader.load("numpy")  # imported by the first array built: the command line starts without it (0.1 s)

AdvantageMode = Literal["grpo", "rloo"]
ScaleRewards = Literal["group", "batch", "none"]
ADVANTAGE_MODES = typing.get_args(AdvantageMode)
SCALE_MODES = typing.get_args(ScaleRewards)


@dataclass(frozen=True)
class AdvantageConfig:
    """How group-relative advantages are computed (defaults are TRL's)."""

    mode: AdvantageMode = "grpo"
    """``grpo`` (mean baseline) or ``rloo`` (leave-one-out baseline)."""
    scale_rewards: ScaleRewards = "group"
    """``group`` / ``batch`` std scaling, or ``none`` (Dr. GRPO)."""
    epsilon: float = 1e-4
    """Added to the std before dividing (TRL 1e-4, verl 1e-6, OpenRLHF 1e-9)."""
    variance_tol: float = 1e-6
    """A group whose reward std is at or below this has no variance."""

    def __post_init__(self) -> None:
        if self.mode not in ADVANTAGE_MODES:
            raise ValueError(f"unknown advantage mode {self.mode!r} (choose from {', '.join(ADVANTAGE_MODES)})")
        if self.scale_rewards not in SCALE_MODES:
            raise ValueError(f"unknown scale_rewards {self.scale_rewards!r} (choose from {', '.join(SCALE_MODES)})")
        if not self.epsilon >= 0:
            raise ValueError("epsilon must be >= 0")


def nanstd(x: numpy.ndarray) -> float:
    """Sample std ignoring NaN, as TRL's ``nanstd`` (NaN when fewer than 2 values)."""
    v = x[~np.isnan(x)]
    if v.size < 2:
        return float("nan")
    return float(np.std(v, ddof=1))


def _as_array(rewards: Sequence[float | None]) -> numpy.ndarray:
    return np.array([np.nan if r is None else float(r) for r in rewards], dtype=np.float64)


def group_has_variance(rewards: Sequence[float | None], tol: float = 1e-6) -> bool:
    """True when the scored rewards of a group have a sample std above ``tol``."""
    s = nanstd(_as_array(rewards))
    return bool(np.isfinite(s) and s > tol)


def compute_advantages(
    groups: Sequence[Sequence[float | None]], cfg: AdvantageConfig = AdvantageConfig()
) -> list[list[float]]:
    """Advantages for each group of rewards (``None`` = unscored), one list per group."""
    arrays = [_as_array(g) for g in groups]
    batch_std = nanstd(np.concatenate(arrays)) if arrays else float("nan")
    scale = cfg.scale_rewards
    out: list[list[float]] = []
    for r in arrays:
        valid = ~np.isnan(r)
        n = int(valid.sum())
        gstd = nanstd(r)
        if n == 0 or not (np.isfinite(gstd) and gstd > cfg.variance_tol):
            out.append([0.0] * len(r))
            continue
        if cfg.mode == "grpo":
            adv = r - np.nanmean(r)
        else:  # rloo: r_i minus the mean of the other scored rewards
            total = np.nansum(r)
            adv = r - (total - r) / (n - 1)
        if scale == "group":
            adv = adv / (gstd + cfg.epsilon)
        elif scale == "batch":
            adv = adv / (batch_std + cfg.epsilon)
        adv = np.where(valid, adv, 0.0)
        out.append([float(a) for a in np.nan_to_num(adv, nan=0.0)])
    return out
