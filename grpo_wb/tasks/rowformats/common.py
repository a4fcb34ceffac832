"""What every row format shares: :class:`RowError` (a row that cannot be a task, and why), the neutral
:class:`Cases` and :class:`ParsedRow` a format reads a row into, and the helpers the formats read fields with
(JSON or decoded columns, LiveCodeBench's compressed JSON, chat prompts, reference programs and their cap, stdio
and call cases, test sets).

Pickled test cases are decoded by an unpickler that refuses every global, so a hostile file cannot run code here
(LiveCodeBench's own loader would).
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import pickle
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grpo_wb.tasks.records import MAX_SOLUTIONS, distinct_programs


class RowError(ValueError):
    """A row that cannot become a task; the message says why, in a few words (the skip reason)."""


@dataclass(frozen=True)
class Cases:
    """A row's tests, as neutral as the formats allow."""

    kind: str
    """``stdio`` (text in, text out), ``call`` (argument lists in, values out), ``assert`` or ``pytest``."""
    inputs: list[Any] = field(default_factory=list)
    """stdio: stdin texts; call: argument lists."""
    outputs: list[Any] = field(default_factory=list)
    """stdio: expected stdout texts; call: expected return values."""
    fn_name: str | None = None
    """call: the function (or ``Solution`` method) called."""
    code: list[str] = field(default_factory=list)
    """assert: one statement per test; pytest: the test module's source (one element)."""
    sets: list[str] = field(default_factory=list)
    """stdio: the test set each case belongs to (``official``, ``generated``, ...; :data:`TEST_SETS`), in the
    tests' names; empty: one set, named ``io``."""


@dataclass(frozen=True)
class ParsedRow:
    """One dataset row, read: what a task is built from and what an export writes back."""

    prompt: str
    """The text the model sees (the last user message of a chat prompt)."""
    cases: Cases
    """The tests."""
    row_id: str | None = None
    """The row's own identifier, when its schema has one."""
    messages: list[dict[str, Any]] | None = None
    """The chat prompt as given (kept for exports; the backends send ``prompt``)."""
    starter_code: str = ""
    """Code the prompt asks the model to complete (LeetCode ``class Solution`` stubs)."""
    solution: str | None = None
    """A reference solution, when the row has one (``tasks validate`` runs it)."""
    solutions: tuple[str, ...] = ()
    """The row's other reference programs (distinct, capped): the task's ``solutions``."""
    wrong_solutions: tuple[str, ...] = ()
    """Programs the row labels wrong (capped): the task's ``wrong_solutions``."""
    solutions_dropped: int = 0
    """Programs the cap of ``MAX_SOLUTIONS`` left out of the two lists (counted over the import)."""
    output_match: str = "lines"
    """How stdout is compared (see :mod:`grpo_wb.tasks.records`)."""
    call_compare: str = "apps_equal"
    """call: the comparison, ``apps_equal`` (APPS/TACO) or ``values_equal`` (LiveCodeBench, exact)."""
    prelude: str = ""
    """Imports run before the completion (APPS's harness imports for APPS-family rows)."""
    language: str = "python"
    """What the programs are written in (``python`` or ``cpp``: :data:`grpo_wb.formats.schema.Language`)."""
    checker: str | None = None
    """The row's special judge (Python source), run on each test's output instead of comparing it."""
    checker_style: str = "open-r1"
    """How that checker is called (:data:`grpo_wb.formats.schema.CheckerStyle`)."""
    time_limit: float | None = None
    """The row's seconds per test."""
    memory_limit_mb: int | None = None
    """The row's memory per test (MB)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Small facts kept in the task's metadata (data_source, difficulty, ...)."""
    notes: tuple[str, ...] = ()
    """Things worth counting over the import (e.g. rows a trainer's own scorer would mis-run)."""


def _need(row: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in row or row[k] is None]
    if missing:
        raise RowError(f"missing field {missing[0]!r}")


def _json_field(value: Any, name: str) -> Any:
    """A field that may be stored as a JSON string or as the decoded structure."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str):
        if not value.strip():
            raise RowError(f"{name} is empty")
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise RowError(f"{name} is not JSON ({e.msg})") from None
    return value


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def decode_compressed_json(text: str, name: str) -> Any:
    """JSON, or LiveCodeBench's base64(zlib(pickle(JSON string))), unpickled without globals."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        pass
    except RecursionError:
        raise RowError(f"{name} is JSON nested too deeply to read") from None
    try:
        inner = _NoGlobals(io.BytesIO(zlib.decompress(base64.b64decode(text)))).load()
    except Exception as e:  # binascii, zlib and pickle each raise their own (RecursionError among them)
        raise RowError(f"{name} is neither JSON nor base64/zlib/pickle ({type(e).__name__})") from None
    if isinstance(inner, (bytes, str)):
        try:
            return json.loads(inner)
        except json.JSONDecodeError as e:
            raise RowError(f"{name} decodes to text that is not JSON ({e.msg})") from None
        except RecursionError:
            raise RowError(f"{name} decodes to JSON nested too deeply to read") from None
    return inner


def _text(v: Any, name: str) -> str:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return "\n".join(v) + "\n"
    if not isinstance(v, str):
        raise RowError(f"{name} must be text, got {type(v).__name__}")
    return v


def _json_lines_args(text: Any, name: str) -> list[Any]:
    """One JSON value per line, one line per argument (LiveCodeBench, verl's prime_code)."""
    if not isinstance(text, str):
        raise RowError(f"{name} must be text with one JSON value per line")
    try:
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    except json.JSONDecodeError as e:
        raise RowError(f"{name} is not one JSON value per line ({e.msg})") from None


def _chat_prompt(value: Any) -> tuple[str, list[dict[str, Any]] | None]:
    if isinstance(value, str):
        return value, None
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        users = [m for m in value if m.get("role") == "user"]
        if not users:
            raise RowError("prompt has no user message")
        if not isinstance(users[-1]["content"], str):
            raise RowError(f"the user message's content is not text ({type(users[-1]['content']).__name__})")
        return users[-1]["content"], [dict(m) for m in value]
    raise RowError("prompt must be text or a list of chat messages {role, content}")


#: the note a row gets when the cap left some of its programs out
CAPPED_NOTE = (
    f"over {MAX_SOLUTIONS} reference programs besides the canonical one, or over {MAX_SOLUTIONS} wrong "
    f"ones: the first {MAX_SOLUTIONS} distinct of each kept"
)


def _solution_list(value: Any) -> list[Any]:
    """A ``solutions`` column (a JSON list, as text or decoded) as a list; [] when it is not one."""
    try:
        sols = _json_field(value, "solutions") if value not in (None, "") else None
    except RowError:
        return []
    return sols if isinstance(sols, list) else []


def _references(programs: Sequence[Any], wrong: Sequence[Any] = ()) -> dict[str, Any]:
    """ParsedRow fields for a row's programs: the first reference is ``solution`` (when it is text), the other
    distinct ones ``solutions``; ``wrong`` the ``wrong_solutions``; each list capped, the drop counted and noted."""
    first = programs[0] if programs and isinstance(programs[0], str) else None
    more, n_more = distinct_programs(programs[1:], exclude=[first], cap=MAX_SOLUTIONS)
    bad, n_bad = distinct_programs(wrong, cap=MAX_SOLUTIONS)
    return {"solution": first, "solutions": more, "wrong_solutions": bad, "solutions_dropped": n_more + n_bad}


def _with_cap_note(notes: tuple[str, ...], refs: dict[str, Any]) -> tuple[str, ...]:
    return notes + (CAPPED_NOTE,) if refs["solutions_dropped"] else notes


def io_cases(io_obj: Any, *, name: str, args_as: str = "list") -> Cases:
    """``{inputs, outputs, fn_name?}`` as cases; call inputs are argument lists (``list``) or JSON lines."""
    if (
        not isinstance(io_obj, dict)
        or not isinstance(io_obj.get("inputs"), list)
        or not isinstance(io_obj.get("outputs"), list)
    ):
        raise RowError(f"{name} needs lists 'inputs' and 'outputs'")
    ins, outs = io_obj["inputs"], io_obj["outputs"]
    if not ins:
        raise RowError(f"{name} has no tests")
    if len(ins) != len(outs):
        raise RowError(f"{name} has {len(ins)} inputs but {len(outs)} outputs")
    fn = io_obj.get("fn_name")
    if fn:
        if not isinstance(fn, str) or not fn.isidentifier():
            raise RowError(f"fn_name {fn!r} is not a Python identifier")
        if args_as == "json-lines" and all(isinstance(x, str) for x in ins):
            return Cases(
                "call",
                [_json_lines_args(x, f"{name} input") for x in ins],
                [json.loads(o) if isinstance(o, str) else o for o in outs],
                fn,
            )
        return Cases("call", [x if isinstance(x, list) else [x] for x in ins], list(outs), fn)
    return Cases("stdio", [_text(x, f"{name} input") for x in ins], [_text(o, f"{name} output") for o in outs])


TEST_SETS = {
    "open-r1": ("official", "generated"),
    "code-contests": ("public", "private", "generated"),
    "hardtests": ("public", "generated"),
}
"""The test sets a format's rows keep apart (``tasks import --test-set``): open-r1/codeforces' ``official_tests``
and ``generated_tests`` (open-r1's reward runs both), CodeContests' public, private and generated tests."""


def select_test_set(p: ParsedRow, name: str) -> ParsedRow:
    """The row with only the tests of set ``name`` (a RowError when it has none)."""
    c = p.cases
    keep = [i for i, s in enumerate(c.sets) if s == name]
    if not keep:
        have = sorted(set(c.sets))
        raise RowError(f"no {name} tests" + (f" (it has {', '.join(have)})" if have else ""))
    return dataclasses.replace(
        p,
        cases=dataclasses.replace(
            c, inputs=[c.inputs[i] for i in keep], outputs=[c.outputs[i] for i in keep], sets=[name] * len(keep)
        ),
    )


def _stdio_list(tests: Any, name: str, test_set: str) -> Cases:
    """``[{input, output}, ...]`` as stdio cases of one test set."""
    if not isinstance(tests, list):
        raise RowError(f"{name} must be a list of {{input, output}}")
    ins, outs = [], []
    for t in tests:
        if not isinstance(t, dict):
            raise RowError(f"{name} must be a list of {{input, output}}")
        ins.append(_text(t.get("input", ""), f"{name} input"))
        outs.append(_text(t.get("output", ""), f"{name} output"))
    return Cases("stdio", ins, outs, sets=[test_set] * len(ins))


_LANGUAGE_TAGS = {"python": ("python", "python3", "py3", "py"), "cpp": ("cpp", "c++", "cpp17", "c++17", "gnu++17")}


def _tagged_programs(items: Any, language: str, key: str = "code") -> list[str]:
    """The programs of a list of ``{code, language}`` written in ``language`` (py2 is not Python 3)."""
    out = []
    for item in items if isinstance(items, list) else []:
        if (
            isinstance(item, dict)
            and isinstance(item.get(key), str)
            and str(item.get("language", "")).strip().lower() in _LANGUAGE_TAGS[language]
        ):
            out.append(item[key])
    return out
