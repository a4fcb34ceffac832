"""Each on-disk format declared once, as a strict pydantic model, with the one-line messages its readers print.

Strict: no coercion (``"3"`` is not a number, ``true`` is not 1; an integer is a float). The formats:

* :class:`TaskRecord`: a line of a task file, the semantic rules (tests that compile, which fields go with which
  tests and languages) in :meth:`TaskRecord.problems`. Its JSON Schema is ``docs/task.schema.json``, written by
  ``python -m grpo_wb.formats.schema > docs/task.schema.json`` (a test keeps the two equal);
* :data:`SCORED_ROW`: what every reader needs of a row of a ``grpo-wb score`` results file;
* :class:`GroupRecord`: what the estimates need of a line of a run's ``groups.jsonl``;
* :class:`BatchPlanFile`: a ``grpo-wb batch`` plan;
* :data:`PARAMETER_VALUES`: a notebook parameter's value, by its annotation.

Scored rows and group records are open (extra fields are read past, not refused): their writers
(:class:`~grpo_wb.scoring.scorer.ScoredCompletion`, :class:`~grpo_wb.signal.diagnostics.GroupStats`) declare more
fields than a reader needs, a run's rollouts add ``step`` and ``advantage``, and a results file from another tool
or trimmed of its text is read as it is. The others refuse unknown fields.

Readers call the functions here (:func:`check_task`, :func:`scored_row_problem`, :func:`check_group`,
:func:`check_plan`, :func:`check_parameter`), which return what was read or one-line problems, never a pydantic
error: this module is loaded lazily (:mod:`grpo_wb.formats`), and no reader imports pydantic.
"""

from __future__ import annotations

import functools
import json
import keyword
import warnings
from collections.abc import Iterable
from typing import Annotated, Any, Literal, NotRequired, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    model_validator,
    with_config,
)
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from grpo_wb.errors import UserError
from grpo_wb.formats import PARAMETER_TYPES, SCHEMA_VERSION

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)
_OPEN = ConfigDict(strict=True, extra="ignore", frozen=True)


def _where(loc: Iterable[int | str]) -> str:
    """``tests[2]``, ``grid.n``: a location as a reader writes it."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# ----------------------------------------------------------------------------- the task record

OutputMatch = Literal["lines", "tokens", "numeric-lines", "prime_code", "open-r1", "taco", "codeforces", "klear"]
"""How a stdio test's output is compared (:mod:`grpo_wb.scoring.rules`)."""
Language = Literal["python", "cpp"]
"""What a task's programs are written in: Python, or C++ (stdio tasks, compiled with g++ in the sandbox)."""
CheckerStyle = Literal["open-r1", "klear", "hardtests", "testlib"]
"""How a task's checker is called (``scoring/worker/wb_native.CHECKER_STYLES``)."""
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class AssertTest(BaseModel):
    """A test that passes when its code raises nothing (candidate is bound to the entry point)."""

    model_config = _STRICT
    name: str = Field(description="unique within the task; shown in per-test results")
    type: Literal["assert"] = "assert"
    code: str = Field(description="Python statements run after the program; candidate is bound to the entry point")


class StdioTest(BaseModel):
    """A test that runs the whole program with input on stdin and compares its stdout with output."""

    model_config = _STRICT
    name: str = Field(description="unique within the task; shown in per-test results")
    type: Literal["stdio"]
    input: str = Field(description="fed to the program on stdin")
    output: str = Field(description="the expected stdout (compared as output_match says)")


def _test_type(test: Any) -> str:
    """Which model reads a test: its ``type``, ``assert`` when absent (a type that is no string is assert's to
    refuse)."""
    t = test.get("type", "assert") if isinstance(test, dict) else "assert"
    return t if isinstance(t, str) else "assert"


TestRecord = Annotated[
    Annotated[AssertTest, Tag("assert")] | Annotated[StdioTest, Tag("stdio")], Discriminator(_test_type)
]
TEST_TYPES = ("assert", "stdio")
"""The tags of :data:`TestRecord`: a test's ``type``."""


class TaskRecord(BaseModel):
    """One line of a grpo_wb task file (JSON lines): the task record, declared once. Its fields, in the order a task
    file writes them, with their defaults and meaning, are the fields of the task at run time
    (:class:`grpo_wb.tasks.records.Task`, what a record loads as; :func:`grpo_wb.tasks.records.field_mismatches`
    holds the two lists equal on the first record read)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="grpo_wb task")
    schema_version: int = Field(SCHEMA_VERSION, ge=SCHEMA_VERSION, le=SCHEMA_VERSION, description="format version")
    task_id: str = Field(pattern=r"\S", description="unique in the file, e.g. HumanEval/0")
    prompt: str = Field(
        description="what the model sees; a continuation completion is appended to it (when it is code)"
    )
    entry_point: str = Field(
        description="the function the tests call (bound to candidate); may be empty when every test is stdio"
    )
    tests: list[TestRecord] = Field(
        min_length=1,
        description="counted one by one (partial credit); all assert (a function task) or all stdio (a script task)",
    )
    test_setup: str = Field(
        "", description="code run before each test (helpers, imports, constants of the original test module)"
    )
    check: str | None = Field(None, description="source defining check(candidate); when set it decides passed")
    canonical_solution: str | None = Field(
        None, description="a reference completion of the prompt (tasks validate runs it, the mock backend answers it)"
    )
    # list defaults from a factory: pydantic would deep-copy a default list for every record it reads
    solutions: list[str] = Field(
        default_factory=list,
        description="more reference programs, judged as completions are: for audits only, never a verdict",
    )
    wrong_solutions: list[str] = Field(
        default_factory=list,
        description="programs the dataset labels wrong (CodeContests' incorrect_solutions): a pass is a false positive",
    )
    timeout: Seconds | None = Field(None, description="the task's wall-clock limit in seconds; overrides the run's")
    prelude: str = Field(
        "", description="code run before the completion in the same module (e.g. the standard imports APPS assumes)"
    )
    output_match: OutputMatch = Field(
        "lines",
        description="how stdio output is compared: lines, tokens (CodeContests), numeric-lines (LiveCodeBench) or a "
        "trainer's rule",
    )
    language: Language = Field(
        "python", description="what completions and references are written in; cpp: a stdio task's C++ programs"
    )
    checker: str | None = Field(
        None,
        description="a stdio task's special judge (Python, or C++ for testlib), run on each test's output instead "
        "of output_match",
    )
    checker_style: CheckerStyle = Field("open-r1", description="how the checker is called and read")
    time_limit: Seconds | None = Field(
        None, description="the dataset's seconds per test: a C++ run's on each test; a Python task's, times its tests"
    )
    memory_limit_mb: Annotated[int, Field(gt=0)] | None = Field(
        None, description="the dataset's MB per test: a C++ run's address space on each test; not applied to Python"
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="free-form (source, difficulty, mock_skill, ...)"
    )

    def problems(self) -> list[str]:
        """What a schema cannot say: identifiers, unique test names, code that compiles, the fields that go with
        stdio tests and with C++."""
        problems: list[str] = []
        stdio = all(t.type == "stdio" for t in self.tests)
        ep = self.entry_point
        if not (ep == "" and stdio) and (not ep.isidentifier() or keyword.iskeyword(ep)):
            problems.append(
                f"entry_point {ep!r} is not a Python identifier"
                + ("" if ep else " (only tasks whose tests are all stdio may leave it empty)")
            )
        seen: set[str] = set()
        for i, t in enumerate(self.tests):
            if t.name in seen:
                problems.append(f"tests[{i}]: duplicate test name {t.name!r}")
            seen.add(t.name)
            if isinstance(t, AssertTest):
                if not t.code.strip():
                    problems.append(f"tests[{i}]: code is empty")
                elif err := _compile_error(t.code, f"tests[{i}] code"):
                    problems.append(err)
        if not stdio and any(t.type == "stdio" for t in self.tests):
            problems.append("tests mix stdio and assert tests: a task is either a script or a function")
        python = ["test_setup", "check", "prelude"] + (["checker"] if self.checker_style != "testlib" else [])
        for key in python:  # a testlib checker is C++
            if (src := getattr(self, key)) and (err := _compile_error(src, key)):
                problems.append(err)
        if self.output_match != "lines" and not stdio:
            problems.append("output_match applies to stdio tests; this task has assert tests")
        if self.check and "def check" not in self.check:
            problems.append("check must define a function check(candidate)")
        if self.checker is not None and not stdio:
            problems.append("a checker judges stdio tests; this task has assert tests")
        elif self.checker is not None and not self.checker.strip():
            problems.append("checker is empty (leave it out, or null, to compare outputs)")
        if self.language != "python":
            if not stdio:
                problems.append(
                    f"a {self.language} task has stdio tests only (its programs are compiled and run on stdin)"
                )
            if parts := [key for key in ("prelude", "test_setup", "check") if getattr(self, key)]:
                problems.append(f"a {self.language} task has no {', '.join(parts)} (Python code run with the program)")
        return problems


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


_TYPE_NAMES = {
    "string_type": "string",
    "int_type": "integer",
    "float_type": "number",
    "bool_type": "boolean",
    "list_type": "list",
    "dict_type": "object",
    "model_type": "object",
}
_NULLABLE = frozenset(k for k, f in TaskRecord.model_fields.items() if not f.is_required() and f.default is None)
_UNITS = {"timeout": "seconds", "time_limit": "seconds", "memory_limit_mb": "MB"}


def _task_problem(err: ErrorDetails) -> str:
    """One pydantic error as ``tasks validate`` words it (``tests[2]: field 'code' must be a string, got int``)."""
    loc = [p for p in err["loc"] if p not in TEST_TYPES]  # a test's tag: which model read it, not where it is
    kind, value = err["type"], err["input"]
    *parents, key = loc or [""]
    prefix = f"{_where(parents)}: " if parents and isinstance(key, str) else ""
    if kind == "model_type" and not loc:
        return f"expected a JSON object, got {type(value).__name__}"
    if kind == "model_type":
        return f"{_where(loc)} must be an object, got {type(value).__name__}"
    if kind == "extra_forbidden":
        return f"{prefix}unknown field {key!r}"
    if kind == "missing":
        return f"{prefix}missing field {key!r}"
    if kind == "union_tag_invalid":
        return f"{_where(loc)}: unknown test type {value['type']!r} (known: {', '.join(TEST_TYPES)})"
    if kind == "literal_error" and isinstance(value, str):
        what = "test type" if key == "type" else key
        known = TEST_TYPES if key == "type" else get_args(TaskRecord.model_fields[str(key)].annotation)
        return f"{prefix}unknown {what} {value!r} (known: {', '.join(known)})"
    if kind in _TYPE_NAMES or kind == "literal_error":
        expected = _TYPE_NAMES.get(kind, "string") + (" or null" if not parents and key in _NULLABLE else "")
        if isinstance(key, int):
            return f"{_where(loc)} must be a {expected}, got {type(value).__name__}"
        return f"{prefix}field {key!r} must be a {expected}, got {type(value).__name__}"
    if key == "schema_version":
        return f"unsupported schema_version {value} (this grpo_wb reads {SCHEMA_VERSION})"
    if key == "task_id":
        return "task_id is empty"
    if key == "tests":
        return "tests is empty: a task needs at least one test"
    if key in _UNITS:
        return f"{key} must be a positive finite number of {_UNITS[str(key)]}"
    return f"{_where(loc)}: {err['msg']}"


def check_task(obj: Any) -> tuple[TaskRecord | None, list[str]]:
    """A decoded JSON line as a task record, or None and every problem found (each one line)."""
    try:
        record = TaskRecord.model_validate(obj)
    except ValidationError as e:
        return None, [_task_problem(err) for err in e.errors(include_url=False)]
    problems = record.problems()
    return (None if problems else record), problems


def task_json_schema() -> dict[str, Any]:
    """The task format as JSON Schema (draft 2020-12): what ``docs/task.schema.json`` holds."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **TaskRecord.model_json_schema()}


# ----------------------------------------------------------------------------- scored rows and group records


@with_config(_OPEN)
class ScoredRow(TypedDict):
    """What every reader needs of a scored completion (the scorer writes all of ``ScoredCompletion``'s fields)."""

    task_id: str
    passed: bool
    reward: NotRequired[float | None]


SCORED_ROW = TypeAdapter(ScoredRow)
"""Built once: a row is checked at orjson's pace (a model instance per row would cost as much as parsing it)."""
_IS_SCORED_ROW = SCORED_ROW.validator.isinstance_python  # the streamed readers' path: a yes, with no error built


def scored_row_problem(obj: Any) -> str | None:
    """Why ``obj`` is not a scored completion (None when it is one)."""
    if _IS_SCORED_ROW(obj):
        return None
    try:
        SCORED_ROW.validate_python(obj)
    except ValidationError as e:
        if all(err["loc"][:1] == ("reward",) for err in e.errors(include_url=False)):
            return f"reward must be a number or null, got {obj['reward']!r}"
        return (
            "not a scored completion (needs string task_id and boolean passed; is this the output of `grpo-wb score`?)"
        )
    return None


class GroupRecord(BaseModel):
    """What the estimates need of one group of a run (``groups.jsonl``; the run writes all of ``GroupStats``)."""

    model_config = _OPEN
    task_id: str
    n_total: int = Field(ge=1)
    n_correct: int = Field(ge=0)
    rewards: list[float | None]

    @model_validator(mode="after")
    def _passes_within_the_group(self) -> Self:
        if self.n_correct > self.n_total:
            raise ValueError("n_correct exceeds n_total")
        return self


def check_group(obj: Any) -> GroupRecord | None:
    """``obj`` as a group record, or None when it is not one."""
    try:
        return GroupRecord.model_validate(obj)
    except ValidationError:
        return None


# ----------------------------------------------------------------------------- batch plans


class ReportEntry(BaseModel):
    """One entry of a plan's ``reports``: a notebook, fixed parameters and a grid over others."""

    model_config = _STRICT
    id: str | None = Field(None, description="a unique string (lets later entries say after: [id])")
    notebook: str = Field(description="a notebook path")
    name: str | None = Field(None, description="a name template, {parameter} filled with its value")
    parameters: dict[str, Any] | None = Field(None, description="a mapping of fixed parameter values")
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] | None = Field(
        None, description="a mapping of parameter names to non-empty lists of values (their cartesian product)"
    )
    after: list[str] = Field(default_factory=list, description="a list of ids whose reports run first")


class BatchPlanFile(BaseModel):
    """A ``grpo-wb batch`` plan (YAML or JSON): :mod:`grpo_wb.reports.batch`'s module docstring shows one."""

    model_config = _STRICT
    base_dir: str = Field(".", description="a directory path, relative to the plan file's directory")
    out: str = Field("reports", min_length=1, description="a directory path (the report root)")
    workers: int = Field(2, gt=0, description="a positive integer (reports running at once)")
    cell_timeout: float = Field(300, gt=0, description="a positive number (seconds one cell may run)")
    timeout: float = Field(900, gt=0, description="a positive number (seconds one report may run)")
    start_timeout: float = Field(60, gt=0, description="a positive number (seconds a kernel may take to start)")
    reports: list[ReportEntry] = Field(min_length=1, description="a non-empty list of report entries")


def _plan_problem(err: ErrorDetails) -> str:
    """One pydantic error as a plan's mistake: ``reports[1]: unknown key 'grdi' (known: ...)``."""
    loc, kind = list(err["loc"]), err["type"]
    if not loc:
        return "a plan is a mapping with a 'reports' list"
    entry = len(loc) > 1 and loc[0] == "reports"
    model: type[BaseModel] = ReportEntry if entry else BatchPlanFile
    prefix, rest = (f"{_where(loc[:2])}: ", loc[2:]) if entry else ("", loc)
    if not rest:
        return f"{_where(loc)} must be a mapping, got {type(err['input']).__name__}"
    key = str(rest[0])
    if kind == "extra_forbidden":
        return f"{prefix}unknown key {key!r} (known: {', '.join(sorted(model.model_fields))})"
    expected = model.model_fields[key].description
    if kind == "missing":
        return f"{prefix}missing key {key!r} ({expected})"
    if len(rest) > 1:
        return f"{prefix}{key} must be {expected}; {_where(rest)} is {err['input']!r}"
    return f"{prefix}{key} must be {expected}, got {err['input']!r}"


def check_plan(obj: Any, source: str) -> BatchPlanFile:
    """A decoded plan file as a plan, or a one-line UserError naming ``source`` and the first mistake."""
    try:
        return BatchPlanFile.model_validate(obj)
    except ValidationError as e:
        raise UserError(f"{source}: {_plan_problem(e.errors(include_url=False)[0])}") from None


# ----------------------------------------------------------------------------- notebook parameter values


PARAMETER_VALUES: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(tp, config=ConfigDict(strict=True, allow_inf_nan=False)) for name, tp in PARAMETER_TYPES.items()
}
"""A notebook parameter's annotation -> its values' strict type (a float is finite; an int passes for it)."""


def check_parameter(name: str, annotation: str, value: Any) -> Any:
    """``value`` as notebook parameter ``name`` (annotated ``annotation``) takes it, or a one-line UserError."""
    try:
        return PARAMETER_VALUES[annotation].validate_python(value)
    except ValidationError as e:
        if e.errors()[0]["type"] == "finite_number":
            raise UserError(f"parameter {name!r} must be finite, got {value!r}") from None
        raise UserError(f"parameter {name!r} expects {annotation}, got {type(value).__name__} {value!r}") from None


if __name__ == "__main__":  # python -m grpo_wb.formats.schema > docs/task.schema.json
    print(json.dumps(task_json_schema(), indent=2, ensure_ascii=False))
