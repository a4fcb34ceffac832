"""The bridge to TRL: the smoke trainer's reward and diagnostics inside a real ``GRPOTrainer``.

:class:`ExecutionReward` is a reward function with TRL's calling convention
(``prompts``, ``completions``, every dataset column as a keyword, ``trainer_state``,
``log_metric``, ...). It scores each completion exactly as ``grpo-wb smoke`` does
(same extraction, same long-lived sandboxed :class:`~grpo_wb.scoring.scorer.Scorer`, same
:class:`~grpo_wb.scoring.rewards.RewardConfig`) and returns one float per completion, or
``None`` where the sandbox failed (TRL then leaves that completion out of its group).

:class:`GrpoWbMetricsCallback` is a ``TrainerCallback`` that writes the smoke run's
artifacts during real training -- ``metrics.jsonl``, ``groups.jsonl``, ``rollouts.jsonl``,
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
import math
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl, sha256_file
from grpo_wb.layout import RunFiles
from grpo_wb.runs.artifacts import ARTIFACTS, RunWriter
from grpo_wb.scoring.trainer_reward import ExecutionReward, ScoredBatch, completion_text, execution_reward, prompt_text  # noqa: F401 - re-exported: the bridge is where users import them from
from grpo_wb.signal.advantages import AdvantageConfig, ScaleRewards

TRL_EPSILON = 1e-4
"""The std epsilon TRL's GRPOTrainer adds (hard-coded there)."""
RUN_ARTIFACTS = (*ARTIFACTS, RunFiles.TRL_LOG)


# ----------------------------------------------------------------------------- groups and run artifacts


def split_groups(batch: ScoredBatch, num_generations: int) -> list[list[int]]:
    """Indices of each group: ``num_generations`` consecutive completions, as TRL's ``view(-1, G)``."""
    n = len(batch.scored)
    if num_generations < 1 or n % num_generations:
        raise ValueError(f"a batch of {n} completions does not hold whole groups of {num_generations}")
    return [list(range(i, i + num_generations)) for i in range(0, n, num_generations)]


def weight_files(
    checkpoint: Path, hashes: bool = True, known: dict[tuple[str, int, int], str] | None = None
) -> dict[str, dict[str, Any]]:
    """The trained weights a checkpoint holds (adapter or full model files) with size and SHA-256.

    ``known`` (path, size, mtime) -> digest: files hashed before are not read again (a run's
    manifest lists every checkpoint at each save)."""
    names = sorted(
        p.name
        for p in checkpoint.iterdir()
        if p.is_file()
        and (
            p.name.startswith("adapter_")
            or p.name.endswith(".safetensors")
            or (p.name.startswith("pytorch_model") and p.name.endswith(".bin"))
        )
    )
    out: dict[str, dict[str, Any]] = {}
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
    found = [
        p
        for p in output_dir.iterdir()
        if p.is_dir() and p.name.startswith("checkpoint-") and p.name.split("-", 1)[1].isdigit()
    ]
    return sorted(found, key=lambda p: int(p.name.split("-", 1)[1]))


def compare_logged_advantages(
    output_dir: str | Path, run_dir: str | Path, reward_name: str = "execution_reward"
) -> dict[str, Any] | None:
    """Compare TRL's logged rewards and advantages (``completions/*.parquet``) with ``groups.jsonl``.

    File ``completions_{S:05d}.parquet`` holds the generation batch of step S-1 (one log per step).
    Returns the number of steps compared and the largest differences, or None without parquet files.
    """
    files = sorted((Path(output_dir) / "completions").glob("completions_*.parquet"))
    gpath = Path(run_dir) / RunFiles.GROUPS
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
    return {
        "steps_compared": n,
        "max_abs_advantage_diff": max_adv,
        "max_abs_reward_diff": max_rew,
        "steps_not_matched": missing,
        "tolerance": 1e-5,
        "match": n > 0 and max_adv <= 1e-5 and max_rew <= 1e-6,
    }


def __getattr__(name: str) -> Any:
    """``GrpoWbMetricsCallback`` is made on first use: a real ``TrainerCallback`` subclass when transformers is
    there, and importing transformers (and torch under it) costs seconds that the reward, ``weight_files`` and
    every process that only reads this module's helpers never need."""
    if name == "GrpoWbMetricsCallback":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _callback_class() -> type:
    try:
        from transformers import TrainerCallback
    except ImportError:  # pragma: no cover - exercised only without the extra
        return _MetricsCallback
    return type(
        "GrpoWbMetricsCallback",
        (_MetricsCallback, TrainerCallback),
        {"__module__": __name__, "__qualname__": "GrpoWbMetricsCallback", "__doc__": _MetricsCallback.__doc__},
    )


class _MetricsCallback:
    """Writes grpo_wb's run artifacts during a TRL GRPO run, one metrics line per generation batch.

    ``run_dir`` gets metrics.jsonl / groups.jsonl / rollouts.jsonl / last_rollouts.jsonl (the smoke run's formats),
    trl_log.jsonl (TRL's own logs), summary.json and checkpoint_manifest.json (``trained_weights``
    true once a checkpoint with weights exists; adapter files listed with SHA-256).
    ``num_generations`` and ``scale_rewards`` are read from the ``GRPOConfig`` unless given.
    ``config`` is stored in the manifest (the ``grpo-wb train`` settings).
    """

    def __init__(
        self,
        run_dir: str | Path,
        reward: ExecutionReward,
        *,
        num_generations: int | None = None,
        scale_rewards: ScaleRewards | None = None,
        variance_tol: float = 1e-6,
        config: Mapping[str, Any] | None = None,
        tasks_file: str | None = None,
    ):
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
        return AdvantageConfig(
            mode="grpo",
            scale_rewards=self.scale_rewards or "group",
            epsilon=TRL_EPSILON,
            variance_tol=self.variance_tol,
        )

    def on_train_begin(self, args, state, control, **kwargs):
        self.num_generations = self.num_generations or getattr(args, "num_generations", None)
        if not self.num_generations:
            raise UserError("GrpoWbMetricsCallback needs num_generations (a GRPOConfig, or pass it)")
        self.scale_rewards = self.scale_rewards or getattr(args, "scale_rewards", None) or "group"
        self.reward.num_generations = self.num_generations
        self.reward.stop_token_ids = _stop_ids(kwargs.get("processing_class"), kwargs.get("model"))
        self._output_dir = Path(getattr(args, "output_dir", None) or self.run_dir)
        self._main = bool(getattr(state, "is_world_process_zero", True))
        self.trl_info = {
            k: _plain(getattr(args, k, None))
            for k in (
                "num_generations",
                "scale_rewards",
                "loss_type",
                "beta",
                "learning_rate",
                "temperature",
                "max_completion_length",
                "per_device_train_batch_size",
                "gradient_accumulation_steps",
                "steps_per_generation",
                "num_iterations",
                "generation_batch_size",
                "multi_objective_aggregation",
                "max_steps",
                "seed",
                "output_dir",
            )
        }
        if self._main:
            self.writer = RunWriter(self.run_dir, extra_logs=(RunFiles.TRL_LOG,))
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
            self.writer.log(RunFiles.TRL_LOG, {"step": state.global_step, **{k: _plain(v) for k, v in logs.items()}})
        return control

    def on_save(self, args, state, control, **kwargs):
        if self._main:
            self._write_manifest(state)
        return control

    def on_train_end(self, args, state, control, **kwargs):
        self.flush()
        if self._main:
            self.advantage_check = compare_logged_advantages(
                self._output_dir or self.run_dir, self.run_dir, self.reward.__name__
            )
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

    def _run_writer(self) -> RunWriter:
        """The writer on_train_begin made: only the main process writes, and only once training began."""
        assert self.writer is not None, "the run's artifacts are written after on_train_begin, on the main process"
        return self.writer

    def _write_batch(self, batch: ScoredBatch) -> None:
        writer = self._run_writer()
        if not self._truncated:  # a resumed trainer repeats steps: drop what it will write again (once)
            self._truncated = True
            writer.truncate_from(batch.step)
        assert self.num_generations is not None, "on_train_begin sets num_generations (or refuses to start)"
        idx = split_groups(batch, self.num_generations)
        groups_sc = [[batch.scored[i] for i in g] for g in idx]
        if not self._mixed_warned and any(len({s.task_id for s in g}) > 1 for g in groups_sc):
            self._mixed_warned = True
            warnings.warn(
                "a group of num_generations consecutive completions mixes tasks; grpo_wb groups them "
                "as TRL does (consecutive blocks), so the group statistics mix prompts",
                stacklevel=2,
            )
        writer.write_step(
            batch.step,
            groups_sc,
            [[batch.rewards[i] for i in g] for g in idx],
            self.advantage_config(),
            score_seconds=batch.score_seconds,
            cache_hits=batch.cache_hits,
            finish_reasons=batch.finish_reasons,
        )

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
        extra = {
            "trainer": "trl",
            "trained_weights": bool(cks),
            "final_checkpoint": cks[-1]["path"] if cks else None,
            "global_step": getattr(state, "global_step", None),
            "finished": finished,
            "trl_advantage_check": self.advantage_check,
        }
        if self.config.get("max_steps"):
            extra["steps_requested"] = self.config["max_steps"]
        self._run_writer().write_summary(stopped_early=False, stop_reason=None, **extra)

    def _write_manifest(self, state: Any) -> None:
        cks = self._checkpoints()
        scorer = self.reward._scorer
        self._run_writer().write_manifest(
            {
                "kind": "grpo_wb TRL run",
                "trained_weights": bool(cks),
                "note": (
                    "Real GRPO training with TRL's GRPOTrainer: checkpoints hold the trained weights listed below."
                    if cks
                    else "No checkpoint with weights saved yet."
                ),
                "steps_completed": getattr(state, "global_step", 0),
                "checkpoints": cks,
                "final_checkpoint": cks[-1]["path"] if cks else None,
                "config": self.config,
                "trl": self.trl_info,
                "advantage": dataclasses.asdict(self.advantage_config()),
                "reward": {
                    "name": self.reward.__name__,
                    **dataclasses.asdict(self.reward.reward_config),
                    "unscorable": "sandbox_error -> None (left out of the group, advantage 0)",
                },
                "sandbox": {
                    "limits": dataclasses.asdict(self.reward.limits),
                    "isolation": scorer.isolation() if scorer is not None else None,
                },
                "tasks_file": self.tasks_file,
                "tasks_sha256": self.tasks_sha256,
                "versions": _versions(),
            }
        )


def _merge_batches(parts: Sequence[ScoredBatch]) -> ScoredBatch:
    reasons = [p.finish_reasons for p in parts if p.finish_reasons is not None]  # kept when every part has them
    return ScoredBatch(
        step=parts[0].step,
        scored=[s for p in parts for s in p.scored],
        rewards=[r for p in parts for r in p.rewards],
        score_seconds=max(p.score_seconds for p in parts),
        cache_hits=sum(p.cache_hits for p in parts),
        finish_reasons=[f for r in reasons for f in r] if len(reasons) == len(parts) else None,
    )


def _stop_ids(tokenizer: Any, model: Any) -> set[int] | None:
    """The ids TRL treats as a finished completion: the eos ids of the generation config and tokenizer, and pad."""
    ids: set[int] = set()
    gen = getattr(model, "generation_config", None)
    for v in (
        getattr(gen, "eos_token_id", None),
        getattr(tokenizer, "eos_token_id", None),
        getattr(tokenizer, "pad_token_id", None),
    ):
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
