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
Schema is docs/task.schema.json); :class:`Task` is what a record loads as.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lazy_loader

from grpo_wb.errors import UserError, ValidationError, format_location
from grpo_wb.formats import SCHEMA_VERSION
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
    """One separately counted test of a task."""

    name: str
    """Unique within its task; shown in per-test results."""
    code: str = ""
    """assert: Python statements run after the program; ``candidate`` is bound to the entry point."""
    type: str = "assert"
    """``assert`` (passes when ``code`` raises nothing) or ``stdio`` (program run on ``input``)."""
    input: str = ""
    """stdio: text fed to the program on stdin."""
    output: str = ""
    """stdio: expected stdout, compared after normalising trailing whitespace (line count included)."""

    __test__ = False  # not a pytest class

    def to_json(self) -> dict[str, Any]:
        if self.type == "stdio":
            return {"name": self.name, "type": self.type, "input": self.input, "output": self.output}
        return {"name": self.name, "type": self.type, "code": self.code}


@dataclass(frozen=True)
class Task:
    """A code-generation task: a prompt, an entry point and tests."""

    task_id: str
    """Unique identifier, e.g. ``HumanEval/0``."""
    prompt: str
    """What the model sees; a continuation completion is appended to it (when it is code)."""
    entry_point: str
    """Name of the function the tests call ("" for tasks with only stdio tests)."""
    tests: tuple[TestCase, ...]
    """Individually counted tests (partial credit)."""
    test_setup: str = ""
    """Code run before each test (helpers, imports, constants of the original test module)."""
    check: str | None = None
    """Optional source defining ``check(candidate)``; when set it decides ``passed``."""
    canonical_solution: str | None = None
    """A reference completion of ``prompt``, used by ``tasks validate`` and the mock backend."""
    solutions: tuple[str, ...] = ()
    """More references, each judged as a completion is; for audits only (they never change a verdict)."""
    wrong_solutions: tuple[str, ...] = ()
    """Programs the dataset labels wrong (CodeContests' ``incorrect_solutions``): a pass is a false positive."""
    timeout: float | None = None
    """Per-task wall-clock limit in seconds; ``None`` uses the run's default."""
    prelude: str = ""
    """Code run before the completion in the same module (e.g. the standard imports APPS assumes)."""
    output_match: str = "lines"
    """How stdio output is compared: ``lines``, ``tokens`` (CodeContests) or ``numeric-lines`` (LiveCodeBench)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form extra information (source, difficulty, mock skill, ...)."""
    language: str = "python"
    """``python`` or ``cpp`` (:data:`grpo_wb.formats.schema.Language`): what completions and references are in."""
    checker: str | None = None
    """A stdio task's special judge (Python, or C++ for ``testlib``) run on each test's output; None:
    ``output_match``."""
    checker_style: str = "open-r1"
    """How the checker is called and read (:data:`grpo_wb.formats.schema.CheckerStyle`)."""
    time_limit: float | None = None
    """The dataset's seconds per test: a C++ run's limit on each test; a Python task's deadline, times the tests."""
    memory_limit_mb: int | None = None
    """The dataset's memory per test (MB): a C++ run's address space on each test; not applied to Python."""
    schema_version: int = SCHEMA_VERSION
    """Format version of this record."""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema_version": self.schema_version,
            "task_id": self.task_id,
            "prompt": self.prompt,
            "entry_point": self.entry_point,
            "tests": [t.to_json() for t in self.tests],
            "test_setup": self.test_setup,
            "check": self.check,
            "canonical_solution": self.canonical_solution,
        }
        if self.solutions:
            d["solutions"] = list(self.solutions)
        if self.wrong_solutions:
            d["wrong_solutions"] = list(self.wrong_solutions)
        d["timeout"] = self.timeout
        if self.prelude:
            d["prelude"] = self.prelude
        if self.output_match != "lines":
            d["output_match"] = self.output_match
        if self.language != "python":
            d["language"] = self.language
        if self.checker is not None:
            d["checker"] = self.checker
        if self.checker_style != "open-r1":
            d["checker_style"] = self.checker_style
        if self.time_limit is not None:
            d["time_limit"] = self.time_limit
        if self.memory_limit_mb is not None:
            d["memory_limit_mb"] = self.memory_limit_mb
        d["metadata"] = self.metadata
        return d

    @property
    def is_script(self) -> bool:
        """A stdin/stdout task: the program is a script, not a function."""
        return bool(self.tests) and all(t.type == "stdio" for t in self.tests)


def parse_task(obj: Any) -> tuple[Task | None, list[str]]:
    """Check one decoded JSON line against the task format (:class:`~grpo_wb.formats.schema.TaskRecord`); return
    the task (or None) and the problems found."""
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
