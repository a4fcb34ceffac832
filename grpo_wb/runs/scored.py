"""Reading scored completions from disk: a ``grpo-wb score`` results file or a run directory's groups.

Each row is checked as it is read (a wrong one is a one-line error naming the file and line) and pooled per task
into :class:`~grpo_wb.signal.headroom.TaskSamples`, the only thing the estimators in :mod:`grpo_wb.signal` see.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lazy_loader

from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.layout import RunFiles
from grpo_wb.signal.headroom import TaskSamples, add_group, pooled_samples, samples_from_scored_rows

if TYPE_CHECKING:
    from grpo_wb.formats import schema
else:  # pydantic and the models take some 0.1 s: loaded by the first row checked, not by `grpo-wb --help`
    schema = lazy_loader.load("grpo_wb.formats.schema", suppress_warning=True)


def samples_from_scored_file(path: str | Path) -> list[TaskSamples]:
    """Read a ``grpo-wb score`` results file, streamed; a line without task_id/passed is an error naming it."""
    return samples_from_scored_rows(iter_scored_file(path, fast=True))


def check_scored_row(obj: Any, path: str | Path, lineno: int) -> dict[str, Any]:
    """``obj`` when it is a scored completion (:class:`~grpo_wb.formats.schema.ScoredRow`: string task_id,
    boolean passed, numeric or null reward), else a UserError naming the file and line."""
    if problem := schema.scored_row_problem(obj):
        raise UserError(problem, path=str(path), line=lineno)
    return obj


def iter_scored_file(path: str | Path, *, fast: bool = False) -> Iterator[dict[str, Any]]:
    """The rows of a ``grpo-wb score`` results file, each checked (task_id, passed, reward), one at a time;
    ``fast``: parsed by orjson (for readers of those fields only: see :func:`grpo_wb.jsonio.iter_jsonl`)."""
    n = 0
    for lineno, obj in iter_jsonl(path, fast=fast):
        n += 1
        yield check_scored_row(obj, path, lineno)
    if not n:
        raise UserError("no scored completions in file", path=str(path))


def read_scored_file(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a ``grpo-wb score`` results file, each checked, in file order, all in memory (for callers that
    need every field; the estimates stream: :func:`samples_from_scored_file`)."""
    return list(iter_scored_file(path))


def samples_from_run(run_dir: str | Path) -> list[TaskSamples]:
    """Pool every group a smoke run logged (groups.jsonl, each a :class:`~grpo_wb.formats.schema.GroupRecord`):
    n = sum of group sizes per task."""
    path = Path(run_dir) / RunFiles.GROUPS
    if not path.exists():
        raise UserError(f"{run_dir}: not a grpo_wb run directory (no groups.jsonl)")
    acc: dict[str, list] = {}
    for lineno, obj in iter_jsonl(path):
        g = schema.check_group(obj)
        if g is None:
            raise UserError(
                "not a group record (needs task_id, n_total >= 1, 0 <= n_correct <= n_total, rewards)",
                path=str(path),
                line=lineno,
            )
        add_group(acc, g.task_id, g.n_total, g.n_correct, g.rewards)
    if not acc:
        raise UserError(f"{path}: the run logged no groups")
    return pooled_samples(acc)


def load_samples(source: str | Path) -> list[TaskSamples]:
    """A run directory or a scored completions file, whichever ``source`` is."""
    p = Path(source)
    if p.is_dir():
        return samples_from_run(p)
    return samples_from_scored_file(p)
