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
import queue
import random
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.std import tqdm

from grpo_wb.config import check_at_least_one, cli, fraction, from_dict, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import sha256_file
from grpo_wb.layout import RunFiles
from grpo_wb.rollouts.factory import BackendConfig, make_backend
from grpo_wb.rollouts.stream import request_concurrency, stream_calls
from grpo_wb.rollouts.types import Backend, Completion, RolloutRequest, describe_source
from grpo_wb.runs.artifacts import ARTIFACTS, RunWriter
from grpo_wb.scoring.executors import ExecutorConfig, JudgeConfig, SandboxConfig, describe_executor, scorer_for
from grpo_wb.scoring.rewards import RewardKind
from grpo_wb.scoring.sandbox import describe_isolation
from grpo_wb.scoring.scorer import ScoredCompletion, ScoreRequest
from grpo_wb.signal.advantages import AdvantageConfig, AdvantageMode, ScaleRewards
from grpo_wb.tasks.records import Task, load_tasks


@dataclass(kw_only=True)
class SmokeConfig(BackendConfig, SandboxConfig, ExecutorConfig, JudgeConfig):
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
    overlap: bool = True
    """score each request's completions as they return and generate the next step meanwhile (same artifacts)"""

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
        return AdvantageConfig(
            mode=self.advantage, scale_rewards=scale, epsilon=self.epsilon, variance_tol=self.variance_tol
        )

    # fields that may change between a run and its resumption (they change where and how fast, not what)
    RESUMABLE_CHANGES = ("steps", "workers", "out", "executor", "ray_address", "isolation", "overlap")

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
    return perm[slot * batch_size : (slot + 1) * batch_size]


def checks_of_the_run(
    history: Sequence[dict[str, Any]],
    backend: dict[str, Any],
    isolation: dict[str, Any],
    n_tasks: int,
    group_size: int,
    min_informative_fraction: float,
) -> tuple[list[str], list[str]]:
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
            "per-step metrics and the last step's rollouts written crash-safely",
        ]
    remaining = ["no model weights were updated: this is a smoke run, not training"]
    if backend.get("backend") in ("mock", "replay"):
        remaining.append(
            f"the completions came from {source}: sample them from the policy you will train "
            "(--backend openai or transformers)"
        )
    if n and parse / n > 0.05:
        remaining.append(
            f"{parse / n:.0%} of completions had no usable code: check the prompt format, the chat "
            "template and the extraction before training on this reward"
        )
    if n and cut:
        remaining.append(
            f"{cut} of {n} completions were cut at max_tokens: raise the completion budget or check the stop strings"
        )
    if mean_inf is not None and mean_inf < max(min_informative_fraction, 0.1):
        remaining.append(
            f"mean informative-prompt fraction {mean_inf:.2f}: filter the task set to its frontier "
            "(grpo-wb headroom --export-frontier) or change G"
        )
    if isolation and isolation.get("missing"):
        remaining.append(
            "the sandbox did not prove " + "; ".join(isolation["missing"]) + ": score the real run where "
            "--isolation strict holds"
        )
    remaining.append(
        "train with a real GRPO trainer (e.g. TRL GRPOTrainer, grpo-wb train) using the same reward function"
    )
    return validated, remaining


class SmokeRun:
    """A smoke run bound to its directory; ``run()`` executes (or resumes) it."""

    def __init__(
        self,
        cfg: SmokeConfig,
        *,
        resume: bool = False,
        overwrite: bool = False,
        progress: bool = True,
        log: Callable[[str], None] | None = None,
    ):
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
            raise UserError(
                f"{self.out} already holds a run ({existing[0]}); use --resume to continue it "
                "or --overwrite to replace it"
            )
        if self.overwrite and not self.resume:
            for a in ARTIFACTS:
                (self.out / a).unlink(missing_ok=True)
            return False
        if not self.resume or not existing:
            return False
        manifest_path = self.out / RunFiles.MANIFEST
        if not manifest_path.exists():
            raise UserError(f"{manifest_path}: missing, cannot resume this run")
        try:
            manifest = json.loads(manifest_path.read_text())
            old = manifest["config"]
        except (json.JSONDecodeError, KeyError) as e:
            raise UserError(f"{manifest_path}: unreadable manifest ({e})") from None
        old_cfg = from_dict(SmokeConfig, old, source=str(manifest_path))
        diffs = [
            f.name
            for f in dataclasses.fields(SmokeConfig)
            if f.name not in SmokeConfig.RESUMABLE_CHANGES and getattr(old_cfg, f.name) != getattr(self.cfg, f.name)
        ]
        if diffs:
            k = diffs[0]
            raise UserError(
                f"cannot resume {self.out}: {k} was {getattr(old_cfg, k)!r}, now "
                f"{getattr(self.cfg, k)!r} (a resumed run must use the same settings)"
            )
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
            prev_summary = self._read_json(RunFiles.SUMMARY)
            if start and prev_summary and prev_summary.get("stopped_early"):
                self.log(
                    f"{self.out}: the run already stopped early ({prev_summary.get('stop_reason')}); nothing to do"
                )
                return prev_summary
            return self._steps(writer, tasks, backend, start)

    def _steps(self, writer: RunWriter, tasks: Sequence[Task], backend: Backend, start: int) -> dict[str, Any]:
        cfg = self.cfg
        stop_reason = None
        adv_cfg = cfg.advantage_config()
        t_run = time.monotonic()
        with scorer_for(cfg, cfg.reward) as scorer:
            self.executor = scorer.executor_info()
            self.isolation = self.executor["per_node"][0]["isolation"]
            for line in describe_executor(self.executor):
                self.log(line)
            self._write_manifest(writer, backend, start, len(tasks))
            bar = tqdm(
                total=cfg.steps,
                initial=min(start, cfg.steps),
                desc="smoke",
                unit="step",
                disable=not self.progress,
                file=sys.stderr,
            )
            make = _OverlappedSteps if cfg.overlap else _SequentialSteps
            steps = make(cfg, tasks, backend, scorer, start, self._occurrences(tasks, start))
            scored_steps = iter(steps)
            try:
                for done in scored_steps:
                    metrics = writer.write_step(
                        done.step,
                        done.by_group,
                        [[s.reward for s in g] for g in done.by_group],
                        adv_cfg,
                        score_seconds=done.score_seconds,
                        cache_hits=sum(s.cached for g in done.by_group for s in g),
                        finish_reasons=done.finish_reasons,
                    )
                    below = self._below_streak(writer.history)
                    if below >= cfg.patience:
                        stop_reason = (
                            f"informative-prompt fraction below {cfg.min_informative_fraction:g} for "
                            f"{below} consecutive steps (last {metrics.informative_fraction:.3f}): "
                            "too few prompts give GRPO a learning signal"
                        )
                        steps.close()  # before the summary: it counts the look-ahead generation thrown away
                    self._write_summary(writer, stop_reason, time.monotonic() - t_run, steps.discarded)
                    self._write_manifest(writer, backend, done.step + 1, len(tasks))
                    bar.update(1)
                    bar.set_postfix(
                        informative=f"{metrics.informative_fraction:.2f}", reward=f"{metrics.mean_reward or 0:.2f}"
                    )
                    if stop_reason:
                        break
            finally:
                scored_steps.close()  # generator: what was queued for scoring is dropped, not run
                steps.close()
        bar.close()
        summary = self._write_summary(writer, stop_reason, time.monotonic() - t_run, steps.discarded)
        self._write_manifest(writer, backend, len(writer.history), len(tasks))
        if stop_reason:
            self.log(
                f"stopped early after step {len(writer.history) - 1}: {stop_reason}"
                + (
                    f" ({steps.discarded} completions generated one step ahead were discarded)"
                    if steps.discarded
                    else ""
                )
            )
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

    def _write_summary(
        self, writer: RunWriter, stop_reason: str | None, seconds: float, discarded: int
    ) -> dict[str, Any]:
        return writer.write_summary(
            steps_requested=self.cfg.steps,
            stopped_early=stop_reason is not None,
            stop_reason=stop_reason,
            seconds_this_session=round(seconds, 3),
            lookahead_discarded_completions=discarded,
            trained_weights=False,
        )

    @functools.cached_property
    def tasks_sha256(self) -> str:
        """The task file's digest, taken once: a manifest is written at every step."""
        return sha256_file(self.cfg.tasks)

    def _write_manifest(self, writer: RunWriter, backend: Backend, steps_completed: int, n_tasks: int) -> None:
        described = backend.describe()
        validated, remaining = checks_of_the_run(
            writer.history, described, self.isolation, n_tasks, self.cfg.group_size, self.cfg.min_informative_fraction
        )
        writer.write_manifest(
            {
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
                "sandbox": {
                    "limits": asdict(self.cfg.limits()),
                    "isolation": self.isolation,
                    "executor": self.executor,
                },
                "tasks_file": str(self.cfg.tasks),
                "tasks_sha256": self.tasks_sha256,
            }
        )


@dataclass
class _StepDone:
    """A step's scored groups, in request order, ready to be written."""

    step: int
    by_group: list[list[ScoredCompletion]]
    finish_reasons: list[str]
    score_seconds: float


class _Steps:
    """The steps of a run from ``start``, each yielded once it is scored; ``close()`` stops what runs ahead."""

    def __init__(
        self,
        cfg: SmokeConfig,
        tasks: Sequence[Task],
        backend: Backend,
        scorer: Any,
        start: int,
        occurrences: dict[str, int],
    ):
        self.cfg, self.tasks, self.backend, self.scorer, self.start = cfg, tasks, backend, scorer, start
        self.occurrences = occurrences
        self.discarded = 0
        """Completions generated for a step that was never written (early stop with look-ahead)."""

    def requests(self, step: int) -> list[RolloutRequest]:
        """The step's groups: its batch of the schedule, each with the task's occurrence so far (replay's cursor)."""
        out = []
        for i in schedule(len(self.tasks), self.cfg.batch_size, self.cfg.seed, step):
            t = self.tasks[i]
            out.append(RolloutRequest(t, self.cfg.group_size, step, self.occurrences.get(t.task_id, 0)))
            self.occurrences[t.task_id] = self.occurrences.get(t.task_id, 0) + 1
        return out

    @staticmethod
    def score_requests(req: RolloutRequest, group: Sequence[Completion]) -> list[ScoreRequest]:
        return [
            ScoreRequest(
                task=req.task,
                completion=c.text,
                sample_index=c.sample_index,
                completion_id=f"{req.task.task_id}#s{req.step}#{c.sample_index}",
                meta=c.meta(),
            )
            for c in group
        ]

    def __iter__(self) -> Generator[_StepDone, None, None]:
        raise NotImplementedError
        yield  # a generator, like the subclasses' (close() drops what it holds)

    def close(self) -> None:
        pass


class _SequentialSteps(_Steps):
    """Generate a whole step, then score it: nothing overlaps (``--no-overlap``)."""

    def __iter__(self) -> Generator[_StepDone, None, None]:
        for step in range(self.start, self.cfg.steps):
            requests = self.requests(step)
            groups = self.backend.generate(requests)
            flat = [r for req, group in zip(requests, groups) for r in self.score_requests(req, group)]
            t0 = time.monotonic()
            scored = list(self.scorer.score(flat))
            secs = time.monotonic() - t0
            g = self.cfg.group_size
            yield _StepDone(
                step,
                [scored[i * g : (i + 1) * g] for i in range(len(requests))],
                [c.finish_reason for group in groups for c in group],
                secs,
            )


_END = object()


class _OverlappedSteps(_Steps):
    """Each request's completions go to the scorer the moment they return, and the next step is generated while
    this one is scored: a thread sends step k's requests as slots free up, once step k - 2 is written and judged
    (one step ahead, so memory stays flat and early stop wastes one step's generation at most; within that bound
    a model server is never left idle at a step boundary). The scorer sees one stream across steps; a step is
    yielded, in request order, when its last
    completion is scored, so what is written equals the sequential run's. ``close()`` (early stop) lets the
    requests in flight finish, starts none, and counts what was generated for unwritten steps."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._q: queue.Queue = queue.Queue()
        self._cond = threading.Condition()
        self._written = self._yielded = self.start - 1
        self._stop = threading.Event()
        self._generated: dict[int, int] = {}  # step -> completions generated
        # step -> its requests, their groups as they come, when the first came
        self._steps: dict[int, tuple[list[RolloutRequest], list[list[Completion] | None], float | None]] = {}
        self._thread = threading.Thread(target=self._produce, name="grpo-wb-smoke-generate", daemon=True)
        self._closed = False

    def _produce(self) -> None:
        def items() -> Iterator[tuple[int, int, RolloutRequest]]:
            for step in range(self.start, self.cfg.steps):
                requests = self.requests(step)
                with self._cond:
                    self._steps[step] = (requests, [None] * len(requests), None)
                for i, req in enumerate(requests):
                    yield step, i, req

        def ready(item: tuple[int, int, RolloutRequest]) -> bool:
            return item[0] <= self._written + 2  # one step ahead of the step being scored

        def generate(item: tuple[int, int, RolloutRequest]) -> tuple[int, int, list[Completion]]:
            return item[0], item[1], self.backend.generate([item[2]])[0]

        try:
            # one stream over all steps: step k + 1's requests start as step k's free their slots
            for _, (step, i, group) in stream_calls(
                generate, items(), request_concurrency(self.cfg), self._stop.is_set, ready
            ):
                with self._cond:
                    requests, groups, t0 = self._steps[step]
                    groups[i] = group
                    if t0 is None:
                        self._steps[step] = (requests, groups, time.monotonic())
                    self._generated[step] = self._generated.get(step, 0) + len(group)
                for r in self.score_requests(requests[i], group):
                    self._q.put((step, i, r))
        except BaseException as e:  # raised on the scoring side, after the steps before it are written
            self._q.put(e)
        finally:
            self._q.put(_END)

    def _feed(self) -> Iterator[ScoreRequest]:
        while True:
            item = self._q.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            step, i, req = item
            self._where[req.id] = (step, i)
            yield req

    def __iter__(self) -> Generator[_StepDone, None, None]:
        g = self.cfg.group_size
        self._where: dict[str, tuple[int, int]] = {}
        results: dict[int, dict[str, ScoredCompletion]] = {}
        nxt = self.start
        self._thread.start()
        for res in self.scorer.score(self._feed()):
            step, _ = self._where.pop(res.completion_id)
            results.setdefault(step, {})[res.completion_id] = res
            while nxt in self._steps and len(results.get(nxt, ())) == len(self._steps[nxt][0]) * g:
                with self._cond:
                    requests, groups, t0 = self._steps.pop(nxt)
                scored = results.pop(nxt)
                by_group = [
                    [scored[r.id] for r in self.score_requests(req, group or [])]
                    for req, group in zip(requests, groups)
                ]
                with self._cond:
                    self._yielded = nxt
                    self._generated.pop(nxt, None)
                yield _StepDone(
                    nxt,
                    by_group,
                    [c.finish_reason for group in groups for c in group or []],
                    time.monotonic() - (t0 or time.monotonic()),
                )
                with self._cond:  # written and judged (early stop): step nxt + 2 may be generated now
                    self._written = nxt
                    self._cond.notify_all()
                nxt += 1

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join()
        with self._cond:
            self.discarded = sum(n for step, n in self._generated.items() if step > self._yielded)
