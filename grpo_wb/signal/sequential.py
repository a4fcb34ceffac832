"""Sample until decided: draw a task's samples in rounds and stop once its headroom category (or its place against
a pass-rate band) is decided, with at most ``n_max`` samples per task.

Assumption throughout: a task's samples are i.i.d. Bernoulli(p) pass/fail draws (independent completions of one
prompt at a fixed temperature); p is unknown and may be anything in [0, 1].

**Category** (``decide category``). The categories are those of the full sample: with ``n_max`` draws a task is
too easy when all pass, too hard when none does, frontier otherwise, so a task of rate p is too easy with
probability ``p^n_max``. The adaptive rule, looking after each round:

* frontier as soon as a pass and a non-pass were seen: certain, since the full sample holds those two as well
  (deterministic curtailment);
* too hard (too easy) when every draw so far failed (passed) and at least ``m`` were drawn, where ``m`` is the
  smallest count with ``B(m, n_max) <= max_error`` and
  ``B(m, N) = (m/N)^(m/(N-m)) (1 - m/N) + 2^-m`` (``B(N, N) = 0``).

Guarantee: couple the adaptive draws with the full sample (the adaptive draws are its first draws, as when
recorded samples are replayed in order). The decisions differ only when the first ``m`` draws are all fails and a
later one passes, or the mirror case, so for every p
``P(adaptive decision != full-sample decision) = (1-p)^m - (1-p)^N + p^m - p^N <= B(m, N) <= max_error``:
``q^m - q^N`` peaks at ``q^(N-m) = m/N`` with value ``(m/N)^(m/(N-m))(1 - m/N)``, and the other term is at most
``2^-m`` where the first is not. Summed over a task set, the expected share of tasks whose decision differs from
the full sample's is at most ``max_error``, whatever the pass rates. This is stochastic curtailment of a fixed-N
procedure (stop when the final result is unlikely to change; Lan, Simon & Halperin 1982, "Stochastically curtailed
tests in long-term clinical trials", Sequential Analysis 1:207-219; cited from memory), with the reversal
probability bounded uniformly over p in closed form instead of estimated. No rule can do much better on a task
that never passes: its path is fixed, so stopping it at m leaves an error of ``sup_q q^m - q^N ~ (1 - m/N)/e``;
the all-fail and all-pass tasks cost about ``(1 - e max_error) N`` samples each, and the savings come from the
frontier tasks, decided at their first mixed round.

**Band** (``decide band``, ``[LOW, HIGH]`` as ``grpo-wb filter --band`` keeps). After round t (``n`` samples,
``c`` passes) the two-sided Clopper-Pearson interval at level ``1 - alpha_t``, ``alpha_t = max_error 6/(pi^2 t^2)``
(quantiles of Beta(c, n-c+1) and Beta(c+1, n-c); Clopper & Pearson 1934): inside when the interval lies in the
band, outside when it misses it. Since ``sum_t alpha_t = max_error`` (union bound; the alpha spending of Howard,
Ramdas, McAuliffe & Sekhon 2021, Ann. Stat. 49(2):1055-1080), ``P(some interval misses p) <= max_error`` however
the stopping depends on the data, so ``P(an early decision is wrong about p) <= max_error``. A task still
undecided at ``n_max`` gets the full-sample decision (``LOW <= c/n <= HIGH``), with no guarantee about p (it is
on the band's edge as far as the samples can tell); :func:`decide` says so (``forced``).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from grpo_wb.config import checked_band, cli, positive_int, post_init_next
from grpo_wb.errors import UserError
from grpo_wb.signal.headroom import TaskSamples

Mode = Literal["category", "band"]


@dataclass(kw_only=True)
class AdaptiveConfig:
    """The stopping rule of ``grpo-wb sample --adaptive``: round size, error bound, what is decided.

    Not frozen: the sample command's config (not frozen) extends it, and a dataclass cannot mix the two."""

    round_size: int = field(default=8, metadata=cli(type=positive_int, metavar="R"))
    """adaptive: samples drawn per task per round; the rule looks after each round"""
    max_error: float = 0.05
    """adaptive: bound on P(a task's decision differs from its full sample's) (category), or on P(an early band
    decision is wrong about the pass rate) (band)"""
    decide: Mode = "category"
    """adaptive: category (too easy / too hard / frontier as n samples would show them) or band (pass rate
    inside or outside --band)"""
    band: tuple[float, float] = field(default=(0.1, 0.9), metadata=cli(metavar=("LOW", "HIGH")))
    """adaptive, --decide band: the pass-rate band [LOW, HIGH]"""

    def __post_init__(self) -> None:
        if self.round_size < 1:
            raise UserError(f"round-size must be at least 1, got {self.round_size}")
        if not 0.0 < self.max_error < 1.0:
            raise UserError(f"max-error must be in (0, 1), got {self.max_error}")
        if self.decide not in ("category", "band"):
            raise UserError(f"unknown decide {self.decide!r} (choose category, band)")
        self.band = checked_band(self.band, "--band")
        post_init_next(self, AdaptiveConfig)


# ----------------------------------------------------------------------------- the rule


def curtail_bound(m: int, n_max: int) -> float:
    """``B(m, N)``: an upper bound, uniform in p, on P(stopping all-fail or all-pass after m draws gives another
    category than N draws would) (module docstring)."""
    if not 1 <= m <= n_max:
        raise ValueError(f"need 1 <= m <= n_max, got m={m}, n_max={n_max}")
    if m == n_max:
        return 0.0
    r = m / n_max
    return r ** (m / (n_max - m)) * (1.0 - r) + 2.0**-m


@functools.lru_cache(maxsize=4096)
def decide_after(n_max: int, max_error: float) -> int:
    """``m``: the fewest draws after which an all-fail (all-pass) task is decided too hard (too easy)."""
    return next(m for m in range(1, n_max + 1) if curtail_bound(m, n_max) <= max_error)


def alpha_at(t: int, max_error: float) -> float:
    """The error spent at look t (t = 1, 2, ...): ``max_error 6/(pi^2 t^2)``, summing to ``max_error``."""
    return max_error * 6.0 / (math.pi**2 * t * t)


@functools.lru_cache(maxsize=65536)
def clopper_pearson(n: int, c: int, alpha: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval at level ``1 - alpha`` (ends 0 at c = 0 and 1 at c = n)."""
    from scipy.stats import beta  # 1.3 s to import: paid by a band decision, not by every grpo-wb call

    lo = 0.0 if c == 0 else float(beta.ppf(alpha / 2, c, n - c + 1))
    hi = 1.0 if c == n else float(beta.ppf(1 - alpha / 2, c + 1, n - c))
    return lo, hi


def full_decision(n: int, c: int, cfg: AdaptiveConfig) -> str:
    """What the whole sample says: the headroom category, or inside / outside the band by ``c/n``."""
    if cfg.decide == "band":
        return "inside" if cfg.band[0] <= c / n <= cfg.band[1] else "outside"
    return "too_hard" if c == 0 else "too_easy" if c == n else "frontier"


def is_look(n: int, n_max: int, cfg: AdaptiveConfig) -> bool:
    """Whether the rule looks after n draws: the end of a round, the curtailment point m, or n_max."""
    return (
        n == n_max or n % cfg.round_size == 0 or (cfg.decide == "category" and n == decide_after(n_max, cfg.max_error))
    )


def next_round(n: int, n_max: int, cfg: AdaptiveConfig) -> int:
    """Samples to draw next after n: up to the next look (a partial round left by an interrupted run is
    completed first; rounds are cut at m, so no sample is drawn past the point where all-same tasks are decided)."""
    nxt = min(n_max, (n // cfg.round_size + 1) * cfg.round_size)
    if cfg.decide == "category":
        m = decide_after(n_max, cfg.max_error)
        if n < m:
            nxt = min(nxt, m)
    return max(0, nxt - n)


@dataclass(frozen=True)
class Decision:
    """The rule's word on a task after n draws."""

    label: str | None
    """too_easy / too_hard / frontier, or inside / outside; None: draw another round."""
    forced: bool = False
    """Decided only because n_max was reached (the full-sample decision; no early-stop guarantee applies)."""


def decide(n: int, c: int, n_max: int, cfg: AdaptiveConfig) -> Decision:
    """The rule after n draws of which c passed (module docstring); a count between looks decides nothing, except
    a mixed category sample (frontier is certain at any count)."""
    if not 0 <= c <= n <= n_max or n_max < 1:
        raise ValueError(f"need 0 <= c <= n <= n_max and n_max >= 1, got c={c}, n={n}, n_max={n_max}")
    if n == 0:
        return Decision(None)
    if cfg.decide == "category":
        if 0 < c < n:
            return Decision("frontier")
        if n >= decide_after(n_max, cfg.max_error):
            return Decision(full_decision(n, c, cfg), forced=n == n_max)
        return Decision(None)
    if not is_look(n, n_max, cfg):
        return Decision(None)
    lo, hi = clopper_pearson(n, c, alpha_at(-(-n // cfg.round_size), cfg.max_error))
    a, b = cfg.band
    if a <= lo and hi <= b:
        return Decision("inside")
    if hi < a or lo > b:
        return Decision("outside")
    return Decision(full_decision(n, c, cfg), forced=True) if n == n_max else Decision(None)


def run_stopping_rule(outcomes: Sequence[bool], n_max: int, cfg: AdaptiveConfig) -> tuple[int, Decision]:
    """Draw ``outcomes`` round by round (each round :func:`next_round` long) until the rule decides:
    ``(samples taken, decision)``. ``outcomes`` holds at least ``n_max`` draws."""
    n = c = 0
    while True:
        k = next_round(n, n_max, cfg)
        c += sum(outcomes[n : n + k])
        n += k
        d = decide(n, c, n_max, cfg)
        if d.label is not None:
            return n, d


# ----------------------------------------------------------------------------- replaying recorded samples


@dataclass(frozen=True)
class TaskReplay:
    """One task's replay through the rule (one ordering of its recorded samples)."""

    task_id: str
    n_full: int
    """Recorded samples (the task's n_max)."""
    taken: int
    """Samples the rule drew."""
    decision: str
    full: str
    """The full recorded sample's decision."""
    forced: bool


@dataclass(frozen=True)
class ReplaySummary:
    """The rule replayed over a task set: per task, and in all."""

    orders: str
    """``file`` or ``S shuffles (seed X)``."""
    tasks: list[TaskReplay]
    """Per task and ordering (file order: one row per task)."""
    agreement: float
    """Share of task replays whose decision equals the full recorded sample's."""
    generations: int
    """Samples drawn over all replays."""
    full_generations: int
    """Samples of the full recorded samples over all replays."""
    early: int
    """Task replays decided before their last recorded sample."""

    @property
    def generations_share(self) -> float:
        return self.generations / self.full_generations


def _outcomes(s: TaskSamples) -> list[bool]:
    if len(s.passes) != s.n:
        raise UserError(f"task {s.task_id!r}: the replay needs each sample's pass in order (a scored results file)")
    return list(s.passes)


def replay(samples: Sequence[TaskSamples], cfg: AdaptiveConfig, *, shuffles: int = 0, seed: int = 0) -> ReplaySummary:
    """Replay each task's recorded outcomes through the rule with ``n_max`` = its recorded n: in file order
    (``shuffles`` 0), or in ``shuffles`` orderings each drawn by ``random.Random(seed)`` (one generator for the
    whole replay: the same seed gives the same figures)."""
    if not samples:
        raise UserError("no tasks to replay")
    rng = random.Random(seed)
    rows = []
    for s in samples:
        base = _outcomes(s)
        full = full_decision(s.n, s.n_correct, cfg)
        for _ in range(max(1, shuffles)):
            seq = base if not shuffles else rng.sample(base, len(base))
            taken, d = run_stopping_rule(seq, s.n, cfg)
            rows.append(TaskReplay(s.task_id, s.n, taken, d.label or "", full, d.forced))
    return ReplaySummary(
        orders="file" if not shuffles else f"{shuffles} shuffles (seed {seed})",
        tasks=rows,
        agreement=sum(r.decision == r.full for r in rows) / len(rows),
        generations=sum(r.taken for r in rows),
        full_generations=sum(r.n_full for r in rows),
        early=sum(r.taken < r.n_full for r in rows),
    )


# ----------------------------------------------------------------------------- exact expectations (category)


def _same_first(n_total: int, c: int, k: int) -> float:
    """P(the first k of a random ordering of n_total outcomes, c of them passes, are all fails or all passes)."""
    total = math.comb(n_total, k)
    return (math.comb(n_total - c, k) + math.comb(c, k)) / total if k else 1.0


def expected_over_orders(s: TaskSamples, cfg: AdaptiveConfig) -> tuple[float, float]:
    """Category rule, exact over every ordering of the task's recorded samples (drawn without replacement):
    ``(P(decision equals the full recorded sample's), expected samples taken)``. Hypergeometric counts, no
    shuffling: the decision differs only when the first m are all fails (all passes) and the task has a pass
    (a fail), and the rule draws past a look only while all it drew are the same."""
    if cfg.decide != "category":
        raise ValueError("exact expectations are for the category rule")
    n, c = s.n, s.n_correct
    m = decide_after(n, cfg.max_error)
    wrong = (math.comb(n - c, m) * (c > 0) + math.comb(c, m) * (c < n)) / math.comb(n, m)
    taken, drawn = 0.0, 0
    while drawn < m:
        k = next_round(drawn, n, cfg)
        taken += k * _same_first(n, c, drawn)
        drawn += k
    return 1.0 - wrong, taken


def agreement_independent(p: float, n_max: int, cfg: AdaptiveConfig) -> tuple[float, float]:
    """Category rule for a task of pass rate p, against a full sample drawn independently of the rule's draws
    (a rerun): ``(P(adaptive decision == full-sample category), P(full == another independent full))``. The
    second is the floor set by the full sample's own randomness; the gap between them is what stopping early
    costs in reproducibility."""
    q = 1.0 - p
    m = decide_after(n_max, cfg.max_error)
    ad = (q**m, p**m, 1.0 - q**m - p**m)
    fu = (q**n_max, p**n_max, 1.0 - q**n_max - p**n_max)
    return sum(a * b for a, b in zip(ad, fu)), sum(b * b for b in fu)


def error_probability(p: float, n_max: int, cfg: AdaptiveConfig) -> float:
    """Category rule, coupled draws: the exact ``P(adaptive decision != full-sample decision)`` at pass rate p."""
    m = decide_after(n_max, cfg.max_error)
    q = 1.0 - p
    return q**m - q**n_max + p**m - p**n_max
