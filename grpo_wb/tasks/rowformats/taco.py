"""``taco`` / ``apps-rows``: BAAI/TACO and codeparrot/apps: ``question``, ``input_output`` (JSON string),
``starter_code``, ``solutions`` (a JSON list: the first is the canonical solution, the others the task's
``solutions``).

Writer: :func:`grpo_wb.tasks.rowexport.build_row` (``--format taco``). Trainer's reward: TACO's
``testing_util.py`` (``grpo_wb.scoring.rules.RULES["taco"]``).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE, apps_prompt
from grpo_wb.tasks.rowformats.common import (
    ParsedRow,
    _json_field,
    _need,
    _references,
    _solution_list,
    _with_cap_note,
    io_cases,
)


def parse_taco(row: dict[str, Any]) -> ParsedRow:
    _need(row, "question", "input_output")
    io_obj = _json_field(row["input_output"], "input_output")
    cases = io_cases(io_obj, name="input_output")
    starter = row.get("starter_code") or ""
    rid = row.get("problem_id")
    refs = _references(_solution_list(row.get("solutions")))
    return ParsedRow(
        prompt=apps_prompt(str(row["question"]), starter, cases.kind == "call"),
        cases=cases,
        row_id=None if rid is None else str(rid),
        starter_code=starter,
        **refs,
        prelude=APPS_PRELUDE,
        extra={"difficulty": row.get("difficulty"), "trainer_reward": "taco"},
        notes=_with_cap_note((), refs),
    )
