"""Every reference program a dataset ships, and the programs it labels wrong, kept in the task format.

``solutions`` / ``wrong_solutions`` feed an audit of the tasks themselves (references that fail: a broken task;
wrong programs that pass: its false-positive rate), so they must survive the file format and every importer that
has them, stay capped, and never reach the scorer's notion of what a task is.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import need, read_jsonl, write_jsonl

from grpo_wb.bundled import APPS_ROWS, APPS_TRAIN
from grpo_wb.errors import ValidationError
from grpo_wb.scoring.scorer import _task_fingerprint
from grpo_wb.tasks.importers import import_apps
from grpo_wb.tasks.records import (
    MAX_SOLUTIONS,
    Task,
    TestCase,
    check_task_file,
    distinct_programs,
    load_tasks,
    task_from_json,
    write_tasks,
)
from grpo_wb.tasks.rowexport import build_row, parsed_from_task
from grpo_wb.tasks.rowformats import CAPPED_NOTE, RowImportSummary, iter_row_tasks, parse_row
from grpo_wb.tasks.rows import RowSource

ADD = Task(
    task_id="toy/add",
    prompt="def add(a, b):\n",
    entry_point="add",
    tests=(TestCase(name="t0", code="assert candidate(1, 2) == 3"),),
    canonical_solution="    return a + b\n",
)


def _import(fmt: str, path: Path, **kw):
    summary = RowImportSummary()
    return list(iter_row_tasks(fmt, RowSource(str(path)), summary, **kw)), summary


# ----------------------------------------------------------------------------- the file format


def test_round_trip_through_a_task_file(tmp_path):
    task = dataclasses.replace(
        ADD,
        task_id="toy/add2",
        solutions=("def add(a, b):\n    return b + a\n", "    return sum((a, b))\n"),
        wrong_solutions=("    return a - b\n",),
    )
    write_tasks(tmp_path / "t.jsonl", [task, ADD])
    (line, plain) = read_jsonl(tmp_path / "t.jsonl")
    assert line["solutions"] == list(task.solutions) and line["wrong_solutions"] == ["    return a - b\n"]
    keys = list(line)  # written next to canonical_solution
    assert keys[keys.index("canonical_solution") + 1 :][:2] == ["solutions", "wrong_solutions"]
    assert "solutions" not in plain and "wrong_solutions" not in plain  # omitted when empty, as prelude is
    assert load_tasks(tmp_path / "t.jsonl") == [task, ADD]
    assert task_from_json(task.to_json()) == task


def test_wrong_types_are_rejected_naming_the_field(tmp_path):
    base = ADD.to_json()
    write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {**base, "task_id": "a", "solutions": "    return a + b\n"},
            {**base, "task_id": "b", "wrong_solutions": ["    return 0\n", 3]},
            {**base, "task_id": "c", "solutions": ["ok", None, "ok too"]},
            {**base, "task_id": "d", "wrong_solutions": {"language": [3], "solution": ["x"]}},
        ],
    )
    tasks, problems = check_task_file(tmp_path / "bad.jsonl")
    path = str(tmp_path / "bad.jsonl")
    assert not tasks
    assert problems == [
        f"{path}:1: field 'solutions' must be a list, got str",
        f"{path}:2: wrong_solutions[1] must be a string, got int",
        f"{path}:3: solutions[1] must be a string, got NoneType",
        f"{path}:4: field 'wrong_solutions' must be a list, got dict",
    ]
    with pytest.raises(ValidationError):
        load_tasks(tmp_path / "bad.jsonl")
    with pytest.raises(ValueError, match=r"solutions\[0\] must be a string"):
        task_from_json({**base, "solutions": [1]})


def test_references_never_change_a_verdict():
    """The scorer keys its plans and its verdict cache on the task's fingerprint: the new fields are not in it."""
    more = dataclasses.replace(ADD, solutions=("    return b + a\n",), wrong_solutions=("    return 0\n",))
    assert _task_fingerprint(more) == _task_fingerprint(ADD)


def test_distinct_programs_keeps_order_and_caps():
    progs = ["a", "b", "a", "", "  \n", 7, None, "c", "ref", "d"]
    assert distinct_programs(progs, exclude=["ref"]) == (("a", "b", "c", "d"), 0)
    assert distinct_programs(progs, exclude=["ref"], cap=2) == (("a", "b"), 2)
    many = [f"print({i})" for i in range(MAX_SOLUTIONS + 5)]
    assert distinct_programs(many) == (tuple(many[:MAX_SOLUTIONS]), 5)


# ----------------------------------------------------------------------------- APPS problem folders


def _apps_folder(root: Path, name: str, solutions) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "question.txt").write_text("Print n.")
    (d / "input_output.json").write_text(json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}))
    (d / "solutions.json").write_text(json.dumps(solutions))
    return d


def test_apps_folder_keeps_every_reference_up_to_the_cap(tmp_path):
    many = [f"print(input()) # {i}" for i in range(MAX_SOLUTIONS + 4)]
    _apps_folder(tmp_path, "0000", ["print(input())", "print(input())", "n = input()\nprint(n)", "", 5])
    _apps_folder(tmp_path, "0001", ["print(int(input()))", *many])
    _apps_folder(tmp_path, "0002", [])
    (few, capped, none), report = import_apps(tmp_path)
    assert few.canonical_solution == "print(input())" and few.solutions == ("n = input()\nprint(n)",)
    assert capped.canonical_solution == "print(int(input()))" and capped.solutions == tuple(many[:MAX_SOLUTIONS])
    assert none.canonical_solution is None and none.solutions == () and none.wrong_solutions == ()
    assert report.n_solutions_dropped == 4
    write_tasks(tmp_path / "t.jsonl", [few, capped, none])
    assert load_tasks(tmp_path / "t.jsonl") == [few, capped, none]


@pytest.mark.data
def test_bundled_apps_problems_keep_their_references(tmp_path):
    tasks, report = import_apps(need(APPS_TRAIN))
    shipped = {t.task_id: json.loads((APPS_TRAIN / t.metadata["folder"] / "solutions.json").read_text()) for t in tasks}
    # as shipped: 0001 24, 0111 1, 2287 10, 2404 58, 4184 8 programs (all distinct)
    assert {tid: len(s) for tid, s in shipped.items()} == {
        "apps/0001": 24,
        "apps/0111": 1,
        "apps/2287": 10,
        "apps/2404": 58,
        "apps/4184": 8,
    }
    for t in tasks:
        sols = shipped[t.task_id]
        assert t.canonical_solution == sols[0]  # as before
        assert t.solutions == tuple(sols[1 : 1 + MAX_SOLUTIONS]) and not t.wrong_solutions
    by = {t.task_id: t for t in tasks}
    assert len(by["apps/2287"].solutions) == 9 and len(by["apps/2404"].solutions) == MAX_SOLUTIONS
    assert report.n_solutions_dropped == (23 - MAX_SOLUTIONS) + (57 - MAX_SOLUTIONS)
    write_tasks(tmp_path / "apps.jsonl", tasks)
    assert load_tasks(tmp_path / "apps.jsonl") == tasks
    # the same problems as codeparrot/apps rows: the same references
    rows, s = _import("apps-rows", need(APPS_ROWS))
    assert [(r.canonical_solution, r.solutions) for r in rows] == [(t.canonical_solution, t.solutions) for t in tasks]
    assert s.notes.get(CAPPED_NOTE) == 2 and s.solutions_dropped == report.n_solutions_dropped


# ----------------------------------------------------------------------------- rows


def _contests_row(name: str, solutions: list[tuple[int, str]], incorrect: list[tuple[int, str]]) -> dict:
    return {
        "name": name,
        "description": "Print a+b.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": {"input": [], "output": []},
        "generated_tests": {"input": [], "output": []},
        "solutions": {"language": [lang for lang, _ in solutions], "solution": [s for _, s in solutions]},
        "incorrect_solutions": {"language": [lang for lang, _ in incorrect], "solution": [s for _, s in incorrect]},
    }


def test_code_contests_keeps_python3_solutions_and_incorrect_ones(tmp_path):
    py = "print(sum(map(int, input().split())))"
    py2 = "a, b = map(int, input().split())\nprint(a + b)"
    row = _contests_row(
        "sum",
        [
            (2, "int main(){}"),
            (3, py),
            (1, "print sum(map(int, raw_input().split()))"),
            (3, py2),
            (3, py),
            (4, "class Main {}"),
        ],
        [(3, "print(0)"), (2, "int main(){return 1;}"), (3, "print(1)"), (1, "print 3")],
    )
    big = _contests_row(
        "big",
        [(3, f"print(3) # {i}") for i in range(MAX_SOLUTIONS + 3)],
        [(3, f"print(4) # {i}") for i in range(MAX_SOLUTIONS + 2)],
    )
    none = _contests_row("none", [(2, "int main(){}")], [])
    (t, b, n), s = _import("code-contests", write_jsonl(tmp_path / "cc.jsonl", [row, big, none]))
    assert t.canonical_solution == py and t.solutions == (py2,)  # Python 3 only, the duplicate gone
    assert t.wrong_solutions == ("print(0)", "print(1)")
    assert b.canonical_solution == "print(3) # 0" and len(b.solutions) == len(b.wrong_solutions) == MAX_SOLUTIONS
    assert b.solutions[0] == "print(3) # 1" and b.wrong_solutions[-1] == f"print(4) # {MAX_SOLUTIONS - 1}"
    assert n.canonical_solution is None and n.solutions == () and n.wrong_solutions == ()
    assert s.solutions_dropped == 2 + 2 and s.notes == {CAPPED_NOTE: 1}
    write_tasks(tmp_path / "t.jsonl", [t, b, n])
    assert load_tasks(tmp_path / "t.jsonl") == [t, b, n]


@pytest.mark.parametrize("fmt", ["taco", "apps-rows"])
def test_taco_and_apps_rows_keep_their_solutions(fmt, tmp_path):
    sols = ["print(input())", "x = input()\nprint(x)", "print(input())", "import sys\nprint(sys.stdin.read().strip())"]
    row = {
        "question": "Echo.",
        "solutions": json.dumps(sols),
        "starter_code": "",
        "input_output": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}),
        "problem_id": 7,
    }
    decoded = {**row, "problem_id": 8, "solutions": [f"print({i})" for i in range(MAX_SOLUTIONS + 2)]}
    (t, d), s = _import(fmt, write_jsonl(tmp_path / "rows.jsonl", [row, decoded]))
    assert t.canonical_solution == sols[0] and t.solutions == (sols[1], sols[3]) and t.wrong_solutions == ()
    assert d.canonical_solution == "print(0)" and len(d.solutions) == MAX_SOLUTIONS and s.solutions_dropped == 1
    assert s.notes == {CAPPED_NOTE: 1}
    # a taco export writes every reference back, the canonical one first
    exported = build_row("taco", parsed_from_task(t), t, "taco")
    assert json.loads(exported["solutions"]) == [sols[0], sols[1], sols[3]]
    again = parse_row("taco", exported)
    assert (again.solution, again.solutions) == (t.canonical_solution, t.solutions)


def test_mapped_rows_read_a_list_of_solutions(tmp_path):
    rows = [
        {"q": "Echo.", "tests": {"inputs": ["1\n"], "outputs": ["1\n"]}, "sol": ["print(input())", "print(1)"]},
        {"q": "Echo.", "tests": {"inputs": ["1\n"], "outputs": ["1\n"]}, "sol": "print(input())"},
    ]
    (listed, single), _ = _import(
        "rows", write_jsonl(tmp_path / "m.jsonl", rows), mapping={"prompt": "q", "tests": "tests", "solution": "sol"}
    )
    assert listed.canonical_solution == "print(input())" and listed.solutions == ("print(1)",)
    assert single.canonical_solution == "print(input())" and single.solutions == ()
