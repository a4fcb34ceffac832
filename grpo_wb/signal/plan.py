"""Which data strategy wastes the fewest rollouts on this policy: a replay simulator over recorded samples.

Each simulated step draws B prompts from a seeded permutation of the tasks (a new one each epoch, as the smoke
loop does) and, for each, a group of G of that task's recorded samples, without replacement within an epoch
(with replacement once a task's samples run out in an epoch; the report counts such draws). The policy does
not change: no weights are updated, so the figures are the rollout cost of each strategy under today's policy,
not a forecast of training. A group is informative when it holds a pass and a non-pass.

Strategies, as their sources define them (``docs/data-strategies.md`` in the project's notes):

* ``none``: every group trains, informative or not.
* ``static``: a pass-rate band applied once before training (open-r1's ``compute_pass_rate.py``, Skywork-OR1,
  PRIME): each task's pass rate from its first k samples (k = G by default; those k rollouts are counted),
  tasks outside ``[LOW, HIGH]`` dropped, then ``none`` on the rest. The report says how many tasks it dropped
  whose pass rate over all samples lies inside the band.
* ``dapo``: DAPO dynamic sampling (verl-recipe ``dapo/dapo_ray_trainer.py``, ``filter_groups`` on ``acc``):
  generation batches of B prompts until B informative groups are kept or ``max_num_gen_batches`` batches were
  drawn (verl then raises; here the step trains on what it has, counted as a cap hit); kept groups past B are
  discarded, as verl keeps the first ``train_batch_size x n``.
* ``greso``: GRESO's pre-rollout selector (Infini-AI-Lab/GRESO ``presampling_selector.py``, strategy
  ``all_probabilistic``) in front of DAPO's filling: a prompt whose last z records were all-pass is skipped
  with probability ``1 - max(p_easy^z, 0.01)``; if not, and its last record was all-fail, with
  ``1 - max(p_hard^z, 0.01)`` (z: its trailing all-fail records); never-seen prompts are never skipped.
  After each step from the second epoch on, ``p_easy`` moves by 0.01 toward skipping more when the step's
  all-pass share reached ``target/3`` (else less), ``p_hard`` likewise with ``2 target/3``, both clipped to
  [0.05, 0.95], starting at 0.5. GRESO reads easy and hard off its math reward's group mean (>= 0.98, <= 0.11);
  with pass/fail outcomes that is all-pass and all-fail, which is what is used here.

Per-prompt budgets (each step's B prompts share the rollouts unevenly; pass rates are what the simulated run
has seen of each prompt so far, as the papers estimate them online):

* ``knapsack``: Knapsack RL's allocation of B x G rollouts per step
  (:func:`grpo_wb.signal.allocation.knapsack_budgets`): a prompt's rate is its last group's mean when that group
  held 16 rewards, else the mean of its last 16; it is known once 8 were seen (``rl_dataset.py``:
  ``reward_buffer_length`` 16, ``min_buffer_length`` 8).
* ``vip``: VIP's allocation of B x G rollouts per step (:func:`grpo_wb.signal.allocation.vip_budgets`), the rate
  being the prompt's last group's mean (the GP's prior mean for a prompt never seen).
* ``reinforce-ada``: Reinforce-Ada's multi-round sampling (RLHFlow/Reinforce-Ada ``ray_trainer.py``,
  ``_generate_multi_round_adaptive_downsampling``): each prompt draws ``round_size`` completions per round, at most
  ``max_rounds`` rounds, until it is done (``balanced``: G/2 passes and G - G/2 fails; ``positive-focused``: a
  pass); the group trained on is G of them, passes first up to G/2, topped up from either class
  (``downsample_cache``). Every completion drawn is a rollout; only the G trained on can carry a gradient.
* ``ar3po``: AR3PO's adaptive rollout and response reuse (arXiv 2509.25808), **as its summaries describe it**
  (no code was found; stage sizes are this project's choice): rounds of ``round_size`` per prompt, stopping after
  the first round that holds a pass, at most ``max_rounds``; a group still without a pass reuses one of the
  prompt's earlier passes from a buffer (no rollout spent), which makes it informative.

Every strategy reports the **effective-gradient ratio** (Knapsack RL's metric: the share of rollouts generated
that sit in a trained group with reward variance), informative groups per 1,000 rollouts and how many rollouts
each prompt was given. Knapsack and VIP spend exactly B x G per step, as ``none`` does; the sequential ones spend
what their stopping rules ask.

Each strategy runs until it has trained on E x (frontier tasks) informative groups (E epochs of informative
signal over the tasks that can give any) or hits the step cap.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from grpo_wb.config import checked_band, cli, positive_int
from grpo_wb.errors import UserError
from grpo_wb.signal.allocation import VIP_PRIOR, VipRule, knapsack_budgets, vip_budgets
from grpo_wb.signal.headroom import TaskSamples, dataframe, informative_estimate

Strategy = Literal["none", "static", "dapo", "greso", "knapsack", "vip", "reinforce-ada", "ar3po"]
STRATEGIES: tuple[Strategy, ...] = ("none", "static", "dapo", "greso", "knapsack", "vip", "reinforce-ada", "ar3po")
PER_PROMPT = ("knapsack", "vip", "reinforce-ada", "ar3po")
"""Strategies that give each prompt its own number of rollouts."""
BUDGET_BINS = ((0, 0), (1, 2), (3, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, 128), (129, None))
"""The budget histogram's bins: rollouts given to one prompt in one step."""
BIN_LABELS = tuple(str(lo) if lo == hi else f"{lo}+" if hi is None else f"{lo}-{hi}" for lo, hi in BUDGET_BINS)


@dataclass(frozen=True, kw_only=True)
class PlanConfig:
    """What the simulator runs: the batch shape, how much signal to gather, the strategies and their settings."""

    group_size: int = field(default=8, metadata=cli(type=positive_int, metavar="G"))
    """G: completions per prompt"""
    batch_size: int = field(default=32, metadata=cli(type=positive_int, metavar="B"))
    """B: prompts per training step"""
    epochs: int = field(default=5, metadata=cli(type=positive_int, metavar="E"))
    """run each strategy until it has trained on E x (frontier tasks) informative groups"""
    strategies: list[Strategy] = field(default_factory=lambda: list(STRATEGIES))
    """strategies to simulate (repeatable; default: all eight that fit G: vip needs G in [4, --vip-max-n],
    knapsack G at least --knapsack-min-n)"""
    band: tuple[float, float] = field(default=(0.1, 0.9), metadata=cli(metavar=("LOW", "HIGH")))
    """static: keep tasks whose estimated pass rate lies in [LOW, HIGH]"""
    static_samples: int | None = field(default=None, metadata=cli(type=positive_int, metavar="K"))
    """static: samples per task behind the estimate (default: G)"""
    max_num_gen_batches: int = 10
    """dapo, greso: generation batches per step at most (verl's reference script: 10; 0: no limit)"""
    greso_target: float = 0.25
    """greso: target_zero_variance (its default)"""
    knapsack_min_n: int = field(default=2, metadata=cli(type=positive_int, metavar="N"))
    """knapsack: rollouts every observed prompt gets first (its min_n, negative_n and positive_n: 2)"""
    knapsack_max_n: int = field(default=128, metadata=cli(type=positive_int, metavar="N"))
    """knapsack: rollouts one prompt may get at most (its reference script: 128)"""
    vip_max_n: int = field(default=32, metadata=cli(type=positive_int, metavar="N"))
    """vip: rollouts one prompt may get at most (its default: 32; a prompt gets 0 or at least 4)"""
    vip_rule: VipRule = "rloo"
    """vip: the variance its allocation minimises (rloo or grpo)"""
    round_size: int = field(default=8, metadata=cli(type=positive_int, metavar="N"))
    """reinforce-ada, ar3po: completions per prompt per round (Reinforce-Ada's round_repeat: 8)"""
    max_rounds: int = field(default=4, metadata=cli(type=positive_int, metavar="N"))
    """reinforce-ada, ar3po: rounds per prompt at most (Reinforce-Ada's max_rounds: 4)"""
    ada_exit: Literal["balanced", "positive-focused"] = "balanced"
    """reinforce-ada: when a prompt is done (balanced: G/2 passes and G - G/2 fails; positive-focused: a pass)"""
    seed: int = 0
    """seed of the prompt permutations, the sample draws and GRESO's coin flips"""
    max_steps: int | None = field(default=None, metadata=cli(type=positive_int, metavar="N"))
    """steps per strategy at most (default: 50 epochs' worth)"""

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise UserError(f"group size must be at least 2, got {self.group_size}")
        object.__setattr__(self, "band", checked_band(self.band))
        if not self.strategies:
            raise UserError("no strategy to simulate")
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown:
            raise UserError(f"unknown strategy {unknown[0]!r} (choose {', '.join(STRATEGIES)})")
        if self.max_num_gen_batches < 0:
            raise UserError(f"max_num_gen_batches must be >= 0, got {self.max_num_gen_batches}")
        if not 0.0 < self.greso_target < 1.0:
            raise UserError(f"greso_target must be in (0, 1), got {self.greso_target}")
        if self.knapsack_min_n > self.knapsack_max_n:
            raise UserError(
                f"--knapsack-min-n ({self.knapsack_min_n}) must not exceed --knapsack-max-n ({self.knapsack_max_n})"
            )
        unfit = {s: why for s in self.strategies if (why := unfit_reason(s, self))}
        if unfit and self.strategies == list(STRATEGIES):  # the default: those that cannot run at this G left out
            object.__setattr__(self, "strategies", [s for s in self.strategies if s not in unfit])
            object.__setattr__(self, "_left_out", unfit)
        elif unfit:
            raise UserError(next(iter(unfit.values())))

    @property
    def left_out(self) -> dict[str, str]:
        """Default strategies left out because they cannot run at this G: name -> why."""
        return getattr(self, "_left_out", {})


def unfit_reason(strategy: str, cfg: PlanConfig, group_size: int | None = None) -> str | None:
    """Why ``strategy`` cannot spend G rollouts per prompt on average under ``cfg`` (None: it can)."""
    g = cfg.group_size if group_size is None else group_size
    if strategy == "vip" and not 4 <= g <= cfg.vip_max_n:
        return (
            f"vip gives each prompt 0 or 4 to --vip-max-n ({cfg.vip_max_n}) rollouts: group size {g} must lie "
            f"in [4, {cfg.vip_max_n}]"
        )
    if strategy == "knapsack" and g < cfg.knapsack_min_n:
        return (
            f"knapsack gives every observed prompt --knapsack-min-n ({cfg.knapsack_min_n}) rollouts first: "
            f"group size {g} must be at least that"
        )
    return None


@dataclass
class StrategyResult:
    """One strategy's figures; one entry of the plan's ``strategies`` (its JSON form)."""

    strategy: str
    steps: int = 0
    """Training steps simulated."""
    rollouts: int = 0
    """Completions generated, the static filter's estimate included."""
    filter_rollouts: int = 0
    """static: completions spent estimating pass rates before training."""
    trained_groups: int = 0
    """Groups trained on."""
    informative_groups: int = 0
    """Informative groups trained on."""
    wasted_rollouts: int = 0
    """Completions that carry no gradient: in zero-variance groups (trained on to no effect, or thrown away), or
    drawn and left out of the group trained on (reinforce-ada)."""
    surplus_rollouts: int = 0
    """dapo, greso: completions of informative groups discarded past B."""
    generation_batches: int = 0
    """dapo, greso: generation batches drawn."""
    cap_hits: int = 0
    """dapo, greso: steps that reached max_num_gen_batches short of B informative groups (verl would raise)."""
    skipped_prompts: int = 0
    """greso: prompts skipped before rollout."""
    replacement_draws: int = 0
    """Groups drawn with replacement because the task's samples ran out in that epoch."""
    effective_rollouts: int = 0
    """Rollouts in trained groups with reward variance (the ones that carry a gradient)."""
    reused_responses: int = 0
    """ar3po: earlier passes put into groups that had none (no rollout spent)."""
    budgets: Counter = field(default_factory=Counter)
    """Rollouts given to one prompt in one step -> how many times (prompts drawn, skipped ones excluded)."""
    tasks_covered: int = 0
    """Tasks trained on at least once."""
    frontier_never_reached: int = 0
    """Frontier tasks (a pass and a non-pass in the samples) never trained on."""
    tasks_kept: int | None = None
    """static: tasks the band kept."""
    wrongly_dropped: int | None = None
    """static: dropped tasks whose pass rate over all samples lies inside the band."""
    steps_to_target: int | None = None
    """Steps to E epochs of informative signal (None: not reached within the step cap)."""
    curve: list[tuple[int, int]] = field(default_factory=list)
    """(rollouts so far, informative groups so far) after each step."""
    batch_counts: list[int] = field(default_factory=list)
    """dapo, greso: generation batches of each step."""

    @property
    def rollouts_per_informative_group(self) -> float | None:
        return self.rollouts / self.informative_groups if self.informative_groups else None

    @property
    def informative_fraction(self) -> float | None:
        """Informative share of the groups trained on."""
        return self.informative_groups / self.trained_groups if self.trained_groups else None

    @property
    def effective_gradient_ratio(self) -> float | None:
        """Knapsack RL's effective-gradient ratio: the share of rollouts generated that carry a gradient."""
        return self.effective_rollouts / self.rollouts if self.rollouts else None

    @property
    def informative_per_1000(self) -> float | None:
        """Informative groups trained on per 1,000 rollouts generated."""
        return 1000 * self.informative_groups / self.rollouts if self.rollouts else None

    def budget_histogram(self) -> dict[str, int]:
        """:data:`BUDGET_BINS` -> prompts given that many rollouts in a step (empty bins left out)."""
        out = {}
        for (lo, hi), label in zip(BUDGET_BINS, BIN_LABELS):
            n = sum(c for b, c in self.budgets.items() if b >= lo and (hi is None or b <= hi))
            if n:
                out[label] = n
        return out

    @property
    def informative_groups_per_step(self) -> float | None:
        return self.informative_groups / self.steps if self.steps else None

    @property
    def generation_batches_per_step(self) -> float | None:
        return self.generation_batches / self.steps if self.steps and self.generation_batches else None

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in vars(self).items() if k not in ("curve", "batch_counts", "budgets")}
        d.update(
            rollouts_per_informative_group=self.rollouts_per_informative_group,
            effective_gradient_ratio=self.effective_gradient_ratio,
            informative_per_1000=self.informative_per_1000,
            budgets={str(k): v for k, v in sorted(self.budgets.items())},
            budget_histogram=self.budget_histogram(),
            informative_fraction=self.informative_fraction,
            informative_groups_per_step=self.informative_groups_per_step,
            generation_batches_per_step=self.generation_batches_per_step,
            curve=[list(p) for p in self.curve],
        )
        return d


@dataclass(frozen=True)
class RolloutPlan:
    """The simulation: what was simulated on, the closed forms it can be checked against, each strategy."""

    config: PlanConfig
    n_tasks: int
    n_frontier: int
    target_informative_groups: int
    q: float
    """Expected informative fraction at G with prompts drawn uniformly (headroom's unbiased q(G))."""
    strategies: dict[str, StrategyResult]
    zero_variance: dict[int, tuple[float, float]] = field(default_factory=dict)
    """Group size n -> (share of all-pass groups, share of all-fail groups) with prompts drawn uniformly
    (:func:`all_pass_shares`): what Reinforce-Ada measures falling with n."""

    def to_json(self) -> dict[str, Any]:
        cfg = {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(self.config).items() if not k.startswith("_")
        }
        return {
            "note": "replay of recorded samples under today's policy: no weights are updated",
            "config": cfg,
            "n_tasks": self.n_tasks,
            "n_frontier": self.n_frontier,
            "target_informative_groups": self.target_informative_groups,
            "q": self.q,
            "none_rollouts_per_informative_group_closed_form": self.config.group_size / self.q if self.q else None,
            "dapo_generation_batches_per_step_closed_form": expected_dapo_batches(self.q, self.config.batch_size),
            "zero_variance_by_group_size": {
                str(n): {"all_pass": a, "all_fail": f} for n, (a, f) in self.zero_variance.items()
            },
            "strategies": {k: v.to_json() for k, v in self.strategies.items()},
        }

    def frame(self):
        """The table the CLI prints and the notebook shows: one row per strategy."""
        rows = []
        for name, r in self.strategies.items():
            rows.append(
                {
                    "strategy": name,
                    "rollouts/informative group": r.rollouts_per_informative_group,
                    "effective-gradient ratio": r.effective_gradient_ratio,
                    "informative groups/1000 rollouts": r.informative_per_1000,
                    "informative groups/step": r.informative_groups_per_step,
                    "informative fraction": r.informative_fraction,
                    "tasks covered": r.tasks_covered,
                    "frontier never reached": r.frontier_never_reached,
                    "wasted rollouts": r.wasted_rollouts,
                    "rollouts": r.rollouts,
                    "steps to target": r.steps_to_target,
                    "gen batches/step": r.generation_batches_per_step,
                }
            )
        return dataframe(rows).set_index("strategy")

    def budget_frame(self):
        """Rollouts given to one prompt in one step: prompts per bin (:data:`BUDGET_BINS`), one row per strategy."""
        rows = [{"strategy": name, **r.budget_histogram()} for name, r in self.strategies.items()]
        frame = dataframe(rows).set_index("strategy")
        return frame.reindex(columns=[c for c in BIN_LABELS if c in frame.columns]).fillna(0).astype(int)

    def zero_variance_frame(self):
        """All-pass and all-fail shares of groups of n completions, prompts drawn uniformly (Reinforce-Ada's
        measure of how zero-gradient groups thin out as n grows)."""
        return dataframe(
            [{"n": n, "all-pass groups": a, "all-fail groups": f} for n, (a, f) in self.zero_variance.items()],
            columns=["n", "all-pass groups", "all-fail groups"],
        ).set_index("n")

    def curves_frame(self):
        """Rollouts spent against informative groups gathered, step by step, one block per strategy (long form)."""
        return dataframe(
            [
                {"strategy": name, "step": i + 1, "rollouts": r, "informative_groups": inf}
                for name, res in self.strategies.items()
                for i, (r, inf) in enumerate(res.curve)
            ]
        )


def expected_dapo_batches(
    q: float, batch_size: int, max_batches: int = 10_000, gen_batch_size: int | None = None
) -> float | None:
    """E[generation batches per step] when each drawn prompt is informative with probability q, independently:
    ``sum_k P(Binomial(k gen, q) < B)`` (the step ends at the first k whose k batches of ``gen_batch_size`` prompts,
    B by default, held B informative groups)."""
    from scipy.stats import binom  # here, not at the top: every grpo-wb command would pay for scipy.stats

    if q <= 0:
        return None
    gen = gen_batch_size or batch_size
    total, k = 0.0, 0
    while k < max_batches:
        p = 1.0 if k == 0 else float(binom.cdf(batch_size - 1, k * gen, q))
        total += p
        if p < 1e-12:
            break
        k += 1
    return total


# ----------------------------------------------------------------------------- the simulator


class _Replay:
    """Prompt permutations per epoch and each task's samples, drawn without replacement within an epoch."""

    def __init__(self, pools: dict[str, list[bool]], tasks: Sequence[str], rng: random.Random, g: int):
        self.pools, self.tasks, self.rng, self.g = pools, list(tasks), rng, g
        self.epoch = -1
        self.perm: list[str] = []
        self.pos = 0
        self.order: dict[str, list[int]] = {}
        self.replacement_draws = 0

    def next_prompt(self) -> str:
        if self.pos >= len(self.perm):
            self.epoch += 1
            self.perm = self.tasks[:]
            self.rng.shuffle(self.perm)
            self.pos = 0
            self.order = {}
        t = self.perm[self.pos]
        self.pos += 1
        return t

    def group(self, task: str, n: int | None = None) -> list[bool]:
        """``n`` (default G) of the task's samples: without replacement while this epoch's share lasts."""
        n = self.g if n is None else n
        pool = self.pools[task]
        order = self.order.get(task)
        if order is None:
            order = list(range(len(pool)))
            self.rng.shuffle(order)
            self.order[task] = order
        if n == 0:
            return []
        if len(order) >= n:
            idx = [order.pop() for _ in range(n)]
        else:  # this task's samples ran out in this epoch
            self.replacement_draws += 1
            idx = [self.rng.randrange(len(pool)) for _ in range(n)]
        return [pool[i] for i in idx]


def _informative(group: Sequence[bool]) -> bool:
    return any(group) and not all(group)


def _pools(samples: Sequence[TaskSamples], rng: random.Random) -> dict[str, list[bool]]:
    """Each task's outcomes in file order, or (pooled run groups) its passes and fails in a seeded order."""
    out = {}
    for s in samples:
        if len(s.passes) == s.n:
            out[s.task_id] = list(s.passes)
        else:
            pool = [True] * s.n_correct + [False] * (s.n - s.n_correct)
            rng.shuffle(pool)
            out[s.task_id] = pool
    return out


def simulate(samples: Sequence[TaskSamples], cfg: PlanConfig) -> RolloutPlan:
    """Simulate every strategy of ``cfg`` on the recorded samples (deterministic for ``cfg.seed``)."""
    if not samples:
        raise UserError("no tasks to plan over")
    g, b = cfg.group_size, cfg.batch_size
    frontier = {s.task_id for s in samples if 0 < s.n_correct < s.n}
    if not frontier:
        raise UserError("no task has both a pass and a non-pass in its samples: no strategy can find signal")
    target = cfg.epochs * len(frontier)
    q = sum(informative_estimate(s.n, s.n_correct, g)[0] for s in samples) / len(samples)
    max_steps = cfg.max_steps or 50 * cfg.epochs * math.ceil(len(samples) / b)
    results: dict[str, StrategyResult] = {}
    for name in cfg.strategies:
        rng = random.Random(cfg.seed)
        pools = _pools(samples, rng)
        results[name] = _run(name, samples, pools, cfg, frontier, target, max_steps, rng)
    return RolloutPlan(cfg, len(samples), len(frontier), target, q, results, all_pass_shares(samples))


ALLOCATIONS = ("knapsack", "vip")
"""The strategies whose per-prompt budget is a number fixed before sampling, so a dataset column can carry it."""


def epoch_budgets(samples: Sequence[TaskSamples], cfg: PlanConfig, strategy: str = "knapsack") -> dict[str, int]:
    """Each task's rollouts for one epoch under ``strategy``: the tasks in a seeded order, cut into batches of B
    (the last one shorter) sharing B x G rollouts each, every pass rate from all of the task's recorded samples
    (Knapsack RL's rule leaves a task with fewer than 8 samples at G, as it does a prompt seen too little)."""
    if strategy not in ALLOCATIONS:
        raise UserError(f"a per-prompt budget comes from {' or '.join(ALLOCATIONS)}, not {strategy!r}")
    if why := unfit_reason(strategy, cfg):
        raise UserError(why)
    order = list(samples)
    random.Random(cfg.seed).shuffle(order)
    out: dict[str, int] = {}
    g, b = cfg.group_size, cfg.batch_size
    for i in range(0, len(order), b):
        batch = order[i : i + b]
        rates = [s.n_correct / s.n for s in batch]
        if strategy == "knapsack":
            budgets = knapsack_budgets(
                [p if s.n >= 8 else None for p, s in zip(rates, batch)],
                g,
                min_n=cfg.knapsack_min_n,
                max_n=cfg.knapsack_max_n,
            )
        else:
            budgets = vip_budgets(rates, g * len(batch), upper=cfg.vip_max_n, rule=cfg.vip_rule)
        out.update((s.task_id, n) for s, n in zip(batch, budgets))
    return {s.task_id: out[s.task_id] for s in samples}


def budget_sweep(samples: Sequence[TaskSamples], cfg: PlanConfig, sizes: Sequence[int] = (4, 8, 16, 32)):
    """Each strategy simulated at each group size in ``sizes`` (``vip`` where G fits its bounds): a long table of
    the effective-gradient ratio and informative groups per 1,000 rollouts, for the plot against the budget."""
    rows = []
    for g in sizes:
        names = [s for s in cfg.strategies if not unfit_reason(s, cfg, g)]
        if not names:
            raise UserError(
                f"no strategy of {', '.join(cfg.strategies)} can run at group size {g}: "
                # a str: no strategy fits g, the first one included
                + cast(str, unfit_reason(cfg.strategies[0], cfg, g))
            )
        plan = simulate(samples, dataclasses.replace(cfg, group_size=g, strategies=names))
        rows += [
            {
                "strategy": name,
                "group_size": g,
                "effective_gradient_ratio": r.effective_gradient_ratio,
                "informative_per_1000": r.informative_per_1000,
                "rollouts_per_informative_group": r.rollouts_per_informative_group,
            }
            for name, r in plan.strategies.items()
        ]
    return dataframe(rows)


def all_pass_shares(
    samples: Sequence[TaskSamples], sizes: Sequence[int] = (4, 8, 16, 32, 64, 128, 256)
) -> dict[int, tuple[float, float]]:
    """For each group size n no larger than every task's sample count: the expected share of prompts whose n
    completions all pass, and all fail, ``mean_i C(c_i, n) / C(N_i, n)`` (the unbiased subset estimate)."""
    least = min(s.n for s in samples)
    out = {}
    for n in sizes:
        if n > least:
            break
        out[n] = (
            sum(math.comb(s.n_correct, n) / math.comb(s.n, n) for s in samples) / len(samples),
            sum(math.comb(s.n - s.n_correct, n) / math.comb(s.n, n) for s in samples) / len(samples),
        )
    return out


def _run(
    name: str,
    samples: Sequence[TaskSamples],
    pools: dict[str, list[bool]],
    cfg: PlanConfig,
    frontier: set[str],
    target: int,
    max_steps: int,
    rng: random.Random,
) -> StrategyResult:
    g, b = cfg.group_size, cfg.batch_size
    res = StrategyResult(name)
    tasks = [s.task_id for s in samples]
    if name == "static":
        tasks = _static_filter(samples, pools, cfg, res)
        if not tasks:
            return res
    replay = _Replay(pools, tasks, rng, g)
    covered: set[str] = set()
    greso = _Greso(rng, cfg.greso_target) if name == "greso" else None
    seen = _Seen()
    while res.steps < max_steps and res.informative_groups < target:
        if name in ("dapo", "greso"):
            trained = _dynamic_step(replay, cfg, res, greso)
        elif name in ("reinforce-ada", "ar3po"):
            trained = []
            for _ in range(b):
                t = replay.next_prompt()
                trained.append((t, _sequential_group(name, t, replay, cfg, res, seen)))
        else:
            if name in ("none", "static"):  # each prompt's group drawn as the prompt comes
                drawn = []
                for _ in range(b):
                    t = replay.next_prompt()
                    drawn.append((t, replay.group(t)))
            else:  # the batch's prompts first: their budgets depend on one another
                prompts = [replay.next_prompt() for _ in range(b)]
                drawn = [(t, replay.group(t, n)) for t, n in zip(prompts, _batch_budgets(name, prompts, cfg, seen))]
            trained = []
            for t, grp in drawn:
                res.rollouts += len(grp)
                res.budgets[len(grp)] += 1
                seen.record(t, grp)
                if grp:
                    trained.append((t, grp))
                if not _informative(grp):
                    res.wasted_rollouts += len(grp)
        informative = [(t, grp) for t, grp in trained if _informative(grp)]
        res.steps += 1
        res.trained_groups += len(trained)
        res.informative_groups += len(informative)
        if name not in ("reinforce-ada", "ar3po"):  # those two count what they drew as they draw it
            res.effective_rollouts += sum(len(grp) for _, grp in informative)
        covered.update(t for t, _ in trained)
        res.curve.append((res.rollouts, res.informative_groups))
        if res.steps_to_target is None and res.informative_groups >= target:
            res.steps_to_target = res.steps
    res.replacement_draws = replay.replacement_draws
    res.skipped_prompts = greso.skipped if greso else 0
    res.tasks_covered = len(covered)
    res.frontier_never_reached = len(frontier - covered)
    return res


def _static_filter(
    samples: Sequence[TaskSamples], pools: dict[str, list[bool]], cfg: PlanConfig, res: StrategyResult
) -> list[str]:
    """The band applied once on each task's first k samples (their cost counted); the tasks kept."""
    k = cfg.static_samples or cfg.group_size
    lo, hi = cfg.band
    kept = []
    for s in samples:
        first = pools[s.task_id][:k]
        res.filter_rollouts += len(first)
        p_hat = sum(first) / len(first)
        if lo <= p_hat <= hi:
            kept.append(s.task_id)
        elif lo <= s.n_correct / s.n <= hi:
            res.wrongly_dropped = (res.wrongly_dropped or 0) + 1
    res.tasks_kept, res.wrongly_dropped = len(kept), res.wrongly_dropped or 0
    res.rollouts = res.filter_rollouts
    return kept


def _dynamic_step(
    replay: _Replay, cfg: PlanConfig, res: StrategyResult, greso: _Greso | None
) -> list[tuple[str, list[bool]]]:
    """DAPO's filling (behind GRESO's selector when given): generation batches until B informative groups."""
    g, b = cfg.group_size, cfg.batch_size
    trained: list[tuple[str, list[bool]]] = []
    step_groups = []
    batches = 0
    while len(trained) < b and (cfg.max_num_gen_batches <= 0 or batches < cfg.max_num_gen_batches):
        batches += 1
        for t in greso.draw(replay, b) if greso else [replay.next_prompt() for _ in range(b)]:
            grp = replay.group(t)
            step_groups.append(grp)
            res.rollouts += g
            res.budgets[g] += 1
            if greso:
                greso.record(t, grp)
            if _informative(grp):
                if len(trained) < b:
                    trained.append((t, grp))
                else:
                    res.surplus_rollouts += g
            else:
                res.wasted_rollouts += g
    res.generation_batches += batches
    res.batch_counts.append(batches)
    if len(trained) < b:
        res.cap_hits += 1
    if greso:
        greso.adapt(step_groups, replay.epoch)
    return trained


class _Seen:
    """What the simulated run has observed of each prompt: every outcome, its last group, its passes drawn."""

    def __init__(self) -> None:
        self.history: dict[str, list[bool]] = {}
        self.last: dict[str, list[bool]] = {}

    def record(self, task: str, group: Sequence[bool]) -> None:
        if group:
            self.history.setdefault(task, []).extend(group)
            self.last[task] = list(group)

    def knapsack_rate(self, task: str, buffer: int = 16, least: int = 8) -> float | None:
        """``rl_dataset.py``: the last group's mean when it held ``buffer`` rewards, else the mean of the last
        ``buffer``; None until ``least`` were seen."""
        hist = self.history.get(task, [])
        if len(hist) < least:
            return None
        recent = self.last[task] if len(self.last[task]) >= buffer else hist[-buffer:]
        return sum(recent) / len(recent)

    def last_rate(self, task: str) -> float | None:
        last = self.last.get(task)
        return sum(last) / len(last) if last else None

    def passed_before(self, task: str) -> bool:
        return any(self.history.get(task, ()))


def _batch_budgets(name: str, prompts: Sequence[str], cfg: PlanConfig, seen: _Seen) -> list[int]:
    g = cfg.group_size
    if name == "knapsack":
        return knapsack_budgets(
            [seen.knapsack_rate(t) for t in prompts], g, min_n=cfg.knapsack_min_n, max_n=cfg.knapsack_max_n
        )
    rates = [seen.last_rate(t) for t in prompts]
    return vip_budgets(
        [VIP_PRIOR if r is None else r for r in rates], g * len(prompts), upper=cfg.vip_max_n, rule=cfg.vip_rule
    )


def _sequential_group(
    name: str, task: str, replay: _Replay, cfg: PlanConfig, res: StrategyResult, seen: _Seen
) -> list[bool]:
    """One prompt of ``reinforce-ada`` or ``ar3po``: rounds until done; the group trained on."""
    g = cfg.group_size
    drawn: list[bool] = []
    replaced = replay.replacement_draws
    for _ in range(cfg.max_rounds):
        drawn += replay.group(task, cfg.round_size)
        pos = sum(drawn)
        if name == "ar3po":
            done = pos > 0
        elif cfg.ada_exit == "balanced":
            done = pos >= g // 2 and len(drawn) - pos >= g - g // 2
        else:
            done = pos > 0
        if done:
            break
    replay.replacement_draws = min(replay.replacement_draws, replaced + 1)  # one per prompt's group, not per round
    res.rollouts += len(drawn)
    res.budgets[len(drawn)] += 1
    reuse = name == "ar3po" and not any(drawn) and seen.passed_before(task)
    seen.record(task, drawn)
    if name == "ar3po":
        group = drawn + [True] if reuse else drawn
        res.reused_responses += reuse
        if _informative(group):
            res.effective_rollouts += len(drawn)
        else:
            res.wasted_rollouts += len(drawn)
        return group
    # Reinforce-Ada's downsample_cache: up to G/2 passes, the rest fails, topped up from either class
    pos, neg = sum(drawn), len(drawn) - sum(drawn)
    keep_pos = min(g // 2, pos)
    keep_neg = min(g - keep_pos, neg)
    if keep_pos + keep_neg < g:
        if pos > keep_pos:
            keep_pos += min(pos - keep_pos, g - keep_pos - keep_neg)
        elif neg > keep_neg:
            keep_neg += min(neg - keep_neg, g - keep_pos - keep_neg)
    group = [True] * keep_pos + [False] * keep_neg
    if _informative(group):
        res.effective_rollouts += len(group)
        res.wasted_rollouts += len(drawn) - len(group)
    else:
        res.wasted_rollouts += len(drawn)
    return group


class _Greso:
    """GRESO's ``all_probabilistic`` selector: skip probabilities from each prompt's zero-variance streaks."""

    P_MIN, P_MAX, STEP, FLOOR = 0.05, 0.95, 0.01, 0.01

    def __init__(self, rng: random.Random, target: float):
        self.rng = rng
        self.p_easy = self.p_hard = 0.5
        self.target_easy, self.target_hard = target / 3, 2 * target / 3
        self.history: dict[str, list[str]] = {}  # per prompt: "easy", "hard" or "mixed", one per rollout
        self.skipped = 0

    def _streak(self, records: list[str], kind: str) -> int:
        z = 0
        for r in reversed(records):
            if r != kind:
                break
            z += 1
        return z

    def keep(self, task: str) -> bool:
        records = self.history.get(task)
        if not records:
            return True
        z_e = self._streak(records, "easy")
        if z_e and self.rng.random() < 1 - max(self.p_easy**z_e, self.FLOOR):
            return False
        if records[-1] == "hard":
            z_h = self._streak(records, "hard")
            if self.rng.random() < 1 - max(self.p_hard**z_h, self.FLOOR):
                return False
        return True

    def draw(self, replay: _Replay, n: int) -> list[str]:
        """The next ``n`` prompts the selector lets through (skipped ones are used up from the permutation)."""
        out: list[str] = []
        while len(out) < n:
            t = replay.next_prompt()
            if self.keep(t):
                out.append(t)
            else:
                self.skipped += 1
        return out

    def record(self, task: str, group: Sequence[bool]) -> None:
        kind = "easy" if all(group) else "hard" if not any(group) else "mixed"
        self.history.setdefault(task, []).append(kind)

    def adapt(self, groups: Sequence[Sequence[bool]], epoch: int) -> None:
        if epoch <= 0 or not groups:
            return
        easy = sum(all(x) for x in groups) / len(groups)
        hard = sum(not any(x) for x in groups) / len(groups)
        self.p_easy = min(
            self.P_MAX, max(self.P_MIN, self.p_easy + (-self.STEP if easy >= self.target_easy else self.STEP))
        )
        self.p_hard = min(
            self.P_MAX, max(self.P_MIN, self.p_hard + (-self.STEP if hard >= self.target_hard else self.STEP))
        )


def closed_form_frame(plan: RolloutPlan):
    """Simulated figures next to their closed forms (``none`` and ``dapo`` when simulated)."""
    g, rows = plan.config.group_size, []
    if "none" in plan.strategies:
        r = plan.strategies["none"]
        rows += [
            {"figure": "none: informative fraction", "simulated": r.informative_fraction, "closed form": plan.q},
            {
                "figure": "none: rollouts per informative group",
                "simulated": r.rollouts_per_informative_group,
                "closed form": g / plan.q,
            },
        ]
    if "dapo" in plan.strategies:
        r = plan.strategies["dapo"]
        rows.append(
            {
                "figure": "dapo: generation batches per step",
                "simulated": r.generation_batches_per_step,
                "closed form": expected_dapo_batches(plan.q, plan.config.batch_size),
            }
        )
    return dataframe(rows).set_index("figure")


def headline(plan: RolloutPlan, source: str | None = None) -> dict[str, Any]:
    """What a batch index shows: the cheapest strategy per informative group and its figures."""
    ranked = sorted(
        (r for r in plan.strategies.values() if r.rollouts_per_informative_group is not None),
        key=lambda r: cast(float, r.rollouts_per_informative_group),  # not None: filtered just above
    )
    best = ranked[0] if ranked else None
    return {
        "informative_fraction": plan.q,
        "group_size": plan.config.group_size,
        "cheapest_strategy": best.strategy if best else None,
        "rollouts_per_informative_group": best.rollouts_per_informative_group if best else None,
        "n_tasks": plan.n_tasks,
        "n_frontier": plan.n_frontier,
        "source": source,
    }
