"""A run directory's artifacts, written one way for smoke runs and TRL runs alike.

``metrics.jsonl``            one :class:`~grpo_wb.signal.diagnostics.StepMetrics` line per step
``groups.jsonl``             one :class:`~grpo_wb.signal.diagnostics.GroupStats` line per prompt per step (+ ``step``)
``rollouts.jsonl``           every step's scored completions with ``step`` and ``advantage`` (the explorer reads it)
``last_rollouts.jsonl``      the last step's scored completions with their advantages (replaced each step)
``summary.json``             the steps' fractions and means (``diagnostics.run_summary``) + the run's own
``checkpoint_manifest.json`` what the run was, with the SHA-256 of every artifact

Nothing is lost on a crash: JSONL lines are appended, flushed and fsynced one at a time, JSON files are
replaced atomically, and :meth:`RunWriter.truncate_from` drops what a step that never finished left.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grpo_wb.jsonio import (
    JsonlAppender,
    atomic_open,
    atomic_write_json,
    atomic_write_jsonl,
    fast_loads,
    file_hashes,
    iter_jsonl,
    repair_jsonl_tail,
)
from grpo_wb.layout import RunFiles
from grpo_wb.scoring.scorer import ScoredCompletion
from grpo_wb.signal.advantages import AdvantageConfig
from grpo_wb.signal.diagnostics import StepMetrics, build_groups, run_summary, step_metrics
from grpo_wb.version import __version__

STEP_FILES = RunFiles.STEP_FILES
ARTIFACTS = RunFiles.ARTIFACTS


class RunWriter:
    """Appends steps to a run directory and keeps the run's metrics history (``extra_logs``: other JSONL
    files appended as they come, e.g. TRL's own logs)."""

    def __init__(self, run_dir: str | Path, *, extra_logs: Sequence[str] = ()):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.history: list[dict[str, Any]] = self._read(RunFiles.METRICS)
        self.extra_logs = tuple(extra_logs)
        self._files = {name: JsonlAppender(self.run_dir / name) for name in (*STEP_FILES, *extra_logs)}

    def _read(self, name: str) -> list[dict[str, Any]]:
        p = self.run_dir / name
        if not p.exists():
            return []
        repair_jsonl_tail(p)  # a half-written last line is a crash's: drop it
        return [row for _, row in iter_jsonl(p)]

    def truncate_from(self, step: int) -> None:
        """Drop every line of steps ``>= step`` (a step that never finished, or one a resumed trainer repeats);
        the files are filtered line by line (every step's rollouts can be large)."""
        self.history = [r for r in self.history if int(r.get("step", 0)) < step]
        for name in STEP_FILES:
            p = self.run_dir / name
            if not p.exists():
                continue
            repair_jsonl_tail(p)  # a half-written last line is a crash's: drop it
            with open(p, "rb") as f:
                if all(int(fast_loads(line).get("step", 0)) < step for line in f if line.strip()):
                    continue
            self._files[name].close()
            with open(p, "rb") as src, atomic_open(p, "wb") as dst:
                for line in src:
                    if line.strip() and int(fast_loads(line).get("step", 0)) < step:
                        dst.write(line)
            self._files[name] = JsonlAppender(p)

    def write_step(
        self,
        step: int,
        groups_scored: Sequence[Sequence[ScoredCompletion]],
        rewards: Sequence[Sequence[float | None]],
        adv: AdvantageConfig,
        *,
        score_seconds: float,
        cache_hits: int,
        finish_reasons: Sequence[str] | None = None,
    ) -> StepMetrics:
        """One step: its groups' statistics and advantages, its metrics line, and its rollouts."""
        groups = build_groups(
            [g[0].task_id for g in groups_scored], rewards, [[s.status for s in g] for g in groups_scored], adv
        )
        metrics = step_metrics(
            step,
            groups,
            [s.status for g in groups_scored for s in g],
            score_seconds=score_seconds,
            cache_hits=cache_hits,
            finish_reasons=finish_reasons,
            scale_rewards=adv.scale_rewards,
        )
        rollouts = [
            {**s.to_json(), "step": step, "advantage": a}
            for grp, g in zip(groups, groups_scored)
            for s, a in zip(g, grp.advantages)
        ]
        atomic_write_jsonl(self.run_dir / RunFiles.LAST_ROLLOUTS, rollouts)
        self._files[RunFiles.ROLLOUTS].write_many(rollouts)
        for grp in groups:
            self._files[RunFiles.GROUPS].write({"step": step, **grp.to_json()})
        self._files[RunFiles.METRICS].write(metrics.to_json())
        self.history.append(metrics.to_json())
        return metrics

    def log(self, name: str, row: dict[str, Any]) -> None:
        """Append a row to one of the ``extra_logs``."""
        self._files[name].write(row)

    def write_summary(self, **fields: Any) -> dict[str, Any]:
        """summary.json: the history's fractions and means, then the run's own ``fields``."""
        summary = {**run_summary(self.history), **fields}
        atomic_write_json(self.run_dir / RunFiles.SUMMARY, summary)
        return summary

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """checkpoint_manifest.json: ``manifest``, the digests of the run's files and the versions that wrote
        them."""
        files = (*STEP_FILES, RunFiles.LAST_ROLLOUTS, *self.extra_logs, RunFiles.SUMMARY)
        atomic_write_json(
            self.run_dir / RunFiles.MANIFEST,
            {
                **manifest,
                "files": file_hashes(self.run_dir, files),
                "grpo_wb_version": __version__,
                "python": platform.python_version(),
                "updated_unix": round(time.time(), 3),
            },
        )

    def close(self) -> None:
        for f in self._files.values():
            f.close()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
