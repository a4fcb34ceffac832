"""``livecodebench``: LiveCodeBench ``lcb_runner/benchmarks/code_generation.py``: ``public_test_cases`` /
``private_test_cases`` (JSON, or base64/zlib/pickle), ``metadata.func_name``, ``starter_code``. Its cases and
prompt are read the same in DeepCoder's lcbv5 rows (:func:`lcb_cases`, :func:`lcb_prompt`).

Writer: none of its own (DeepCoder's lcbv5 shape and NeMo Gym's rows hold such tasks). Trainer's reward:
LiveCodeBench's ``lcb_runner`` (``grpo_wb.scoring.rules.RULES["livecodebench"]``).
"""

from __future__ import annotations

import json
from typing import Any

from grpo_wb.tasks.rowformats.common import (
    Cases,
    ParsedRow,
    RowError,
    _json_field,
    _json_lines_args,
    _need,
    _text,
    decode_compressed_json,
)


def lcb_cases(tests: list[dict[str, Any]], meta: Any) -> tuple[Cases, str, str]:
    """LiveCodeBench's [{input, output, testtype}] as ``(cases, output_match, call_compare)``: ``functional`` tests
    are calls of ``meta["func_name"]`` (one JSON value per input line, the output JSON) compared exactly,
    ``stdin`` tests stdio compared by LiveCodeBench's line rule."""
    types = {t.get("testtype", "stdin") for t in tests}
    if types == {"functional"}:
        fn = meta.get("func_name") if isinstance(meta, dict) else None
        if not fn or not str(fn).isidentifier():
            raise RowError("functional tests without metadata.func_name")
        outs = []
        for t in tests:
            try:
                outs.append(json.loads(t["output"]))
            except (json.JSONDecodeError, TypeError):
                raise RowError("a functional output is not JSON") from None
        return (
            Cases("call", [_json_lines_args(t["input"], "functional input") for t in tests], outs, str(fn)),
            "lines",
            "values_equal",
        )
    if types == {"stdin"}:
        return (
            Cases("stdio", [_text(t["input"], "input") for t in tests], [_text(t["output"], "output") for t in tests]),
            "numeric-lines",
            "apps_equal",
        )
    raise RowError(f"test cases mix types {', '.join(sorted(map(str, types)))}")


def lcb_prompt(question: str, starter: str) -> str:
    """LiveCodeBench's question with its starter code (a ``class Solution`` stub) under it."""
    return question + (f"\n\n{starter.rstrip()}\n" if starter.strip() else "")


def parse_livecodebench(row: dict[str, Any]) -> ParsedRow:
    _need(row, "question_content", "public_test_cases")
    tests: list[Any] = []
    for col in ("public_test_cases", "private_test_cases"):
        v = row.get(col)
        if v in (None, "", []):
            continue
        got = decode_compressed_json(v, col) if isinstance(v, str) else v
        if not isinstance(got, list):
            raise RowError(f"{col} must be a list of {{input, output, testtype}}")
        tests += got
    if not tests or not all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
        raise RowError("no test cases with input and output")
    meta = _json_field(row["metadata"], "metadata") if row.get("metadata") not in (None, "") else {}
    starter = row.get("starter_code") or ""
    cases, match, compare = lcb_cases(tests, meta)
    prompt = lcb_prompt(str(row["question_content"]), starter)
    return ParsedRow(
        prompt=prompt,
        cases=cases,
        row_id=None if row.get("question_id") is None else str(row["question_id"]),
        starter_code=starter,
        output_match=match,
        call_compare=compare,
        extra={
            "platform": row.get("platform"),
            "difficulty": row.get("difficulty"),
            "contest_date": row.get("contest_date"),
            "trainer_reward": "livecodebench",
        },
    )
