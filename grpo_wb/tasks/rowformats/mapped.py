"""``rows``: any row file, with ``--map`` naming the columns (:data:`MAP_FIELDS`).

Writer: none (its tasks are read back from the task, :func:`grpo_wb.tasks.rowexport.parsed_from_task`: the map is
not kept). Trainer's reward: none named (grpo_wb's rule).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE, mbpp_entry_point
from grpo_wb.tasks.rowformats.common import (
    Cases,
    ParsedRow,
    RowError,
    _chat_prompt,
    _json_field,
    _references,
    _with_cap_note,
    io_cases,
)
from grpo_wb.tasks.rowformats.kodcode_pytest import _solution_imports

#: the fields ``rows --map`` can name
MAP_FIELDS = ("prompt", "tests", "inputs", "outputs", "fn_name", "task_id", "solution", "asserts", "test_code")


def parse_mapping(spec: str) -> dict[str, str]:
    """``prompt=COL,tests=COL,...`` into a dict (a ValueError names what is wrong)."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, col = (x.strip() for x in part.partition("="))
        if not sep or not col or not key:
            raise ValueError(f"--map: {part!r} is not FIELD=COLUMN")
        if key not in MAP_FIELDS:
            raise ValueError(f"--map: unknown field {key!r} (known: {', '.join(MAP_FIELDS)})")
        if key in out:
            raise ValueError(f"--map: {key} given twice")
        out[key] = col
    if "prompt" not in out:
        raise ValueError("--map needs prompt=COLUMN")
    given = [k for k in ("tests", "inputs", "asserts", "test_code") if k in out]
    if not given:
        raise ValueError("--map needs the tests: tests=COL, inputs=COL,outputs=COL, asserts=COL or test_code=COL")
    if len(given) > 1:
        raise ValueError(f"--map: the tests come from one place; got {' and '.join(given)}")
    if ("inputs" in out) != ("outputs" in out):
        raise ValueError("--map: inputs and outputs go together")
    return out


def parse_mapped(row: dict[str, Any], mapping: dict[str, str]) -> ParsedRow:
    def col(key: str) -> Any:
        name = mapping[key]
        if name not in row:
            raise RowError(f"missing column {name!r} (mapped to {key})")
        return row[name]

    text, messages = _chat_prompt(col("prompt"))
    fn = str(col("fn_name")) if "fn_name" in mapping and col("fn_name") else None
    if "test_code" in mapping:
        if not fn:
            imported = _solution_imports(str(col("test_code")))
            fn = imported[0] if imported else None
        cases = Cases("pytest", code=[str(col("test_code"))], fn_name=fn)
    elif "asserts" in mapping:
        code = _json_field(col("asserts"), mapping["asserts"])
        code = [code] if isinstance(code, str) else code
        if not isinstance(code, list) or not all(isinstance(c, str) for c in code):
            raise RowError(f"{mapping['asserts']} must be a list of assert statements")
        cases = Cases("assert", code=code, fn_name=fn or mbpp_entry_point(code, None))
    elif "inputs" in mapping:
        cases = io_cases(
            {
                "inputs": _json_field(col("inputs"), mapping["inputs"]),
                "outputs": _json_field(col("outputs"), mapping["outputs"]),
                "fn_name": fn,
            },
            name=mapping["inputs"],
        )
    else:
        tests = _json_field(col("tests"), mapping["tests"])
        if isinstance(tests, list) and all(isinstance(t, dict) for t in tests):
            tests = {
                "inputs": [t.get("input") for t in tests],
                "outputs": [t.get("output") for t in tests],
                "fn_name": fn,
            }
        elif isinstance(tests, dict) and fn and not tests.get("fn_name"):
            tests = {**tests, "fn_name": fn}
        cases = io_cases(tests, name=mapping["tests"])
    rid = col("task_id") if "task_id" in mapping else None
    sol = col("solution") if "solution" in mapping else None
    # a list column (DeepCoder's derived copies carry `solutions`): the first is the reference, the rest more
    refs = _references(list(sol) if isinstance(sol, (list, tuple)) else [sol])
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if rid is None else str(rid),
        **refs,
        prelude=APPS_PRELUDE,
        notes=_with_cap_note((), refs),
    )
