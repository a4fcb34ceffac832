"""Task files: the shipped toy set, and `grpo-wb tasks validate` on bad files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import TOY

from grpo_wb.cli.main import main
from grpo_wb.errors import ValidationError
from grpo_wb.tasks.records import Task, load_tasks, parse_task, task_from_json, write_tasks

REPO = Path(__file__).resolve().parent.parent

GOOD = {
    "task_id": "t/add",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "tests": [
        {"name": "t0", "type": "assert", "code": "assert candidate(1, 2) == 3"},
        {"name": "t1", "type": "assert", "code": "assert candidate(-1, 1) == 0"},
    ],
    "canonical_solution": "    return a + b\n",
}


def good(**changes):
    d = json.loads(json.dumps(GOOD))
    d.update(changes)
    return d


def without(key):
    d = good()
    del d[key]
    return d


def write_lines(path: Path, lines) -> Path:
    """Each item is a dict (dumped as JSON) or a raw string (written verbatim)."""
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def validate(capsys, path, *extra):
    rc = main(["tasks", "validate", str(path), "--timeout", "3", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return rc, out, err


def problem_lines(err: str) -> list[str]:
    lines = err.strip("\n").splitlines()
    assert lines, "nothing on stderr"
    assert lines[-1].startswith("grpo-wb: error:"), lines[-1]
    return lines[:-1]


# ----------------------------------------------------------------------------- the toy set


def test_toy_file_loads_at_least_8_well_formed_tasks():
    tasks = load_tasks(TOY)
    assert len(tasks) >= 8
    ids = [t.task_id for t in tasks]
    assert len(set(ids)) == len(ids)
    for t in tasks:
        assert isinstance(t, Task)
        assert t.entry_point.isidentifier()
        assert f"def {t.entry_point}(" in t.prompt
        assert len(t.tests) >= 1
        assert t.canonical_solution, f"{t.task_id} has no canonical solution"


@pytest.mark.sandbox
def test_toy_file_validates_and_every_canonical_solution_passes(capsys):
    n = len(load_tasks(TOY))
    rc, out, err = validate(capsys, TOY)
    assert rc == 0, err
    assert err == ""
    assert f"{n} task(s) OK" in out
    assert f"{n} canonical solution(s) pass" in out


def test_toy_file_round_trips_through_write_tasks(tmp_path):
    tasks = load_tasks(TOY)
    out = tmp_path / "copy.jsonl"
    assert write_tasks(out, tasks) == len(tasks)
    assert load_tasks(out) == tasks


@pytest.mark.sandbox
def test_no_run_checks_format_only(capsys, tmp_path):
    # a wrong canonical solution is only noticed when solutions are run
    p = write_lines(tmp_path / "t.jsonl", [good(canonical_solution="    return a - b\n")])
    rc, out, err = validate(capsys, p, "--no-run")
    assert rc == 0, err
    assert "format only" in out
    rc, out, err = validate(capsys, p)
    assert rc == 1
    assert "does not pass (fail, 0/" in err, err  # ran and failed its tests, not a sandbox failure


# ----------------------------------------------------------------------------- bad files

BAD_CASES = {
    # name: (lines of the file, line of the problem, regex the problem text must match)
    "bad_json": ([good(), "{not json", good(task_id="t/other")], 2, r"invalid JSON"),
    "not_an_object": ([[1, 2, 3]], 1, r"expected a JSON object, got list"),
    "missing_field": ([good(), without("prompt")], 2, r"missing field 'prompt'"),
    "missing_tests": ([without("tests")], 1, r"missing field 'tests'"),
    "wrong_type_prompt": ([good(prompt=3)], 1, r"field 'prompt' must be a string, got int"),
    "wrong_type_tests": ([good(tests="assert 1")], 1, r"field 'tests' must be a list, got str"),
    "wrong_type_timeout_bool": ([good(timeout=True)], 1, r"field 'timeout' must be a .*got bool"),
    "wrong_type_test_code": (
        [good(tests=[{"name": "t0", "code": 7}])],
        1,
        r"tests\[0\]: field 'code' must be a string",
    ),
    "unknown_field": ([good(solution="x")], 1, r"unknown field 'solution'"),
    "unknown_test_field": (
        [good(tests=[{"name": "t0", "code": "assert 1", "expected": 1}])],
        1,
        r"tests\[0\]: unknown field 'expected'",
    ),
    "empty_tests": ([good(tests=[])], 1, r"tests is empty"),
    "test_does_not_compile": (
        [good(tests=[{"name": "t0", "code": "assert candidate(1, 2 == 3"}])],
        1,
        r"tests\[0\] code does not compile",
    ),
    "test_setup_does_not_compile": ([good(test_setup="def helper(:\n")], 1, r"test_setup does not compile"),
    "bad_entry_point": ([good(entry_point="add me")], 1, r"entry_point 'add me' is not a Python identifier"),
    "nonpositive_timeout": ([good(timeout=0)], 1, r"timeout must be a positive finite number"),
    "bad_schema_version": ([good(schema_version=2)], 1, r"unsupported schema_version 2"),
    "duplicate_test_name": (
        [good(tests=[{"name": "t0", "code": "assert 1"}, {"name": "t0", "code": "assert 2"}])],
        1,
        r"duplicate test name 't0'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_validate_reports_structural_problem_with_path_and_line(capsys, tmp_path, case):
    lines, lineno, pattern = BAD_CASES[case]
    path = write_lines(tmp_path / f"{case}.jsonl", lines)
    rc, out, err = validate(capsys, path)
    assert rc == 1
    probs = problem_lines(err)
    assert probs, err
    assert any(p.startswith(f"{path}:{lineno}: ") and re.search(pattern, p) for p in probs), err
    for p in probs:
        assert re.match(rf"^{re.escape(str(path))}:\d+: \S", p), p
    assert "nothing was run" in err.splitlines()[-1]
    assert out == ""


def test_duplicate_task_id_names_the_first_line(capsys, tmp_path):
    # a blank line still counts in the numbering
    path = write_lines(tmp_path / "dup.jsonl", [good(), good(task_id="t/b"), "", good()])
    rc, out, err = validate(capsys, path)
    assert rc == 1
    probs = problem_lines(err)
    assert probs == [f"{path}:4: duplicate task_id 't/add' (first on line 1)"]


def test_every_problem_of_a_file_is_reported(capsys, tmp_path):
    path = write_lines(
        tmp_path / "many.jsonl", [without("entry_point"), good(task_id="t/x", extra=1), good(tests=[]), good(), good()]
    )
    rc, out, err = validate(capsys, path)
    assert rc == 1
    probs = problem_lines(err)
    assert any(p.startswith(f"{path}:1: ") and "missing field 'entry_point'" in p for p in probs)
    assert any(p.startswith(f"{path}:2: ") and "unknown field 'extra'" in p for p in probs)
    assert any(p.startswith(f"{path}:3: ") and "tests is empty" in p for p in probs)
    assert any(p.startswith(f"{path}:5: ") and "duplicate task_id 't/add' (first on line 4)" in p for p in probs)
    assert len(probs) == 4
    assert err.splitlines()[-1] == f"grpo-wb: error: {path}: 4 problem(s); nothing was run"


@pytest.mark.sandbox
def test_failing_canonical_solution_is_reported_with_its_line(capsys, tmp_path):
    path = write_lines(
        tmp_path / "fail.jsonl",
        [
            good(),
            good(task_id="t/wrong", canonical_solution="    return a - b\n"),
            good(task_id="t/broken", canonical_solution="    return a +\n"),
            good(task_id="t/fine"),
        ],
    )
    rc, out, err = validate(capsys, path)
    assert rc == 1
    probs = problem_lines(err)
    assert len(probs) == 2, err
    assert probs[0].startswith(f"{path}:2: canonical solution of 't/wrong' does not pass (fail, ")
    assert probs[1].startswith(f"{path}:3: canonical solution of 't/broken' does not pass (error, ")
    assert "SyntaxError" in probs[1]
    assert err.splitlines()[-1] == f"grpo-wb: error: {path}: 2 problem(s)"


def test_missing_and_directory_task_files(capsys, tmp_path):
    missing = tmp_path / "nope.jsonl"
    rc, out, err = validate(capsys, missing)
    assert rc == 1
    assert problem_lines(err) == [f"{missing}: no such file"]
    rc, out, err = validate(capsys, tmp_path)
    assert rc == 1
    assert problem_lines(err) == [f"{tmp_path}: is a directory, expected a file"]


def test_empty_file_is_an_error(capsys, tmp_path):
    path = write_lines(tmp_path / "empty.jsonl", ["", "   "])
    rc, out, err = validate(capsys, path)
    assert rc == 1
    assert problem_lines(err) == [f"{path}: no tasks in file"]


# ----------------------------------------------------------------------------- nothing is run on a bad file


def failing_task() -> dict:
    # The sandbox hides the caller's files, so "did it run?" is shown by the verdict:
    # this canonical solution fails, and only running it can say so.
    return good(task_id="t/fails", canonical_solution="    return a - b\n")


@pytest.mark.sandbox
def test_control_a_failing_canonical_solution_is_run_and_reported(capsys, tmp_path):
    path = write_lines(tmp_path / "ok.jsonl", [failing_task()])
    rc, out, err = validate(capsys, path)
    assert rc == 1
    # the status names what happened: it ran and failed a test (a sandbox_error would say so instead)
    assert f"{path}:1: canonical solution of 't/fails' does not pass (fail, " in err, err


@pytest.mark.parametrize(
    "bad", ["{broken json", json.dumps(without("entry_point")), json.dumps(good(task_id="t/other", tests=[]))]
)
@pytest.mark.parametrize("bad_first", [True, False])
def test_nothing_is_run_on_a_bad_file(capsys, tmp_path, bad, bad_first):
    lines = [bad, failing_task()] if bad_first else [failing_task(), bad]
    path = write_lines(tmp_path / "bad.jsonl", lines)
    rc, out, err = validate(capsys, path)
    assert rc == 1
    assert "nothing was run" in err
    assert "does not pass" not in err, "a canonical solution ran although the file is malformed"


def test_load_tasks_raises_validation_error_with_all_problems(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", [good(prompt=1), good(task_id="t/2", tests=[])])
    with pytest.raises(ValidationError) as ei:
        load_tasks(path)
    assert len(ei.value.problems) == 2
    assert ei.value.problems[0].startswith(f"{path}:1: ")
    assert ei.value.problems[1].startswith(f"{path}:2: ")
    assert "(and 1 more problems)" in str(ei.value)


def test_parse_task_defaults_and_task_from_json():
    task, errs = parse_task(good())
    assert errs == []
    assert task.test_setup == "" and task.check is None and task.timeout is None and task.metadata == {}
    assert [t.type for t in task.tests] == ["assert", "assert"]
    assert task_from_json(task.to_json()) == task
    with pytest.raises(ValueError, match="missing field 'prompt'"):
        task_from_json(without("prompt"))


# ----------------------------------------------------------------------------- bugs


def test_infinite_timeout_is_rejected_when_loading(capsys, tmp_path):
    path = tmp_path / "inf.jsonl"
    path.write_text(json.dumps(good(timeout=float("inf"))) + "\n")  # json.dumps writes Infinity
    assert "Infinity" in path.read_text()
    rc, out, err = validate(capsys, path, "--no-run")
    assert rc == 1
    assert any(p.startswith(f"{path}:1: ") and "timeout" in p for p in problem_lines(err))


def test_keyword_entry_point_is_rejected_when_loading(capsys, tmp_path):
    path = write_lines(tmp_path / "kw.jsonl", [good(entry_point="def")])
    rc, out, err = validate(capsys, path, "--no-run")
    assert rc == 1
    assert any(p.startswith(f"{path}:1: ") and "entry_point" in p for p in problem_lines(err))
