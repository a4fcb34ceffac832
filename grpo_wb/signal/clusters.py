"""Failures grouped by what went wrong, across a task set and per task: arithmetic on scored rows.

"43 tasks too hard" invites the question: fail how? A scored row says its status, its error and (since the
scorer records it) its first failing test with the input, expected and actual output. Each failing row gets a
signature: its *kind* (``wrong answer``, ``exception``, ``timeout``, ``no code``, ``sandbox``) and the *shape* of its
message (the first line, with quoted text, numbers and addresses blanked: ``NameError: name '…' is not defined``
for every missing name). Across the set, rows cluster by signature; within a task also by the failing test and,
for wrong answers, the output given, so "every sample prints the same wrong output on the same test" is one
cluster. A task of at least ``min_samples`` samples that all fail the same way is called out: that is more often
the task or the environment (a module the sandbox lacks, an expected output that is wrong) than a hard task.

Rows are read one at a time and only counts and one example per cluster are kept, so memory grows with the
number of distinct failures and tasks, not with the number of completions.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.layout import RunFiles
from grpo_wb.signal.headroom import dataframe

KINDS = ("wrong answer", "exception", "timeout", "no code", "sandbox")
"""What a failure is, from its status and error."""
_WRONG = ("AssertionError", "wrong output", "check failed", "failed")
_BLANKS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"'[^'\n]*'"), "'…'"),
    (re.compile(r'"[^"\n]*"'), '"…"'),
    (re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)"), "N"),
    (re.compile(r"\s+"), " "),
]
SHAPE_CHARS = 120
_ENVIRONMENT = re.compile(r"^(ModuleNotFoundError|ImportError)\b")


def failure_kind(status: str, error: str) -> str:
    """The kind of a non-passing row."""
    if status == "timeout":
        return "timeout"
    if status == "parse_failure":
        return "no code"
    if status == "sandbox_error":
        return "sandbox"
    if status == "fail" and (not error or error.split(":")[0].strip() in _WRONG):
        return "wrong answer"
    return "exception"


def message_shape(error: str) -> str:
    """The first line of an error with its particulars blanked, so that errors alike read alike."""
    line = next((x for x in error.strip().splitlines() if x.strip() and not x.startswith("Traceback")), "")
    for pat, rep in _BLANKS:
        line = pat.sub(rep, line)
    line = line.strip()
    return line if len(line) <= SHAPE_CHARS else line[: SHAPE_CHARS - 1] + "…"


def signature(row: dict[str, Any]) -> tuple[str, str]:
    """The set-wide signature of a failing row: its kind and its message's shape."""
    error = str(row.get("error") or "")
    kind = failure_kind(str(row.get("status", "")), error)
    return kind, "timed out" if kind == "timeout" else message_shape(error) or kind


def task_signature(row: dict[str, Any], sig: tuple[str, str] | None = None) -> tuple[str, ...]:
    """The per-task signature of a failing row: its set-wide signature, its failing test, and a digest of the
    output it gave (so the same wrong output on the same test is one way to fail)."""
    sig = signature(row) if sig is None else sig
    f = row.get("failure") or {}
    test = str(f.get("test") or (row.get("failed_tests") or [""])[0])
    actual = f.get("actual")
    out = hashlib.sha256(str(actual).encode("utf-8", "surrogatepass")).hexdigest()[:12] if actual is not None else ""
    return (*sig, test, out)


@dataclass
class Cluster:
    """Failing rows with one signature."""

    kind: str
    """One of :data:`KINDS`."""
    shape: str
    """The message's shape."""
    rows: int = 0
    """Rows in it."""
    tasks: set[str] = field(default_factory=set)
    """Tasks with a row in it."""
    example: dict[str, Any] = field(default_factory=dict)
    """The first row's task, completion id, error and first failing test."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "shape": self.shape,
            "rows": self.rows,
            "tasks": len(self.tasks),
            "example": self.example,
        }


@dataclass(frozen=True)
class SameWay:
    """A task whose samples all fail the same way."""

    task_id: str
    samples: int
    kind: str
    shape: str
    test: str
    """The failing test they share ("" when none is named)."""
    same_output: bool
    """Wrong answers: every sample gave the same output."""
    why: str
    """What that suggests, in words."""

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _example(row: dict[str, Any]) -> dict[str, Any]:
    f = row.get("failure") or {}
    return {
        "task_id": row.get("task_id"),
        "completion_id": row.get("completion_id"),
        "error": str(row.get("error") or "")[:300],
        "test": f.get("test", ""),
        **{k: f[k] for k in ("input", "code", "expected", "actual") if k in f},
    }


class FailureClusters:
    """Streams scored rows into clusters (set-wide and per task) with bounded memory."""

    def __init__(self) -> None:
        self.clusters: dict[tuple[str, str], Cluster] = {}
        self.per_task: dict[str, Counter] = {}
        self.samples: Counter = Counter()
        self.passes: Counter = Counter()
        self.rows = 0
        self.failures = 0

    def add(self, row: dict[str, Any]) -> None:
        tid = str(row.get("task_id"))
        self.rows += 1
        self.samples[tid] += 1
        if row.get("passed") is True:
            self.passes[tid] += 1
            return
        self.failures += 1
        sig = signature(row)
        c = self.clusters.get(sig)
        if c is None:
            c = self.clusters[sig] = Cluster(*sig, example=_example(row))
        c.rows += 1
        c.tasks.add(tid)
        self.per_task.setdefault(tid, Counter())[task_signature(row, sig)] += 1

    def add_all(self, rows: Iterable[dict[str, Any]]) -> FailureClusters:
        for r in rows:
            self.add(r)
        return self

    def top(self, n: int | None = None) -> list[Cluster]:
        """The largest clusters first (ties: more tasks first, then by shape)."""
        out = sorted(self.clusters.values(), key=lambda c: (-c.rows, -len(c.tasks), c.kind, c.shape))
        return out if n is None else out[:n]

    def task_clusters(self, task_id: str) -> list[tuple[tuple[str, ...], int]]:
        """One task's failures by (kind, shape, test, output digest), the largest first."""
        return self.per_task.get(task_id, Counter()).most_common()

    def same_way(self, min_samples: int = 4) -> list[SameWay]:
        """Tasks with at least ``min_samples`` samples, none passing, all in one per-task cluster."""
        out = []
        for tid, c in self.per_task.items():
            n = self.samples[tid]
            if n < min_samples or self.passes[tid] or len(c) != 1:
                continue
            (kind, shape, test, digest), _ = next(iter(c.items()))
            if _ENVIRONMENT.match(shape):
                why = "the environment: a module the sandbox cannot import (try --site-packages)"
            elif kind == "wrong answer" and digest:
                why = f"every sample gives the same wrong output on {test or 'the same test'}: check its expected value"
            elif kind == "sandbox":
                why = "the sandbox failed on every sample"
            else:
                why = "every sample fails the same way: look at the task before calling it hard"
            out.append(SameWay(tid, n, kind, shape, test, bool(digest) and kind == "wrong answer", why))
        return sorted(out, key=lambda s: (-s.samples, s.task_id))


def iter_rollout_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """A scored results file's rows, one at a time (malformed lines are the readers' concern elsewhere)."""
    for _, obj in iter_jsonl(path, fast=True):
        if isinstance(obj, dict):
            yield obj


def cluster_file(path: str | Path) -> FailureClusters:
    """The failure clusters of a scored results file, read in one pass."""
    return FailureClusters().add_all(iter_rollout_rows(path))


RUN_ROLLOUTS = (RunFiles.ROLLOUTS, RunFiles.LAST_ROLLOUTS)
"""A run directory's scored rows: every step's (``rollouts.jsonl``), else the last step's (runs before it)."""


def rows_file(source: str | Path) -> Path:
    """The scored rows of ``source``: a results file itself, or a run directory's rollouts."""
    p = Path(source)
    if p.is_dir():
        for name in RUN_ROLLOUTS:
            if (p / name).exists():
                return p / name
        raise UserError(f"has no {' or '.join(RUN_ROLLOUTS)}: no scored rows to read", path=str(p))
    if not p.exists():
        raise UserError("no such results file or run directory", path=str(p))
    return p


def cluster_source(source: str | Path) -> FailureClusters:
    """A scored results file's clusters, or a run directory's (every step's rollouts)."""
    return cluster_file(rows_file(source))


def clusters_frame(fc: FailureClusters, n: int = 10):
    """The ``n`` largest clusters as a table: kind, message shape, rows, tasks and an example."""
    return dataframe(
        [
            {
                "kind": c.kind,
                "message": c.shape,
                "failures": c.rows,
                "tasks": len(c.tasks),
                "share of failures": round(c.rows / fc.failures, 3) if fc.failures else None,
                "example": f"{c.example.get('completion_id')}: {c.example.get('error', '')[:80]}",
            }
            for c in fc.top(n)
        ]
    )


def same_way_frame(fc: FailureClusters, min_samples: int = 4):
    """The tasks whose samples all fail the same way, with what that suggests."""
    return dataframe(
        [
            {
                "task": s.task_id,
                "samples": s.samples,
                "kind": s.kind,
                "message": s.shape,
                "test": s.test,
                "same output": s.same_output,
                "suggests": s.why,
            }
            for s in fc.same_way(min_samples)
        ]
    )
