"""Per-prompt rollout budgets: how many completions each prompt of a batch gets, as two papers' code decides it.

Both rules take each prompt's estimated pass rate and a batch's total budget (B prompts x G completions) and
return one budget per prompt summing to that total. They are pure functions, so the replay simulator
(:mod:`grpo_wb.signal.plan`) and the curriculum export call the same code.

* **Knapsack RL** (Li et al., arXiv 2509.25849; ``liziniu/KnapsackRL`` @05eeb92,
  ``verl/trainer/ppo/exploration_utils.py``: ``sampling_budget_by_knapsack`` and ``solve_by_dp``). Prompts with
  too few observations get the default n; observed prompts get ``min_n`` (p in (0, 1)), ``negative_n`` (p = 0)
  or ``positive_n`` (p = 1). The rest of the budget goes to the 0 < p < 1 prompts by a dynamic programme that
  maximises ``sum_i V(min_n + k_i, p_i)`` with ``V(N, p) = (1 - p^N - (1-p)^N) p (1-p)^2`` (probability of a
  non-zero gradient times the paper's information gain) for each extra ``k_i in 1..max_n-min_n`` (k = 0 is worth
  0), spending the budget exactly. If the "probability" cost estimate ``sum int(min(max_n, log(1-alpha) /
  log(max(p, 1-p))))`` is below that budget, the surplus is first split evenly over the prompts whose success
  rate reads 0 (as in the source, that includes prompts with too few observations, whose rate stays 0) and the
  programme runs on the estimate (when every prompt is between 0 and 1 there is nowhere to put a surplus: the
  source divides by zero there, this port runs the programme on the whole budget). Ties go to the smaller k, as
  the source's strict ``>`` does.
* **VIP** (Nguyen et al., arXiv 2602.01601; ``HieuNT91/VIP`` @0c17c79, ``bernoulli_allocation.py``:
  ``allocate_rollout``, ``solve``, ``allocation_rounding``, ``enforce_min_after_rounding``). With p clipped to
  [1e-6, 1 - 1e-6] and ``a = p(1-p)``, minimise ``sum a_i/(n_i-1) + b_i n_i`` (``rloo``; ``grpo``: ``sum
  a_i(n_i-1)/n_i^2 + b_i n_i``) with ``b_i = gamma log p_i`` (gamma 7e-4, 4e-4) over ``lower <= n_i <= upper``,
  ``sum n_i = budget`` by SLSQP from the even split; then floor, zero the floors below 4, hand out the leftover
  one unit at a time where ``sum a(n+3)/(n+4)^2`` falls most (the source's rounding objective), and move any
  0 < n < 4 to the largest allocation below ``upper``. Equal pass rates get an even split. VIP predicts p with a
  Gaussian process over prompt embeddings; a replay has only outcomes, so its callers pass observed rates and
  the GP's prior mean (logit -1) for prompts never seen (:data:`VIP_PRIOR`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, overload

import lazy_loader

from grpo_wb.errors import UserError

if TYPE_CHECKING:
    import numpy

np = lazy_loader.load("numpy")  # imported by the first array built: the command line starts without it

VIP_PRIOR = 1.0 / (1.0 + math.exp(1.0))
"""VIP's Gaussian-process prior mean, sigmoid(-1): the pass rate it assumes for a prompt never seen."""


@overload
def knapsack_value(n: int, p: float) -> float: ...
@overload
def knapsack_value(n: numpy.ndarray, p: float) -> numpy.ndarray: ...


def knapsack_value(n: int | numpy.ndarray, p: float) -> float | numpy.ndarray:
    """``V(N, p) = (1 - p^N - (1-p)^N) p (1-p)^2``: Knapsack RL's worth of N rollouts on a prompt with pass rate p."""
    return (1.0 - p**n - (1.0 - p) ** n) * p * (1.0 - p) ** 2


def knapsack_budgets(
    rates: Sequence[float | None],
    n: int,
    *,
    min_n: int = 2,
    max_n: int = 128,
    alpha: float = 0.9,
    total: int | None = None,
) -> list[int]:
    """Knapsack RL's budgets for one batch: ``rates[i]`` is prompt i's pass rate, None while it has too few
    observations; ``n`` the default group size; the batch's budget ``total`` (default ``len(rates) * n``)."""
    size = len(rates)
    total = size * n if total is None else total
    if not 1 <= min_n <= max_n:
        raise UserError(f"knapsack needs 1 <= min_n <= max_n, got {min_n}, {max_n}")
    budget = [0] * size
    success = [0.0] * size
    effective, costs = [], {}
    for i, p in enumerate(rates):
        if p is None:
            budget[i] = n
            continue
        success[i] = p
        budget[i] = min_n  # negative_n and positive_n default to min_n in the source and its reference script
        if 0.0 < p < 1.0:
            effective.append(i)
            costs[i] = math.log(1.0 - alpha) / math.log(max(p, 1.0 - p))
    remaining = total - sum(budget)
    if remaining < 0:  # the source asserts here
        raise UserError(f"knapsack: {len(rates)} prompts at min_n {min_n} (or n {n}) need more than the budget {total}")
    zero = [i for i in range(size) if success[i] == 0.0]
    if remaining > 0 and not effective:
        if not zero:
            return [n] * size
        base, extra = divmod(remaining, len(zero))
        for j, i in enumerate(zero):
            budget[i] += base + (j < extra)
        return budget
    estimate = sum(int(min(max_n, costs[i])) for i in effective)
    if estimate < remaining:
        candidates = zero or [i for i in range(size) if i not in costs]
        if candidates:
            base, extra = divmod(remaining - estimate, len(candidates))
            for j, i in enumerate(candidates):
                budget[i] += base + (j < extra)
            remaining = estimate
    for i, k in zip(effective, _knapsack_dp([success[i] for i in effective], min_n, max_n - min_n, remaining)):
        budget[i] += k
    return budget


def _knapsack_dp(rates: Sequence[float], min_n: int, max_extra: int, budget: int) -> list[int]:
    """``solve_by_dp``: extra units per item maximising the summed value, spending ``budget`` exactly where that
    is feasible (else the largest feasible amount, the rest spread evenly from the first item)."""
    m = len(rates)
    if budget <= 0 or m == 0:
        return [0] * m
    ks = np.arange(max_extra + 1)
    neg = -np.inf
    dp = np.full(budget + 1, neg)
    dp[0] = 0.0
    choices = []
    for p in rates:
        gain = knapsack_value(ks + min_n, p)  # elementwise over the extra counts
        gain[0] = 0.0  # no extra rollout is worth nothing in the source's programme
        cand = np.full((max_extra + 1, budget + 1), neg)
        for k in range(max_extra + 1):
            if k <= budget:
                cand[k, k:] = dp[: budget + 1 - k] + gain[k]
        pick = np.argmax(cand, axis=0)  # the first maximum: k = 0, then the smallest k, as the source's strict >
        dp = cand[pick, np.arange(budget + 1)]
        choices.append(pick)
    w = budget
    while w > 0 and dp[w] == neg:
        w -= 1
    extra = [0] * m
    left = budget - w
    for i in range(m - 1, -1, -1):
        extra[i] = int(choices[i][w])
        w -= extra[i]
    if left > 0:
        base, more = divmod(left, m)
        for i in range(m):
            extra[i] += base + (i < more)
    return extra


VipRule = Literal["rloo", "grpo"]
VIP_GAMMA = {"rloo": 7e-4, "grpo": 4e-4}


def vip_budgets(
    rates: Sequence[float], total: int, *, lower: int = 4, upper: int = 32, rule: VipRule = "rloo"
) -> list[int]:
    """VIP's budgets for one batch of prompts with predicted pass rates ``rates`` and ``total`` rollouts."""
    from scipy.optimize import minimize  # here: every grpo-wb command would pay for scipy.optimize

    size = len(rates)
    if not lower * size <= total <= upper * size:
        raise UserError(f"vip needs {lower} to {upper} rollouts per prompt: {total} for {size} prompts is outside")
    p = np.clip(np.asarray(rates, dtype=float), 1e-6, 1 - 1e-6)
    if float(np.std(p)) < 1e-6:
        base, more = divmod(total, size)
        return [base + (i < more) for i in range(size)]
    a = p * (1 - p)
    b = VIP_GAMMA[rule] * np.log(p)
    if rule == "rloo":

        def objective(x):
            return float(np.sum(a / (x - 1) + b * x))

        def gradient(x):
            return -a / (x - 1) ** 2 + b
    else:

        def objective(x):
            return float(np.sum(a * (x - 1) / x**2 + b * x))

        def gradient(x):
            return a * (2 - x) / x**3 + b

    # the source lets SLSQP difference the objective; the exact gradient is 5x faster and lands within one
    # rollout of it after rounding (a review compared 300 batches: 36 differ, by one rollout on a pair of prompts)
    res = minimize(
        objective,
        np.full(size, total / size),
        jac=gradient,
        method="SLSQP",
        bounds=[(lower, upper)] * size,
        constraints=[{"type": "eq", "fun": lambda x: float(np.sum(x)) - total, "jac": lambda x: np.ones_like(x)}],
    )
    return _vip_round(res.x, a, total, upper)


def _vip_round(x, a, total: int, upper: int, least: int = 4) -> list[int]:
    """``allocation_rounding`` then ``enforce_min_after_rounding``: integers summing to ``total``."""
    n = np.floor(x).astype(int)
    n[n < least] = 0
    left = total - int(n.sum())
    if left < 0:
        raise UserError(f"vip rounding: the floors exceed the budget {total}")
    while left > 0:
        # where sum a(n+3)/(n+4)^2 falls most when n_i grows by one (the source's rounding objective)
        gain = a * (n + 3) / (n + 4) ** 2 - a * (n + 4) / (n + 5) ** 2
        for i in np.argsort(gain, kind="stable")[::-1]:
            if n[i] < upper:
                n[i] += 1
                break
        left -= 1
    small = (n > 0) & (n < least)
    if small.any():
        freed = int(n[small].sum())
        n[small] = 0
        for _ in range(freed):
            for i in np.argsort(n, kind="stable")[::-1]:
                if n[i] < upper:
                    n[i] += 1
                    break
    return [int(v) for v in n]
