"""The on-disk formats' schemas (grpo_wb.formats.schema): the published JSON Schema, and strictness."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from conftest import ROOT, TOY

from grpo_wb.errors import UserError
from grpo_wb.formats import WRITTEN_WHEN_SET, schema
from grpo_wb.tasks.records import Task, TestCase, field_mismatches, parse_task

# jsonschema is imported where it is used: importing it builds jsonschema's format checkers, some 3 s of every pytest
# process's collection

SCHEMA_FILE = ROOT / "docs" / "task.schema.json"
GOOD = {
    "task_id": "t/add",
    "prompt": "def add(a, b):\n",
    "entry_point": "add",
    "tests": [{"name": "t0", "code": "assert candidate(1, 2) == 3"}],
}


def test_the_published_task_schema_is_the_models():
    """docs/task.schema.json cannot drift: `python -m grpo_wb.formats.schema > docs/task.schema.json` rewrites it."""
    assert json.loads(SCHEMA_FILE.read_text()) == schema.task_json_schema()
    out = subprocess.run(
        [sys.executable, "-m", "grpo_wb.formats.schema"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout == SCHEMA_FILE.read_text()


def test_the_published_schema_accepts_the_shipped_tasks_and_refuses_what_loading_refuses():
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    for line in TOY.read_text().splitlines():
        validator.validate(json.loads(line))
    validator.validate({**GOOD, "tests": [{"name": "a", "type": "stdio", "input": "1\n", "output": "2\n"}]})
    for bad in (
        {**GOOD, "solution": "x"},
        {**GOOD, "tests": []},
        {**GOOD, "timeout": 0},
        {**GOOD, "tests": [{"name": "a", "type": "stdio", "input": "1", "output": "2", "code": "x"}]},
        {**GOOD, "output_match": "exact"},
        {**GOOD, "schema_version": 2},
    ):
        assert not validator.is_valid(bad), bad
        assert parse_task(bad)[0] is None, bad


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"prompt": True}, "field 'prompt' must be a string, got bool"),
        ({"timeout": "3"}, "field 'timeout' must be a number or null, got str"),  # no coercion from text
        ({"memory_limit_mb": True}, "field 'memory_limit_mb' must be a integer or null, got bool"),  # a bool is no int
        ({"schema_version": True}, "field 'schema_version' must be a integer, got bool"),
        ({"tests": [{"name": "a", "type": 3, "code": "x"}]}, "tests[0]: field 'type' must be a string, got int"),
        ({"tests": [{"name": "a", "type": "pytest"}]}, "tests[0]: unknown test type 'pytest' (known: assert, stdio)"),
        ({"tests": ["assert 1"]}, "tests[0] must be an object, got str"),
        ({"tests": [{"name": "a", "type": "stdio", "input": ""}]}, "tests[0]: missing field 'output'"),
        ({"task_id": "  "}, "task_id is empty"),
        ({"time_limit": float("nan")}, "time_limit must be a positive finite number of seconds"),
    ],
)
def test_task_record_mistakes_are_one_line_each(change, problem):
    task, problems = parse_task({**GOOD, **change})
    assert task is None and problems == [problem]


def test_the_task_at_run_time_holds_the_schemas_fields():
    """One task record: Task's fields are TaskRecord's (names, order, defaults), TestCase's the two test models';
    the first record read checks it (grpo_wb.tasks.records.field_mismatches)."""
    assert field_mismatches() == []
    assert [f.name for f in dataclasses.fields(Task)] == list(schema.TaskRecord.model_fields)


def test_a_task_that_is_not_the_schemas_record_is_caught():
    """The control: a field the schema lacks, one it has and the task lacks, another default, another order."""
    base = {f.name: (f.type, f.default, f.default_factory) for f in dataclasses.fields(Task)}

    def like(drop=(), add=(), default=(None, None), first=None):
        names = sorted((n for n in base if n not in drop), key=lambda n: n != first)  # stable: only `first` moves
        spec = [
            (n, t, dataclasses.field(default=default[1] if n == default[0] else d, default_factory=factory))
            for n, (t, d, factory) in ((n, base[n]) for n in names)
        ]
        spec += [(n, "int", dataclasses.field(default=0)) for n in add]
        return dataclasses.make_dataclass("Task", spec, frozen=True, kw_only=True)

    assert field_mismatches(like(drop=["checker"])) == ["Task lacks 'checker'"]
    assert field_mismatches(like(add=["difficulty"])) == ["TaskRecord lacks 'difficulty'"]
    assert field_mismatches(like(default=("prelude", "import os"))) == [
        "Task.prelude defaults to 'import os', TaskRecord's to ''"
    ]
    assert field_mismatches(like(first="metadata"))[0].startswith("Task's order ")
    odd = dataclasses.make_dataclass("TestCase", [("name", str), ("code", str, ""), ("stdin", str, "")])
    assert field_mismatches(test=odd) == ["TestCase's fields are not AssertTest's and StdioTest's"]


def test_a_task_line_leaves_out_the_later_fields_at_their_default():
    """A task written as it always was: the first format's fields always, those added later (WRITTEN_WHEN_SET) when
    set; in the schema's order; tuples as lists."""
    plain = Task("t/a", "p", "f", (TestCase("a", "assert 1"),))
    assert list(plain.to_json()) == [n for n in schema.TaskRecord.model_fields if n not in WRITTEN_WHEN_SET]
    full = dataclasses.replace(
        plain, solutions=("x",), wrong_solutions=("y",), prelude="import os", output_match="tokens", language="cpp",
        checker="c", checker_style="testlib", time_limit=1.0, memory_limit_mb=64,
    )  # fmt: skip
    line = full.to_json()
    assert list(line) == list(schema.TaskRecord.model_fields)
    assert line["solutions"] == ["x"] and line["tests"] == [{"name": "a", "type": "assert", "code": "assert 1"}]


def test_an_integer_is_a_float_and_stays_one():
    task, problems = parse_task({**GOOD, "timeout": 2, "time_limit": 1})
    assert problems == [] and task.timeout == 2.0 and isinstance(task.timeout, float) and task.time_limit == 1.0


@pytest.mark.parametrize(
    "row, problem",
    [
        (
            {"task_id": "a", "passed": True, "reward": None, "anything": [1]},
            None,
        ),  # rows are open: extras are read past
        ({"task_id": "a", "passed": 1}, "not a scored completion"),
        ({"task_id": "a", "passed": True, "reward": True}, "reward must be a number or null, got True"),
        ({"task_id": "a", "passed": True, "reward": "0.5"}, "reward must be a number or null, got '0.5'"),
    ],
)
def test_scored_rows(row, problem):
    got = schema.scored_row_problem(row)
    assert got == problem if problem is None else got.startswith(problem)


def test_group_records():
    ok = schema.check_group({"step": 0, "task_id": "a", "n_total": 2, "n_correct": 1, "rewards": [1, None]})
    assert ok is not None and ok.rewards == [1.0, None]
    for bad in ({"n_correct": 3}, {"n_total": True}, {"rewards": ["x"]}, {"task_id": None}):
        assert schema.check_group({"task_id": "a", "n_total": 2, "n_correct": 1, "rewards": [], **bad}) is None, bad


@pytest.mark.parametrize(
    "annotation, value, expected",
    [("int", 3, 3), ("float", 1, 1.0), ("bool", False, False), ("list", [1], [1]), ("dict", {}, {}), ("str", "", "")],
)
def test_notebook_parameter_values_of_each_annotation(annotation, value, expected):
    got = schema.check_parameter("p", annotation, value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    "annotation, value, message",
    [
        ("int", True, "parameter 'p' expects int, got bool True"),
        ("int", "3", "parameter 'p' expects int, got str '3'"),
        ("float", float("inf"), "parameter 'p' must be finite, got inf"),
        ("list", (1,), "parameter 'p' expects list, got tuple (1,)"),
    ],
)
def test_notebook_parameter_values_are_strict(annotation, value, message):
    with pytest.raises(UserError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        schema.check_parameter("p", annotation, value)
