"""``kodcode``: KodCode-AI/kodcode ``pipeline/step2.2_gen_unit_tests.py``: a pytest module in ``test`` (or
``test_code``) importing ``from solution``. The module becomes tests in :mod:`.kodcode_pytest`.

Writer: none (a pytest module: ``--format trl`` or ``jsonl`` hold it). Trainer's reward: none named (grpo_wb's
emulation of pytest, :mod:`.kodcode_pytest`).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.rowformats.common import Cases, ParsedRow, RowError, _need
from grpo_wb.tasks.rowformats.kodcode_pytest import _imported_modules, _solution_imports


def parse_kodcode(row: dict[str, Any]) -> ParsedRow:
    _need(row, "question")
    test = row.get("test") if row.get("test") is not None else row.get("test_code")
    if not isinstance(test, str) or not test.strip():
        raise RowError("missing field 'test' (or 'test_code'): the pytest module")
    info = row.get("test_info")
    fn = None
    if isinstance(info, list) and info and isinstance(info[0], dict):
        fn = info[0].get("function_name")
    if not fn:
        fn = _solution_imports(test)[:1] or [None]
        fn = fn[0]
    if not fn:
        raise RowError("cannot tell which function the tests import from solution")
    notes = (
        ("tests import pytest: score with --site-packages (the sandbox imports the standard library only)",)
        if any(n == "pytest" for n in _imported_modules(test))
        else ()
    )
    return ParsedRow(
        prompt=str(row["question"]),
        cases=Cases("pytest", code=[test], fn_name=str(fn)),
        notes=notes,
        row_id=None if row.get("question_id") is None else str(row["question_id"]),
        solution=row.get("solution") if isinstance(row.get("solution"), str) else None,
        extra={"subset": row.get("subset"), "gpt_difficulty": row.get("gpt_difficulty")},
    )
