"""``open-r1``: huggingface/open-r1 ``src/open_r1/rewards.py`` (``code_reward``) and the verifiable-coding-problems
cards: ``verification_info`` {``language``, ``test_cases``: [{``input``, ``output``, ``type``, ``fn_name``}]} (a
struct or a JSON string: PrimeIntellect's cases, :func:`primeintellect_cases`); open-r1/codeforces rows
(``official_tests``, ``generated_tests``, ``generated_checker``, limits) too.

Writer: :func:`grpo_wb.tasks.rowexport.build_row` (``--format open-r1``). Trainer's reward: open-r1's
``code_reward`` (``grpo_wb.scoring.rules.RULES["open-r1"]``), ``cf_code_reward`` for open-r1/codeforces rows
(``RULES["open-r1-codeforces"]``).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE
from grpo_wb.tasks.rowformats.common import Cases, ParsedRow, RowError, _chat_prompt, _json_field, _need, _text
from grpo_wb.tasks.rowformats.limits import _positive


def row_language(value: Any) -> str:
    """A row's ``language`` (open-r1: ``python`` or ``cpp``) as a task's; another language is the row's skip reason."""
    lang = str(value or "python").strip().lower()
    if lang in ("python", "python3", "py"):
        return "python"
    if lang in ("cpp", "c++", "cpp17", "c++17"):
        return "cpp"
    raise RowError(f"language {lang} (grpo_wb runs Python and C++)")


def primeintellect_cases(tcs: list[Any]) -> Cases:
    """PrimeIntellect's ``test_cases`` [{input, output, type, fn_name}]: ``stdin_stdout`` as stdio tests,
    ``function_call`` as PrimeIntellect's own rule has them (the input pasted as the argument list, ``str`` of the
    result compared stripped)."""
    types = {str(t.get("type") or "stdin_stdout") if isinstance(t, dict) else "?" for t in tcs}
    if "?" in types:
        raise RowError("a test case is not an object")
    if types == {"stdin_stdout"}:
        return Cases(
            "stdio",
            [_text(t.get("input", ""), "test input") for t in tcs],
            [_text(t.get("output", ""), "test output") for t in tcs],
        )
    if types == {"function_call"}:
        fn = next((t.get("fn_name") for t in tcs if t.get("fn_name")), None)
        if not fn or not str(fn).isidentifier():
            raise RowError("function_call test cases without a fn_name")
        code = [
            f"assert str(candidate({t.get('input', '')})).strip() == {str(t.get('output', '')).strip()!r}" for t in tcs
        ]
        return Cases("assert", code=code, fn_name=str(fn))
    raise RowError(f"test cases mix types {', '.join(sorted(types))}")


def parse_open_r1(row: dict[str, Any]) -> ParsedRow:
    if "verification_info" not in row and "official_tests" in row:
        return _parse_codeforces(row)
    _need(row, "verification_info")
    vi = _json_field(row["verification_info"], "verification_info")
    if not isinstance(vi, dict) or not isinstance(vi.get("test_cases"), list):
        raise RowError("verification_info needs a test_cases list")
    language = row_language(vi.get("language"))
    tcs = vi["test_cases"]
    if not tcs:
        raise RowError("verification_info has no test cases")
    cases = primeintellect_cases(tcs)
    if language == "cpp" and cases.kind != "stdio":
        raise RowError("a C++ row with function_call tests (grpo_wb runs C++ programs on stdin only)")
    unrewardable = None
    if cases.kind == "assert":
        unrewardable = (
            "function_call cases, which open-r1's code_reward runs as stdin programs (type and fn_name "
            "ignored): it scores them 0"
        )
    prompt = row.get("prompt") if isinstance(row.get("prompt"), (str, list)) else row.get("problem_statement")
    if prompt is None:
        raise RowError("missing field 'prompt' (or 'problem_statement')")
    text, messages = _chat_prompt(prompt)
    rid = row.get("problem_id") or row.get("in_source_id")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if rid is None else str(rid),
        solution=row.get("gold_standard_solution") if isinstance(row.get("gold_standard_solution"), str) else None,
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        extra={
            "origin": row.get("source"),
            "task_type": row.get("task_type"),
            "trainer_reward": "open-r1",
            "trainer_unrewardable": unrewardable,
        },
        notes=(unrewardable,) if unrewardable else (),
    )


def _stdio_sets(row: dict[str, Any], columns: dict[str, str]) -> Cases:
    """Stdio cases from lists of {input, output} in several columns, each column a test set."""
    ins: list[str] = []
    outs: list[str] = []
    sets: list[str] = []
    for column, name in columns.items():
        tests = row.get(column)
        if not isinstance(tests, list):
            continue
        for t in tests:
            if not isinstance(t, dict):
                raise RowError(f"{column} must be a list of {{input, output}}")
            ins.append(_text(t.get("input", ""), f"{column} input"))
            outs.append(_text(t.get("output", ""), f"{column} output"))
            sets.append(name)
    return Cases("stdio", ins, outs, sets=sets)


def _parse_codeforces(row: dict[str, Any]) -> ParsedRow:
    tests = row.get("official_tests") or []
    if not isinstance(tests, list) or not tests:
        raise RowError("official_tests is empty")
    cases = _stdio_sets(row, {"official_tests": "official", "generated_tests": "generated"})
    if isinstance(row.get("prompt"), (str, list)):
        text, messages = _chat_prompt(row["prompt"])
    else:
        _need(row, "description")
        parts = [
            row.get("title"),
            row["description"],
            row.get("input_format") and "Input\n" + row["input_format"],
            row.get("output_format") and "Output\n" + row["output_format"],
        ]
        text, messages = "\n\n".join(str(p) for p in parts if p), None
    language = row_language(row.get("language"))
    checker = row.get("generated_checker")
    if checker is not None and (not isinstance(checker, str) or not checker.strip()):
        checker = None
    notes = []
    if checker:
        notes.append("judged by its checker (several answers may be right)")
    if row.get("interaction_format"):
        notes.append("interactive (open-r1 runs no interactor: it cannot grade it either)")
    if row.get("input_mode") == "file":
        notes.append("reads input.txt and writes output.txt, not stdin and stdout")
    if (
        isinstance(row.get("generated_tests"), int)
        and not isinstance(row["generated_tests"], bool)
        and row["generated_tests"] > 0
    ):
        notes.append("its generated tests live outside the row (open-r1's test_cases_*.parquet): official tests only")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if row.get("id") is None else str(row["id"]),
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        checker=checker,
        time_limit=_positive(row.get("time_limit"), "time_limit"),
        memory_limit_mb=_positive(row.get("memory_limit"), "memory_limit", whole=True),
        extra={
            "rating": row.get("rating"),
            "contest_id": row.get("contest_id"),
            "index": row.get("index"),
            "trainer_reward": "open-r1-codeforces",
        },
        notes=tuple(notes),
    )
