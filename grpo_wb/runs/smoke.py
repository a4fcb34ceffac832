"""The smoke trainer: the GRPO data path, step after step, without updating weights.

Each step samples a batch of prompts, asks the backend for G completions per
prompt, scores them in the sandbox, computes rewards and group-relative
advantages exactly as the trainer would, and logs the diagnostics. It answers
"would GRPO get a learning signal here?" before a GPU is involved.

The run directory holds the artifacts :mod:`grpo_wb.runs.artifacts` writes (the same for TRL runs);
its ``checkpoint_manifest.json`` says ``trained_weights: false``, what this run validated and what remains.

``resume`` continues a killed run from its last complete step; because the
batch schedule and the mock backend are functions of (seed, step), the result
equals an uninterrupted run with the same seed (timing fields aside).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from tqdm.std import tqdm

from grpo_wb.config import check_at_least_one, cli, fraction, from_dict, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import sha256_file
from grpo_wb.rollouts.factory import BackendConfig, make_backend
from grpo_wb.rollouts.types import Backend, RolloutRequest, describe_source
from grpo_wb.runs.artifacts import ARTIFACTS, RunWriter
from grpo_wb.scoring.executors import (
    ExecutorConfig,
    SandboxConfig,
    describe_executor,
    open_scorer,
)
from grpo_wb.scoring.rewards import RewardConfig, RewardKind
from grpo_wb.scoring.sandbox import describe_isolation
from grpo_wb.scoring.scorer import ScoreRequest
from grpo_wb.signal.advantages import AdvantageConfig, AdvantageMode, ScaleRewards
from grpo_wb.tasks.records import Task, load_tasks


@dataclass(kw_only=True)
class SmokeConfig(BackendConfig, SandboxConfig, ExecutorConfig):
    """Everything that determines a smoke run (stored in the manifest; checked on resume)."""

    tasks: str
    """canonical task file (JSONL)"""
    out: str
    """run directory for the artifacts"""
    group_size: int = field(default=8, metadata=cli(type=positive_int))
    """G, completions per prompt (TRL's num_generations)"""
    batch_size: int = field(default=8, metadata=cli(type=positive_int))
    """prompts per step"""
    steps: int = field(default=3, metadata=cli(type=positive_int))
    """steps to run"""
    seed: int = 0
    """seed of the batch schedule and of the backend's sampling"""
    reward: RewardKind = "binary"
    """binary (1 for a pass, else 0) or partial (fraction of tests passed)"""
    advantage: AdvantageMode = "grpo"
    """grpo (TRL's GRPOTrainer) or rloo (leave-one-out)"""
    scale_rewards: ScaleRewards | None = None
    """default: group for grpo (TRL), none for rloo"""
    epsilon: float = 1e-4
    """std epsilon (TRL 1e-4)"""
    variance_tol: float = 1e-6
    """a reward std at or below this counts as no variance"""
    min_informative_fraction: float = field(default=0.1, metadata=cli(type=fraction))
    """early stop when the informative fraction stays below this for --patience steps (0 disables)"""
    patience: int = field(default=3, metadata=cli(type=positive_int))
    """steps below the threshold before stopping"""

    def __post_init__(self) -> None:
        super().__post_init__()  # BackendConfig's, SandboxConfig's, ExecutorConfig's (and the choices)
        check_at_least_one(self, "group_size", "batch_size", "steps", "patience")
        if self.group_size < 2:
            raise UserError("group-size must be at least 2: GRPO learns from differences within a group")
        if not 0.0 <= self.min_informative_fraction <= 1.0:
            raise UserError("min-informative-fraction must be in [0, 1]")
        try:
            self.advantage_config()
        except ValueError as e:
            raise UserError(str(e)) from None

    def advantage_config(self) -> AdvantageConfig:
        scale = self.scale_rewards or ("group" if self.advantage == "grpo" else "none")
        return AdvantageConfig(mode=self.advantage, scale_rewards=scale, epsilon=self.epsilon,
                               variance_tol=self.variance_tol)

    # fields that may change between a run and its resumption (they change where and how fast, not what)
    RESUMABLE_CHANGES = ("steps", "workers", "out", "executor", "ray_address", "isolation")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def schedule(n_tasks: int, batch_size: int, seed: int, step: int) -> list[int]:
    """Task indices for ``step``: a seeded permutation per epoch, consumed ``batch_size`` at a time."""
    if batch_size > n_tasks:
        raise UserError(f"batch-size {batch_size} exceeds the number of tasks ({n_tasks})")
    per_epoch = n_tasks // batch_size
    epoch, slot = divmod(step, per_epoch)
    perm = list(range(n_tasks))
    random.Random(f"{seed}|epoch|{epoch}").shuffle(perm)
    return perm[slot * batch_size:(slot + 1) * batch_size]


def checks_of_the_run(history: Sequence[dict[str, Any]], backend: dict[str, Any], isolation: dict[str, Any],
                      n_tasks: int, group_size: int, min_informative_fraction: float) -> tuple[list[str], list[str]]:
    """The manifest's ``validated`` and ``remaining_before_real_training``, from what this run did and saw."""
    n = sum(m["n_completions"] for m in history)

    def count(rate: str) -> int:
        return round(sum(m[rate] * m["n_completions"] for m in history))

    hits, parse, cut = sum(m.get("cache_hits", 0) for m in history), count("parse_failure_rate"), count("clipped_ratio")
    mean_inf = sum(m["informative_fraction"] for m in history) / len(history) if history else None
    source = describe_source(backend)
    validated = [f"task file parsed and checked: {n_tasks} tasks (schema, ids, tests compile)"]
    if history:
        validated += [
            f"{n} completions over {len(history)} steps, in groups of G={group_size}, from {source}",
            f"every completion scored in its own sandboxed process ({n - hits} executed, {hits} answered from the "
            f"verdict cache); isolation: {describe_isolation(isolation) if isolation else 'not measured'}",
            f"code extracted from every completion: {parse} of {n} had none (parse failures)",
            "rewards, group-relative advantages (TRL GRPO conventions) and informative-prompt fractions computed",
            "per-step metrics and the last step's rollouts written crash-safely"]
    remaining = ["no model weights were updated: this is a smoke run, not training"]
    if backend.get("backend") in ("mock", "replay"):
        remaining.append(f"the completions came from {source}: sample them from the policy you will train "
                         "(--backend openai or transformers)")
    if n and parse / n > 0.05:
        remaining.append(f"{parse / n:.0%} of completions had no usable code: check the prompt format, the chat "
                         "template and the extraction before training on this reward")
    if n and cut:
        remaining.append(f"{cut} of {n} completions were cut at max_tokens: raise the completion budget or check "
                         "the stop strings")
    if mean_inf is not None and mean_inf < max(min_informative_fraction, 0.1):
        remaining.append(f"mean informative-prompt fraction {mean_inf:.2f}: filter the task set to its frontier "
                         "(grpo-wb headroom --export-frontier) or change G")
    if isolation and isolation.get("missing"):
        remaining.append("the sandbox did not prove " + "; ".join(isolation["missing"]) + ": score the real run where "
                         "--isolation strict holds")
    remaining.append("train with a real GRPO trainer (e.g. TRL GRPOTrainer, grpo-wb train) using the same reward "
                     "function")
    return validated, remaining


class SmokeRun:
    """A smoke run bound to its directory; ``run()`` executes (or resumes) it."""

    def __init__(self, cfg: SmokeConfig, *, resume: bool = False, overwrite: bool = False,
                 progress: bool = True, log: Callable[[str], None] | None = None):
        self.cfg = cfg
        self.out = Path(cfg.out)
        self.resume = resume
        self.overwrite = overwrite
        self.progress = progress
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.isolation: dict[str, Any] = {}
        self.executor: dict[str, Any] = {}

    # ------------------------------------------------------------------ set-up
    def _prepare_dir(self) -> bool:
        """Check (and with ``overwrite`` clean) the run directory; True when there is a run to resume."""
        existing = [a for a in ARTIFACTS if (self.out / a).exists()]
        if existing and not self.resume and not self.overwrite:
            raise UserError(f"{self.out} already holds a run ({existing[0]}); use --resume to continue it "
                            "or --overwrite to replace it")
        if self.overwrite and not self.resume:
            for a in ARTIFACTS:
                (self.out / a).unlink(missing_ok=True)
            return False
        if not self.resume or not existing:
            return False
        manifest_path = self.out / "checkpoint_manifest.json"
        if not manifest_path.exists():
            raise UserError(f"{manifest_path}: missing, cannot resume this run")
        try:
            manifest = json.loads(manifest_path.read_text())
            old = manifest["config"]
        except (json.JSONDecodeError, KeyError) as e:
            raise UserError(f"{manifest_path}: unreadable manifest ({e})") from None
        old_cfg = from_dict(SmokeConfig, old, source=str(manifest_path))
        diffs = [f.name for f in dataclasses.fields(SmokeConfig)
                 if f.name not in SmokeConfig.RESUMABLE_CHANGES
                 and getattr(old_cfg, f.name) != getattr(self.cfg, f.name)]
        if diffs:
            k = diffs[0]
            raise UserError(f"cannot resume {self.out}: {k} was {getattr(old_cfg, k)!r}, now "
                            f"{getattr(self.cfg, k)!r} (a resumed run must use the same settings)")
        if manifest.get("tasks_sha256") != self.tasks_sha256:
            raise UserError(f"cannot resume {self.out}: the task file {self.cfg.tasks} changed since the run started")
        return True

    # ------------------------------------------------------------------ main loop
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        tasks = load_tasks(cfg.tasks)
        if cfg.batch_size > len(tasks):
            raise UserError(f"batch-size {cfg.batch_size} exceeds the number of tasks in {cfg.tasks} ({len(tasks)})")
        backend = make_backend(cfg, tasks, cfg.seed)
        resuming = self._prepare_dir()
        with RunWriter(self.out) as writer:
            steps = [m["step"] for m in writer.history]
            if steps != list(range(len(steps))):
                raise UserError(f"{self.out / 'metrics.jsonl'}: steps are not 0..n-1; cannot resume")
            start = len(steps) if resuming else 0
            writer.truncate_from(start)  # groups of a step whose metrics line never landed
            if start:
                self.log(f"resuming {self.out} at step {start}")
            prev_summary = self._read_json("summary.json")
            if start and prev_summary and prev_summary.get("stopped_early"):
                self.log(f"{self.out}: the run already stopped early ({prev_summary.get('stop_reason')}); nothing to do")
                return prev_summary
            return self._steps(writer, tasks, backend, start)

    def _steps(self, writer: RunWriter, tasks: Sequence[Task], backend: Backend, start: int) -> dict[str, Any]:
        cfg = self.cfg
        stop_reason = None
        occurrences = self._occurrences(tasks, start)
        adv_cfg = cfg.advantage_config()
        t_run = time.monotonic()
        with open_scorer(cfg.limits(), RewardConfig(kind=cfg.reward), workers=cfg.workers, executor=cfg.executor,
                         ray_address=cfg.ray_address) as scorer:
            self.executor = scorer.executor_info()
            self.isolation = self.executor["per_node"][0]["isolation"]
            for line in describe_executor(self.executor):
                self.log(line)
            self._write_manifest(writer, backend, start, len(tasks))
            bar = tqdm(total=cfg.steps, initial=min(start, cfg.steps), desc="smoke", unit="step",
                       disable=not self.progress, file=sys.stderr)
            for step in range(start, cfg.steps):
                if stop_reason:
                    break
                batch = [tasks[i] for i in schedule(len(tasks), cfg.batch_size, cfg.seed, step)]
                requests = []
                for t in batch:
                    requests.append(RolloutRequest(t, cfg.group_size, step, occurrences.get(t.task_id, 0)))
                    occurrences[t.task_id] = occurrences.get(t.task_id, 0) + 1
                groups_completions = backend.generate(requests)
                flat = [ScoreRequest(task=req.task, completion=c.text, sample_index=c.sample_index,
                                     completion_id=f"{req.task.task_id}#s{step}#{c.sample_index}", meta=c.meta())
                        for req, group in zip(requests, groups_completions) for c in group]
                hits0 = scorer.cache_hits
                t0 = time.monotonic()
                scored = list(scorer.score(flat))
                secs = time.monotonic() - t0
                by_group = [scored[i * cfg.group_size:(i + 1) * cfg.group_size] for i in range(len(batch))]
                metrics = writer.write_step(step, by_group, [[s.reward for s in g] for g in by_group], adv_cfg,
                                            score_seconds=secs, cache_hits=scorer.cache_hits - hits0,
                                            finish_reasons=[c.finish_reason for g in groups_completions for c in g])
                below = self._below_streak(writer.history)
                if below >= cfg.patience:
                    stop_reason = (f"informative-prompt fraction below {cfg.min_informative_fraction:g} for "
                                   f"{below} consecutive steps (last {metrics.informative_fraction:.3f}): "
                                   "too few prompts give GRPO a learning signal")
                self._write_summary(writer, stop_reason, time.monotonic() - t_run)
                self._write_manifest(writer, backend, step + 1, len(tasks))
                bar.update(1)
                bar.set_postfix(informative=f"{metrics.informative_fraction:.2f}",
                                reward=f"{metrics.mean_reward or 0:.2f}")
        bar.close()
        summary = self._write_summary(writer, stop_reason, time.monotonic() - t_run)
        self._write_manifest(writer, backend, len(writer.history), len(tasks))
        if stop_reason:
            self.log(f"stopped early after step {len(writer.history) - 1}: {stop_reason}")
        return summary

    # ------------------------------------------------------------------ helpers
    def _read_json(self, name: str) -> dict[str, Any] | None:
        p = self.out / name
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:
            return None

    def _below_streak(self, history: list[dict[str, Any]]) -> int:
        """Steps at the end of ``history`` whose informative fraction is below the early-stop threshold."""
        below = 0
        for m in history:
            if self.cfg.min_informative_fraction > 0 and m["informative_fraction"] < self.cfg.min_informative_fraction:
                below += 1
            else:
                below = 0
        return below

    def _occurrences(self, tasks: Sequence[Task], upto: int) -> dict[str, int]:
        """How often each task was requested in steps before ``upto`` (replay's cursor on resume)."""
        occ: dict[str, int] = {}
        for step in range(upto):
            for i in schedule(len(tasks), self.cfg.batch_size, self.cfg.seed, step):
                occ[tasks[i].task_id] = occ.get(tasks[i].task_id, 0) + 1
        return occ

    def _write_summary(self, writer: RunWriter, stop_reason: str | None, seconds: float) -> dict[str, Any]:
        return writer.write_summary(steps_requested=self.cfg.steps, stopped_early=stop_reason is not None,
                                    stop_reason=stop_reason, seconds_this_session=round(seconds, 3),
                                    trained_weights=False)

    @functools.cached_property
    def tasks_sha256(self) -> str:
        """The task file's digest, taken once: a manifest is written at every step."""
        return sha256_file(self.cfg.tasks)

    def _write_manifest(self, writer: RunWriter, backend: Backend, steps_completed: int, n_tasks: int) -> None:
        described = backend.describe()
        validated, remaining = checks_of_the_run(writer.history, described, self.isolation, n_tasks,
                                                 self.cfg.group_size, self.cfg.min_informative_fraction)
        writer.write_manifest({
            "kind": "grpo_wb smoke run",
            "trained_weights": False,
            "note": "This checkpoint holds NO trained weights: the smoke trainer runs the GRPO data path "
                    "(rollouts, sandboxed scoring, rewards, advantages) without any optimiser step.",
            "steps_completed": steps_completed,
            "validated": validated,
            "remaining_before_real_training": remaining,
            "config": self.cfg.to_json(),
            "advantage": asdict(self.cfg.advantage_config()),
            "backend": described,
            "sandbox": {"limits": asdict(self.cfg.limits()), "isolation": self.isolation,
                        "executor": self.executor},
            "tasks_file": str(self.cfg.tasks),
            "tasks_sha256": self.tasks_sha256,
        })
