"""``code-contests``: google-deepmind/code_contests ``contest_problem.proto``: ``public_tests`` /
``private_tests`` / ``generated_tests`` {``input``: [], ``output``: []}, judged by tokens (``OutputsMatch``); the
Python 3 (or C++) programs of ``solutions`` and ``incorrect_solutions`` as references and wrong programs.

Writer: none of its own (its tasks are exported in another schema: verl's ``data_source`` ``codecontests``,
:data:`grpo_wb.tasks.rowexport.VERL_DATA_SOURCES`). Trainer's reward: none named (grpo_wb's rule, by tokens).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE
from grpo_wb.tasks.rowformats.common import Cases, ParsedRow, RowError, _need, _references, _text, _with_cap_note


def parse_code_contests(row: dict[str, Any], language: str = "python") -> ParsedRow:
    _need(row, "description")
    ins: list[str] = []
    outs: list[str] = []
    sets: list[str] = []
    for col in ("public_tests", "private_tests", "generated_tests"):
        t = row.get(col) or {}
        if not isinstance(t, dict) or len(t.get("input") or []) != len(t.get("output") or []):
            raise RowError(f"{col} must be {{input: [...], output: [...]}} of equal length")
        ins += [_text(x, f"{col} input") for x in t.get("input") or []]
        outs += [_text(x, f"{col} output") for x in t.get("output") or []]
        sets += [col.split("_")[0]] * len(t.get("input") or [])
    if not ins:
        raise RowError("no public, private or generated tests")
    refs = _references(_python3(row.get("solutions"), language), _python3(row.get("incorrect_solutions"), language))
    notes = ("reads input from a file, not stdin",) if row.get("input_file") else ()
    return ParsedRow(
        prompt=str(row["description"]),
        cases=Cases("stdio", ins, outs, sets=sets),
        row_id=None if row.get("name") is None else str(row["name"]),
        **refs,
        output_match="tokens",
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        extra={"difficulty": row.get("difficulty"), "cf_rating": row.get("cf_rating")},
        notes=_with_cap_note(notes, refs),
    )


def _python3(sols: Any, language: str = "python") -> list[str]:
    """The Python 3 programs (language 3; C++: 2) of CodeContests' ``{language: [int], solution: [str]}``."""
    if not isinstance(sols, dict):
        return []
    want = 2 if language == "cpp" else 3
    return [s for lang, s in zip(sols.get("language") or [], sols.get("solution") or []) if lang == want]
