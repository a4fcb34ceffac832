"""Kept tasks written back as the rows a trainer reads.

``jsonl`` writes each task's source row exactly as it was read (checked against
the hash taken at import), so every original column survives; a task that did
not come from a row file is written as its canonical record. ``verl``,
``open-r1`` and ``taco`` write that trainer's schema: the source row itself when
the task came in that schema, otherwise a row built from the tests (stdin/stdout
cases and call cases translate to each; assert tests only to verl's
``assert_case``, which its sandbox_fusion scorer reads). ``trl`` writes a TRL
dataset: ``prompt`` (the chat messages when the source had them) plus the task
columns grpo_wb's TRL reward reads. Every row gains the caller's ``grpo_wb_*``
columns. ``deepcoder``, ``acecode`` and ``nemo-gym`` write those datasets' rows the same way: the source row
when the task came in that schema, otherwise a row built from the tests (assert tests and calls only to
``acecode``, stdin/stdout and call cases only to the other two). The output path says the container
(:func:`grpo_wb.tasks.rows.output_kind`): ``.parquet`` is Parquet (what verl's ``data.train_files`` and
``load_dataset("parquet")`` read), ``.arrow`` an Arrow stream (``Dataset.from_file``), a path ending in ``/`` (or an
existing ``save_to_disk`` folder) a ``save_to_disk`` folder (``load_from_disk``), and
``.jsonl``/``.jsonl.gz``/``.json`` JSON lines; any other path is refused. Rows written as
they came keep their source's Arrow types and ``datasets`` features (the ``huggingface``
schema metadata), read again from the source file, which the export re-reads anyway to
check each row's hash: a source that is gone stops the export, naming it.
"""

from __future__ import annotations

import ast
import io
import json
import tokenize
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypedDict

from grpo_wb.errors import UserError
from grpo_wb.tasks.records import Task
from grpo_wb.tasks.rowformats import (
    FORMATS,
    LANGUAGE_FORMATS,
    RECIPES,
    SCHEMA_FORMATS,
    Cases,
    ParsedRow,
    RowError,
    parse_row,
    select_test_set,
)
from grpo_wb.tasks.rows import RowSource, check_output, row_hash, rows_at, write_rows

EXPORT_FORMATS = ("jsonl", "verl", "open-r1", "taco", "trl", *SCHEMA_FORMATS)
TRL_COLUMNS = (
    "prompt",
    "task_id",
    "entry_point",
    "tests",
    "test_setup",
    "check",
    "timeout",
    "prelude",
    "output_match",
    "language",
    "checker",
    "checker_style",
    "time_limit",
    "memory_limit_mb",
)
"""The task columns of a TRL dataset: what grpo_wb's TRL reward rebuilds a task from."""
#: our format names as verl's default_compute_score routes them to a code scorer
VERL_DATA_SOURCES = {"code-contests": "codecontests", "apps-rows": "apps", "taco": "taco"}
#: which source schemas each export format writes back unchanged
SAME_SCHEMA = {
    "verl": ("verl",),
    "open-r1": ("open-r1",),
    "taco": ("taco", "apps-rows"),
    **{f: (f,) for f in SCHEMA_FORMATS},
}
#: the checker each format's rows can hold (any other checker is refused, never dropped)
CHECKER_FORMATS = {"code-contests-plus": "testlib", "hardtests": "hardtests", "klear": "klear"}


def trl_record(task: Task, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A TRL-ready dataset row: ``prompt`` plus what a code reward function needs (extra columns reach it as kwargs)."""
    d = task.to_json()
    row = {
        k: d.get(k, {"prelude": "", "output_match": "lines", "language": "python", "checker_style": "open-r1"}.get(k))
        for k in TRL_COLUMNS
    }
    if messages:
        row["prompt"] = messages
    return row


def _call_case(code: str) -> tuple[list[Any], Any, str] | None:
    """``(args, expected, comparison)`` of a test written as ``assert apps_equal(candidate(*ARGS), EXPECTED)``
    (or ``values_equal``), else None."""
    try:
        node = ast.parse(code).body[0]
    except (SyntaxError, IndexError):
        return None
    if not (
        isinstance(node, ast.Assert)
        and isinstance(node.test, ast.Call)
        and isinstance(node.test.func, ast.Name)
        and node.test.func.id in ("apps_equal", "values_equal")
        and len(node.test.args) == 2
        and isinstance(node.test.args[0], ast.Call)
    ):
        return None
    call = node.test.args[0]
    if not (
        isinstance(call.func, ast.Name)
        and call.func.id == "candidate"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Starred)
    ):
        return None
    try:
        return ast.literal_eval(call.args[0].value), ast.literal_eval(node.test.args[1]), node.test.func.id
    except ValueError:
        return None


class _References(TypedDict):
    """A task's reference programs, as :class:`ParsedRow` names them."""

    solution: str | None
    solutions: tuple[str, ...]
    wrong_solutions: tuple[str, ...]


def parsed_from_task(task: Task) -> ParsedRow:
    """A task's tests in neutral form: stdio cases, call cases (when every test is a literal call), or asserts."""
    refs: _References = {
        "solution": task.canonical_solution,
        "solutions": task.solutions,
        "wrong_solutions": task.wrong_solutions,
    }
    if task.is_script:
        return ParsedRow(
            prompt=task.prompt,
            cases=Cases("stdio", [t.input for t in task.tests], [t.output for t in task.tests]),
            output_match=task.output_match,
            prelude=task.prelude,
            language=task.language,
            checker=task.checker,
            checker_style=task.checker_style,
            time_limit=task.time_limit,
            memory_limit_mb=task.memory_limit_mb,
            **refs,
        )
    found = [_call_case(t.code) for t in task.tests]
    calls = [c for c in found if c is not None]
    if calls and len(calls) == len(found) and len({c[2] for c in calls}) == 1:
        return ParsedRow(
            prompt=task.prompt,
            cases=Cases("call", [c[0] for c in calls], [c[1] for c in calls], task.entry_point),
            prelude=task.prelude,
            call_compare=calls[0][2],
            **refs,
        )
    return ParsedRow(
        prompt=task.prompt, cases=Cases("assert", code=[t.code for t in task.tests], fn_name=task.entry_point), **refs
    )


def _io(c: Cases, args_as: str) -> dict[str, Any]:
    if c.kind == "stdio":
        return {"inputs": list(c.inputs), "outputs": list(c.outputs)}
    if args_as == "json-lines":  # prime_code / LiveCodeBench: one JSON value per line, output as JSON
        return {
            "inputs": ["\n".join(json.dumps(a) for a in args) for args in c.inputs],
            "outputs": [json.dumps(o) for o in c.outputs],
            "fn_name": c.fn_name,
        }
    return {"inputs": list(c.inputs), "outputs": list(c.outputs), "fn_name": c.fn_name}


def _unwrapped(value: Any) -> Any:
    """APPS wraps a return value in a one-element list; a str() comparison needs the value itself."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def build_row(fmt: str, p: ParsedRow, task: Task, data_source: str) -> dict[str, Any]:
    """A new row of ``fmt`` for a task whose source row is in another schema (or that has none)."""
    c = p.cases
    if fmt == "trl":
        return trl_record(task, p.messages)
    if task.checker is not None and CHECKER_FORMATS.get(fmt) != task.checker_style:
        raise RowError(
            f"it is judged by a {task.checker_style} checker, which new {fmt} rows cannot hold "
            "(use --format trl or jsonl)"
        )
    if fmt in CHECKER_FORMATS:
        if c.kind != "stdio":
            raise RowError(f"its tests are not stdin/stdout cases, which {fmt} rows hold (use --format trl or jsonl)")
        own = "klear" if fmt == "klear" else "lines"
        if task.checker is None and task.output_match != own:
            raise RowError(
                f"its output is compared by {task.output_match!r}, which {fmt} rows (compared by "
                f"{own!r}) cannot hold (use --format trl or jsonl)"
            )
        return _checker_row(fmt, p, task)
    if p.language != "python" and fmt != "open-r1":
        raise RowError(f"a {p.language} task, which {fmt} rows cannot mark as such (use --format open-r1 or jsonl)")
    if fmt == "acecode":
        return _acecode_row(p, task, data_source)
    if c.kind == "pytest" or (c.kind == "assert" and fmt != "verl"):
        raise RowError(
            f"its tests are {'a pytest module' if c.kind == 'pytest' else 'assert statements'}, "
            f"which {fmt} rows cannot hold (use --format trl or jsonl)"
        )
    messages = p.messages or [{"role": "user", "content": p.prompt}]
    if fmt == "verl":
        # sandbox_fusion runs each assert after the code: grpo_wb's tests call the entry point as `candidate`
        alias = f"candidate = {c.fn_name}\n" if c.fn_name else ""
        gt = (
            {"assert_case": [alias + code if "candidate" in code else code for code in c.code]}
            if c.kind == "assert"
            else _io(c, "json-lines")
        )
        return {
            "data_source": data_source,
            "prompt": messages,
            "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": json.dumps(gt)},
            "extra_info": {"split": "train", "task_id": task.task_id},
        }
    if fmt == "open-r1":
        if c.kind == "stdio":
            cases = [
                {"input": i, "output": o, "type": "stdin_stdout", "fn_name": None} for i, o in zip(c.inputs, c.outputs)
            ]
        else:  # PrimeIntellect's function_call: the input is pasted as the argument list, str(result) compared
            unwrap = p.call_compare == "apps_equal"  # APPS also accepts x for [x]; exact comparisons do not
            cases = [
                {
                    "input": ", ".join(repr(a) for a in args),
                    "output": str(_unwrapped(o) if unwrap else o),
                    "type": "function_call",
                    "fn_name": c.fn_name,
                }
                for args, o in zip(c.inputs, c.outputs)
            ]
        return {
            "problem_id": task.task_id,
            "source": data_source,
            "task_type": "verifiable_code",
            "prompt": p.prompt,
            "gold_standard_solution": p.solution,
            "verification_info": {"language": p.language, "test_cases": cases},
        }
    # every reference, the canonical one first (as the taco and deepcoder imports read them back)
    refs = ([p.solution] if p.solution else []) + list(p.solutions)
    if fmt == "deepcoder":
        return _deepcoder_row(p, refs)
    if fmt == "nemo-gym":
        # its verifier compares calls exactly (LiveCodeBench's rule): an APPS [x] is written as x
        unwrap = c.kind == "call" and p.call_compare == "apps_equal"
        unit_tests = Cases(c.kind, c.inputs, [_unwrapped(o) for o in c.outputs], c.fn_name) if unwrap else c
        return {
            "responses_create_params": {"input": messages},
            "verifier_metadata": {"unit_tests": _io(unit_tests, "json-lines")},
            "hash_id": task.task_id,
            "dataset": data_source,
            "source": data_source,
        }
    return {
        "problem_id": task.task_id,
        "question": p.prompt,
        "solutions": json.dumps(refs),
        "starter_code": p.starter_code,
        "input_output": json.dumps(_io(c, "list")),
    }


def _checker_row(fmt: str, p: ParsedRow, task: Task) -> dict[str, Any]:
    """A CodeContests+, HardTests (problems and tests joined) or Klear-CodeTest row, read back the same by its
    importer: the stdio cases, the checker, the limits in the row's units, the references in the task's language."""
    c = p.cases
    cases = [{"input": i, "output": o} for i, o in zip(c.inputs, c.outputs)]
    refs = ([p.solution] if p.solution else []) + list(p.solutions)
    lang = {"code-contests-plus": {"python": "py3", "cpp": "cpp"}, "hardtests": {"python": "python3", "cpp": "cpp"}}
    if fmt == "code-contests-plus":
        return {
            "id": task.task_id,
            "title": "",
            "description": p.prompt,
            "test_cases": cases,
            "checker": p.checker,
            "time_limit": None if p.time_limit is None else round(p.time_limit * 1000),
            "memory_limit": p.memory_limit_mb,
            "correct_submissions": [{"code": r, "language": lang[fmt][p.language]} for r in refs],
            "incorrect_submissions": [{"code": w, "language": lang[fmt][p.language]} for w in p.wrong_solutions],
        }
    if fmt == "hardtests":
        return {
            "pid": task.task_id,
            "question_content": p.prompt,
            "public_test_cases": [],
            "test_cases": cases,
            "test_cases_kit": {"pid": task.task_id, "output_judging_function": p.checker},
            "time_limit": None if p.time_limit is None else f"{p.time_limit:g} seconds",
            "memory_limit": None if p.memory_limit_mb is None else f"{p.memory_limit_mb} megabytes",
            "starter_code": p.starter_code,
            "solutions": [{"code": r, "language": lang[fmt][p.language]} for r in refs],
        }
    return {
        "custom_id": task.task_id,
        "question": p.prompt,
        "starter_code": p.starter_code,
        "solutions": refs,
        "checker": [p.checker] if p.checker else [],
        "type": "stdin",
        "reward": {"ground_truth": {"input_output": cases, "type": "stdin", "fn_name": None}},
        "time-limit": p.time_limit,
        "memory-limit": p.memory_limit_mb,
    }


def _named(code: str, old: str, new: str) -> str:
    """``code`` with the name ``old`` written ``new`` (names only: strings and attributes keep their text)."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code
    out, prev = [], None
    for t in toks:
        renamed = t.type == tokenize.NAME and t.string == old and not (prev and prev.string == ".")
        out.append(t._replace(string=new) if renamed else t)
        prev = t
    return tokenize.untokenize(out) if any(a is not b for a, b in zip(out, toks)) else code


def _deepcoder_row(p: ParsedRow, refs: list[str]) -> dict[str, Any]:
    """A DeepCoder row in the subset shape that keeps the task's comparison when imported back: exact calls as
    lcbv5's functional cases (``metadata.func_name``), APPS-style calls and stdio as the taco subset's dict, stdio
    compared by LiveCodeBench's rule as lcbv5's stdin cases."""
    c = p.cases
    row: dict[str, Any] = {"problem": p.prompt, "solutions": refs}
    if c.kind == "call" and p.call_compare == "values_equal":
        io = _io(c, "json-lines")
        row["tests"] = json.dumps(
            [{"input": i, "output": o, "testtype": "functional"} for i, o in zip(io["inputs"], io["outputs"])]
        )
        row["metadata"] = json.dumps({"func_name": c.fn_name})
    elif c.kind == "stdio" and p.output_match == "numeric-lines":
        row["tests"] = json.dumps([{"input": i, "output": o, "testtype": "stdin"} for i, o in zip(c.inputs, c.outputs)])
        row["metadata"] = "{}"
    else:
        row["tests"] = json.dumps(_io(c, "list"))
    return row


def _acecode_row(p: ParsedRow, task: Task, data_source: str) -> dict[str, Any]:
    """An AceCode row: assert statements run after the program, each calling the function by its name (grpo_wb's
    ``candidate`` renamed, since the importer takes the first name the asserts call); calls become exact asserts."""
    c = p.cases
    if task.test_setup or task.check:
        raise RowError(
            "its tests need setup code (test_setup or a check function), which acecode rows cannot "
            "hold (use --format trl or jsonl)"
        )
    if c.kind == "assert":
        tests = [_named(code, "candidate", c.fn_name) if c.fn_name else code for code in c.code]
    elif c.kind == "call":
        apps = p.call_compare == "apps_equal"  # APPS also accepts x for [x]: the assert accepts both
        # a LeetCode entry point is a method of class Solution, as grpo_wb's harness finds it
        call = f"Solution().{c.fn_name}" if "class Solution" in p.starter_code + p.prompt else c.fn_name
        tests = [
            f"assert {call}({', '.join(map(repr, args))}) "
            + (f"in ({o!r}, {o[0]!r})" if apps and isinstance(o, list) and len(o) == 1 else f"== {o!r}")
            for args, o in zip(c.inputs, c.outputs)
        ]
    else:
        raise RowError(
            f"its tests are {'stdin/stdout cases' if c.kind == 'stdio' else 'a pytest module'}, which "
            "acecode rows cannot hold (use --format trl or jsonl)"
        )
    messages = p.messages or [{"role": "user", "content": p.prompt}]
    return {
        "id": task.task_id,
        "source": data_source,
        "question": p.prompt,
        "test_cases": tests,
        "inferences": [],
        "context_messages": messages,
    }


def _source(task: Task) -> tuple[str, RowSource, int, str] | None:
    m = task.metadata
    if m.get("source") in FORMATS and "source_file" in m and "source_row" in m:
        return m["source"], RowSource(m["source_file"], m.get("source_split")), int(m["source_row"]), m["row_sha256"]
    return None


def _original_rows(tasks: list[Task]) -> dict[str, dict[str, Any]]:
    """Each row-imported task's source row, read back in one pass per file and checked against its hash."""
    by_file: dict[RowSource, dict[int, Task]] = {}
    for t in tasks:
        src = _source(t)
        if src:
            by_file.setdefault(src[1], {})[src[2]] = t
    out: dict[str, dict[str, Any]] = {}
    for source, wanted in by_file.items():
        if not Path(source.path).exists():
            raise UserError(
                "the rows these tasks came from are gone (an export writes them back); "
                "import them again from where they are now",
                path=source.path,
            )
        found = rows_at(source, set(wanted))
        for row, t in wanted.items():
            obj = found.get(row)
            if obj is None or row_hash(obj) != t.metadata["row_sha256"]:
                raise UserError(
                    f"row {row} is not the row task {t.task_id!r} was imported from (the file "
                    "changed since the import); re-import it",
                    path=source.label,
                )
            out[t.task_id] = obj
    return out


def export_rows(
    tasks: Iterable[Task],
    fmt: str,
    out: str | Path,
    columns: dict[str, dict[str, Any]] | None = None,
    *,
    data_source: str | None = None,
) -> str:
    """Write ``tasks`` as ``fmt`` rows to ``out`` with each task's extra ``columns``; return the container."""
    if fmt not in EXPORT_FORMATS:
        raise UserError(f"unknown export format {fmt!r} (choose {', '.join(EXPORT_FORMATS)})")
    check_output(out)  # a path that names no container, before the source rows are read
    tasks = list(tasks)
    originals = _original_rows(tasks)
    rows: list[dict[str, Any]] = []
    schema_from = None
    for t in tasks:
        src = _source(t)
        orig = originals.get(t.task_id)
        # a task has an original row only when it has a source (_original_rows): src is not None with orig
        if orig is not None and src is not None and (fmt == "jsonl" or src[0] in SAME_SCHEMA.get(fmt, ())):
            row = dict(orig)
            schema_from = schema_from or src[1]
            if t.metadata.get("test_set"):  # the source row holds every set: say which one was scored
                row["grpo_wb_test_set"] = t.metadata["test_set"]
        elif fmt == "jsonl":
            row = t.to_json()
        else:
            try:
                # rows imported through a column map are read back from the task (the map is not kept)
                recipe = t.metadata.get("import_recipe") if src and src[0] in RECIPES else None
                parsed = (
                    parse_row(src[0], orig, recipe=recipe, language=t.language if src[0] in LANGUAGE_FORMATS else None)
                    if orig is not None and src is not None and src[0] != "rows"
                    else parsed_from_task(t)
                )
                if orig is not None and t.metadata.get("test_set"):  # imported with --test-set: that set only
                    parsed = select_test_set(parsed, t.metadata["test_set"])
                name = data_source or (src[0] if src else str(t.metadata.get("source", "grpo_wb")))
                row = build_row(fmt, parsed, t, VERL_DATA_SOURCES.get(name, name))
            except RowError as e:
                raise UserError(f"task {t.task_id!r}: {e}") from None
        clash = [k for k in (columns or {}).get(t.task_id, {}) if k in row]
        if clash:
            raise UserError(f"task {t.task_id!r}: its row already has a column {clash[0]!r}")
        row.update((columns or {}).get(t.task_id, {}))
        rows.append(row)
    return write_rows(out, rows, schema_from=schema_from)
