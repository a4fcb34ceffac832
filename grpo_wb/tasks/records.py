"""Canonical task records and their JSONL file format.

One task per line. The JSON form (``schema_version`` 1)::

    {"schema_version": 1,
     "task_id": "toy/add",                      # unique in the file
     "prompt": "def add(a, b):\\n    \\"\\"\\"Sum.\\"\\"\\"\\n",
     "entry_point": "add",                      # the function the tests call
     "tests": [{"name": "small", "type": "assert",
                "code": "assert candidate(1, 2) == 3"}],
     "test_setup": "",                          # optional: code run before every test
     "check": null,                             # optional: source defining check(candidate)
     "canonical_solution": "    return a + b\\n",  # optional: completes the prompt
     "solutions": ["def add(a, b):\\n    return b + a\\n"],  # optional: more references (omitted when empty)
     "wrong_solutions": ["    return a - b\\n"],  # optional: programs labelled wrong (omitted when empty)
     "timeout": null,                           # optional: seconds, overrides the run's default
     "prelude": "",                             # optional: code run before the completion (omitted when empty)
     "output_match": "lines",                   # optional: how stdio output is compared (omitted when "lines")
     "language": "python",                      # optional: "python" or "cpp" (omitted when "python")
     "checker": null,                           # optional: a Python special judge for stdio tests (omitted when null)
     "checker_style": "open-r1",                # optional: how the checker is called (omitted when "open-r1")
     "time_limit": null,                        # optional: the dataset's seconds per test (omitted when null)
     "memory_limit_mb": null,                   # optional: the dataset's MB per test (omitted when null)
     "metadata": {}}                            # optional: free-form

``output_match`` (stdio tests): ``lines`` compares line by line after dropping
trailing whitespace and trailing blank lines (line count included); ``tokens``
is CodeContests' rule (whitespace-separated tokens, case-insensitive, numbers
within 1e-5); ``numeric-lines`` is LiveCodeBench's (lines stripped, a line also
matches when its tokens are equal as decimal numbers); ``prime_code``, ``open-r1``, ``codeforces`` (open-r1's
Codeforces reward), ``klear`` (Klear-CodeTest's judge) and ``taco`` are those trainers' rules (see
:mod:`grpo_wb.scoring.rules`), which a task gets when it is judged by its trainer's reward
(``metadata.trainer_reward``).

``language`` ``cpp`` makes a stdin/stdout task a C++ one: its programs (the completion's last ```` ```cpp ````
block, the references) are compiled with ``g++ -O2 -std=c++17`` inside the sandbox and run once per test; such a
task has stdio tests only and no Python ``prelude``, ``test_setup`` or ``check``.

``checker`` is a stdio task's special judge (Codeforces problems with many right answers): a Python program the
dataset ships, run in the sandbox on each test's input, expected output and the program's output, in a job of its
own (never beside the candidate); it decides each test instead of ``output_match``. ``checker_style`` says how it is
called: ``open-r1`` (``checker.py INPUT EXPECTED ACTUAL``, accepts stdout ``1`` or ``100``), ``klear`` (defines
``is_valid_output(input, actual, expected)``), ``hardtests`` (defines ``output_judging_function(input, actual,
expected)``) or ``testlib`` (C++ including ``testlib.h``, compiled in the sandbox, run as ``checker INPUT OUTPUT
ANSWER``, exit code 0 accepts).

``time_limit`` and ``memory_limit_mb`` are a judge's limits per test (Codeforces' ``time_limit``, ``memory_limit``).
A C++ program gets them on each run (past the time: that test fails, "time limit exceeded"; the memory is its address
space). A Python task's tests run in one process: its deadline becomes ``time_limit`` times the number of tests
(unless ``timeout`` is set), and it keeps the run's memory limit (an interpreter forked from the worker maps more
than a judge's fresh one: 256 MB of address space would fail programs a judge accepts).

``tests`` are counted one by one (partial credit). When ``check`` is present
(imported HumanEval tasks keep the original ``check`` function there) it is the
authority for ``passed``; otherwise a completion passes when every test passes.
The program a completion is judged on is ``prompt + completion`` for a
continuation, or the completion alone when it defines the entry point itself
(see :mod:`grpo_wb.scoring.extraction`).

``solutions`` and ``wrong_solutions`` are judged exactly as a completion is: the
references a dataset ships beyond ``canonical_solution``, and the programs it
labels wrong (CodeContests' ``incorrect_solutions``). They never change a
verdict (the scorer does not read them); an audit runs them all: references that
fail mean a broken task, wrong programs that pass measure its false positives.
Importers keep at most :data:`MAX_SOLUTIONS` of each.

Loading is strict: unknown fields, wrong types, duplicate ids, empty test lists
and tests that do not compile are errors reported as ``PATH:LINE: problem``. The
format is declared once, by :class:`grpo_wb.formats.schema.TaskRecord` (its JSON
Schema is docs/task.schema.json): each field's name, order, default and meaning.
:class:`Task` is what a record loads as: the same fields, held as plain frozen
dataclass attributes (no pydantic until the first record is read; tuples where the
record has lists), which the first record read checks are the schema's
(:func:`field_mismatches`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lazy_loader

from grpo_wb.errors import UserError, ValidationError, format_location
from grpo_wb.formats import SCHEMA_VERSION, WRITTEN_WHEN_SET
from grpo_wb.jsonio import atomic_write_jsonl, iter_jsonl

if TYPE_CHECKING:
    from grpo_wb.formats import schema
else:  # pydantic and the models take some 0.1 s: loaded by the first task checked, not by `grpo-wb --help`
    schema = lazy_loader.load("grpo_wb.formats.schema", suppress_warning=True)

#: the most programs an importer keeps in ``solutions`` and in ``wrong_solutions`` of one task: APPS and TACO rows
#: can carry hundreds, and a handful is enough to tell a broken task; the cap keeps task files small
MAX_SOLUTIONS = 16


@dataclass(frozen=True)
class TestCase:
    """One separately counted test of a task: ``assert`` (passes when ``code`` raises nothing) or ``stdio`` (the
    program run on ``input``, its stdout held against ``output``). The fields are those of the schema's two kinds of
    test (:class:`~grpo_wb.formats.schema.AssertTest`, :class:`~grpo_wb.formats.schema.StdioTest`), documented
    there; a kind's fields the test does not have stay empty."""

    name: str
    code: str = ""
    type: str = "assert"
    input: str = ""
    output: str = ""

    __test__ = False  # not a pytest class

    def to_json(self) -> dict[str, Any]:
        if self.type == "stdio":
            return {"name": self.name, "type": self.type, "input": self.input, "output": self.output}
        return {"name": self.name, "type": self.type, "code": self.code}


@dataclass(frozen=True)
class Task:
    """A code-generation task: a prompt, an entry point and tests; a task record at run time. Its fields are
    :class:`~grpo_wb.formats.schema.TaskRecord`'s, in its order and with its defaults, each documented there (the
    first record read checks the two lists are one: :func:`field_mismatches`); a task file's lists are tuples here.
    ``schema_version``, first in a record, is a keyword argument here (``Task(task_id, prompt, entry_point,
    tests)`` as ever)."""

    schema_version: int = field(default=SCHEMA_VERSION, kw_only=True)
    task_id: str
    prompt: str
    entry_point: str
    tests: tuple[TestCase, ...]
    test_setup: str = ""
    check: str | None = None
    canonical_solution: str | None = None
    solutions: tuple[str, ...] = ()
    wrong_solutions: tuple[str, ...] = ()
    timeout: float | None = None
    prelude: str = ""
    output_match: str = "lines"
    language: str = "python"
    checker: str | None = None
    checker_style: str = "open-r1"
    time_limit: float | None = None
    memory_limit_mb: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The task's line of a task file: every field in the schema's order, but those of
        :data:`~grpo_wb.formats.WRITTEN_WHEN_SET` that hold their default; tuples as lists."""
        fields, d = self.__dict__, {}
        for name, omitted in _WRITTEN:
            value = fields[name]
            if value != omitted:
                d[name] = list(value) if type(value) is tuple else value
        d["tests"] = [t.to_json() for t in self.tests]
        return d

    @property
    def is_script(self) -> bool:
        """A stdin/stdout task: the program is a script, not a function."""
        return bool(self.tests) and all(t.type == "stdio" for t in self.tests)


_WRITTEN = tuple((f.name, f.default if f.name in WRITTEN_WHEN_SET else object()) for f in dataclasses.fields(Task))
"""A task's fields in a task file's order (:meth:`Task.to_json`), each with the value that leaves it out: its
default, or for a field always written a value no field holds."""


def field_mismatches(task: type = Task, test: type = TestCase) -> list[str]:
    """Where ``task`` and ``test`` (:class:`Task`, :class:`TestCase`) are not the schema's task record and tests:
    a field one has and the other lacks, another order, another default (a tuple here is the record's list)."""
    record = schema.TaskRecord.model_fields
    ours = {f.name: f for f in dataclasses.fields(task)}
    problems = [f"{task.__name__} lacks {n!r}" for n in record if n not in ours]
    problems += [f"TaskRecord lacks {n!r}" for n in ours if n not in record]
    if not problems and list(ours) != list(record):
        problems.append(f"{task.__name__}'s order {list(ours)} is not TaskRecord's {list(record)}")
    for name in ours.keys() & record.keys():
        f, info = ours[name], record[name]
        mine = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        theirs = dataclasses.MISSING if info.is_required() else info.get_default(call_default_factory=True)
        if (list(mine) if type(mine) is tuple else mine) != theirs:
            problems.append(f"{task.__name__}.{name} defaults to {mine!r}, TaskRecord's to {theirs!r}")
    kinds = (schema.AssertTest.model_fields, schema.StdioTest.model_fields)
    if {f.name for f in dataclasses.fields(test)} != {n for k in kinds for n in k}:
        problems.append(f"{test.__name__}'s fields are not AssertTest's and StdioTest's")
    return problems


@functools.cache
def _check_fields() -> None:
    """Once, when the first record is read: a field added to the schema or to :class:`Task` alone fails at once."""
    if problems := field_mismatches():
        raise RuntimeError("grpo_wb.tasks.records.Task is not the schema's TaskRecord: " + "; ".join(problems))


def parse_task(obj: Any) -> tuple[Task | None, list[str]]:
    """Check one decoded JSON line against the task format (:class:`~grpo_wb.formats.schema.TaskRecord`); return
    the task (or None) and the problems found."""
    _check_fields()
    record, problems = schema.check_task(obj)
    if record is None:
        return None, problems
    # a model's __dict__ is its fields by name: a third of dict(model)'s time, which a 20,000-task file notices
    tests = tuple(TestCase(**t.__dict__) for t in record.tests)
    lists = {"tests": tests, "solutions": tuple(record.solutions), "wrong_solutions": tuple(record.wrong_solutions)}
    return Task(**{**record.__dict__, **lists}), []


def distinct_programs(
    programs: Iterable[Any], *, exclude: Iterable[str | None] = (), cap: int = MAX_SOLUTIONS
) -> tuple[tuple[str, ...], int]:
    """The distinct non-blank strings of ``programs`` in order, minus ``exclude`` (the canonical solution), at most
    ``cap`` of them; and how many the cap left out (an importer counts them)."""
    seen = {p for p in exclude if p is not None}
    kept: list[str] = []
    for p in programs:
        if isinstance(p, str) and p.strip() and p not in seen:
            seen.add(p)
            kept.append(p)
    return tuple(kept[:cap]), max(len(kept) - cap, 0)


def check_task_file(path: str | Path) -> tuple[list[tuple[int, Task]], list[str]]:
    """Parse a task file; return ``(line, task)`` pairs and formatted problems (runs nothing)."""
    path = str(path)
    tasks: list[tuple[int, Task]] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    try:
        for lineno, obj in iter_jsonl(path):
            task, errs = parse_task(obj)
            problems.extend(format_location(path, lineno, e) for e in errs)
            if task is None:
                continue
            if task.task_id in first_line:
                problems.append(
                    format_location(
                        path, lineno, f"duplicate task_id {task.task_id!r} (first on line {first_line[task.task_id]})"
                    )
                )
                continue
            first_line[task.task_id] = lineno
            tasks.append((lineno, task))
    except UserError as e:  # unreadable or bad JSON: report it with the rest
        problems.append(str(e))
    if not tasks and not problems:
        problems.append(format_location(path, None, "no tasks in file"))
    return tasks, problems


def load_tasks(path: str | Path) -> list[Task]:
    """Load and check a task file; any problem raises :class:`ValidationError`."""
    tasks, problems = check_task_file(path)
    if problems:
        raise ValidationError(problems)
    return [t for _, t in tasks]


def write_tasks(path: str | Path, tasks: Iterable[Task]) -> int:
    """Write tasks as canonical JSONL (atomically, streamed: ``tasks`` may be a generator); return how many."""
    return atomic_write_jsonl(path, (t.to_json() for t in tasks))


def task_from_json(obj: dict[str, Any]) -> Task:
    """Build a task from its JSON form, raising ValueError on problems (for library use)."""
    task, errs = parse_task(json.loads(json.dumps(obj)))
    if task is None:
        raise ValueError("; ".join(errs))
    return task
