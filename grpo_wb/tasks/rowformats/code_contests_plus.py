"""``code-contests-plus``: ByteDance-Seed/Code-Contests-Plus (configs 1x..5x): ``test_cases``, a testlib
``checker``, limits, ``correct_submissions``/``incorrect_submissions``.

Writer: :func:`grpo_wb.tasks.rowexport._checker_row`. Trainer's reward: its testlib checker (C++, compiled with
testlib.h; run as :mod:`grpo_wb.scoring.worker.wb_native` runs the ``testlib`` style).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE
from grpo_wb.tasks.rowformats.common import (
    ParsedRow,
    RowError,
    _need,
    _references,
    _stdio_list,
    _tagged_programs,
    _with_cap_note,
)
from grpo_wb.tasks.rowformats.limits import _limits


def parse_code_contests_plus(row: dict[str, Any], language: str = "python") -> ParsedRow:
    """ByteDance-Seed/Code-Contests-Plus (configs 1x..5x: the same problems with 1 to 5 times the generated tests):
    ``test_cases`` [{input, output}], a testlib ``checker`` (C++), ``time_limit`` (ms), ``memory_limit`` (MB),
    ``correct_submissions`` / ``incorrect_submissions`` [{code, language}]."""
    _need(row, "description")
    cases = _stdio_list(row.get("test_cases") or [], "test_cases", "generated")
    if not cases.inputs:
        raise RowError("test_cases is empty (the tests are in configs 1x to 5x)")
    checker = row.get("checker") if isinstance(row.get("checker"), str) and row["checker"].strip() else None
    refs = _references(
        _tagged_programs(row.get("correct_submissions"), language),
        _tagged_programs(row.get("incorrect_submissions"), language),
    )
    title = row.get("title")
    notes = ["judged by its testlib checker (C++, compiled with testlib.h)"] if checker else []
    rates = {k: row.get(k) for k in ("true_positive_rate", "true_negative_rate") if row.get(k) is not None}
    return ParsedRow(
        prompt=f"{title}\n\n{row['description']}" if title else str(row["description"]),
        cases=cases,
        row_id=None if row.get("id") is None else str(row["id"]),
        **refs,
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        checker=checker,
        checker_style="testlib",
        **_limits(row.get("time_limit"), row.get("memory_limit"), "ms", ("time_limit", "memory_limit")),
        extra={"origin": row.get("source"), **rates},
        notes=_with_cap_note(tuple(notes), refs),
    )
