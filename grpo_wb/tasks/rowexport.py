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
columns. The output path says the container (:func:`grpo_wb.tasks.rows.output_kind`):
``.parquet`` is Parquet (what verl's ``data.train_files`` and ``load_dataset("parquet")``
read), ``.arrow`` an Arrow stream (``Dataset.from_file``), a path ending in ``/`` (or an
existing ``save_to_disk`` folder) a ``save_to_disk`` folder (``load_from_disk``), and
``.jsonl``/``.jsonl.gz``/``.json`` JSON lines; any other path is refused. Rows written as
they came keep their source's Arrow types and ``datasets`` features (the ``huggingface``
schema metadata), read again from the source file, which the export re-reads anyway to
check each row's hash: a source that is gone stops the export, naming it.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Iterable

from grpo_wb.errors import UserError
from grpo_wb.tasks.records import Task
from grpo_wb.tasks.rowformats import FORMATS, Cases, ParsedRow, RowError, parse_row
from grpo_wb.tasks.rows import RowSource, check_output, row_hash, rows_at, write_rows

EXPORT_FORMATS = ("jsonl", "verl", "open-r1", "taco", "trl")
TRL_COLUMNS = ("prompt", "task_id", "entry_point", "tests", "test_setup", "check", "timeout", "prelude", "output_match")
"""The task columns of a TRL dataset: what grpo_wb's TRL reward rebuilds a task from."""
#: our format names as verl's default_compute_score routes them to a code scorer
VERL_DATA_SOURCES = {"code-contests": "codecontests", "apps-rows": "apps", "taco": "taco"}
#: which source schemas each export format writes back unchanged
SAME_SCHEMA = {"verl": ("verl",), "open-r1": ("open-r1",), "taco": ("taco", "apps-rows")}


def trl_record(task: Task, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A TRL-ready dataset row: ``prompt`` plus what a code reward function needs (extra columns reach it as kwargs)."""
    d = task.to_json()
    row = {k: d.get(k, {"prelude": "", "output_match": "lines"}.get(k)) for k in TRL_COLUMNS}
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
    if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Call)
            and isinstance(node.test.func, ast.Name) and node.test.func.id in ("apps_equal", "values_equal")
            and len(node.test.args) == 2 and isinstance(node.test.args[0], ast.Call)):
        return None
    call = node.test.args[0]
    if not (isinstance(call.func, ast.Name) and call.func.id == "candidate" and len(call.args) == 1
            and isinstance(call.args[0], ast.Starred)):
        return None
    try:
        return ast.literal_eval(call.args[0].value), ast.literal_eval(node.test.args[1]), node.test.func.id
    except ValueError:
        return None


def parsed_from_task(task: Task) -> ParsedRow:
    """A task's tests in neutral form: stdio cases, call cases (when every test is a literal call), or asserts."""
    refs = {"solution": task.canonical_solution, "solutions": task.solutions,
            "wrong_solutions": task.wrong_solutions}
    if task.is_script:
        return ParsedRow(prompt=task.prompt, cases=Cases("stdio", [t.input for t in task.tests],
                                                         [t.output for t in task.tests]),
                         output_match=task.output_match, prelude=task.prelude, **refs)
    calls = [_call_case(t.code) for t in task.tests]
    if calls and all(c is not None for c in calls) and len({c[2] for c in calls}) == 1:
        return ParsedRow(prompt=task.prompt, cases=Cases("call", [c[0] for c in calls], [c[1] for c in calls],
                                                         task.entry_point),
                         prelude=task.prelude, call_compare=calls[0][2], **refs)
    return ParsedRow(prompt=task.prompt, cases=Cases("assert", code=[t.code for t in task.tests],
                                                     fn_name=task.entry_point), **refs)


def _io(c: Cases, args_as: str) -> dict[str, Any]:
    if c.kind == "stdio":
        return {"inputs": list(c.inputs), "outputs": list(c.outputs)}
    if args_as == "json-lines":  # prime_code / LiveCodeBench: one JSON value per line, output as JSON
        return {"inputs": ["\n".join(json.dumps(a) for a in args) for args in c.inputs],
                "outputs": [json.dumps(o) for o in c.outputs], "fn_name": c.fn_name}
    return {"inputs": list(c.inputs), "outputs": list(c.outputs), "fn_name": c.fn_name}


def _unwrapped(value: Any) -> Any:
    """APPS wraps a return value in a one-element list; a str() comparison needs the value itself."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def build_row(fmt: str, p: ParsedRow, task: Task, data_source: str) -> dict[str, Any]:
    """A new row of ``fmt`` for a task whose source row is in another schema (or that has none)."""
    c = p.cases
    if fmt == "trl":
        return trl_record(task, p.messages)
    if c.kind == "pytest" or (c.kind == "assert" and fmt != "verl"):
        raise RowError(f"its tests are {'a pytest module' if c.kind == 'pytest' else 'assert statements'}, "
                       f"which {fmt} rows cannot hold (use --format trl or jsonl)")
    messages = p.messages or [{"role": "user", "content": p.prompt}]
    if fmt == "verl":
        # sandbox_fusion runs each assert after the code: grpo_wb's tests call the entry point as `candidate`
        alias = f"candidate = {c.fn_name}\n" if c.fn_name else ""
        gt = {"assert_case": [alias + code if "candidate" in code else code for code in c.code]} \
            if c.kind == "assert" else _io(c, "json-lines")
        return {"data_source": data_source, "prompt": messages, "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": json.dumps(gt)},
                "extra_info": {"split": "train", "task_id": task.task_id}}
    if fmt == "open-r1":
        if c.kind == "stdio":
            cases = [{"input": i, "output": o, "type": "stdin_stdout", "fn_name": None}
                     for i, o in zip(c.inputs, c.outputs)]
        else:  # PrimeIntellect's function_call: the input is pasted as the argument list, str(result) compared
            unwrap = p.call_compare == "apps_equal"  # APPS also accepts x for [x]; exact comparisons do not
            cases = [{"input": ", ".join(repr(a) for a in args), "output": str(_unwrapped(o) if unwrap else o),
                      "type": "function_call", "fn_name": c.fn_name} for args, o in zip(c.inputs, c.outputs)]
        return {"problem_id": task.task_id, "source": data_source, "task_type": "verifiable_code",
                "prompt": p.prompt, "gold_standard_solution": p.solution,
                "verification_info": {"language": "python", "test_cases": cases}}
    # every reference, the canonical one first (as the taco import reads them back)
    refs = ([p.solution] if p.solution else []) + list(p.solutions)
    return {"problem_id": task.task_id, "question": p.prompt, "solutions": json.dumps(refs),
            "starter_code": p.starter_code, "input_output": json.dumps(_io(c, "list"))}


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
    for src, wanted in by_file.items():
        if not Path(src.path).exists():
            raise UserError("the rows these tasks came from are gone (an export writes them back); "
                            "import them again from where they are now", path=src.path)
        found = rows_at(src, set(wanted))
        for row, t in wanted.items():
            obj = found.get(row)
            if obj is None or row_hash(obj) != t.metadata["row_sha256"]:
                raise UserError(f"row {row} is not the row task {t.task_id!r} was imported from (the file "
                                "changed since the import); re-import it", path=src.label)
            out[t.task_id] = obj
    return out


def export_rows(tasks: Iterable[Task], fmt: str, out: str | Path,
                columns: dict[str, dict[str, Any]] | None = None, *, data_source: str | None = None) -> str:
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
        if orig is not None and (fmt == "jsonl" or (src and src[0] in SAME_SCHEMA.get(fmt, ()))):
            row = dict(orig)
            schema_from = schema_from or src[1]
        elif fmt == "jsonl":
            row = t.to_json()
        else:
            try:
                # rows imported through a column map are read back from the task (the map is not kept)
                parsed = parse_row(src[0], orig) if orig is not None and src[0] != "rows" else parsed_from_task(t)
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
