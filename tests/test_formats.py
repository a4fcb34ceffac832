"""The on-disk formats' schemas (grpo_wb.formats.schema): the published JSON Schema, and strictness."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
from conftest import ROOT, TOY

from grpo_wb.errors import UserError
from grpo_wb.formats import schema
from grpo_wb.tasks.records import parse_task

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
