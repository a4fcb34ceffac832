"""``acecode``: TIGER-Lab/AceCode-87K (card; TIGER-AI-Lab/AceCoder e37ef2a): ``id``, ``question``, ``test_cases``
(assert statements), ``context_messages``.

Writer: :func:`grpo_wb.tasks.rowexport._acecode_row`. Trainer's reward: none named (grpo_wb's rule, the asserts).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import mbpp_entry_point
from grpo_wb.tasks.rowformats.common import Cases, ParsedRow, RowError, _chat_prompt, _json_field, _need


def _compiles(code: list[str], name: str) -> None:
    """A RowError naming the first statement of ``code`` that does not compile; all of them compiled as one module
    first (one compile, not one per statement: AceCode rows hold 10 to 30)."""
    try:
        compile("\n".join(code), name, "exec", dont_inherit=True)
        return
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    for i, t in enumerate(code):
        try:
            compile(t, f"{name}[{i}]", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            raise RowError(f"{name}[{i}] does not compile ({getattr(e, 'msg', e)})") from None
        except (RecursionError, MemoryError):
            raise RowError(f"{name}[{i}] does not compile (nested too deeply)") from None


def parse_acecode(row: dict[str, Any]) -> ParsedRow:
    """TIGER-Lab/AceCode-87K (and AceCode-V2-122K): ``id``, ``question``, ``test_cases`` (assert statements; V2's
    processing script calls them ``tests``), ``context_messages`` (the chat prompt, kept as the task's messages),
    ``inferences`` (sampled programs with a pass rate over the tests before filtering: counted, not imported)."""
    _need(row, "question")
    key = "test_cases" if row.get("test_cases") is not None else "tests"
    if row.get(key) is None:
        raise RowError("missing field 'test_cases' (or 'tests')")
    tests = row[key]
    tests = _json_field(tests, key) if isinstance(tests, (str, bytes)) else tests
    if not isinstance(tests, (list, tuple)) or not all(isinstance(t, str) for t in tests):
        raise RowError(f"{key} must be a list of assert statements")
    code = [t for t in tests if t.strip()]
    if not code:
        raise RowError(f"{key} is empty")
    _compiles(code, key)
    fn = mbpp_entry_point(code[:1], None) or mbpp_entry_point(code, None)  # the first assert names it, mostly
    if not fn:
        raise RowError(f"cannot tell which function {key} call")
    ctx = row.get("context_messages")
    text, messages = _chat_prompt(ctx) if isinstance(ctx, list) and ctx else (str(row["question"]), None)
    inferences = row.get("inferences")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=Cases("assert", code=code, fn_name=fn),
        row_id=None if row.get("id") is None else str(row["id"]),
        extra={"origin": row.get("source"), "n_inferences": len(inferences) if isinstance(inferences, list) else None},
    )
