"""``klear``: Klear-CodeTest (Kwai-Klear/CodeTest): ``question``, ``reward.ground_truth.input_output``,
``checker``.

Writer: :func:`grpo_wb.tasks.rowexport._checker_row`. Trainer's reward: its last checker (run as
:mod:`grpo_wb.scoring.worker.wb_native` runs the ``klear`` style), else Klear's comparison (``output_match``
``klear``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE
from grpo_wb.tasks.rowformats.common import (
    ParsedRow,
    RowError,
    _json_field,
    _need,
    _references,
    _stdio_list,
    _with_cap_note,
)
from grpo_wb.tasks.rowformats.limits import _limits

_CPP_SOURCE = re.compile(r"#include\b|\bint\s+main\s*\(|\bstd::")


def program_language(code: str) -> str:
    """``cpp`` for a program that reads as C++ (an ``#include``, ``int main(``, ``std::``), else ``python``: Klear
    ships its solutions without a language tag, and its judge tells them apart the same way."""
    return "cpp" if _CPP_SOURCE.search(code) else "python"


def parse_klear(row: dict[str, Any], language: str = "python") -> ParsedRow:
    """Klear-CodeTest (Jianlp/Klear-CodeTest; Kwai-Klear/CodeTest 3dd70d5 ``readme.md``): ``question``,
    ``reward.ground_truth`` {input_output: [{input, output}], type "stdin", fn_name null} (or ``CodeTests``, a JSON
    string with ``input_output``), ``checker`` (a list: the last one is used, as ``special_judge_gen.py`` does),
    ``solutions`` (untagged: C++ told from Python by their text), ``time-limit``/``memory-limit`` (numbers or
    strings)."""
    _need(row, "question")
    gt = row.get("reward", {}).get("ground_truth") if isinstance(row.get("reward"), dict) else None
    if gt is None and row.get("CodeTests") is not None:
        gt = row["CodeTests"]
    if isinstance(gt, str):
        gt = _json_field(gt, "ground_truth")
    if not isinstance(gt, dict) or not isinstance(gt.get("input_output"), list):
        raise RowError("no tests (reward.ground_truth.input_output)")
    if str(gt.get("type") or "stdin") != "stdin" or gt.get("fn_name"):
        raise RowError(f"tests of type {gt.get('type')!r} (grpo_wb reads Klear's stdin rows)")
    cases = _stdio_list(gt["input_output"], "input_output", "generated")
    if not cases.inputs:
        raise RowError("input_output is empty")
    checkers = row.get("checker") or []
    if isinstance(checkers, str):  # one checker, or a JSON list of them
        try:
            decoded = json.loads(checkers)
        except json.JSONDecodeError:
            decoded = None
        checkers = decoded if isinstance(decoded, list) else [checkers]
    if not isinstance(checkers, list):
        raise RowError(f"checker must be a list of programs, got {type(checkers).__name__}")
    if checkers and (not isinstance(checkers[-1], str) or not checkers[-1].strip()):
        raise RowError("its last checker (the one Klear runs) is empty")
    programs = [p for p in row.get("solutions") or [] if isinstance(p, str) and program_language(p) == language]
    refs = _references(programs)
    return ParsedRow(
        prompt=str(row["question"]),
        cases=cases,
        row_id=None if row.get("custom_id") is None else str(row["custom_id"]),
        **refs,
        starter_code=str(row.get("starter_code") or ""),
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        output_match="klear",
        checker=checkers[-1] if checkers else None,
        checker_style="klear",
        **_limits(row.get("time-limit"), row.get("memory-limit"), "s", ("time-limit", "memory-limit")),
        notes=_with_cap_note(("judged by its checker",) if checkers else (), refs),
    )
