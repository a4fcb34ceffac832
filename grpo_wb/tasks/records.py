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
and tests that do not compile are errors reported as ``PATH:LINE: problem``.
"""

from __future__ import annotations

import functools
import json
import keyword
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError, ValidationError, format_location
from grpo_wb.jsonio import atomic_write_jsonl, iter_jsonl

SCHEMA_VERSION = 1
TEST_TYPES = ("assert", "stdio")
OUTPUT_MATCHES = ("lines", "tokens", "numeric-lines", "prime_code", "open-r1", "taco", "codeforces", "klear")
LANGUAGES = ("python", "cpp")
CHECKER_STYLES = ("open-r1", "klear", "hardtests", "testlib")
"""How a task's checker is called (``scoring/worker/wb_native.CHECKER_STYLES``)."""
"""What a task's programs are written in: Python, or C++ (stdio tasks, compiled with g++ in the sandbox)."""
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
    """``python`` or ``cpp`` (:data:`LANGUAGES`): the language of the completions and references."""
    checker: str | None = None
    """A stdio task's special judge (Python, or C++ for ``testlib``) run on each test's output; None:
    ``output_match``."""
    checker_style: str = "open-r1"
    """How the checker is called and read (:data:`CHECKER_STYLES`)."""
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


_FieldType = type | tuple[type, ...]  # what isinstance() takes
_REQUIRED: dict[str, _FieldType] = {"task_id": str, "prompt": str, "entry_point": str, "tests": list}
_OPTIONAL: dict[str, _FieldType] = {
    "schema_version": int,
    "test_setup": str,
    "check": (str, type(None)),
    "canonical_solution": (str, type(None)),
    "solutions": list,
    "wrong_solutions": list,
    "timeout": (int, float, type(None)),
    "prelude": str,
    "output_match": str,
    "language": str,
    "checker": (str, type(None)),
    "checker_style": str,
    "time_limit": (int, float, type(None)),
    "memory_limit_mb": (int, type(None)),
    "metadata": dict,
}
_TEST_FIELDS = {"name": str, "type": str, "code": str, "input": str, "output": str}
_TEST_NEEDS = {"assert": ("code",), "stdio": ("input", "output")}


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    return {str: "string", int: "integer", float: "number", list: "list", dict: "object", type(None): "null"}.get(
        t, t.__name__
    )


@functools.lru_cache(maxsize=4096)  # row imports check the same prelude and setup on every row
def _compile_error(src: str, what: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(src, f"<{what}>", "exec")
    except SyntaxError as e:
        return f"{what} does not compile: {e.msg} (line {e.lineno})"
    except ValueError as e:  # e.g. null bytes
        return f"{what} does not compile: {e}"
    except (RecursionError, MemoryError):
        return f"{what} does not compile: nested too deeply"
    return None


def parse_task(obj: Any) -> tuple[Task | None, list[str]]:
    """Check one decoded JSON line; return the task (or None) and the problems found."""
    if not isinstance(obj, dict):
        return None, [f"expected a JSON object, got {type(obj).__name__}"]
    problems: list[str] = []
    for key in obj:
        if key not in _REQUIRED and key not in _OPTIONAL:
            problems.append(f"unknown field {key!r}")
    for key, typ in _REQUIRED.items():
        if key not in obj:
            problems.append(f"missing field {key!r}")
        elif not isinstance(obj[key], typ) or isinstance(obj[key], bool):
            problems.append(f"field {key!r} must be a {_type_name(typ)}, got {type(obj[key]).__name__}")
    for key, typ in _OPTIONAL.items():
        if key in obj and (not isinstance(obj[key], typ) or isinstance(obj[key], bool)):
            problems.append(f"field {key!r} must be a {_type_name(typ)}, got {type(obj[key]).__name__}")
    if problems:
        return None, problems
    for key in ("solutions", "wrong_solutions"):
        for i, program in enumerate(obj.get(key, ())):
            if not isinstance(program, str):
                problems.append(f"{key}[{i}] must be a string, got {type(program).__name__}")
    if obj.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        problems.append(f"unsupported schema_version {obj['schema_version']} (this grpo_wb reads {SCHEMA_VERSION})")
    if not obj["task_id"].strip():
        problems.append("task_id is empty")
    all_stdio = bool(obj["tests"]) and all(isinstance(t, dict) and t.get("type") == "stdio" for t in obj["tests"])
    if not (obj["entry_point"] == "" and all_stdio) and (
        not obj["entry_point"].isidentifier() or keyword.iskeyword(obj["entry_point"])
    ):
        problems.append(
            f"entry_point {obj['entry_point']!r} is not a Python identifier"
            + (" (only tasks whose tests are all stdio may leave it empty)" if not obj["entry_point"] else "")
        )
    for key, unit in (("timeout", "seconds"), ("time_limit", "seconds"), ("memory_limit_mb", "MB")):
        if obj.get(key) is not None and not (obj[key] > 0 and math.isfinite(obj[key])):
            problems.append(f"{key} must be a positive finite number of {unit}")
    tests: list[TestCase] = []
    if not obj["tests"]:
        problems.append("tests is empty: a task needs at least one test")
    seen: set[str] = set()
    for i, t in enumerate(obj["tests"]):
        where = f"tests[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where} must be an object")
            continue
        bad = False
        for key in t:
            if key not in _TEST_FIELDS:
                problems.append(f"{where}: unknown field {key!r}")
                bad = True
        ttype = t.get("type", "assert")
        for key in ("name", *_TEST_NEEDS.get(ttype, ())):
            if key not in t:
                problems.append(f"{where}: missing field {key!r}")
                bad = True
        for key, typ in _TEST_FIELDS.items():
            if key in t and not isinstance(t[key], typ):
                problems.append(f"{where}: field {key!r} must be a {_type_name(typ)}")
                bad = True
        if bad:
            continue
        if ttype not in TEST_TYPES:
            problems.append(f"{where}: unknown test type {ttype!r} (known: {', '.join(TEST_TYPES)})")
            continue
        if t["name"] in seen:
            problems.append(f"{where}: duplicate test name {t['name']!r}")
        seen.add(t["name"])
        if ttype == "assert":
            if not t["code"].strip():
                problems.append(f"{where}: code is empty")
            elif err := _compile_error(t["code"], f"{where} code"):
                problems.append(err)
        elif "code" in t:
            problems.append(f"{where}: a stdio test has input and output, not code")
        tests.append(
            TestCase(
                name=t["name"], code=t.get("code", ""), type=ttype, input=t.get("input", ""), output=t.get("output", "")
            )
        )
    if len({t.type for t in tests}) > 1:
        problems.append("tests mix stdio and assert tests: a task is either a script or a function")
    python_checker = obj.get("checker_style", "open-r1") != "testlib"  # a testlib checker is C++
    for key in ("test_setup", "check", "prelude", *(("checker",) if python_checker else ())):
        if obj.get(key) and (err := _compile_error(obj[key], key)):
            problems.append(err)
    if obj.get("output_match", "lines") not in OUTPUT_MATCHES:
        problems.append(f"unknown output_match {obj['output_match']!r} (known: {', '.join(OUTPUT_MATCHES)})")
    elif obj.get("output_match", "lines") != "lines" and not all_stdio:
        problems.append("output_match applies to stdio tests; this task has assert tests")
    if obj.get("check") and "def check" not in obj["check"]:
        problems.append("check must define a function check(candidate)")
    if obj.get("checker_style", "open-r1") not in CHECKER_STYLES:
        problems.append(f"unknown checker_style {obj['checker_style']!r} (known: {', '.join(CHECKER_STYLES)})")
    if obj.get("checker") is not None and not all_stdio:
        problems.append("a checker judges stdio tests; this task has assert tests")
    elif obj.get("checker") is not None and not obj["checker"].strip():
        problems.append("checker is empty (leave it out, or null, to compare outputs)")
    language = obj.get("language", "python")
    if language not in LANGUAGES:
        problems.append(f"unknown language {language!r} (known: {', '.join(LANGUAGES)})")
    elif language != "python":
        if not all_stdio:
            problems.append(f"a {language} task has stdio tests only (its programs are compiled and run on stdin)")
        python_parts = [key for key in ("prelude", "test_setup", "check") if obj.get(key)]
        if python_parts:
            problems.append(f"a {language} task has no {', '.join(python_parts)} (Python code run with the program)")
    if problems:
        return None, problems
    task = Task(
        task_id=obj["task_id"],
        prompt=obj["prompt"],
        entry_point=obj["entry_point"],
        tests=tuple(tests),
        test_setup=obj.get("test_setup", ""),
        check=obj.get("check"),
        canonical_solution=obj.get("canonical_solution"),
        solutions=tuple(obj.get("solutions", ())),
        wrong_solutions=tuple(obj.get("wrong_solutions", ())),
        timeout=float(obj["timeout"]) if obj.get("timeout") is not None else None,
        prelude=obj.get("prelude", ""),
        output_match=obj.get("output_match", "lines"),
        language=language,
        checker=obj.get("checker"),
        checker_style=obj.get("checker_style", "open-r1"),
        time_limit=float(obj["time_limit"]) if obj.get("time_limit") is not None else None,
        memory_limit_mb=obj.get("memory_limit_mb"),
        metadata=obj.get("metadata", {}),
    )
    return task, []


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
