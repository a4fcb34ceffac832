"""The bridge to TRL: the smoke trainer's reward and diagnostics inside a real ``GRPOTrainer``.

:class:`ExecutionReward` is a reward function with TRL's calling convention
(``prompts``, ``completions``, every dataset column as a keyword, ``trainer_state``,
``log_metric``, ...). It scores each completion exactly as ``grpo-wb smoke`` does
(same extraction, same long-lived sandboxed :class:`~grpo_wb.scoring.Scorer`, same
:class:`~grpo_wb.scoring.rewards.RewardConfig`) and returns one float per completion, or
``None`` where the sandbox failed (TRL then leaves that completion out of its group).

:class:`GrpoWbMetricsCallback` is a ``TrainerCallback`` that writes the smoke run's
artifacts during real training -- ``metrics.jsonl``, ``groups.jsonl``,
``last_rollouts.jsonl``, ``summary.json``, ``checkpoint_manifest.json`` -- so
:func:`grpo_wb.load_run` and the notebooks read a TRL run exactly like a smoke run.
The reward records each generation batch; the callback cuts it into groups of
``num_generations`` consecutive completions (how TRL lays the batch out, and how it
groups rewards) and computes the advantages with :mod:`grpo_wb.signal.advantages` under the
trainer's ``scale_rewards`` and TRL's 1e-4 epsilon.

Typical use in your own script::

    reward = ExecutionReward("frontier.jsonl", reward="binary")
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], args=GRPOConfig(...),
                          train_dataset=load_dataset("json", data_files="frontier.trl.jsonl")["train"],
                          callbacks=[GrpoWbMetricsCallback("runs/real", reward)])
    trainer.train()

Only ``reward_funcs=[reward]`` with weight 1 gives advantages identical to TRL's:
with several reward functions TRL's advantages mix them, while ``groups.jsonl``
holds the execution reward's alone.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import time
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl, sha256_file
from grpo_wb.runs.artifacts import ARTIFACTS, RunWriter
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import ScoredCompletion, Scorer, ScoreRequest
from grpo_wb.signal.advantages import AdvantageConfig
from grpo_wb.tasks.records import Task, load_tasks, parse_task
from grpo_wb.tasks.rowexport import TRL_COLUMNS

try:  # the reward works without transformers; the callback is a real TrainerCallback when it is there
    from transformers import TrainerCallback as _CallbackBase
except ImportError:  # pragma: no cover - exercised only without the extra
    _CallbackBase = object

TRL_EPSILON = 1e-4
"""The std epsilon TRL's GRPOTrainer adds (hard-coded there)."""
RUN_ARTIFACTS = (*ARTIFACTS, "trl_log.jsonl")


def completion_text(completion: Any) -> str:
    """The text of one completion: a string (standard format) or the assistant content of a message list."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _content_text(completion.get("content"))
    if isinstance(completion, Sequence):
        msgs = [m for m in completion if isinstance(m, Mapping)]
        assistant = [m for m in msgs if m.get("role", "assistant") == "assistant"]
        return "".join(_content_text(m.get("content")) for m in assistant) if assistant else \
            (_content_text(msgs[-1].get("content")) if msgs else "")
    return "" if completion is None else str(completion)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multimodal content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return str(content)


def prompt_text(prompt: Any) -> str:
    """A prompt as text (conversational: the last user message), for building a task from dataset columns."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        users = [m for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
        return _content_text(users[-1].get("content")) if users else ""
    return ""


@dataclass
class ScoredBatch:
    """One call of the reward function: a generation batch, scored, in TRL's order."""

    step: int
    """``trainer_state.global_step`` when it was scored (0-based index of the step it trains)."""
    scored: list[ScoredCompletion]
    """The completions in batch order (TRL repeats each prompt num_generations times in a row)."""
    rewards: list[float | None]
    """What the reward function returned for each (None: unscorable)."""
    score_seconds: float
    """Wall seconds spent scoring."""
    cache_hits: int
    """Completions answered from the scorer's verdict cache."""
    finish_reasons: list[str] | None = None
    """``length`` (no end-of-sequence token: cut at max_completion_length) or ``stop``; None when unknown."""


class ExecutionReward:
    """A TRL reward function that runs each completion against its task's tests in grpo_wb's sandbox.

    ``tasks``: a canonical task file (or the frontier export's ``.trl.jsonl``), an iterable of
    :class:`~grpo_wb.tasks.records.Task`, or None to build each task from the dataset's own columns
    (``prompt``, ``task_id``, ``entry_point``, ``tests``, ... as the frontier export writes them).
    Rows are matched to tasks by the ``task_id`` column. ``reward``/``parse_failure_reward``
    are :class:`~grpo_wb.scoring.rewards.RewardConfig`'s; ``timeout``/``memory_mb`` the sandbox limits
    (default 3 s, 2048 MiB), or ``limits`` for all of them (with ``site_packages`` and ``isolation``): one or
    the other, never both.
    A completion the sandbox failed on (``sandbox_error``) gets None: it is not the model's fault.
    """

    def __init__(self, tasks: str | Path | Iterable[Task] | None = None, *, reward: str = "binary",
                 parse_failure_reward: float | None = 0.0, timeout: float | None = None,
                 memory_mb: int | None = None,
                 workers: int | None = None, name: str = "execution_reward", log_metrics: bool = True,
                 tasks_path: str | None = None, limits: SandboxLimits | None = None):
        try:
            self.reward_config = RewardConfig(kind=reward, parse_failure_reward=parse_failure_reward)
        except ValueError as e:
            raise UserError(str(e)) from None
        if limits is not None and (timeout is not None or memory_mb is not None):
            raise UserError("ExecutionReward: pass limits, or timeout and memory_mb, not both")
        if limits is None:
            timeout, memory_mb = 3.0 if timeout is None else timeout, 2048 if memory_mb is None else memory_mb
            if not timeout > 0:
                raise UserError("timeout must be positive")
            limits = SandboxLimits(timeout=float(timeout), memory_bytes=int(memory_mb) << 20)
        self.__name__ = name  # TRL logs rewards/{__name__}/mean
        # where the tasks came from, for messages (given when ``tasks`` are Task objects already loaded)
        self.tasks_path = str(tasks) if isinstance(tasks, (str, Path)) else tasks_path
        if tasks is None:
            self._tasks: dict[str, Task] = {}
        else:
            loaded = load_tasks(tasks) if isinstance(tasks, (str, Path)) else list(tasks)
            self._tasks = {t.task_id: t for t in loaded}
        self._from_columns = tasks is None
        self.limits = limits
        self.workers = workers
        self.log_metrics = log_metrics
        self.num_generations: int | None = None
        """Set by :class:`GrpoWbMetricsCallback` at train start; lets the reward log ``grpo_wb/informative_fraction``."""
        self.stop_token_ids: set[int] | None = None
        """End-of-sequence and pad ids (set by the callback): a completion not ending in one was cut off."""
        self.last_batch: ScoredBatch | None = None
        self._pending: list[ScoredBatch] = []
        self._recording = False
        self._scorer: Scorer | None = None
        self._calls = 0

    # ------------------------------------------------------------------ the scorer (started on first use)
    @property
    def scorer(self) -> Scorer:
        """The long-lived scorer: its sandbox workers stay warm across steps."""
        if self._scorer is None:
            self._scorer = Scorer(self.limits, self.reward_config, workers=self.workers)
            self._finalizer = weakref.finalize(self, self._scorer.close)
        return self._scorer

    def close(self) -> None:
        """Stop the sandbox workers (also done at exit)."""
        if self._scorer is not None:
            self._finalizer()
            self._scorer = None

    def __enter__(self) -> "ExecutionReward":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ tasks
    def task(self, task_id: str, columns: Mapping[str, Any] | None = None) -> Task:
        """The task a row answers: from the task file, or (without one) built once from the row's columns."""
        t = self._tasks.get(task_id)
        if t is not None:
            return t
        if not self._from_columns:
            where = f" in {self.tasks_path}" if self.tasks_path else ""
            raise UserError(f"task_id {task_id!r} of the training data has no task{where}; "
                            "pass the task file the dataset was exported from")
        obj: dict[str, Any] = {}
        for key in TRL_COLUMNS:
            v = (columns or {}).get(key)
            if v is not None:
                obj[key] = v
        obj["task_id"] = task_id
        obj["prompt"] = prompt_text(obj.get("prompt", ""))
        if isinstance(obj.get("tests"), list):  # Arrow unifies assert/stdio tests into one struct: drop the nulls
            obj["tests"] = [{k: v for k, v in t.items() if v is not None} if isinstance(t, Mapping) else t
                            for t in obj["tests"]]
        task, problems = parse_task(json.loads(json.dumps(obj, default=str)))
        if task is None:
            raise UserError(f"cannot build task {task_id!r} from the dataset columns: {problems[0]} "
                            "(give ExecutionReward the task file instead)")
        self._tasks[task_id] = task
        return task

    # ------------------------------------------------------------------ TRL's calling convention
    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
                 task_id: Sequence[str] | None = None, trainer_state: Any = None, log_metric: Any = None,
                 log_extra: Any = None, completion_ids: Sequence[Sequence[int]] | None = None,
                 **columns: Any) -> list[float | None]:
        """Score ``completions`` (one float per completion, None = unscorable)."""
        completions = list(completions or [])
        n = len(completions)
        if task_id is None:
            raise UserError("the training dataset needs a task_id column (the frontier export writes one)")
        task_ids = [str(t) for t in task_id]
        if len(task_ids) != n:
            raise UserError(f"got {len(task_ids)} task_id values for {n} completions")
        step = int(getattr(trainer_state, "global_step", self._calls))
        self._calls += 1
        finish = None
        if completion_ids is not None and self.stop_token_ids is not None and len(completion_ids) == n:
            finish = ["length" if len(ids) and int(ids[-1]) not in self.stop_token_ids else "stop"
                      for ids in completion_ids]
        requests, seen = [], {}
        for i, (tid, comp) in enumerate(zip(task_ids, completions)):
            row = None
            if tid not in self._tasks and self._from_columns:
                row = {k: v[i] for k, v in columns.items() if isinstance(v, (list, tuple)) and len(v) == n}
                if prompts is not None:
                    row["prompt"] = prompts[i]
            k = seen.get(tid, 0)
            seen[tid] = k + 1
            requests.append(ScoreRequest(task=self.task(tid, row), completion=completion_text(comp), sample_index=k,
                                         completion_id=f"{tid}#s{step}#{k}",
                                         meta={"trainer": "trl", "step": step,
                                               **({"finish_reason": finish[i]} if finish else {})}))
        scorer = self.scorer
        hits0 = scorer.cache_hits
        t0 = time.monotonic()
        scored = [dataclasses.replace(s, reward=None) if s.status == "sandbox_error" else s
                  for s in scorer.score(requests)]
        batch = ScoredBatch(step=step, scored=scored, rewards=[s.reward for s in scored],
                            score_seconds=time.monotonic() - t0, cache_hits=scorer.cache_hits - hits0,
                            finish_reasons=finish)
        self.last_batch = batch
        if self._recording:
            self._pending.append(batch)
        if self.log_metrics and log_metric is not None and n:
            self._log(batch, log_metric)
        if log_extra is not None:
            log_extra("grpo_wb_status", [s.status for s in scored])
        return list(batch.rewards)

    def _log(self, batch: ScoredBatch, log_metric: Any) -> None:
        statuses = [s.status for s in batch.scored]
        n = len(statuses)
        for status, name in (("pass", "pass_rate"), ("parse_failure", "parse_failure_rate"),
                             ("timeout", "timeout_rate"), ("sandbox_error", "sandbox_error_rate")):
            log_metric(f"grpo_wb/{name}", statuses.count(status) / n)
        g = self.num_generations
        if g and n % g == 0:
            groups = [statuses[i:i + g] for i in range(0, n, g)]
            log_metric("grpo_wb/informative_fraction",
                       sum(0 < s.count("pass") < g for s in groups) / len(groups))

    def take_batches(self) -> list[ScoredBatch]:
        """The batches scored since the last call (recorded only while a callback is attached)."""
        out, self._pending = self._pending, []
        return out


_DEFAULT: ExecutionReward | None = None


def execution_reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
                     **kwargs: Any) -> list[float | None]:
    """Module-level reward function: binary execution reward, tasks built from the dataset's columns.

    For a task file, partial credit or other limits, use :class:`ExecutionReward`.
    """
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = ExecutionReward(None)
    return _DEFAULT(prompts=prompts, completions=completions, **kwargs)


# ----------------------------------------------------------------------------- groups and run artifacts


def split_groups(batch: ScoredBatch, num_generations: int) -> list[list[int]]:
    """Indices of each group: ``num_generations`` consecutive completions, as TRL's ``view(-1, G)``."""
    n = len(batch.scored)
    if num_generations < 1 or n % num_generations:
        raise ValueError(f"a batch of {n} completions does not hold whole groups of {num_generations}")
    return [list(range(i, i + num_generations)) for i in range(0, n, num_generations)]


def weight_files(checkpoint: Path, hashes: bool = True,
                 known: dict[tuple[str, int, int], str] | None = None) -> dict[str, dict[str, Any]]:
    """The trained weights a checkpoint holds (adapter or full model files) with size and SHA-256.

    ``known`` (path, size, mtime) -> digest: files hashed before are not read again (a run's
    manifest lists every checkpoint at each save)."""
    names = sorted(p.name for p in checkpoint.iterdir() if p.is_file() and (
        p.name.startswith("adapter_") or p.name.endswith(".safetensors")
        or (p.name.startswith("pytorch_model") and p.name.endswith(".bin"))))
    out = {}
    for n in names:
        path = checkpoint / n
        st = path.stat()
        out[n] = {"bytes": st.st_size}
        if hashes:
            key = (str(path), st.st_size, st.st_mtime_ns)
            digest = known.get(key) if known is not None else None
            if digest is None:
                digest = sha256_file(path)
                if known is not None:
                    known[key] = digest
            out[n]["sha256"] = digest
    return out


def list_checkpoints(output_dir: Path) -> list[Path]:
    """``checkpoint-N`` folders, by step."""
    if not output_dir.is_dir():
        return []
    found = [p for p in output_dir.iterdir() if p.is_dir() and p.name.startswith("checkpoint-")
             and p.name.split("-", 1)[1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-", 1)[1]))


def compare_logged_advantages(output_dir: str | Path, run_dir: str | Path, reward_name: str = "execution_reward"
                              ) -> dict[str, Any] | None:
    """Compare TRL's logged rewards and advantages (``completions/*.parquet``) with ``groups.jsonl``.

    File ``completions_{S:05d}.parquet`` holds the generation batch of step S-1 (one log per step).
    Returns the number of steps compared and the largest differences, or None without parquet files.
    """
    files = sorted((Path(output_dir) / "completions").glob("completions_*.parquet"))
    gpath = Path(run_dir) / "groups.jsonl"
    if not files or not gpath.exists():
        return None
    import pandas as pd  # where used: the reward, which every training process imports, never needs it

    by_step: dict[int, list[dict[str, Any]]] = {}
    for _, g in iter_jsonl(gpath):
        by_step.setdefault(int(g["step"]), []).append(g)
    n, max_adv, max_rew, missing = 0, 0.0, 0.0, []
    for f in files:
        step = int(f.stem.split("_")[-1]) - 1
        df = pd.read_parquet(f)
        groups = by_step.get(step)
        if groups is None or reward_name not in df or "advantage" not in df:
            missing.append(step)
            continue
        ours_r = [r for g in groups for r in g["rewards"]]
        ours_a = [a for g in groups for a in g["advantages"]]
        if len(ours_r) != len(df):
            missing.append(step)
            continue
        for theirs, mine in zip(df[reward_name].tolist(), ours_r):
            if (mine is None) != (theirs is None or math.isnan(theirs)):
                max_rew = math.inf
            elif mine is not None:
                max_rew = max(max_rew, abs(theirs - mine))
        max_adv = max(max_adv, max(abs(a - b) for a, b in zip(df["advantage"].tolist(), ours_a)))
        n += 1
    return {"steps_compared": n, "max_abs_advantage_diff": max_adv, "max_abs_reward_diff": max_rew,
            "steps_not_matched": missing, "tolerance": 1e-5, "match": n > 0 and max_adv <= 1e-5 and max_rew <= 1e-6}


class GrpoWbMetricsCallback(_CallbackBase):
    """Writes grpo_wb's run artifacts during a TRL GRPO run, one metrics line per generation batch.

    ``run_dir`` gets metrics.jsonl / groups.jsonl / last_rollouts.jsonl (the smoke run's formats),
    trl_log.jsonl (TRL's own logs), summary.json and checkpoint_manifest.json (``trained_weights``
    true once a checkpoint with weights exists; adapter files listed with SHA-256).
    ``num_generations`` and ``scale_rewards`` are read from the ``GRPOConfig`` unless given.
    ``config`` is stored in the manifest (the ``grpo-wb train`` settings).
    """

    def __init__(self, run_dir: str | Path, reward: ExecutionReward, *, num_generations: int | None = None,
                 scale_rewards: str | None = None, variance_tol: float = 1e-6, config: Mapping[str, Any] | None = None,
                 tasks_file: str | None = None):
        self.run_dir = Path(run_dir)
        self.reward = reward
        reward._recording = True
        self.num_generations = num_generations
        self.scale_rewards = scale_rewards
        self.variance_tol = variance_tol
        self.config = dict(config or {})
        self.tasks_file = tasks_file or reward.tasks_path
        self.trl_info: dict[str, Any] = {}
        self.advantage_check: dict[str, Any] | None = None
        self.writer: RunWriter | None = None
        self._output_dir: Path | None = None
        self._main = True
        self._truncated = False
        self._mixed_warned = False
        self._digests: dict[tuple[str, int, int], str] = {}  # weight files hashed already

    # ------------------------------------------------------------------ set-up
    def advantage_config(self) -> AdvantageConfig:
        return AdvantageConfig(mode="grpo", scale_rewards=self.scale_rewards or "group", epsilon=TRL_EPSILON,
                               variance_tol=self.variance_tol)

    def on_train_begin(self, args, state, control, **kwargs):
        self.num_generations = self.num_generations or getattr(args, "num_generations", None)
        if not self.num_generations:
            raise UserError("GrpoWbMetricsCallback needs num_generations (a GRPOConfig, or pass it)")
        self.scale_rewards = self.scale_rewards or getattr(args, "scale_rewards", None) or "group"
        self.reward.num_generations = self.num_generations
        self.reward.stop_token_ids = _stop_ids(kwargs.get("processing_class"), kwargs.get("model"))
        self._output_dir = Path(getattr(args, "output_dir", None) or self.run_dir)
        self._main = bool(getattr(state, "is_world_process_zero", True))
        self.trl_info = {k: _plain(getattr(args, k, None)) for k in (
            "num_generations", "scale_rewards", "loss_type", "beta", "learning_rate", "temperature",
            "max_completion_length", "per_device_train_batch_size", "gradient_accumulation_steps",
            "steps_per_generation", "num_iterations", "generation_batch_size", "multi_objective_aggregation",
            "max_steps", "seed", "output_dir")}
        if self._main:
            self.writer = RunWriter(self.run_dir, extra_logs=("trl_log.jsonl",))
            self._write_manifest(state)
        return control

    # ------------------------------------------------------------------ per step
    def on_step_end(self, args, state, control, **kwargs):
        self.flush()
        return control

    def on_evaluate(self, args, state, control, **kwargs):
        self.reward.take_batches()  # evaluation generations are not training steps
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self._main and self.writer is not None and logs:
            self.writer.log("trl_log.jsonl", {"step": state.global_step, **{k: _plain(v) for k, v in logs.items()}})
        return control

    def on_save(self, args, state, control, **kwargs):
        if self._main:
            self._write_manifest(state)
        return control

    def on_train_end(self, args, state, control, **kwargs):
        self.flush()
        if self._main:
            self.advantage_check = compare_logged_advantages(self._output_dir or self.run_dir, self.run_dir,
                                                             self.reward.__name__)
            self._write_summary(state, finished=True)
            self._write_manifest(state)
            self.writer.close()
        return control

    def flush(self) -> None:
        """Turn the batches the reward scored since the last flush into metrics, groups and rollouts."""
        batches = self.reward.take_batches()
        if _world_size() > 1:  # each process scored its slice; TRL groups the gathered batch
            from accelerate.utils import gather_object

            gathered = gather_object([batches])
            batches = [_merge_batches(parts) for parts in zip(*gathered)]
        if not self._main:
            return
        for batch in batches:
            self._write_batch(batch)
        if batches:
            self._write_summary(None, finished=False)

    @property
    def history(self) -> list[dict[str, Any]]:
        """The metrics lines written so far."""
        return self.writer.history if self.writer is not None else []

    def _write_batch(self, batch: ScoredBatch) -> None:
        if not self._truncated:  # a resumed trainer repeats steps: drop what it will write again (once)
            self._truncated = True
            self.writer.truncate_from(batch.step)
        idx = split_groups(batch, self.num_generations)
        groups_sc = [[batch.scored[i] for i in g] for g in idx]
        if not self._mixed_warned and any(len({s.task_id for s in g}) > 1 for g in groups_sc):
            self._mixed_warned = True
            warnings.warn("a group of num_generations consecutive completions mixes tasks; grpo_wb groups them "
                          "as TRL does (consecutive blocks), so the group statistics mix prompts", stacklevel=2)
        self.writer.write_step(batch.step, groups_sc, [[batch.rewards[i] for i in g] for g in idx],
                               self.advantage_config(), score_seconds=batch.score_seconds,
                               cache_hits=batch.cache_hits, finish_reasons=batch.finish_reasons)

    # ------------------------------------------------------------------ summary and manifest
    @functools.cached_property
    def tasks_sha256(self) -> str | None:
        """The task file's digest, taken once: a manifest is written at every save and log."""
        return sha256_file(self.tasks_file) if self.tasks_file and Path(self.tasks_file).is_file() else None

    def _checkpoints(self, hashes: bool = True) -> list[dict[str, Any]]:
        out = []
        for ck in list_checkpoints(self._output_dir or self.run_dir):
            files = weight_files(ck, hashes, self._digests)
            if files:
                out.append({"path": _rel(ck, self.run_dir), "step": int(ck.name.split("-", 1)[1]), "files": files})
        return out

    def _write_summary(self, state: Any, finished: bool) -> None:
        cks = self._checkpoints(hashes=False)
        extra = {"trainer": "trl", "trained_weights": bool(cks), "final_checkpoint": cks[-1]["path"] if cks else None,
                 "global_step": getattr(state, "global_step", None), "finished": finished,
                 "trl_advantage_check": self.advantage_check}
        if self.config.get("max_steps"):
            extra["steps_requested"] = self.config["max_steps"]
        self.writer.write_summary(stopped_early=False, stop_reason=None, **extra)

    def _write_manifest(self, state: Any) -> None:
        cks = self._checkpoints()
        scorer = self.reward._scorer
        self.writer.write_manifest({
            "kind": "grpo_wb TRL run",
            "trained_weights": bool(cks),
            "note": ("Real GRPO training with TRL's GRPOTrainer: checkpoints hold the trained weights listed below."
                     if cks else "No checkpoint with weights saved yet."),
            "steps_completed": getattr(state, "global_step", 0),
            "checkpoints": cks,
            "final_checkpoint": cks[-1]["path"] if cks else None,
            "config": self.config,
            "trl": self.trl_info,
            "advantage": dataclasses.asdict(self.advantage_config()),
            "reward": {"name": self.reward.__name__, **dataclasses.asdict(self.reward.reward_config),
                       "unscorable": "sandbox_error -> None (left out of the group, advantage 0)"},
            "sandbox": {"limits": dataclasses.asdict(self.reward.limits),
                        "isolation": scorer.isolation() if scorer is not None else None},
            "tasks_file": self.tasks_file,
            "tasks_sha256": self.tasks_sha256,
            "versions": _versions(),
        })


def _merge_batches(parts: Sequence[ScoredBatch]) -> ScoredBatch:
    return ScoredBatch(step=parts[0].step, scored=[s for p in parts for s in p.scored],
                       rewards=[r for p in parts for r in p.rewards],
                       score_seconds=max(p.score_seconds for p in parts), cache_hits=sum(p.cache_hits for p in parts),
                       finish_reasons=None if any(p.finish_reasons is None for p in parts)
                       else [f for p in parts for f in p.finish_reasons])


def _stop_ids(tokenizer: Any, model: Any) -> set[int] | None:
    """The ids TRL treats as a finished completion: the eos ids of the generation config and tokenizer, and pad."""
    ids: set[int] = set()
    gen = getattr(model, "generation_config", None)
    for v in (getattr(gen, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None),
              getattr(tokenizer, "pad_token_id", None)):
        if isinstance(v, int):
            ids.add(v)
        elif isinstance(v, (list, tuple)):
            ids.update(int(x) for x in v)
    return ids or None


def _world_size() -> int:
    try:
        from accelerate import PartialState
    except ImportError:
        return 1
    return PartialState().num_processes if PartialState._shared_state else 1


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    return str(v)


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p.resolve())


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in ("torch", "trl", "transformers", "peft", "accelerate", "datasets"):
        mod = sys.modules.get(name)
        out[name] = getattr(mod, "__version__", None) if mod else None
    return out
