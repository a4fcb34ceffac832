"""The completions behind every number: a results file's task table and one task's group, at any size.

A scored results file (``grpo-wb score``, a headroom or filter report's ``scored.jsonl``) or a run directory's
rollouts is read once, streamed. Only counts are kept (statuses, passes, failure clusters), and each row's byte
offset goes into an index saved beside the file (``NAME.index.npz``, stamped with the file's size and mtime as the
scan began, so a file that changed is indexed again; kept in memory where the folder is read-only). A group view
then reads one task's rows by seeking to their offsets, so a notebook opens a run of millions of completions
without loading it (:meth:`RolloutIndex.load` fetches a task's rows in another process without a scan). A
gzip-compressed file is read from a decompressed copy in the temporary folder, since gzip cannot seek.

Rows are shown as they were recorded: a row without its completion text (a results file written by another
tool, or trimmed) still counts and still shows its status, reward and failure.
"""

from __future__ import annotations

import atexit
import gzip
import io
import json
import os
import shutil
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lazy_loader

from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_open, fast_loads
from grpo_wb.runs.scored import check_scored_row
from grpo_wb.signal.advantages import compute_advantages
from grpo_wb.signal.clusters import RUN_ROLLOUTS, FailureClusters, failure_kind, rows_file, task_signature
from grpo_wb.tasks.records import load_tasks

if TYPE_CHECKING:
    import numpy

np = lazy_loader.load("numpy")  # the command line (which imports this through its benchmarks) starts without it

INDEX_SUFFIX = ".index.npz"
INDEX_VERSION = 2
MAX_GROUP_ROWS = 5000
"""A task's rows read for its group view at most (its counts in the table cover all of them)."""


@dataclass
class TaskCounts:
    """One task's rows, counted."""

    n: int = 0
    passed: int = 0
    statuses: Counter = field(default_factory=Counter)
    with_code: int = 0
    """Rows that carry their completion text."""


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, INDEX_VERSION]


class RolloutIndex:
    """Byte offsets of a JSON-lines results file's rows, grouped by task (:data:`INDEX_SUFFIX` beside it)."""

    def __init__(
        self, path: Path, names: Sequence[str], offsets: numpy.ndarray, bounds: numpy.ndarray, stamp: Sequence[int]
    ):
        self.path = path
        self.names = list(names)
        self._code = {n: i for i, n in enumerate(self.names)}
        self._offsets = offsets
        """Every row's offset, task by task (file order within a task)."""
        self._bounds = bounds
        """Task i's offsets are ``_offsets[_bounds[i]:_bounds[i + 1]]``."""
        self.stamp = list(stamp)
        """The file's size, mtime and :data:`INDEX_VERSION` when its scan began."""

    @classmethod
    def build(
        cls, path: Path, names: Sequence[str], codes: numpy.ndarray, offsets: numpy.ndarray, stamp: Sequence[int]
    ) -> RolloutIndex:
        """From each row's task code and offset, in file order."""
        grouped = offsets[np.argsort(codes, kind="stable")]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(names)))])
        return cls(path, names, grouped, bounds, stamp)

    @staticmethod
    def index_path(path: Path) -> Path:
        return path.with_name(path.name + INDEX_SUFFIX)

    @classmethod
    def load(cls, path: Path) -> RolloutIndex | None:
        """The saved index of ``path``, or None where there is none, it is unreadable, or the file changed."""
        try:
            with np.load(cls.index_path(path), allow_pickle=False) as z:
                stamp = [int(x) for x in z["stamp"]]
                if stamp != _stamp(path):
                    return None
                return cls(path, json.loads(str(z["names"])), z["offsets"], z["bounds"], stamp)
        except Exception:  # a cache: a missing, partial or foreign file is no index
            return None

    def save(self) -> bool:
        """Write the index beside the file (atomically); False where the folder is not writable."""
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            stamp=np.array(self.stamp, dtype=np.int64),
            offsets=self._offsets,
            bounds=self._bounds,
            names=np.array(json.dumps(self.names)),
        )
        try:
            with atomic_open(self.index_path(self.path), "wb") as f:
                f.write(buf.getvalue())
        except OSError:
            return False
        return True

    def offsets(self, task_id: str) -> numpy.ndarray:
        code = self._code.get(task_id)
        if code is None:
            return self._offsets[:0]
        return self._offsets[self._bounds[code] : self._bounds[code + 1]]

    def rows(self, task_id: str, limit: int = MAX_GROUP_ROWS) -> list[dict[str, Any]]:
        """The task's rows in file order, read by seeking (at most ``limit``); a file that changed since it was
        indexed is a UserError, never another task's rows."""
        out = []
        changed = UserError("changed since it was opened: open it again", path=str(self.path))
        with open(self.path, "rb") as f:
            for off in self.offsets(task_id)[:limit]:
                f.seek(int(off))
                try:
                    row = fast_loads(f.readline())
                except ValueError:
                    raise changed from None
                if not isinstance(row, dict) or row.get("task_id") != task_id:
                    raise changed
                out.append(row)
        return out


def _scan(path: Path, notes: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset, row) for every row of a results file; a line that is not a scored row is a UserError, but
    a last line without its newline that does not parse (a run still writing) is left out with a note."""
    off = 0
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, start=1):
            start, off = off, off + len(line)
            if not line.strip():
                continue
            try:
                row = fast_loads(line)
            except ValueError as e:
                if not line.endswith(b"\n"):
                    notes.append(f"{path.name}:{lineno}: a partial last line (still being written?) left out")
                    return
                raise UserError(f"invalid JSON: {e}", path=str(path), line=lineno) from None
            yield start, check_scored_row(row, path, lineno)


def _seekable(path: Path, notes: list[str]) -> Path:
    """``path``, or a decompressed copy of a gzip file in the temporary folder (removed at exit)."""
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            return path
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".jsonl")
    atexit.register(os.unlink, tmp)
    try:
        with gzip.open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (OSError, EOFError) as e:
        raise UserError(f"cannot decompress: {e}", path=str(path)) from None
    notes.append(f"{path.name}: gzip-compressed, read from a decompressed copy (gzip cannot seek to a task's rows)")
    return Path(tmp)


@dataclass
class Rollouts:
    """A results file's rows counted by task, its failure clusters, and one task's rows on demand."""

    path: Path
    counts: dict[str, TaskCounts]
    clusters: FailureClusters
    index: RolloutIndex
    prompts: dict[str, str] = field(default_factory=dict)
    """Task prompts from the task file, where one was given."""
    notes: list[str] = field(default_factory=list)
    """One line for each thing the explorer could not show (no completion text, tasks missing from the task file)."""

    @property
    def rows(self) -> int:
        return sum(c.n for c in self.counts.values())

    def group(self, task_id: str) -> list[dict[str, Any]]:
        """The task's rows, each with ``advantage`` (recorded, else the group's as TRL computes it over the
        task's rows, or each step's rows in a run)."""
        rows = self.index.rows(task_id)
        missing = [r for r in rows if not isinstance(r.get("advantage"), (int, float))]
        if missing:
            by_step: dict[Any, list[dict[str, Any]]] = {}
            for r in missing:
                by_step.setdefault(r.get("step"), []).append(r)
            for grp in by_step.values():
                for r, a in zip(grp, compute_advantages([[r.get("reward") for r in grp]])[0]):
                    r["advantage"] = a
        return rows


def open_rollouts(source: str | Path, tasks_file: str | Path | None = None) -> Rollouts:
    """Count, cluster and index ``source`` (a results file or run directory) in one streamed pass; the index
    is saved beside the file for :meth:`RolloutIndex.load`."""
    path = rows_file(source)
    notes: list[str] = []
    if Path(source).is_dir() and path.name == RUN_ROLLOUTS[-1]:
        notes.append(f"{path.parent.name}: a run from before rollouts.jsonl: only its last step's rollouts are here")
    readable = _seekable(path, notes)
    stamp = _stamp(readable)
    counts: dict[str, TaskCounts] = {}
    fc = FailureClusters()
    names: dict[str, int] = {}
    codes, offsets = array("i"), array("q")  # 12 bytes a row while scanning; the index keeps the 8 of the offset
    for off, row in _scan(readable, notes):
        tid = row["task_id"]
        c = counts.get(tid)
        if c is None:
            c = counts[tid] = TaskCounts()
            names[tid] = len(names)
        c.n += 1
        c.passed += row["passed"] is True
        c.statuses[str(row.get("status", ""))] += 1
        c.with_code += isinstance(row.get("completion"), str)
        fc.add(row)
        codes.append(names[tid])
        offsets.append(off)
    if not counts:
        raise UserError("has no scored rows: nothing to explore", path=str(path))
    index = RolloutIndex.build(
        readable, list(names), np.frombuffer(codes, dtype=np.int32), np.frombuffer(offsets, dtype=np.int64), stamp
    )
    del codes, offsets
    if readable == path:
        index.save()
    out = Rollouts(path, counts, fc, index, notes=notes)
    no_code = sum(c.n - c.with_code for c in counts.values())
    if no_code:
        out.notes.append(
            f"{path.name}: {no_code} of {out.rows} rows carry no completion text "
            "(shown with their status, reward and failure only)"
        )
    if tasks_file:
        out.prompts = {t.task_id: t.prompt for t in load_tasks(tasks_file)}
        unknown = [t for t in counts if t not in out.prompts]
        if unknown:
            out.notes.append(
                f"{path.name}: {len(unknown)} of {len(counts)} tasks are not in {Path(tasks_file).name} "
                f"(first: {unknown[0]}); shown without their prompt"
            )
    return out


def category(c: TaskCounts) -> str:
    """too easy (every row passed), too hard (none did) or frontier: GRPO's informative groups come only from
    the frontier."""
    return "too easy" if c.passed == c.n else "too hard" if c.passed == 0 else "frontier"


def task_records(ro: Rollouts) -> list[dict[str, Any]]:
    """One record per task for the explorer's table: category, pass rate, statuses, its largest failure cluster."""
    same = {s.task_id: s for s in ro.clusters.same_way()}
    out = []
    for tid, c in ro.counts.items():
        top = ro.clusters.task_clusters(tid)
        failure = ""
        if top:
            (kind, shape, test, _), k = top[0]
            failure = f"{kind}: {shape}" + (f" ({test})" if test else "") + f" ×{k}"
        prompt = ro.prompts.get(tid, "")
        out.append(
            {
                "task_id": tid,
                "category": category(c),
                "pass_rate": c.passed / c.n,
                "passed": c.passed,
                "samples": c.n,
                "statuses": " · ".join(f"{s} {k}" for s, k in c.statuses.most_common()),
                "clusters": len(top),
                "top_failure": failure,
                "same_way": same[tid].why if tid in same else "",
                "prompt": " ".join(prompt.split())[:100],
            }
        )
    return out


def ways(rows: Sequence[dict[str, Any]]) -> list[tuple[tuple[str, ...], int, int]]:
    """Each way the failing rows fail (kind, message shape, first failing test, output given: the per-task
    failure clusters), with how many rows fail that way and the index of the first; the most common first."""
    first: dict[tuple[str, ...], int] = {}
    count: Counter = Counter()
    for i, r in enumerate(rows):
        if r.get("passed") is not True:
            w = task_signature(r)
            count[w] += 1
            first.setdefault(w, i)
    return [(w, k, first[w]) for w, k in count.most_common()]


def showcase_rows(rows: Sequence[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Up to ``k`` rows that show a group: a pass, one row per way it fails (the most common way first), a
    second pass, then the rest in order; returned in the group's order."""
    passes = [i for i, r in enumerate(rows) if r.get("passed") is True][:2]
    order = passes[:1] + [i for _, _, i in ways(rows)] + passes[1:]
    taken = set(order)
    order += [i for i in range(len(rows)) if i not in taken]
    return [rows[i] for i in sorted(order[:k])]


def describe_failure(row: dict[str, Any]) -> dict[str, Any]:
    """How a failing row failed, as a person debugs it: its kind (:data:`~grpo_wb.signal.clusters.KINDS`),
    message, and first failing test (``test``, ``test_kind`` values or stdio, ``code`` or ``input``,
    ``expected``, ``actual``)."""
    if row.get("passed") is True:
        return {}
    f = dict(row.get("failure") or {})
    f["test_kind"] = f.pop("kind", "")
    return {
        **f,
        "kind": failure_kind(str(row.get("status", "")), str(row.get("error") or "")),
        "error": str(f.get("error") or row.get("error") or ""),
    }


def sample_label(row: dict[str, Any]) -> str:
    """``#i`` (and the step, in a run)."""
    i = row.get("sample_index", row.get("completion_id", ""))
    return (f"step {row['step']} · " if "step" in row else "") + f"#{i}"


def headline(ro: Rollouts) -> dict[str, Any]:
    """The explorer's numbers for the batch index: tasks, completions, categories, failures and clusters."""
    cats = Counter(category(c) for c in ro.counts.values())
    return {
        "tasks": len(ro.counts),
        "completions": ro.rows,
        "too_easy": cats["too easy"],
        "frontier": cats["frontier"],
        "too_hard": cats["too hard"],
        "failures": ro.clusters.failures,
        "failure_clusters": len(ro.clusters.clusters),
        "all_fail_one_way": len(ro.clusters.same_way()),
    }
