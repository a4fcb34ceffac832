"""Writing the tasks an analysis chose: canonical task records with a TRL dataset beside them, or rows in a
dataset's own schema with the analysis's ``grpo_wb_*`` columns (headroom, filter, plan and sample export the same
way)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_write_jsonl
from grpo_wb.signal.headroom import G_MIN, HeadroomReport, export_columns
from grpo_wb.signal.testflags import Audit, audit_columns
from grpo_wb.tasks.records import load_tasks, write_tasks
from grpo_wb.tasks.rowexport import EXPORT_FORMATS, export_rows, trl_record


def _tasks_for(task_ids: Sequence[str], tasks_file: str | Path) -> list:
    by_id = {t.task_id: t for t in load_tasks(tasks_file)}
    missing = [t for t in task_ids if t not in by_id]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise UserError(
            f"{tasks_file}: has no task {missing[0]!r}{more} from the analysed samples; "
            "pass the task file the samples were scored against"
        )
    return [by_id[t] for t in task_ids]


EXPORTS = ("canonical",) + EXPORT_FORMATS


def export_tasks(
    report: HeadroomReport,
    task_ids: Sequence[str],
    tasks_file: str | Path,
    out: str | Path,
    *,
    fmt: str = "canonical",
    group_size: int | None = None,
    audit: Audit | None = None,
    extra: dict[str, dict[str, Any]] | None = None,
) -> str:
    """Write the chosen tasks and say what was written, in one line.

    ``canonical``: the task records plus a TRL dataset beside them (``.trl.jsonl``). The other formats are
    rows (see :mod:`grpo_wb.tasks.rowexport`) with the ``grpo_wb_*`` columns at G (default: the recommended
    G, else G_MIN). With a test ``audit`` (``grpo-wb tasks audit``'s records), rows also get the
    ``grpo_wb_test_*`` columns and canonical records carry them in their metadata; ``extra`` columns per task
    (``plan``'s ``grpo_wb_rollouts``) go the same way.
    """
    if fmt not in EXPORTS:
        raise UserError(f"unknown export format {fmt!r} (choose {', '.join(EXPORTS)})")
    chosen = _tasks_for(task_ids, tasks_file)
    extra = extra or {}

    def tested(tid: str) -> dict[str, Any]:
        return {**(audit_columns(audit.get(tid)) if audit is not None else {}), **extra.get(tid, {})}

    if fmt == "canonical":
        chosen = [
            dataclasses.replace(t, metadata={**t.metadata, **tested(t.task_id)})
            if audit is not None or t.task_id in extra
            else t
            for t in chosen
        ]
        trl = trl_path_for(out)
        write_tasks(out, chosen)
        atomic_write_jsonl(trl, [trl_record(t) for t in chosen])
        return f"{len(chosen)} tasks to {out} (canonical) and {trl} (TRL dataset)"
    g = group_size or report.recommended_g or G_MIN
    by_id = {t.task_id: t for t in report.tasks}
    kind = export_rows(
        chosen, fmt, out, {t.task_id: {**export_columns(by_id[t.task_id], g), **tested(t.task_id)} for t in chosen}
    )
    return f"{len(chosen)} {fmt} rows to {out} ({kind}; grpo_wb_* columns at G={g})"


def trl_path_for(path: str | Path) -> Path:
    """Where the TRL dataset goes next to a canonical export: ``frontier.jsonl`` -> ``frontier.trl.jsonl``."""
    p = Path(path)
    stem = p.name[: -len(".jsonl")] if p.name.endswith(".jsonl") else p.stem
    return p.with_name(stem + ".trl.jsonl")


def export_frontier(
    report: HeadroomReport, tasks_file: str | Path, out: str | Path, *, allow_empty: bool = False
) -> tuple[Path, Path, int]:
    """Write the frontier tasks in the canonical format and as a TRL dataset; return both paths and the count.

    No frontier task is an error unless ``allow_empty`` (then nothing is written and the count is 0).
    """
    out = Path(out)
    if not report.frontier and not allow_empty:
        raise UserError("no frontier tasks to export: every task is too easy or too hard in these samples")
    if report.frontier:
        export_tasks(report, report.frontier, tasks_file, out)
    return out, trl_path_for(out), len(report.frontier)
