"""The row schemas code-RL datasets are trained from, read into canonical tasks.

Each format reads one row into a :class:`ParsedRow`: the prompt and the tests in
a harness-neutral form (stdin/stdout cases, call cases with argument lists,
assert statements, or a pytest module). :func:`task_from_parsed` makes it a
:class:`~grpo_wb.tasks.records.Task`; the exporters write a ``ParsedRow`` back
in another trainer's schema. Sources, as read (see ``docs/datasets.md``):

* ``verl``: volcengine/verl ``docs/preparation/prepare_data.rst`` and
  ``verl/utils/reward_score/prime_code`` / ``sandbox_fusion``: ``data_source``,
  ``prompt`` (chat messages), ``ability``, ``reward_model.ground_truth`` (a JSON
  string ``{inputs, outputs, fn_name?}`` or ``{assert_case}``; LiveCodeBench's
  base64/zlib/pickle encoding too), ``extra_info``.
* ``open-r1``: huggingface/open-r1 ``src/open_r1/rewards.py`` (``code_reward``)
  and the verifiable-coding-problems cards: ``verification_info`` {``language``,
  ``test_cases``: [{``input``, ``output``, ``type``, ``fn_name``}]} (a struct or
  a JSON string); open-r1/codeforces rows (``official_tests``) too.
* ``taco`` / ``apps-rows``: BAAI/TACO and codeparrot/apps: ``question``,
  ``input_output`` (JSON string), ``starter_code``, ``solutions``.
* ``code-contests``: google-deepmind/code_contests ``contest_problem.proto``:
  ``public_tests`` / ``private_tests`` / ``generated_tests`` {``input``: [],
  ``output``: []}, judged by tokens (``OutputsMatch``).
* ``livecodebench``: LiveCodeBench ``lcb_runner/benchmarks/code_generation.py``:
  ``public_test_cases`` / ``private_test_cases`` (JSON, or base64/zlib/pickle),
  ``metadata.func_name``, ``starter_code``.
* ``kodcode``: KodCode-AI/kodcode ``pipeline/step2.2_gen_unit_tests.py``: a
  pytest module in ``test`` (or ``test_code``) importing ``from solution``.
* ``rows``: any row file, with ``--map`` naming the columns.

Pickled test cases are decoded by an unpickler that refuses every global, so a
hostile file cannot run code here (LiveCodeBench's own loader would).
"""
from __future__ import annotations

import ast
import base64
import io
import json
import pickle
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from tqdm import tqdm

from grpo_wb.errors import UserError, one_line
from grpo_wb.tasks.importers import (
    APPS_PRELUDE,
    apps_io_tests,
    apps_prompt,
    mbpp_entry_point,
)
from grpo_wb.tasks.records import Task, TestCase, parse_task, write_tasks
from grpo_wb.tasks.rows import (
    RowSource,
    count_rows,
    iter_rows,
    resolve_source,
    row_hash,
)

FORMATS = ("verl", "open-r1", "taco", "apps-rows", "code-contests", "livecodebench", "kodcode", "rows")

#: the data_source values verl's default_compute_score sends to a code scorer (verl/utils/reward_score/__init__.py)
VERL_CODE_SOURCES = ("codecontests", "apps", "codeforces", "taco")


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
    output_match: str = "lines"
    """How stdout is compared (see :mod:`grpo_wb.tasks.records`)."""
    call_compare: str = "apps_equal"
    """call: the comparison, ``apps_equal`` (APPS/TACO) or ``values_equal`` (LiveCodeBench, exact)."""
    prelude: str = ""
    """Imports run before the completion (APPS's harness imports for APPS-family rows)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Small facts kept in the task's metadata (data_source, difficulty, ...)."""
    notes: tuple[str, ...] = ()
    """Things worth counting over the import (e.g. rows a trainer's own scorer would mis-run)."""


# ----------------------------------------------------------------------------- helpers


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
    try:
        inner = _NoGlobals(io.BytesIO(zlib.decompress(base64.b64decode(text)))).load()
    except Exception as e:  # binascii, zlib and pickle each raise their own
        raise RowError(f"{name} is neither JSON nor base64/zlib/pickle ({type(e).__name__})") from None
    if isinstance(inner, (bytes, str)):
        try:
            return json.loads(inner)
        except json.JSONDecodeError as e:
            raise RowError(f"{name} decodes to text that is not JSON ({e.msg})") from None
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
        return str(users[-1]["content"]), [dict(m) for m in value]
    raise RowError("prompt must be text or a list of chat messages {role, content}")


def _first_solution(value: Any) -> str | None:
    try:
        sols = _json_field(value, "solutions") if value not in (None, "") else None
    except RowError:
        return None
    if isinstance(sols, list) and sols and isinstance(sols[0], str):
        return sols[0]
    return None


def io_cases(io_obj: Any, *, name: str, args_as: str = "list") -> Cases:
    """``{inputs, outputs, fn_name?}`` as cases; call inputs are argument lists (``list``) or JSON lines."""
    if not isinstance(io_obj, dict) or not isinstance(io_obj.get("inputs"), list) \
            or not isinstance(io_obj.get("outputs"), list):
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
            return Cases("call", [_json_lines_args(x, f"{name} input") for x in ins],
                         [json.loads(o) if isinstance(o, str) else o for o in outs], fn)
        return Cases("call", [x if isinstance(x, list) else [x] for x in ins], list(outs), fn)
    return Cases("stdio", [_text(x, f"{name} input") for x in ins], [_text(o, f"{name} output") for o in outs])


# ----------------------------------------------------------------------------- formats


def parse_verl(row: dict[str, Any]) -> ParsedRow:
    _need(row, "data_source", "prompt", "reward_model")
    rm = row["reward_model"]
    if not isinstance(rm, dict) or "ground_truth" not in rm:
        raise RowError("reward_model must be {style, ground_truth}")
    gt = rm["ground_truth"]
    gt = decode_compressed_json(gt, "ground_truth") if isinstance(gt, str) else gt
    prompt, messages = _chat_prompt(row["prompt"])
    notes: list[str] = []
    if isinstance(gt, dict) and gt.get("assert_case"):
        code = [c for c in gt["assert_case"] if isinstance(c, str)]
        cases = Cases("assert", code=code, fn_name=mbpp_entry_point(code, None))
    else:
        # prime_code reads call inputs as one JSON value per line; list inputs (APPS style) crash it
        json_lines = isinstance(gt, dict) and all(isinstance(x, str) for x in gt.get("inputs") or [])
        cases = io_cases(gt, name="ground_truth", args_as="json-lines")
        if cases.kind == "call" and not json_lines:
            notes.append("call-based with list inputs, which verl's prime_code cannot run (it scores them 0)")
    if row["data_source"] not in VERL_CODE_SOURCES:
        notes.append(f"data_source {row['data_source']!r} is not routed to a code scorer by verl's "
                     "default_compute_score")
    extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else {}
    rid = extra.get("index") if extra else None
    return ParsedRow(prompt=prompt, messages=messages, cases=cases, prelude=APPS_PRELUDE,
                     row_id=None if rid is None else f"{row['data_source']}/{rid}",
                     extra={"data_source": row["data_source"], "ability": row.get("ability")}, notes=tuple(notes))


def parse_open_r1(row: dict[str, Any]) -> ParsedRow:
    if "verification_info" not in row and "official_tests" in row:
        return _parse_codeforces(row)
    _need(row, "verification_info")
    vi = _json_field(row["verification_info"], "verification_info")
    if not isinstance(vi, dict) or not isinstance(vi.get("test_cases"), list):
        raise RowError("verification_info needs a test_cases list")
    lang = str(vi.get("language") or "python").lower()
    if lang not in ("python", "python3", "py"):
        raise RowError(f"language {lang} (grpo_wb runs Python)")
    tcs = vi["test_cases"]
    if not tcs:
        raise RowError("verification_info has no test cases")
    types = {str(t.get("type") or "stdin_stdout") if isinstance(t, dict) else "?" for t in tcs}
    if "?" in types:
        raise RowError("a test case is not an object")
    if types == {"stdin_stdout"}:
        cases = Cases("stdio", [_text(t.get("input", ""), "test input") for t in tcs],
                      [_text(t.get("output", ""), "test output") for t in tcs])
    elif types == {"function_call"}:
        fn = next((t.get("fn_name") for t in tcs if t.get("fn_name")), None)
        if not fn or not str(fn).isidentifier():
            raise RowError("function_call test cases without a fn_name")
        # PrimeIntellect's harness pastes the input as the argument list and compares str(result)
        code = [f"assert str(candidate({t.get('input', '')})).strip() == {str(t.get('output', '')).strip()!r}"
                for t in tcs]
        cases = Cases("assert", code=code, fn_name=str(fn))
    else:
        raise RowError(f"test cases mix types {', '.join(sorted(types))}")
    prompt = row.get("prompt") if isinstance(row.get("prompt"), (str, list)) else row.get("problem_statement")
    if prompt is None:
        raise RowError("missing field 'prompt' (or 'problem_statement')")
    text, messages = _chat_prompt(prompt)
    rid = row.get("problem_id") or row.get("in_source_id")
    return ParsedRow(prompt=text, messages=messages, cases=cases, row_id=None if rid is None else str(rid),
                     solution=row.get("gold_standard_solution") if isinstance(row.get("gold_standard_solution"),
                                                                               str) else None,
                     prelude=APPS_PRELUDE, extra={"origin": row.get("source"), "task_type": row.get("task_type")})


def _parse_codeforces(row: dict[str, Any]) -> ParsedRow:
    tests = row.get("official_tests") or []
    if not isinstance(tests, list) or not tests:
        raise RowError("official_tests is empty")
    cases = Cases("stdio", [_text(t.get("input", ""), "test input") for t in tests],
                  [_text(t.get("output", ""), "test output") for t in tests])
    if isinstance(row.get("prompt"), (str, list)):
        text, messages = _chat_prompt(row["prompt"])
    else:
        _need(row, "description")
        parts = [row.get("title"), row["description"], row.get("input_format") and "Input\n" + row["input_format"],
                 row.get("output_format") and "Output\n" + row["output_format"]]
        text, messages = "\n\n".join(str(p) for p in parts if p), None
    notes = ("has a checker (several answers may be right); grpo_wb compares with the official output",) \
        if row.get("generated_checker") else ()
    return ParsedRow(prompt=text, messages=messages, cases=cases, row_id=None if row.get("id") is None else str(row["id"]),
                     prelude=APPS_PRELUDE, extra={"rating": row.get("rating")}, notes=notes)


def parse_taco(row: dict[str, Any]) -> ParsedRow:
    _need(row, "question", "input_output")
    io_obj = _json_field(row["input_output"], "input_output")
    cases = io_cases(io_obj, name="input_output")
    starter = row.get("starter_code") or ""
    rid = row.get("problem_id")
    return ParsedRow(prompt=apps_prompt(str(row["question"]), starter, cases.kind == "call"), cases=cases,
                     row_id=None if rid is None else str(rid), starter_code=starter,
                     solution=_first_solution(row.get("solutions")), prelude=APPS_PRELUDE,
                     extra={"difficulty": row.get("difficulty")})


def parse_code_contests(row: dict[str, Any]) -> ParsedRow:
    _need(row, "description")
    ins: list[str] = []
    outs: list[str] = []
    for col in ("public_tests", "private_tests", "generated_tests"):
        t = row.get(col) or {}
        if not isinstance(t, dict) or len(t.get("input") or []) != len(t.get("output") or []):
            raise RowError(f"{col} must be {{input: [...], output: [...]}} of equal length")
        ins += [_text(x, f"{col} input") for x in t.get("input") or []]
        outs += [_text(x, f"{col} output") for x in t.get("output") or []]
    if not ins:
        raise RowError("no public, private or generated tests")
    sol = None
    sols = row.get("solutions")
    if isinstance(sols, dict):
        sol = next((s for lang, s in zip(sols.get("language") or [], sols.get("solution") or []) if lang == 3), None)
    notes = ("reads input from a file, not stdin",) if row.get("input_file") else ()
    return ParsedRow(prompt=str(row["description"]), cases=Cases("stdio", ins, outs),
                     row_id=None if row.get("name") is None else str(row["name"]), solution=sol,
                     output_match="tokens", prelude=APPS_PRELUDE,
                     extra={"difficulty": row.get("difficulty"), "cf_rating": row.get("cf_rating")}, notes=notes)


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
    types = {t.get("testtype", "stdin") for t in tests}
    meta = _json_field(row["metadata"], "metadata") if row.get("metadata") not in (None, "") else {}
    starter = row.get("starter_code") or ""
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
        cases = Cases("call", [_json_lines_args(t["input"], "functional input") for t in tests], outs, str(fn))
        match, compare = "lines", "values_equal"
    elif types == {"stdin"}:
        cases = Cases("stdio", [_text(t["input"], "input") for t in tests], [_text(t["output"], "output") for t in tests])
        match, compare = "numeric-lines", "apps_equal"
    else:
        raise RowError(f"test cases mix types {', '.join(sorted(map(str, types)))}")
    prompt = str(row["question_content"]) + (f"\n\n{starter.rstrip()}\n" if starter.strip() else "")
    return ParsedRow(prompt=prompt, cases=cases, row_id=None if row.get("question_id") is None
                     else str(row["question_id"]), starter_code=starter, output_match=match, call_compare=compare,
                     extra={"platform": row.get("platform"), "difficulty": row.get("difficulty"),
                            "contest_date": row.get("contest_date")})


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
    notes = ("tests import pytest: score with --site-packages (the sandbox imports the standard library only)",) \
        if any(n == "pytest" for n in _imported_modules(test)) else ()
    return ParsedRow(prompt=str(row["question"]), cases=Cases("pytest", code=[test], fn_name=str(fn)), notes=notes,
                     row_id=None if row.get("question_id") is None else str(row["question_id"]),
                     solution=row.get("solution") if isinstance(row.get("solution"), str) else None,
                     extra={"subset": row.get("subset"), "gpt_difficulty": row.get("gpt_difficulty")})


def _imported_modules(src: str) -> set[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return set()
    return {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def _solution_imports(test: str) -> list[str]:
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    return [a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "solution"
            for a in n.names if a.name != "*"]


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
            fn = (_solution_imports(str(col("test_code"))) or [None])[0]
        cases = Cases("pytest", code=[str(col("test_code"))], fn_name=fn)
    elif "asserts" in mapping:
        code = _json_field(col("asserts"), mapping["asserts"])
        code = [code] if isinstance(code, str) else code
        if not isinstance(code, list) or not all(isinstance(c, str) for c in code):
            raise RowError(f"{mapping['asserts']} must be a list of assert statements")
        cases = Cases("assert", code=code, fn_name=fn or mbpp_entry_point(code, None))
    elif "inputs" in mapping:
        cases = io_cases({"inputs": _json_field(col("inputs"), mapping["inputs"]),
                          "outputs": _json_field(col("outputs"), mapping["outputs"]), "fn_name": fn},
                         name=mapping["inputs"])
    else:
        tests = _json_field(col("tests"), mapping["tests"])
        if isinstance(tests, list) and all(isinstance(t, dict) for t in tests):
            tests = {"inputs": [t.get("input") for t in tests], "outputs": [t.get("output") for t in tests],
                     "fn_name": fn}
        elif isinstance(tests, dict) and fn and not tests.get("fn_name"):
            tests = {**tests, "fn_name": fn}
        cases = io_cases(tests, name=mapping["tests"])
    rid = col("task_id") if "task_id" in mapping else None
    sol = col("solution") if "solution" in mapping else None
    return ParsedRow(prompt=text, messages=messages, cases=cases, row_id=None if rid is None else str(rid),
                     solution=sol if isinstance(sol, str) else None, prelude=APPS_PRELUDE)


PARSERS: dict[str, Callable[[dict[str, Any]], ParsedRow]] = {
    "verl": parse_verl, "open-r1": parse_open_r1, "taco": parse_taco, "apps-rows": parse_taco,
    "code-contests": parse_code_contests, "livecodebench": parse_livecodebench, "kodcode": parse_kodcode,
}


def parse_row(fmt: str, row: Any, mapping: dict[str, str] | None = None) -> ParsedRow:
    """Read one row of ``fmt`` (``rows`` needs ``mapping``); a RowError says why it cannot be a task."""
    if not isinstance(row, dict):
        raise RowError(f"a row must be an object, got {type(row).__name__}")
    if fmt == "rows" and mapping is None:
        raise ValueError("the rows format needs a column mapping")
    try:
        return parse_mapped(row, mapping) if fmt == "rows" else PARSERS[fmt](row)
    except RowError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as e:  # a field of the wrong shape
        raise RowError(f"malformed {fmt} row ({type(e).__name__}: {one_line(e, 120)})") from None


# ----------------------------------------------------------------------------- tasks


def _pytest_tests(module: str) -> tuple[str, list[TestCase]]:
    """A KodCode-style pytest module as (setup, one test per test function and parameter set).

    ``from solution import ...`` lines go (the completion's names are already in scope, as rllm does);
    ``@pytest.mark.parametrize`` over a literal list expands; a test asking for a fixture is an error.
    """
    try:
        tree = ast.parse(module)
    except SyntaxError as e:
        raise RowError(f"test module does not compile ({e.msg})") from None
    keep = []
    tests: list[TestCase] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "solution":
            continue
        if isinstance(node, ast.Import) and any(a.name == "solution" for a in node.names):
            keep.append(ast.parse("solution = __import__('types').SimpleNamespace(**globals())").body[0])
            continue
        keep.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            tests += _expand_test(module, node)
    if not tests:
        raise RowError("the test module defines no test functions")
    return ast.unparse(ast.Module(body=keep, type_ignores=[])), tests


def _expand_test(src: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[TestCase]:
    params = [a.arg for a in fn.args.args]
    n_defaults = len(fn.args.defaults)
    if n_defaults:  # arguments with defaults are not fixtures
        params = params[:-n_defaults]
    cases: list[str] = []
    stacked = [d for d in fn.decorator_list if ast.unparse(d.func if isinstance(d, ast.Call) else d).endswith("parametrize")]
    if len(stacked) > 1:
        raise RowError(f"{fn.name}: stacked parametrize decorators (not supported)")
    for dec in fn.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        target = ast.unparse(call.func if call else dec)
        if not target.endswith("parametrize") or call is None:
            continue
        if len(call.args) < 2 or not isinstance(call.args[0], ast.Constant) \
                or not isinstance(call.args[1], (ast.List, ast.Tuple)):
            raise RowError(f"{fn.name}: parametrize over something other than a literal list")
        names = [n.strip() for n in str(call.args[0].value).split(",") if n.strip()]
        if not names:
            raise RowError(f"{fn.name}: parametrize without argument names")
        for i, elt in enumerate(call.args[1].elts):
            if isinstance(elt, ast.Call) and ast.unparse(elt.func).endswith("param"):
                raise RowError(f"{fn.name}: pytest.param cases (not supported)")
            values = ast.get_source_segment(src, elt) or ast.unparse(elt)
            if len(names) > 1:
                cases.append(f"{fn.name}(**dict(zip({names!r}, {values})))")
            else:
                cases.append(f"{fn.name}(**{{{names[0]!r}: {values}}})")
        params = [p for p in params if p not in names]
    if params:
        raise RowError(f"{fn.name} asks for pytest fixture {params[0]!r}, which grpo_wb does not provide")
    if not cases:
        cases = [f"{fn.name}()"]
    return [TestCase(name=fn.name if len(cases) == 1 else f"{fn.name}[{i}]", code=c) for i, c in enumerate(cases)]


def task_from_parsed(p: ParsedRow, task_id: str, metadata: dict[str, Any]) -> Task:
    """The canonical task for a parsed row; checked like a task file line (a RowError says what fails)."""
    setup = ""
    c = p.cases
    if c.kind == "stdio":
        tests = [TestCase(name=f"io_{i}", type="stdio", input=x, output=y)
                 for i, (x, y) in enumerate(zip(c.inputs, c.outputs))]
        entry = ""
    elif c.kind == "call":
        tests, entry = apps_io_tests({"inputs": c.inputs, "outputs": c.outputs, "fn_name": c.fn_name},
                                     compare=p.call_compare)
    elif c.kind == "assert":
        if not c.code:
            raise RowError("no assert tests")
        tests = [TestCase(name=f"assert_{i}", code=code) for i, code in enumerate(c.code)]
        entry = c.fn_name or ""
    else:
        setup, tests = _pytest_tests(c.code[0])
        entry = c.fn_name or ""
    task = Task(task_id=task_id, prompt=p.prompt, entry_point=entry, tests=tuple(tests), test_setup=setup,
                canonical_solution=p.solution, prelude=p.prelude,
                output_match=p.output_match if c.kind == "stdio" else "lines",
                metadata={**{k: v for k, v in p.extra.items() if v is not None}, **metadata})
    _, errs = parse_task(task.to_json())
    if errs:
        raise RowError(errs[0])
    return task


def source_metadata(fmt: str, path: str | Path, split: str | None, row: int, sha: str) -> dict[str, Any]:
    """Where a task came from (``path`` absolute), so an export can find and check its row."""
    meta: dict[str, Any] = {"source": fmt, "source_file": str(path), "source_row": row,
                            "row_sha256": sha}
    if split:
        meta["source_split"] = split
    return meta


@dataclass
class RowImportSummary:
    """What an import read, made and left out; nothing is dropped without being counted here."""

    read: int = 0
    """Rows read."""
    imported: int = 0
    """Tasks written."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Rows left out (``--skip-bad``), by reason."""
    notes: dict[str, int] = field(default_factory=dict)
    """Imported rows worth a second look, by what was noticed."""
    examples: list[str] = field(default_factory=list)
    """The first skipped rows, as ``PATH:ROW: reason``."""

    def skip(self, where: str, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1
        if len(self.examples) < 10:
            self.examples.append(f"{where}: {why}")

    def note(self, what: str) -> None:
        self.notes[what] = self.notes.get(what, 0) + 1


def iter_row_tasks(fmt: str, src: RowSource, summary: RowImportSummary, *, mapping: dict[str, str] | None = None,
                   limit: int | None = None, skip_bad: bool = False, progress: bool = False) -> Iterator[Task]:
    """Tasks from the rows of ``src``, streamed; a bad row raises ``PATH:ROW: why`` unless ``skip_bad``."""
    if fmt not in FORMATS:
        raise UserError(f"unknown row format {fmt!r} (choose {', '.join(FORMATS)})")
    total = count_rows(src)
    bar = tqdm(total=min(total, limit) if total is not None and limit is not None else (total or limit),
               unit=" rows", desc=f"import {fmt}", disable=not progress, file=sys.stderr, mininterval=0.5)
    seen: set[str] = set()
    resolved = str(Path(src.path).resolve())
    try:
        for row, obj in iter_rows(src, limit=limit):
            summary.read += 1
            bar.update(1)
            where = f"{src.label}:{row}"
            try:
                parsed = parse_row(fmt, obj, mapping)
                base = f"{fmt}/{parsed.row_id}" if parsed.row_id else f"{fmt}/{row}"
                task_id = base if base not in seen else f"{base}#row{row}"
                if task_id != base:
                    summary.note("duplicate ids, made unique with the row number")
                try:
                    task = task_from_parsed(parsed, task_id, source_metadata(fmt, resolved, src.split, row,
                                                                             row_hash(obj)))
                except RowError:
                    raise
                except (IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
                    raise RowError(f"cannot build the tests ({type(e).__name__}: {one_line(e, 120)})") from None
            except RowError as e:
                if not skip_bad:
                    raise UserError(f"{where}: {e} (--skip-bad leaves such rows out, counted)") from None
                summary.skip(where, str(e))
                continue
            seen.add(task_id)
            for n in parsed.notes:
                summary.note(n)
            summary.imported += 1
            yield task
        if not summary.imported:  # raised inside the writer, so nothing is written
            raise UserError(f"no row became a task ({summary.read} read"
                            + "".join(f"; {n} skipped: {why}" for why, n in summary.skipped.items()) + ")",
                            path=src.label)
    finally:
        bar.close()


def import_rows(fmt: str, src: str | Path, out: str | Path, *, split: str | None = None, column_map: str | None = None,
                limit: int | None = None, skip_bad: bool = False, progress: bool = False) -> tuple[RowSource,
                                                                                                   RowImportSummary]:
    """Import a row file into the canonical task file ``out`` (written whole, or not at all); return the source
    read and the summary. ``column_map``: the ``rows`` format's ``FIELD=COL,...``."""
    try:
        mapping = parse_mapping(column_map) if column_map is not None else None
    except ValueError as e:
        raise UserError(str(e)) from None
    source = resolve_source(str(src), split)
    summary = RowImportSummary()
    write_tasks(out, iter_row_tasks(fmt, source, summary, mapping=mapping, limit=limit, skip_bad=skip_bad,
                                    progress=progress))
    return source, summary
