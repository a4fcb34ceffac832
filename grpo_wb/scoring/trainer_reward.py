"""grpo_wb's execution reward with TRL's calling convention, importable without transformers.

:class:`ExecutionReward` is what the trainer calls; :mod:`grpo_wb.training.bridge` adds the ``TrainerCallback``
(which needs transformers) and re-exports these names. Kept apart so that what only scores (``grpo-wb reward-audit``'s
``builtin:grpo_wb``, a reward process) does not pay for importing transformers.
"""

from __future__ import annotations

import dataclasses
import json
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.scoring.rewards import Judge, RewardConfig, RewardKind
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import ScoredCompletion, Scorer, ScoreRequest
from grpo_wb.tasks.records import Task, load_tasks, parse_task
from grpo_wb.tasks.rowexport import TRL_COLUMNS


def completion_text(completion: Any) -> str:
    """The text of one completion: a string (standard format) or the assistant content of a message list."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _content_text(completion.get("content"))
    if isinstance(completion, Sequence):
        msgs = [m for m in completion if isinstance(m, Mapping)]
        assistant = [m for m in msgs if m.get("role", "assistant") == "assistant"]
        return (
            "".join(_content_text(m.get("content")) for m in assistant)
            if assistant
            else (_content_text(msgs[-1].get("content")) if msgs else "")
        )
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
    Rows are matched to tasks by the ``task_id`` column. ``reward``/``parse_failure_reward``/``judge``
    are :class:`~grpo_wb.scoring.rewards.RewardConfig`'s (``judge`` is ``strict`` here: trained with this reward,
    grpo_wb's rule is the trainer's; ``trainer`` judges each row as its original trainer would);
    ``timeout``/``memory_mb`` the sandbox limits (default 3 s, 2048 MiB), or ``limits`` for all of them (with
    ``site_packages`` and ``isolation``): one or the other, never both.
    A completion the sandbox failed on (``sandbox_error``) gets None: it is not the model's fault.
    """

    def __init__(
        self,
        tasks: str | Path | Iterable[Task] | None = None,
        *,
        reward: RewardKind = "binary",
        parse_failure_reward: float | None = 0.0,
        timeout: float | None = None,
        memory_mb: int | None = None,
        workers: int | None = None,
        name: str = "execution_reward",
        log_metrics: bool = True,
        tasks_path: str | None = None,
        limits: SandboxLimits | None = None,
        judge: Judge = "strict",
    ):
        try:  # judge: grpo_wb's own rule by default, since training with this reward makes it the trainer's
            self.reward_config = RewardConfig(kind=reward, parse_failure_reward=parse_failure_reward, judge=judge)
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
        """Set by :class:`~grpo_wb.training.bridge.GrpoWbMetricsCallback` at train start; lets the reward log
        ``grpo_wb/informative_fraction``."""
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

    def __enter__(self) -> ExecutionReward:
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
            raise UserError(
                f"task_id {task_id!r} of the training data has no task{where}; "
                "pass the task file the dataset was exported from"
            )
        obj: dict[str, Any] = {}
        for key in TRL_COLUMNS:
            v = (columns or {}).get(key)
            if v is not None:
                obj[key] = v
        obj["task_id"] = task_id
        obj["prompt"] = prompt_text(obj.get("prompt", ""))
        if isinstance(obj.get("tests"), list):  # Arrow unifies assert/stdio tests into one struct: drop the nulls
            obj["tests"] = [
                {k: v for k, v in t.items() if v is not None} if isinstance(t, Mapping) else t for t in obj["tests"]
            ]
        task, problems = parse_task(json.loads(json.dumps(obj, default=str)))
        if task is None:
            raise UserError(
                f"cannot build task {task_id!r} from the dataset columns: {problems[0]} "
                "(give ExecutionReward the task file instead)"
            )
        self._tasks[task_id] = task
        return task

    # ------------------------------------------------------------------ TRL's calling convention
    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        task_id: Sequence[str] | None = None,
        trainer_state: Any = None,
        log_metric: Any = None,
        log_extra: Any = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        **columns: Any,
    ) -> list[float | None]:
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
            finish = [
                "length" if len(ids) and int(ids[-1]) not in self.stop_token_ids else "stop" for ids in completion_ids
            ]
        requests: list[ScoreRequest] = []
        seen: dict[str, int] = {}  # task id -> completions of it so far
        for i, (tid, comp) in enumerate(zip(task_ids, completions)):
            row = None
            if tid not in self._tasks and self._from_columns:
                row = {k: v[i] for k, v in columns.items() if isinstance(v, (list, tuple)) and len(v) == n}
                if prompts is not None:
                    row["prompt"] = prompts[i]
            k = seen.get(tid, 0)
            seen[tid] = k + 1
            requests.append(
                ScoreRequest(
                    task=self.task(tid, row),
                    completion=completion_text(comp),
                    sample_index=k,
                    completion_id=f"{tid}#s{step}#{k}",
                    meta={"trainer": "trl", "step": step, **({"finish_reason": finish[i]} if finish else {})},
                )
            )
        scorer = self.scorer
        hits0 = scorer.cache_hits
        t0 = time.monotonic()
        scored = [
            dataclasses.replace(s, reward=None) if s.status == "sandbox_error" else s for s in scorer.score(requests)
        ]
        batch = ScoredBatch(
            step=step,
            scored=scored,
            rewards=[s.reward for s in scored],
            score_seconds=time.monotonic() - t0,
            cache_hits=scorer.cache_hits - hits0,
            finish_reasons=finish,
        )
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
        for status, name in (
            ("pass", "pass_rate"),
            ("parse_failure", "parse_failure_rate"),
            ("timeout", "timeout_rate"),
            ("sandbox_error", "sandbox_error_rate"),
        ):
            log_metric(f"grpo_wb/{name}", statuses.count(status) / n)
        g = self.num_generations
        if g and n % g == 0:
            groups = [statuses[i : i + g] for i in range(0, n, g)]
            log_metric("grpo_wb/informative_fraction", sum(0 < s.count("pass") < g for s in groups) / len(groups))

    def take_batches(self) -> list[ScoredBatch]:
        """The batches scored since the last call (recorded only while a callback is attached)."""
        out, self._pending = self._pending, []
        return out


_DEFAULT: ExecutionReward | None = None


def execution_reward(
    prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """Module-level reward function: binary execution reward, tasks built from the dataset's columns.

    For a task file, partial credit or other limits, use :class:`ExecutionReward`.
    """
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = ExecutionReward(None)
    return _DEFAULT(prompts=prompts, completions=completions, **kwargs)
