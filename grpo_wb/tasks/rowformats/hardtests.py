"""``hardtests``: sigcp/hardtests_problems joined with sigcp/hardtests_tests on ``pid`` (LeiLiLab/HardTestGen):
the statement, public and generated tests, the output judging function, limits.

Writer: :func:`grpo_wb.tasks.rowexport._checker_row`. Trainer's reward: its output judging function (run as
:mod:`grpo_wb.scoring.worker.wb_native` runs the ``hardtests`` style), else HardTests' default comparison.
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE
from grpo_wb.tasks.rowformats.common import (
    Cases,
    ParsedRow,
    RowError,
    _references,
    _stdio_list,
    _tagged_programs,
    _with_cap_note,
    decode_compressed_json,
)
from grpo_wb.tasks.rowformats.limits import _limits


def _joined(*cases: Cases) -> Cases:
    return Cases(
        "stdio",
        [x for c in cases for x in c.inputs],
        [y for c in cases for y in c.outputs],
        sets=[s for c in cases for s in c.sets],
    )


def parse_hardtests(row: dict[str, Any], language: str = "python") -> ParsedRow:
    """sigcp/hardtests_problems joined with sigcp/hardtests_tests on ``pid``: the statement (``question_content``),
    ``public_test_cases``, the generated ``test_cases`` (base64/zlib/pickle of JSON, decoded without globals),
    ``test_cases_kit.output_judging_function`` (the checker; null: HardTests' default comparison, each line and the
    whole output right-stripped, which is grpo_wb's ``lines``), ``time_limit``/``memory_limit`` strings, ``solutions``
    [{code, language}]."""
    if row.get("question_content") is None:
        raise RowError("no statement (question_content): join the hardtests_problems row on pid")
    if row.get("test_cases") is None:
        raise RowError("no test_cases: join the hardtests_tests row on pid")
    raw = row["test_cases"]
    generated = decode_compressed_json(raw, "test_cases") if isinstance(raw, str) else raw
    public = _stdio_list(
        [
            t
            for t in row.get("public_test_cases") or []
            if isinstance(t, dict) and t.get("testtype", "stdin") == "stdin"
        ],
        "public_test_cases",
        "public",
    )
    cases = _joined(public, _stdio_list(generated, "test_cases", "generated"))
    if not cases.inputs:
        raise RowError("no tests")
    given_kit = row.get("test_cases_kit")
    kit = given_kit if isinstance(given_kit, dict) else {}
    ojf = kit.get("output_judging_function")
    checker = ojf if isinstance(ojf, str) and ojf.strip() else None
    refs = _references(_tagged_programs(row.get("solutions"), language))
    title = row.get("question_title")
    return ParsedRow(
        prompt=f"{title}\n\n{row['question_content']}" if title else str(row["question_content"]),
        cases=cases,
        row_id=None if row.get("pid") is None else str(row["pid"]),
        **refs,
        starter_code=str(row.get("starter_code") or ""),
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        checker=checker,
        checker_style="hardtests",
        **_limits(row.get("time_limit"), row.get("memory_limit"), "s", ("time_limit", "memory_limit")),
        extra={"platform": row.get("platform")},
        notes=_with_cap_note(("judged by its output judging function",) if checker else (), refs),
    )
