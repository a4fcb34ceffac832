"""The row schemas code-RL datasets are trained from, read into canonical tasks.

Each format reads one row into a :class:`ParsedRow`: the prompt and the tests in
a harness-neutral form (stdin/stdout cases, call cases with argument lists,
assert statements, or a pytest module). :func:`task_from_parsed` makes it a
:class:`~grpo_wb.tasks.records.Task`; the exporters write a ``ParsedRow`` back
in another trainer's schema. Sources, as read (see ``docs/datasets.md``):

* ``verl``: volcengine/verl ``docs/preparation/prepare_data.rst`` and
  ``verl/utils/reward_score/prime_code`` / ``sandbox_fusion``: ``data_source``,
  ``prompt`` (chat messages), ``ability``, ``reward_model.ground_truth`` (a JSON
  string ``{inputs, outputs, fn_name?}`` or ``{assert_case}``; LiveCodeBench's
  base64/zlib/pickle encoding too), ``extra_info``.
* ``open-r1``: huggingface/open-r1 ``src/open_r1/rewards.py`` (``code_reward``)
  and the verifiable-coding-problems cards: ``verification_info`` {``language``,
  ``test_cases``: [{``input``, ``output``, ``type``, ``fn_name``}]} (a struct or
  a JSON string); open-r1/codeforces rows (``official_tests``) too.
* ``taco`` / ``apps-rows``: BAAI/TACO and codeparrot/apps: ``question``,
  ``input_output`` (JSON string), ``starter_code``, ``solutions`` (a JSON list:
  the first is the canonical solution, the others the task's ``solutions``).
* ``code-contests``: google-deepmind/code_contests ``contest_problem.proto``:
  ``public_tests`` / ``private_tests`` / ``generated_tests`` {``input``: [],
  ``output``: []}, judged by tokens (``OutputsMatch``); the Python 3 programs of
  ``solutions`` and ``incorrect_solutions`` as references and wrong programs.
* ``livecodebench``: LiveCodeBench ``lcb_runner/benchmarks/code_generation.py``:
  ``public_test_cases`` / ``private_test_cases`` (JSON, or base64/zlib/pickle),
  ``metadata.func_name``, ``starter_code``.
* ``kodcode``: KodCode-AI/kodcode ``pipeline/step2.2_gen_unit_tests.py``: a
  pytest module in ``test`` (or ``test_code``) importing ``from solution``.
* ``deepcoder``: agentica-org/DeepCoder-Preview-Dataset as agentica-project/rllm 874daa4 built it
  (``rllm/data/preprocess/code/*.ipynb``): ``problem``, ``tests`` (TACO's dict, PrimeIntellect's or
  LiveCodeBench's case list, or Codeforces' [{input, output}]), ``starter_code``/``metadata`` (lcbv5),
  ``solutions``; ``--recipe rllm`` runs the tests rllm's ``code_reward.py`` runs (15 at most).
* ``acecode``: TIGER-Lab/AceCode-87K (card; TIGER-AI-Lab/AceCoder e37ef2a): ``id``, ``question``,
  ``test_cases`` (assert statements), ``context_messages``.
* ``nemo-gym``: nvidia/Nemotron-RL-coding-competitive_coding (card; NVIDIA-NeMo/Gym 07d6b0d
  ``resources_servers/code_gen/app.py``): ``responses_create_params.input``, ``verifier_metadata.unit_tests``.
* ``code-contests-plus``: ByteDance-Seed/Code-Contests-Plus (configs 1x..5x): ``test_cases``, a testlib ``checker``,
  limits, ``correct_submissions``/``incorrect_submissions``.
* ``hardtests``: sigcp/hardtests_problems joined with sigcp/hardtests_tests on ``pid`` (LeiLiLab/HardTestGen):
  the statement, public and generated tests, the output judging function, limits.
* ``klear``: Klear-CodeTest (Kwai-Klear/CodeTest): ``question``, ``reward.ground_truth.input_output``, ``checker``.
* ``rows``: any row file, with ``--map`` naming the columns.

Rows that ship several programs keep them all (distinct, in order, at most
``MAX_SOLUTIONS`` per list; rows over the cap are noted and the programs left
out counted in :attr:`RowImportSummary.solutions_dropped`).

Pickled test cases are decoded by an unpickler that refuses every global, so a
hostile file cannot run code here (LiveCodeBench's own loader would).
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import io
import json
import pickle
import re
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from grpo_wb.errors import UserError, one_line
from grpo_wb.tasks.importers import APPS_PRELUDE, apps_io_tests, apps_prompt, mbpp_entry_point
from grpo_wb.tasks.records import MAX_SOLUTIONS, Task, TestCase, distinct_programs, parse_task, write_tasks
from grpo_wb.tasks.rows import (
    RowSource,
    UnreadableRow,
    count_rows,
    id_prefix,
    iter_located_rows,
    resolve_source,
    row_hash,
)

SCHEMA_FORMATS = ("deepcoder", "acecode", "nemo-gym", "code-contests-plus", "hardtests", "klear")
"""The formats read and exported back each in its dataset's own schema, besides verl, open-r1 and taco (which
come first in :data:`FORMATS` and in the export formats)."""
FORMATS = ("verl", "open-r1", "taco", "apps-rows", "code-contests", "livecodebench", "kodcode", *SCHEMA_FORMATS, "rows")

#: the data_source values verl's default_compute_score sends to a code scorer (verl/utils/reward_score/__init__.py)
VERL_CODE_SOURCES = ("codecontests", "apps", "codeforces", "taco")


class RowError(ValueError):
    """A row that cannot become a task; the message says why, in a few words (the skip reason)."""


@dataclass(frozen=True)
class Cases:
    """A row's tests, as neutral as the formats allow."""

    kind: str
    """``stdio`` (text in, text out), ``call`` (argument lists in, values out), ``assert`` or ``pytest``."""
    inputs: list[Any] = field(default_factory=list)
    """stdio: stdin texts; call: argument lists."""
    outputs: list[Any] = field(default_factory=list)
    """stdio: expected stdout texts; call: expected return values."""
    fn_name: str | None = None
    """call: the function (or ``Solution`` method) called."""
    code: list[str] = field(default_factory=list)
    """assert: one statement per test; pytest: the test module's source (one element)."""
    sets: list[str] = field(default_factory=list)
    """stdio: the test set each case belongs to (``official``, ``generated``, ...; :data:`TEST_SETS`), in the
    tests' names; empty: one set, named ``io``."""


@dataclass(frozen=True)
class ParsedRow:
    """One dataset row, read: what a task is built from and what an export writes back."""

    prompt: str
    """The text the model sees (the last user message of a chat prompt)."""
    cases: Cases
    """The tests."""
    row_id: str | None = None
    """The row's own identifier, when its schema has one."""
    messages: list[dict[str, Any]] | None = None
    """The chat prompt as given (kept for exports; the backends send ``prompt``)."""
    starter_code: str = ""
    """Code the prompt asks the model to complete (LeetCode ``class Solution`` stubs)."""
    solution: str | None = None
    """A reference solution, when the row has one (``tasks validate`` runs it)."""
    solutions: tuple[str, ...] = ()
    """The row's other reference programs (distinct, capped): the task's ``solutions``."""
    wrong_solutions: tuple[str, ...] = ()
    """Programs the row labels wrong (capped): the task's ``wrong_solutions``."""
    solutions_dropped: int = 0
    """Programs the cap of ``MAX_SOLUTIONS`` left out of the two lists (counted over the import)."""
    output_match: str = "lines"
    """How stdout is compared (see :mod:`grpo_wb.tasks.records`)."""
    call_compare: str = "apps_equal"
    """call: the comparison, ``apps_equal`` (APPS/TACO) or ``values_equal`` (LiveCodeBench, exact)."""
    prelude: str = ""
    """Imports run before the completion (APPS's harness imports for APPS-family rows)."""
    language: str = "python"
    """What the programs are written in (``python`` or ``cpp``: :data:`grpo_wb.formats.schema.Language`)."""
    checker: str | None = None
    """The row's special judge (Python source), run on each test's output instead of comparing it."""
    checker_style: str = "open-r1"
    """How that checker is called (:data:`grpo_wb.formats.schema.CheckerStyle`)."""
    time_limit: float | None = None
    """The row's seconds per test."""
    memory_limit_mb: int | None = None
    """The row's memory per test (MB)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Small facts kept in the task's metadata (data_source, difficulty, ...)."""
    notes: tuple[str, ...] = ()
    """Things worth counting over the import (e.g. rows a trainer's own scorer would mis-run)."""


# ----------------------------------------------------------------------------- helpers


def _need(row: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in row or row[k] is None]
    if missing:
        raise RowError(f"missing field {missing[0]!r}")


def _json_field(value: Any, name: str) -> Any:
    """A field that may be stored as a JSON string or as the decoded structure."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str):
        if not value.strip():
            raise RowError(f"{name} is empty")
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise RowError(f"{name} is not JSON ({e.msg})") from None
    return value


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def decode_compressed_json(text: str, name: str) -> Any:
    """JSON, or LiveCodeBench's base64(zlib(pickle(JSON string))), unpickled without globals."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        pass
    except RecursionError:
        raise RowError(f"{name} is JSON nested too deeply to read") from None
    try:
        inner = _NoGlobals(io.BytesIO(zlib.decompress(base64.b64decode(text)))).load()
    except Exception as e:  # binascii, zlib and pickle each raise their own (RecursionError among them)
        raise RowError(f"{name} is neither JSON nor base64/zlib/pickle ({type(e).__name__})") from None
    if isinstance(inner, (bytes, str)):
        try:
            return json.loads(inner)
        except json.JSONDecodeError as e:
            raise RowError(f"{name} decodes to text that is not JSON ({e.msg})") from None
        except RecursionError:
            raise RowError(f"{name} decodes to JSON nested too deeply to read") from None
    return inner


def _text(v: Any, name: str) -> str:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return "\n".join(v) + "\n"
    if not isinstance(v, str):
        raise RowError(f"{name} must be text, got {type(v).__name__}")
    return v


def _json_lines_args(text: Any, name: str) -> list[Any]:
    """One JSON value per line, one line per argument (LiveCodeBench, verl's prime_code)."""
    if not isinstance(text, str):
        raise RowError(f"{name} must be text with one JSON value per line")
    try:
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    except json.JSONDecodeError as e:
        raise RowError(f"{name} is not one JSON value per line ({e.msg})") from None


def _chat_prompt(value: Any) -> tuple[str, list[dict[str, Any]] | None]:
    if isinstance(value, str):
        return value, None
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        users = [m for m in value if m.get("role") == "user"]
        if not users:
            raise RowError("prompt has no user message")
        if not isinstance(users[-1]["content"], str):
            raise RowError(f"the user message's content is not text ({type(users[-1]['content']).__name__})")
        return users[-1]["content"], [dict(m) for m in value]
    raise RowError("prompt must be text or a list of chat messages {role, content}")


#: the note a row gets when the cap left some of its programs out
CAPPED_NOTE = (
    f"over {MAX_SOLUTIONS} reference programs besides the canonical one, or over {MAX_SOLUTIONS} wrong "
    f"ones: the first {MAX_SOLUTIONS} distinct of each kept"
)


def _solution_list(value: Any) -> list[Any]:
    """A ``solutions`` column (a JSON list, as text or decoded) as a list; [] when it is not one."""
    try:
        sols = _json_field(value, "solutions") if value not in (None, "") else None
    except RowError:
        return []
    return sols if isinstance(sols, list) else []


def _references(programs: Sequence[Any], wrong: Sequence[Any] = ()) -> dict[str, Any]:
    """ParsedRow fields for a row's programs: the first reference is ``solution`` (when it is text), the other
    distinct ones ``solutions``; ``wrong`` the ``wrong_solutions``; each list capped, the drop counted and noted."""
    first = programs[0] if programs and isinstance(programs[0], str) else None
    more, n_more = distinct_programs(programs[1:], exclude=[first], cap=MAX_SOLUTIONS)
    bad, n_bad = distinct_programs(wrong, cap=MAX_SOLUTIONS)
    return {"solution": first, "solutions": more, "wrong_solutions": bad, "solutions_dropped": n_more + n_bad}


def _with_cap_note(notes: tuple[str, ...], refs: dict[str, Any]) -> tuple[str, ...]:
    return notes + (CAPPED_NOTE,) if refs["solutions_dropped"] else notes


def io_cases(io_obj: Any, *, name: str, args_as: str = "list") -> Cases:
    """``{inputs, outputs, fn_name?}`` as cases; call inputs are argument lists (``list``) or JSON lines."""
    if (
        not isinstance(io_obj, dict)
        or not isinstance(io_obj.get("inputs"), list)
        or not isinstance(io_obj.get("outputs"), list)
    ):
        raise RowError(f"{name} needs lists 'inputs' and 'outputs'")
    ins, outs = io_obj["inputs"], io_obj["outputs"]
    if not ins:
        raise RowError(f"{name} has no tests")
    if len(ins) != len(outs):
        raise RowError(f"{name} has {len(ins)} inputs but {len(outs)} outputs")
    fn = io_obj.get("fn_name")
    if fn:
        if not isinstance(fn, str) or not fn.isidentifier():
            raise RowError(f"fn_name {fn!r} is not a Python identifier")
        if args_as == "json-lines" and all(isinstance(x, str) for x in ins):
            return Cases(
                "call",
                [_json_lines_args(x, f"{name} input") for x in ins],
                [json.loads(o) if isinstance(o, str) else o for o in outs],
                fn,
            )
        return Cases("call", [x if isinstance(x, list) else [x] for x in ins], list(outs), fn)
    return Cases("stdio", [_text(x, f"{name} input") for x in ins], [_text(o, f"{name} output") for o in outs])


def primeintellect_cases(tcs: list[Any]) -> Cases:
    """PrimeIntellect's ``test_cases`` [{input, output, type, fn_name}]: ``stdin_stdout`` as stdio tests,
    ``function_call`` as PrimeIntellect's own rule has them (the input pasted as the argument list, ``str`` of the
    result compared stripped)."""
    types = {str(t.get("type") or "stdin_stdout") if isinstance(t, dict) else "?" for t in tcs}
    if "?" in types:
        raise RowError("a test case is not an object")
    if types == {"stdin_stdout"}:
        return Cases(
            "stdio",
            [_text(t.get("input", ""), "test input") for t in tcs],
            [_text(t.get("output", ""), "test output") for t in tcs],
        )
    if types == {"function_call"}:
        fn = next((t.get("fn_name") for t in tcs if t.get("fn_name")), None)
        if not fn or not str(fn).isidentifier():
            raise RowError("function_call test cases without a fn_name")
        code = [
            f"assert str(candidate({t.get('input', '')})).strip() == {str(t.get('output', '')).strip()!r}" for t in tcs
        ]
        return Cases("assert", code=code, fn_name=str(fn))
    raise RowError(f"test cases mix types {', '.join(sorted(types))}")


# ----------------------------------------------------------------------------- formats


def parse_verl(row: dict[str, Any]) -> ParsedRow:
    _need(row, "data_source", "prompt", "reward_model")
    rm = row["reward_model"]
    if not isinstance(rm, dict) or "ground_truth" not in rm:
        raise RowError("reward_model must be {style, ground_truth}")
    gt = rm["ground_truth"]
    gt = decode_compressed_json(gt, "ground_truth") if isinstance(gt, str) else gt
    prompt, messages = _chat_prompt(row["prompt"])
    notes: list[str] = []
    unrewardable = None
    if isinstance(gt, dict) and gt.get("assert_case"):
        code = [c for c in gt["assert_case"] if isinstance(c, str)]
        cases = Cases("assert", code=code, fn_name=mbpp_entry_point(code, None))
    else:
        # prime_code reads call inputs as one JSON value per line; list inputs (APPS style) crash it
        json_lines = isinstance(gt, dict) and all(isinstance(x, str) for x in gt.get("inputs") or [])
        cases = io_cases(gt, name="ground_truth", args_as="json-lines")
        if cases.kind == "call" and not json_lines:
            unrewardable = "call-based with list inputs, which verl's prime_code cannot run (it scores them 0)"
    if row["data_source"] not in VERL_CODE_SOURCES:
        unrewardable = (
            f"data_source {row['data_source']!r} is not routed to a code scorer by verl's default_compute_score"
        )
    if isinstance(gt, dict) and gt.get("assert_case") and not unrewardable:
        unrewardable = "assert_case ground truth, which only verl's sandbox_fusion reads (prime_code scores it 0)"
    if unrewardable:
        notes.append(unrewardable)
    extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else {}
    rid = extra.get("index") if extra else None
    return ParsedRow(
        prompt=prompt,
        messages=messages,
        cases=cases,
        prelude=APPS_PRELUDE,
        row_id=None if rid is None else f"{row['data_source']}/{rid}",
        extra={
            "data_source": row["data_source"],
            "ability": row.get("ability"),
            "trainer_reward": "prime_code",
            "trainer_unrewardable": unrewardable,
        },
        notes=tuple(notes),
    )


def parse_open_r1(row: dict[str, Any]) -> ParsedRow:
    if "verification_info" not in row and "official_tests" in row:
        return _parse_codeforces(row)
    _need(row, "verification_info")
    vi = _json_field(row["verification_info"], "verification_info")
    if not isinstance(vi, dict) or not isinstance(vi.get("test_cases"), list):
        raise RowError("verification_info needs a test_cases list")
    language = row_language(vi.get("language"))
    tcs = vi["test_cases"]
    if not tcs:
        raise RowError("verification_info has no test cases")
    cases = primeintellect_cases(tcs)
    if language == "cpp" and cases.kind != "stdio":
        raise RowError("a C++ row with function_call tests (grpo_wb runs C++ programs on stdin only)")
    unrewardable = None
    if cases.kind == "assert":
        unrewardable = (
            "function_call cases, which open-r1's code_reward runs as stdin programs (type and fn_name "
            "ignored): it scores them 0"
        )
    prompt = row.get("prompt") if isinstance(row.get("prompt"), (str, list)) else row.get("problem_statement")
    if prompt is None:
        raise RowError("missing field 'prompt' (or 'problem_statement')")
    text, messages = _chat_prompt(prompt)
    rid = row.get("problem_id") or row.get("in_source_id")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if rid is None else str(rid),
        solution=row.get("gold_standard_solution") if isinstance(row.get("gold_standard_solution"), str) else None,
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        extra={
            "origin": row.get("source"),
            "task_type": row.get("task_type"),
            "trainer_reward": "open-r1",
            "trainer_unrewardable": unrewardable,
        },
        notes=(unrewardable,) if unrewardable else (),
    )


def row_language(value: Any) -> str:
    """A row's ``language`` (open-r1: ``python`` or ``cpp``) as a task's; another language is the row's skip reason."""
    lang = str(value or "python").strip().lower()
    if lang in ("python", "python3", "py"):
        return "python"
    if lang in ("cpp", "c++", "cpp17", "c++17"):
        return "cpp"
    raise RowError(f"language {lang} (grpo_wb runs Python and C++)")


TEST_SETS = {
    "open-r1": ("official", "generated"),
    "code-contests": ("public", "private", "generated"),
    "hardtests": ("public", "generated"),
}
"""The test sets a format's rows keep apart (``tasks import --test-set``): open-r1/codeforces' ``official_tests``
and ``generated_tests`` (open-r1's reward runs both), CodeContests' public, private and generated tests."""


def select_test_set(p: ParsedRow, name: str) -> ParsedRow:
    """The row with only the tests of set ``name`` (a RowError when it has none)."""
    c = p.cases
    keep = [i for i, s in enumerate(c.sets) if s == name]
    if not keep:
        have = sorted(set(c.sets))
        raise RowError(f"no {name} tests" + (f" (it has {', '.join(have)})" if have else ""))
    return dataclasses.replace(
        p,
        cases=dataclasses.replace(
            c, inputs=[c.inputs[i] for i in keep], outputs=[c.outputs[i] for i in keep], sets=[name] * len(keep)
        ),
    )


def _stdio_sets(row: dict[str, Any], columns: dict[str, str]) -> Cases:
    """Stdio cases from lists of {input, output} in several columns, each column a test set."""
    ins: list[str] = []
    outs: list[str] = []
    sets: list[str] = []
    for column, name in columns.items():
        tests = row.get(column)
        if not isinstance(tests, list):
            continue
        for t in tests:
            if not isinstance(t, dict):
                raise RowError(f"{column} must be a list of {{input, output}}")
            ins.append(_text(t.get("input", ""), f"{column} input"))
            outs.append(_text(t.get("output", ""), f"{column} output"))
            sets.append(name)
    return Cases("stdio", ins, outs, sets=sets)


def _parse_codeforces(row: dict[str, Any]) -> ParsedRow:
    tests = row.get("official_tests") or []
    if not isinstance(tests, list) or not tests:
        raise RowError("official_tests is empty")
    cases = _stdio_sets(row, {"official_tests": "official", "generated_tests": "generated"})
    if isinstance(row.get("prompt"), (str, list)):
        text, messages = _chat_prompt(row["prompt"])
    else:
        _need(row, "description")
        parts = [
            row.get("title"),
            row["description"],
            row.get("input_format") and "Input\n" + row["input_format"],
            row.get("output_format") and "Output\n" + row["output_format"],
        ]
        text, messages = "\n\n".join(str(p) for p in parts if p), None
    language = row_language(row.get("language"))
    checker = row.get("generated_checker")
    if checker is not None and (not isinstance(checker, str) or not checker.strip()):
        checker = None
    notes = []
    if checker:
        notes.append("judged by its checker (several answers may be right)")
    if row.get("interaction_format"):
        notes.append("interactive (open-r1 runs no interactor: it cannot grade it either)")
    if row.get("input_mode") == "file":
        notes.append("reads input.txt and writes output.txt, not stdin and stdout")
    if (
        isinstance(row.get("generated_tests"), int)
        and not isinstance(row["generated_tests"], bool)
        and row["generated_tests"] > 0
    ):
        notes.append("its generated tests live outside the row (open-r1's test_cases_*.parquet): official tests only")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if row.get("id") is None else str(row["id"]),
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        checker=checker,
        time_limit=_positive(row.get("time_limit"), "time_limit"),
        memory_limit_mb=_positive(row.get("memory_limit"), "memory_limit", whole=True),
        extra={
            "rating": row.get("rating"),
            "contest_id": row.get("contest_id"),
            "index": row.get("index"),
            "trainer_reward": "open-r1-codeforces",
        },
        notes=tuple(notes),
    )


def _positive(value: Any, name: str, whole: bool = False) -> Any:
    """A row's limit: None when absent, else a positive number (MB rounded up to a whole number)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
        raise RowError(f"{name} must be a positive number, got {value!r}")
    return int(-(-value // 1)) if whole else float(value)


def parse_taco(row: dict[str, Any]) -> ParsedRow:
    _need(row, "question", "input_output")
    io_obj = _json_field(row["input_output"], "input_output")
    cases = io_cases(io_obj, name="input_output")
    starter = row.get("starter_code") or ""
    rid = row.get("problem_id")
    refs = _references(_solution_list(row.get("solutions")))
    return ParsedRow(
        prompt=apps_prompt(str(row["question"]), starter, cases.kind == "call"),
        cases=cases,
        row_id=None if rid is None else str(rid),
        starter_code=starter,
        **refs,
        prelude=APPS_PRELUDE,
        extra={"difficulty": row.get("difficulty"), "trainer_reward": "taco"},
        notes=_with_cap_note((), refs),
    )


def parse_code_contests(row: dict[str, Any], language: str = "python") -> ParsedRow:
    _need(row, "description")
    ins: list[str] = []
    outs: list[str] = []
    sets: list[str] = []
    for col in ("public_tests", "private_tests", "generated_tests"):
        t = row.get(col) or {}
        if not isinstance(t, dict) or len(t.get("input") or []) != len(t.get("output") or []):
            raise RowError(f"{col} must be {{input: [...], output: [...]}} of equal length")
        ins += [_text(x, f"{col} input") for x in t.get("input") or []]
        outs += [_text(x, f"{col} output") for x in t.get("output") or []]
        sets += [col.split("_")[0]] * len(t.get("input") or [])
    if not ins:
        raise RowError("no public, private or generated tests")
    refs = _references(_python3(row.get("solutions"), language), _python3(row.get("incorrect_solutions"), language))
    notes = ("reads input from a file, not stdin",) if row.get("input_file") else ()
    return ParsedRow(
        prompt=str(row["description"]),
        cases=Cases("stdio", ins, outs, sets=sets),
        row_id=None if row.get("name") is None else str(row["name"]),
        **refs,
        output_match="tokens",
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        extra={"difficulty": row.get("difficulty"), "cf_rating": row.get("cf_rating")},
        notes=_with_cap_note(notes, refs),
    )


def _python3(sols: Any, language: str = "python") -> list[str]:
    """The Python 3 programs (language 3; C++: 2) of CodeContests' ``{language: [int], solution: [str]}``."""
    if not isinstance(sols, dict):
        return []
    want = 2 if language == "cpp" else 3
    return [s for lang, s in zip(sols.get("language") or [], sols.get("solution") or []) if lang == want]


# ----------------------------------------------------------------------------- checker datasets

_CPP_SOURCE = re.compile(r"#include\b|\bint\s+main\s*\(|\bstd::")


def program_language(code: str) -> str:
    """``cpp`` for a program that reads as C++ (an ``#include``, ``int main(``, ``std::``), else ``python``: Klear
    ships its solutions without a language tag, and its judge tells them apart the same way."""
    return "cpp" if _CPP_SOURCE.search(code) else "python"


_LANGUAGE_TAGS = {"python": ("python", "python3", "py3", "py"), "cpp": ("cpp", "c++", "cpp17", "c++17", "gnu++17")}


def _tagged_programs(items: Any, language: str, key: str = "code") -> list[str]:
    """The programs of a list of ``{code, language}`` written in ``language`` (py2 is not Python 3)."""
    out = []
    for item in items if isinstance(items, list) else []:
        if (
            isinstance(item, dict)
            and isinstance(item.get(key), str)
            and str(item.get("language", "")).strip().lower() in _LANGUAGE_TAGS[language]
        ):
            out.append(item[key])
    return out


_LIMIT = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*([a-z ]*)\.?\s*$", re.IGNORECASE)
_TIME_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "ms": 1e-3,
    "msec": 1e-3,
    "millisecond": 1e-3,
    "milliseconds": 1e-3,
}
_MEMORY_UNITS = {
    "mb": 1,
    "megabyte": 1,
    "megabytes": 1,
    "mib": 1,
    "m": 1,
    "kb": 1 / 1024,
    "kib": 1 / 1024,
    "kilobytes": 1 / 1024,
    "k": 1 / 1024,
    "gb": 1024,
    "gib": 1024,
    "gigabytes": 1024,
    "g": 1024,
    "b": 1 / 2**20,
    "bytes": 1 / 2**20,
}


def parse_limit(value: Any, name: str, kind: str, default_unit: str) -> float | None:
    """A row's time (seconds) or memory (MB) limit: a number in ``default_unit`` or a string with a unit
    (``2 seconds``, ``1000 ms``, ``256 megabytes``, ``262144 KB``); None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise RowError(f"{name} must be a number, got {value!r}")
    m = _LIMIT.match(str(value).replace(",", ""))
    if not m:
        raise RowError(f"{name} is not a {kind} limit: {value!r}")
    number, unit = float(m.group(1)), m.group(2).strip().lower()
    if not unit and kind == "memory" and number >= 2**20:  # a bare number that large is bytes, not MB
        unit = "bytes"
    scale = (_TIME_UNITS if kind == "time" else _MEMORY_UNITS).get(unit or default_unit)
    if scale is None or not number > 0:
        raise RowError(f"{name} is not a {kind} limit: {value!r}")
    return number * scale


def _limits(time_value: Any, memory_value: Any, time_unit: str, names: tuple[str, str]) -> dict[str, Any]:
    seconds = parse_limit(time_value, names[0], "time", time_unit)
    mb = parse_limit(memory_value, names[1], "memory", "mb")
    return {"time_limit": seconds, "memory_limit_mb": None if mb is None else int(-(-mb // 1))}


def _stdio_list(tests: Any, name: str, test_set: str) -> Cases:
    """``[{input, output}, ...]`` as stdio cases of one test set."""
    if not isinstance(tests, list):
        raise RowError(f"{name} must be a list of {{input, output}}")
    ins, outs = [], []
    for t in tests:
        if not isinstance(t, dict):
            raise RowError(f"{name} must be a list of {{input, output}}")
        ins.append(_text(t.get("input", ""), f"{name} input"))
        outs.append(_text(t.get("output", ""), f"{name} output"))
    return Cases("stdio", ins, outs, sets=[test_set] * len(ins))


def _joined(*cases: Cases) -> Cases:
    return Cases(
        "stdio",
        [x for c in cases for x in c.inputs],
        [y for c in cases for y in c.outputs],
        sets=[s for c in cases for s in c.sets],
    )


def parse_code_contests_plus(row: dict[str, Any], language: str = "python") -> ParsedRow:
    """ByteDance-Seed/Code-Contests-Plus (configs 1x..5x: the same problems with 1 to 5 times the generated tests):
    ``test_cases`` [{input, output}], a testlib ``checker`` (C++), ``time_limit`` (ms), ``memory_limit`` (MB),
    ``correct_submissions`` / ``incorrect_submissions`` [{code, language}]."""
    _need(row, "description")
    cases = _stdio_list(row.get("test_cases") or [], "test_cases", "generated")
    if not cases.inputs:
        raise RowError("test_cases is empty (the tests are in configs 1x to 5x)")
    checker = row.get("checker") if isinstance(row.get("checker"), str) and row["checker"].strip() else None
    refs = _references(
        _tagged_programs(row.get("correct_submissions"), language),
        _tagged_programs(row.get("incorrect_submissions"), language),
    )
    title = row.get("title")
    notes = ["judged by its testlib checker (C++, compiled with testlib.h)"] if checker else []
    rates = {k: row.get(k) for k in ("true_positive_rate", "true_negative_rate") if row.get(k) is not None}
    return ParsedRow(
        prompt=f"{title}\n\n{row['description']}" if title else str(row["description"]),
        cases=cases,
        row_id=None if row.get("id") is None else str(row["id"]),
        **refs,
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        checker=checker,
        checker_style="testlib",
        **_limits(row.get("time_limit"), row.get("memory_limit"), "ms", ("time_limit", "memory_limit")),
        extra={"origin": row.get("source"), **rates},
        notes=_with_cap_note(tuple(notes), refs),
    )


def parse_hardtests(row: dict[str, Any], language: str = "python") -> ParsedRow:
    """sigcp/hardtests_problems joined with sigcp/hardtests_tests on ``pid``: the statement (``question_content``),
    ``public_test_cases``, the generated ``test_cases`` (base64/zlib/pickle of JSON, decoded without globals),
    ``test_cases_kit.output_judging_function`` (the checker; null: HardTests' default comparison, each line and the
    whole output right-stripped, which is grpo_wb's ``lines``), ``time_limit``/``memory_limit`` strings, ``solutions``
    [{code, language}]."""
    if row.get("question_content") is None:
        raise RowError("no statement (question_content): join the hardtests_problems row on pid")
    if row.get("test_cases") is None:
        raise RowError("no test_cases: join the hardtests_tests row on pid")
    raw = row["test_cases"]
    generated = decode_compressed_json(raw, "test_cases") if isinstance(raw, str) else raw
    public = _stdio_list(
        [
            t
            for t in row.get("public_test_cases") or []
            if isinstance(t, dict) and t.get("testtype", "stdin") == "stdin"
        ],
        "public_test_cases",
        "public",
    )
    cases = _joined(public, _stdio_list(generated, "test_cases", "generated"))
    if not cases.inputs:
        raise RowError("no tests")
    given_kit = row.get("test_cases_kit")
    kit = given_kit if isinstance(given_kit, dict) else {}
    ojf = kit.get("output_judging_function")
    checker = ojf if isinstance(ojf, str) and ojf.strip() else None
    refs = _references(_tagged_programs(row.get("solutions"), language))
    title = row.get("question_title")
    return ParsedRow(
        prompt=f"{title}\n\n{row['question_content']}" if title else str(row["question_content"]),
        cases=cases,
        row_id=None if row.get("pid") is None else str(row["pid"]),
        **refs,
        starter_code=str(row.get("starter_code") or ""),
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        checker=checker,
        checker_style="hardtests",
        **_limits(row.get("time_limit"), row.get("memory_limit"), "s", ("time_limit", "memory_limit")),
        extra={"platform": row.get("platform")},
        notes=_with_cap_note(("judged by its output judging function",) if checker else (), refs),
    )


def parse_klear(row: dict[str, Any], language: str = "python") -> ParsedRow:
    """Klear-CodeTest (Jianlp/Klear-CodeTest; Kwai-Klear/CodeTest 3dd70d5 ``readme.md``): ``question``,
    ``reward.ground_truth`` {input_output: [{input, output}], type "stdin", fn_name null} (or ``CodeTests``, a JSON
    string with ``input_output``), ``checker`` (a list: the last one is used, as ``special_judge_gen.py`` does),
    ``solutions`` (untagged: C++ told from Python by their text), ``time-limit``/``memory-limit`` (numbers or
    strings)."""
    _need(row, "question")
    gt = row.get("reward", {}).get("ground_truth") if isinstance(row.get("reward"), dict) else None
    if gt is None and row.get("CodeTests") is not None:
        gt = row["CodeTests"]
    if isinstance(gt, str):
        gt = _json_field(gt, "ground_truth")
    if not isinstance(gt, dict) or not isinstance(gt.get("input_output"), list):
        raise RowError("no tests (reward.ground_truth.input_output)")
    if str(gt.get("type") or "stdin") != "stdin" or gt.get("fn_name"):
        raise RowError(f"tests of type {gt.get('type')!r} (grpo_wb reads Klear's stdin rows)")
    cases = _stdio_list(gt["input_output"], "input_output", "generated")
    if not cases.inputs:
        raise RowError("input_output is empty")
    checkers = row.get("checker") or []
    if isinstance(checkers, str):  # one checker, or a JSON list of them
        try:
            decoded = json.loads(checkers)
        except json.JSONDecodeError:
            decoded = None
        checkers = decoded if isinstance(decoded, list) else [checkers]
    if not isinstance(checkers, list):
        raise RowError(f"checker must be a list of programs, got {type(checkers).__name__}")
    if checkers and (not isinstance(checkers[-1], str) or not checkers[-1].strip()):
        raise RowError("its last checker (the one Klear runs) is empty")
    programs = [p for p in row.get("solutions") or [] if isinstance(p, str) and program_language(p) == language]
    refs = _references(programs)
    return ParsedRow(
        prompt=str(row["question"]),
        cases=cases,
        row_id=None if row.get("custom_id") is None else str(row["custom_id"]),
        **refs,
        starter_code=str(row.get("starter_code") or ""),
        prelude=APPS_PRELUDE if language == "python" else "",
        language=language,
        output_match="klear",
        checker=checkers[-1] if checkers else None,
        checker_style="klear",
        **_limits(row.get("time-limit"), row.get("memory-limit"), "s", ("time-limit", "memory-limit")),
        notes=_with_cap_note(("judged by its checker",) if checkers else (), refs),
    )


def lcb_cases(tests: list[dict[str, Any]], meta: Any) -> tuple[Cases, str, str]:
    """LiveCodeBench's [{input, output, testtype}] as ``(cases, output_match, call_compare)``: ``functional`` tests
    are calls of ``meta["func_name"]`` (one JSON value per input line, the output JSON) compared exactly,
    ``stdin`` tests stdio compared by LiveCodeBench's line rule."""
    types = {t.get("testtype", "stdin") for t in tests}
    if types == {"functional"}:
        fn = meta.get("func_name") if isinstance(meta, dict) else None
        if not fn or not str(fn).isidentifier():
            raise RowError("functional tests without metadata.func_name")
        outs = []
        for t in tests:
            try:
                outs.append(json.loads(t["output"]))
            except (json.JSONDecodeError, TypeError):
                raise RowError("a functional output is not JSON") from None
        return (
            Cases("call", [_json_lines_args(t["input"], "functional input") for t in tests], outs, str(fn)),
            "lines",
            "values_equal",
        )
    if types == {"stdin"}:
        return (
            Cases("stdio", [_text(t["input"], "input") for t in tests], [_text(t["output"], "output") for t in tests]),
            "numeric-lines",
            "apps_equal",
        )
    raise RowError(f"test cases mix types {', '.join(sorted(map(str, types)))}")


def lcb_prompt(question: str, starter: str) -> str:
    """LiveCodeBench's question with its starter code (a ``class Solution`` stub) under it."""
    return question + (f"\n\n{starter.rstrip()}\n" if starter.strip() else "")


def parse_livecodebench(row: dict[str, Any]) -> ParsedRow:
    _need(row, "question_content", "public_test_cases")
    tests: list[Any] = []
    for col in ("public_test_cases", "private_test_cases"):
        v = row.get(col)
        if v in (None, "", []):
            continue
        got = decode_compressed_json(v, col) if isinstance(v, str) else v
        if not isinstance(got, list):
            raise RowError(f"{col} must be a list of {{input, output, testtype}}")
        tests += got
    if not tests or not all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
        raise RowError("no test cases with input and output")
    meta = _json_field(row["metadata"], "metadata") if row.get("metadata") not in (None, "") else {}
    starter = row.get("starter_code") or ""
    cases, match, compare = lcb_cases(tests, meta)
    prompt = lcb_prompt(str(row["question_content"]), starter)
    return ParsedRow(
        prompt=prompt,
        cases=cases,
        row_id=None if row.get("question_id") is None else str(row["question_id"]),
        starter_code=starter,
        output_match=match,
        call_compare=compare,
        extra={
            "platform": row.get("platform"),
            "difficulty": row.get("difficulty"),
            "contest_date": row.get("contest_date"),
            "trainer_reward": "livecodebench",
        },
    )


def parse_kodcode(row: dict[str, Any]) -> ParsedRow:
    _need(row, "question")
    test = row.get("test") if row.get("test") is not None else row.get("test_code")
    if not isinstance(test, str) or not test.strip():
        raise RowError("missing field 'test' (or 'test_code'): the pytest module")
    info = row.get("test_info")
    fn = None
    if isinstance(info, list) and info and isinstance(info[0], dict):
        fn = info[0].get("function_name")
    if not fn:
        fn = _solution_imports(test)[:1] or [None]
        fn = fn[0]
    if not fn:
        raise RowError("cannot tell which function the tests import from solution")
    notes = (
        ("tests import pytest: score with --site-packages (the sandbox imports the standard library only)",)
        if any(n == "pytest" for n in _imported_modules(test))
        else ()
    )
    return ParsedRow(
        prompt=str(row["question"]),
        cases=Cases("pytest", code=[test], fn_name=str(fn)),
        notes=notes,
        row_id=None if row.get("question_id") is None else str(row["question_id"]),
        solution=row.get("solution") if isinstance(row.get("solution"), str) else None,
        extra={"subset": row.get("subset"), "gpt_difficulty": row.get("gpt_difficulty")},
    )


# ----------------------------------------------------------------------------- DeepCoder, AceCode, NeMo Gym

#: ``--recipe`` values: a trainer's own way with a format's rows, opt-in (``RECIPES[fmt]``)
RECIPES = {"deepcoder": ("rllm",)}
#: rllm's cap: ``check_correctness(..., max_tests=15)`` (agentica-project/rllm 874daa4 rllm/rewards/code_reward.py)
RLLM_MAX_TESTS = 15
#: the DeepCoder subsets rllm 874daa4 runs through ``check_correctness`` (lcbv5 rows go to its LiveCodeBench
#: grader, which runs every test)
RLLM_CAPPED = ("taco", "primeintellect", "codeforces")


def deepcoder_subset(tests: Any) -> str:
    """Which DeepCoder-Preview subset a decoded ``tests`` value comes from, by its shape (the rows do not say):
    a dict is ``taco``; a list whose cases carry ``testtype`` is ``lcbv5``, ``type`` ``primeintellect``, neither
    ``codeforces``."""
    if isinstance(tests, dict):
        return "taco"
    if any(isinstance(t, dict) and "testtype" in t for t in tests):
        return "lcbv5"
    if any(isinstance(t, dict) and "type" in t for t in tests):
        return "primeintellect"
    return "codeforces"


def rllm_selection(tests: Any) -> tuple[Any, int]:
    """rllm 874daa4 ``check_correctness``: over 15 tests, the 15 with the longest inputs (``len`` of the raw input,
    longest first, ties in order), and from a dict only ``inputs`` and ``outputs`` (it drops ``fn_name``). Returns
    the tests it runs and how many it left out."""
    if isinstance(tests, dict):
        ins, outs = tests.get("inputs") or [], tests.get("outputs") or []
        if len(ins) != len(outs):  # checked before choosing, or the choice would hide it
            raise RowError(f"tests has {len(ins)} inputs but {len(outs)} outputs")
        if len(ins) <= RLLM_MAX_TESTS:
            return tests, 0
        keep = sorted(range(len(ins)), key=lambda i: len(ins[i]), reverse=True)[:RLLM_MAX_TESTS]
        return {"inputs": [ins[i] for i in keep], "outputs": [outs[i] for i in keep]}, len(ins) - len(keep)
    if len(tests) <= RLLM_MAX_TESTS:
        return tests, 0
    keep = sorted(range(len(tests)), key=lambda i: len(tests[i]["input"]), reverse=True)[:RLLM_MAX_TESTS]
    return [tests[i] for i in keep], len(tests) - len(keep)


def parse_deepcoder(row: dict[str, Any], recipe: str | None = None) -> ParsedRow:
    """agentica-org/DeepCoder-Preview-Dataset (subsets primeintellect, taco, lcbv5, codeforces; built by
    agentica-project/rllm 874daa4 ``rllm/data/preprocess/code/*.ipynb``): ``problem``, ``tests`` (a JSON string or
    the decoded value), ``starter_code`` and ``metadata`` (lcbv5), ``solutions``. Each subset's tests are read as
    grpo_wb reads their source (TACO rows, PrimeIntellect's cases, LiveCodeBench rows) and judged by the same
    trainer rule; ``recipe="rllm"`` runs the tests rllm 874daa4 runs (:func:`rllm_selection`)."""
    if recipe not in (None, *RECIPES["deepcoder"]):
        raise ValueError(f"unknown deepcoder recipe {recipe!r}")
    _need(row, "problem", "tests")
    tests = _json_field(row["tests"], "tests")
    if isinstance(tests, list):
        if not tests:
            raise RowError("tests is an empty list")
        if not all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
            raise RowError("tests must be a list of {input, output} or a dict {inputs, outputs}")
    elif not isinstance(tests, dict):
        raise RowError(
            f"tests must be a list of {{input, output}} or a dict {{inputs, outputs}}, got {type(tests).__name__}"
        )
    subset = deepcoder_subset(tests)
    notes: list[str] = []
    unrewardable = None
    dropped = 0
    if recipe == "rllm" and subset in RLLM_CAPPED:
        fn_before = isinstance(tests, dict) and tests.get("fn_name")
        tests, dropped = rllm_selection(tests)
        if dropped:
            notes.append(
                f"over {RLLM_MAX_TESTS} tests: rllm's {RLLM_MAX_TESTS} with the longest inputs kept (--recipe rllm)"
            )
        if dropped and fn_before:
            tests = {**tests, "fn_name": fn_before}
            unrewardable = (
                f"call-based with over {RLLM_MAX_TESTS} tests: rllm's selection drops fn_name "
                "(874daa4 check_correctness), so its TACO runner runs them as stdin programs"
            )
    problem = str(row["problem"])
    starter = row.get("starter_code") or ""
    trainer: str | None  # None: no trainer runs these rows
    match, compare, prelude, trainer = "lines", "apps_equal", APPS_PRELUDE, "taco"
    if subset == "taco":
        cases = io_cases(tests, name="tests")
    elif subset == "primeintellect":
        cases = primeintellect_cases(tests)
        if cases.kind == "assert":
            trainer = None
            unrewardable = (
                "function_call cases, which rllm cannot run: 874daa4 hands the input text to its TACO "
                "runner, which spreads it into one argument per character"
            )
    elif subset == "lcbv5":
        meta = row.get("metadata")
        meta = _json_field(meta, "metadata") if meta not in (None, "") else {}
        cases, match, compare = lcb_cases(tests, meta)
        problem, prelude, trainer = lcb_prompt(problem, starter), "", "livecodebench"
    else:
        cases = Cases(
            "stdio",
            [_text(t["input"], "test input") for t in tests],
            [_text(t["output"], "test output") for t in tests],
        )
    if unrewardable:
        notes.append(unrewardable)
    refs = _references(_solution_list(row.get("solutions")))
    return ParsedRow(
        prompt=problem,
        cases=cases,
        starter_code=starter,
        **refs,
        output_match=match,
        call_compare=compare,
        prelude=prelude,
        extra={
            "subset": subset,
            "trainer_reward": trainer,
            "trainer_unrewardable": unrewardable,
            "import_recipe": recipe,
            "tests_dropped_by_recipe": dropped or None,
        },
        notes=_with_cap_note(tuple(notes), refs),
    )


def _compiles(code: list[str], name: str) -> None:
    """A RowError naming the first statement of ``code`` that does not compile; all of them compiled as one module
    first (one compile, not one per statement: AceCode rows hold 10 to 30)."""
    try:
        compile("\n".join(code), name, "exec", dont_inherit=True)
        return
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    for i, t in enumerate(code):
        try:
            compile(t, f"{name}[{i}]", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            raise RowError(f"{name}[{i}] does not compile ({getattr(e, 'msg', e)})") from None
        except (RecursionError, MemoryError):
            raise RowError(f"{name}[{i}] does not compile (nested too deeply)") from None


def parse_acecode(row: dict[str, Any]) -> ParsedRow:
    """TIGER-Lab/AceCode-87K (and AceCode-V2-122K): ``id``, ``question``, ``test_cases`` (assert statements; V2's
    processing script calls them ``tests``), ``context_messages`` (the chat prompt, kept as the task's messages),
    ``inferences`` (sampled programs with a pass rate over the tests before filtering: counted, not imported)."""
    _need(row, "question")
    key = "test_cases" if row.get("test_cases") is not None else "tests"
    if row.get(key) is None:
        raise RowError("missing field 'test_cases' (or 'tests')")
    tests = row[key]
    tests = _json_field(tests, key) if isinstance(tests, (str, bytes)) else tests
    if not isinstance(tests, (list, tuple)) or not all(isinstance(t, str) for t in tests):
        raise RowError(f"{key} must be a list of assert statements")
    code = [t for t in tests if t.strip()]
    if not code:
        raise RowError(f"{key} is empty")
    _compiles(code, key)
    fn = mbpp_entry_point(code[:1], None) or mbpp_entry_point(code, None)  # the first assert names it, mostly
    if not fn:
        raise RowError(f"cannot tell which function {key} call")
    ctx = row.get("context_messages")
    text, messages = _chat_prompt(ctx) if isinstance(ctx, list) and ctx else (str(row["question"]), None)
    inferences = row.get("inferences")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=Cases("assert", code=code, fn_name=fn),
        row_id=None if row.get("id") is None else str(row["id"]),
        extra={"origin": row.get("source"), "n_inferences": len(inferences) if isinstance(inferences, list) else None},
    )


def parse_nemo_gym(row: dict[str, Any]) -> ParsedRow:
    """nvidia/Nemotron-RL-coding-competitive_coding (NeMo Gym's ``code_gen`` resources server): the chat prompt in
    ``responses_create_params.input``, the tests in ``verifier_metadata.unit_tests`` {inputs, outputs, fn_name?}
    (LiveCodeBench's format: stdin/stdout, or calls with one JSON value per input line); ``hash_id``,
    ``dataset``, ``source``. Judged by LiveCodeBench's rule, which the verifier runs (NVIDIA-NeMo/Gym 07d6b0d
    resources_servers/code_gen/app.py, lcb_integration/)."""
    _need(row, "responses_create_params", "verifier_metadata")
    params = _json_field(row["responses_create_params"], "responses_create_params")
    if not isinstance(params, dict) or params.get("input") in (None, "", []):
        raise RowError("responses_create_params needs input (the chat messages)")
    msgs = params["input"]
    if isinstance(msgs, list) and any(isinstance(m, dict) and not isinstance(m.get("content"), str) for m in msgs):
        raise RowError("responses_create_params.input: a message whose content is not text")
    text, messages = _chat_prompt(msgs)
    vm = _json_field(row["verifier_metadata"], "verifier_metadata")
    ut = vm.get("unit_tests") if isinstance(vm, dict) else None
    if not isinstance(ut, dict):
        raise RowError("verifier_metadata has no unit_tests {inputs, outputs}")
    cases = io_cases(ut, name="unit_tests", args_as="json-lines")
    if cases.kind == "call" and not all(isinstance(x, str) for x in ut["inputs"]):
        raise RowError("unit_tests with fn_name need inputs as text, one JSON value per line")
    rid = row.get("hash_id")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if rid is None else str(rid),
        output_match="numeric-lines",
        call_compare="values_equal",
        extra={"dataset": row.get("dataset"), "origin": row.get("source"), "trainer_reward": "livecodebench"},
    )


def _imported_modules(src: str) -> set[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return set()
    return {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }


def _solution_imports(test: str) -> list[str]:
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    return [
        a.name
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.module == "solution"
        for a in n.names
        if a.name != "*"
    ]


#: the fields ``rows --map`` can name
MAP_FIELDS = ("prompt", "tests", "inputs", "outputs", "fn_name", "task_id", "solution", "asserts", "test_code")


def parse_mapping(spec: str) -> dict[str, str]:
    """``prompt=COL,tests=COL,...`` into a dict (a ValueError names what is wrong)."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, col = (x.strip() for x in part.partition("="))
        if not sep or not col or not key:
            raise ValueError(f"--map: {part!r} is not FIELD=COLUMN")
        if key not in MAP_FIELDS:
            raise ValueError(f"--map: unknown field {key!r} (known: {', '.join(MAP_FIELDS)})")
        if key in out:
            raise ValueError(f"--map: {key} given twice")
        out[key] = col
    if "prompt" not in out:
        raise ValueError("--map needs prompt=COLUMN")
    given = [k for k in ("tests", "inputs", "asserts", "test_code") if k in out]
    if not given:
        raise ValueError("--map needs the tests: tests=COL, inputs=COL,outputs=COL, asserts=COL or test_code=COL")
    if len(given) > 1:
        raise ValueError(f"--map: the tests come from one place; got {' and '.join(given)}")
    if ("inputs" in out) != ("outputs" in out):
        raise ValueError("--map: inputs and outputs go together")
    return out


def parse_mapped(row: dict[str, Any], mapping: dict[str, str]) -> ParsedRow:
    def col(key: str) -> Any:
        name = mapping[key]
        if name not in row:
            raise RowError(f"missing column {name!r} (mapped to {key})")
        return row[name]

    text, messages = _chat_prompt(col("prompt"))
    fn = str(col("fn_name")) if "fn_name" in mapping and col("fn_name") else None
    if "test_code" in mapping:
        if not fn:
            imported = _solution_imports(str(col("test_code")))
            fn = imported[0] if imported else None
        cases = Cases("pytest", code=[str(col("test_code"))], fn_name=fn)
    elif "asserts" in mapping:
        code = _json_field(col("asserts"), mapping["asserts"])
        code = [code] if isinstance(code, str) else code
        if not isinstance(code, list) or not all(isinstance(c, str) for c in code):
            raise RowError(f"{mapping['asserts']} must be a list of assert statements")
        cases = Cases("assert", code=code, fn_name=fn or mbpp_entry_point(code, None))
    elif "inputs" in mapping:
        cases = io_cases(
            {
                "inputs": _json_field(col("inputs"), mapping["inputs"]),
                "outputs": _json_field(col("outputs"), mapping["outputs"]),
                "fn_name": fn,
            },
            name=mapping["inputs"],
        )
    else:
        tests = _json_field(col("tests"), mapping["tests"])
        if isinstance(tests, list) and all(isinstance(t, dict) for t in tests):
            tests = {
                "inputs": [t.get("input") for t in tests],
                "outputs": [t.get("output") for t in tests],
                "fn_name": fn,
            }
        elif isinstance(tests, dict) and fn and not tests.get("fn_name"):
            tests = {**tests, "fn_name": fn}
        cases = io_cases(tests, name=mapping["tests"])
    rid = col("task_id") if "task_id" in mapping else None
    sol = col("solution") if "solution" in mapping else None
    # a list column (DeepCoder's derived copies carry `solutions`): the first is the reference, the rest more
    refs = _references(list(sol) if isinstance(sol, (list, tuple)) else [sol])
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if rid is None else str(rid),
        **refs,
        prelude=APPS_PRELUDE,
        notes=_with_cap_note((), refs),
    )


PARSERS: dict[str, Callable[[dict[str, Any]], ParsedRow]] = {
    "verl": parse_verl,
    "open-r1": parse_open_r1,
    "taco": parse_taco,
    "apps-rows": parse_taco,
    "code-contests": parse_code_contests,
    "livecodebench": parse_livecodebench,
    "kodcode": parse_kodcode,
    "deepcoder": parse_deepcoder,
    "acecode": parse_acecode,
    "nemo-gym": parse_nemo_gym,
    "code-contests-plus": parse_code_contests_plus,
    "hardtests": parse_hardtests,
    "klear": parse_klear,
}
LANGUAGE_FORMATS = ("code-contests", "code-contests-plus", "hardtests", "klear")
"""Formats whose problems are language-neutral and whose rows ship programs in several languages: ``tasks import
--language cpp`` makes C++ tasks of them, with the C++ programs as references."""


def parse_row(
    fmt: str, row: Any, mapping: dict[str, str] | None = None, recipe: str | None = None, language: str | None = None
) -> ParsedRow:
    """Read one row of ``fmt`` (``rows`` needs ``mapping``; ``recipe``: one of ``RECIPES[fmt]``; ``language``: the
    tasks' language, for :data:`LANGUAGE_FORMATS`); a RowError says why it cannot be a task."""
    if isinstance(row, UnreadableRow):
        raise RowError(row.reason)
    if not isinstance(row, dict):
        raise RowError(f"a row must be an object, got {type(row).__name__}")
    if fmt == "rows" and mapping is None:
        raise ValueError("the rows format needs a column mapping")
    if recipe is not None and recipe not in RECIPES.get(fmt, ()):
        raise ValueError(f"{fmt} rows take no recipe {recipe!r}")
    try:
        if fmt == "rows" and mapping is not None:  # rows without a mapping were refused above
            return parse_mapped(row, mapping)
        if language is not None and language != "python":
            if fmt not in LANGUAGE_FORMATS:
                raise ValueError(f"{fmt} rows take no language {language!r}")
            return PARSERS[fmt](row, language=language)  # type: ignore[call-arg]
        return PARSERS[fmt](row) if recipe is None else parse_deepcoder(row, recipe)
    except RowError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as e:  # a field of the wrong shape
        raise RowError(f"malformed {fmt} row ({type(e).__name__}: {one_line(e, 120)})") from None
    except RecursionError:
        raise RowError(f"malformed {fmt} row (nested too deeply to read)") from None


# ----------------------------------------------------------------------------- tasks


#: run in the child before each test of a module that has test classes or marks (see :func:`_pytest_tests`)
_PYTEST_HELPERS = '''
def __grpo_wb_call(f, *args):
    if f is None:
        return
    code = getattr(getattr(f, "__func__", f), "__code__", None)
    n = code.co_argcount - hasattr(f, "__self__") if code is not None else len(args)
    f(*args[:max(n, 0)])

def __grpo_wb_method(cls, name, kwargs, fixtures=()):
    __grpo_wb_call(getattr(cls, "setup_class", None))
    try:
        inst = cls()
        __grpo_wb_call(getattr(inst, "setup_method", None), getattr(inst, name))
        try:
            if fixtures:
                __grpo_wb_fixtures(lambda fx: getattr(inst, name)(**kwargs, **fx), fixtures)
            else:
                getattr(inst, name)(**kwargs)
        finally:
            __grpo_wb_call(getattr(inst, "teardown_method", None), getattr(inst, name))
    finally:
        __grpo_wb_call(getattr(cls, "teardown_class", None))

def __grpo_wb_unittest(cls, name):
    import unittest.case
    for k, v in vars(unittest.case.TestCase).items():  # an answer that rebinds assertEqual & co. to no-ops
        f = getattr(getattr(v, "__func__", v), "__wrapped__", getattr(v, "__func__", v))
        code = getattr(f, "__code__", None)
        if code is not None and code.co_filename != unittest.case.__file__:
            raise AssertionError(f"unittest.TestCase.{k} was replaced")
    method = getattr(cls, name)
    if getattr(cls, "__unittest_skip__", False) or getattr(method, "__unittest_skip__", False):
        return
    expect = getattr(cls, "__unittest_expecting_failure__", False) or getattr(
        method, "__unittest_expecting_failure__", False
    )
    cls.setUpClass()
    try:
        if not expect:
            cls(name).debug()
            return
        try:
            cls(name).debug()
        except Exception:
            return
        raise AssertionError("unexpected success (expectedFailure)")
    finally:
        cls.tearDownClass()

def __grpo_wb_cond(c):
    if isinstance(c, str):
        import os, sys, platform
        return eval(c, {"os": os, "sys": sys, "platform": platform, **globals()})
    return c

def __grpo_wb_run(run, skipif=(), xfail=()):
    if any(__grpo_wb_cond(c) for c in skipif):
        return
    for cond, raises, strict, do_run in xfail:
        if not cond or any(__grpo_wb_cond(c) for c in cond):
            if not do_run:
                return
            try:
                run()
            except raises:
                return
            if strict:
                raise AssertionError("[XPASS(strict)]")
            return
    run()

class __grpo_wb_Module:
    """The test module, as setup_module(module) sees it: its globals."""
    def __getattr__(self, name):
        try:
            return globals()[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        globals()[name] = value

    def __delattr__(self, name):
        globals().pop(name, None)

def __grpo_wb_fixtures(call, wanted):
    """Call call(values) with the module's fixtures named in wanted (and those they ask for), set up afresh;
    a yield fixture's code after its yield runs after the call."""
    import inspect
    values, gens = {}, []

    def get(name):
        if name not in values:
            f, deps = __grpo_wb_fixture_spec[name]
            f = getattr(f, "_get_wrapped_function", None) and f._get_wrapped_function() \
                or getattr(getattr(f, "__pytest_wrapped__", None), "obj", None) or f
            v = f(**{d: get(d) for d in deps})
            if inspect.isgeneratorfunction(f):
                gens.append(v)
                v = next(v)
            values[name] = v
        return values[name]

    try:
        call({n: get(n) for n in wanted})
    finally:
        for g in reversed(gens):
            try:
                next(g)
            except StopIteration:
                pass
            else:
                raise ValueError("fixture function has more than one 'yield'")

def __grpo_wb_xunit(run, msetup=None, mteardown=None, fsetup=None, fteardown=None, func=None):
    __grpo_wb_call(msetup, __grpo_wb_Module())
    try:
        __grpo_wb_call(fsetup, func)
        try:
            run()
        finally:
            __grpo_wb_call(fteardown, func)
    finally:
        __grpo_wb_call(mteardown, __grpo_wb_Module())
'''

#: run after a test module that imports pytest: an answer that rebinds ``pytest.raises`` & co. fails
_PYTEST_INTACT = """
def __grpo_wb_pytest_intact():
    import os, sys
    mod, home = sys.modules.get("pytest"), sys.modules.get("_pytest")
    if mod is None or home is None:
        return
    root = os.path.dirname(os.path.dirname(home.__file__))
    homes = (os.path.join(root, "_pytest", ""), os.path.join(root, "pytest", ""))
    for k, v in vars(mod).items():
        f = getattr(getattr(v, "__func__", v), "__wrapped__", getattr(v, "__func__", v))
        code = getattr(f, "__code__", None)
        if code is not None and not code.co_filename.startswith(homes) or isinstance(v, type) \\
                and not v.__module__.startswith(("_pytest", "pytest")):
            raise AssertionError(f"pytest.{k} was replaced")

__grpo_wb_pytest_intact()
"""

#: registers the completion's names as a module ``solution`` (before the test module runs)
_SOLUTION_MODULE = (
    "__import__('sys').modules['solution'] = __import__('types').SimpleNamespace("
    "**{k: v for k, v in globals().items() if not k.startswith('__')})"
)

#: pytest's module-level xunit setup and teardown functions (the first of each group that the module defines)
_XUNIT_NAMES = {
    "msetup": ("setUpModule", "setup_module"),
    "mteardown": ("tearDownModule", "teardown_module"),
    "fsetup": ("setup_function",),
    "fteardown": ("teardown_function",),
}


def _xunit(body: list[ast.stmt]) -> dict[str, str]:
    """The module's ``setup_module`` / ``teardown_module`` / ``setup_function`` / ``teardown_function``, by role."""
    defined = {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = {}
    for role, names in _XUNIT_NAMES.items():
        name = next((n for n in names if n in defined), None)
        if name:
            found[role] = name
    return found


def _xunit_run(run: str, xunit: dict[str, str] | None, func: str | None = None) -> str:
    """``run`` between the module's xunit setup and teardown (``setup_function``: for test functions only)."""
    roles = {k: v for k, v in (xunit or {}).items() if func is not None or k in ("msetup", "mteardown")}
    if not roles:
        return run
    args = "".join(f", {k}={v}" for k, v in roles.items()) + (
        f", func={func}" if func and ("fsetup" in roles or "fteardown" in roles) else ""
    )
    return f"__grpo_wb_xunit(lambda: {run}{args})"


_UNITTEST_BASES = {"unittest.TestCase", "TestCase", "unittest.IsolatedAsyncioTestCase", "IsolatedAsyncioTestCase"}


def _decorator_name(dec: ast.expr) -> str:
    return ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)


def _mark_kind(dec: ast.expr) -> str:
    """``skip``, ``skipif`` or ``xfail`` for such a ``pytest.mark`` (``mark.`` imported from pytest too), else
    ``""``."""
    name = _decorator_name(dec)
    kind = name.rpartition(".")[2]
    return kind if kind in ("skip", "skipif", "xfail") and name.endswith("mark." + kind) else ""


def _marks(decorators: list[ast.expr]) -> list[ast.expr]:
    """The ``skip`` / ``skipif`` / ``xfail`` marks among ``decorators`` (or a ``pytestmark`` value)."""
    return [d for d in decorators if _mark_kind(d)]


def _pytestmark(body: list[ast.stmt]) -> list[ast.expr]:
    """``pytestmark = mark`` or ``= [marks]`` in a module or class body."""
    marks: list[ast.expr] = []
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            v = node.value
            marks += _marks(list(v.elts) if isinstance(v, (ast.List, ast.Tuple)) else [v])
    return marks


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal(node: ast.expr | None, default: Any) -> Any:
    if node is None:
        return default
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return node


def _wrap(src: str, run: str, marks: list[ast.expr]) -> str | None:
    """The test's code under its marks, as pytest runs it: None when a ``skip`` (or a literal true ``skipif``,
    or ``xfail(run=False)``) means it never runs; ``xfail`` tests may fail (``raises``: only with that exception;
    ``strict``: and must); ``skipif`` / conditional ``xfail`` apply when any of their conditions holds."""

    def seg(n: ast.expr) -> str:
        return ast.get_source_segment(src, n) or ast.unparse(n)

    skipif: list[str] = []
    xfail: list[str] = []
    for m in marks:
        kind = _mark_kind(m)
        call = m if isinstance(m, ast.Call) else None
        conds = list(call.args) if call else []
        condition = _kw(call, "condition") if call else None
        if condition is not None:
            conds.append(condition)
        if kind == "skip":
            return None
        if kind == "skipif":
            if not conds:
                return None  # pytest: skipif without a condition skips
            if any(_literal(c, None) is True for c in conds):
                return None
            skipif += [seg(c) for c in conds if _literal(c, None) is not False]
            continue
        if call is None:
            xfail.append("((), BaseException, False, True)")
            continue
        if conds and all(_literal(c, None) is False for c in conds):
            continue
        if _literal(_kw(call, "run"), True) is False and not conds:
            return None  # not run: xfailed, whatever the answer
        raises = _kw(call, "raises")
        strict = _kw(call, "strict")
        runs = _kw(call, "run")
        xfail.append(
            f"(({''.join(seg(c) + ', ' for c in conds)}), {seg(raises) if raises else 'BaseException'}, "
            f"{seg(strict) if strict is not None else 'False'}, "
            f"{seg(runs) if runs is not None else 'True'})"
        )
    if not skipif and not xfail:
        return run
    return f"__grpo_wb_run(lambda: {run}, skipif=[{', '.join(skipif)}], xfail=[{', '.join(xfail)}])"


def _class_tests(
    src: str,
    cls: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    unit: set[str],
    module_marks: list[ast.expr],
    xunit: dict[str, str] | None = None,
    fixtures: dict[str, tuple[str, list[str]]] | None = None,
) -> list[TestCase]:
    """The tests pytest collects from a test class: ``test*`` methods, inherited ones from classes of the module too.

    A ``unittest.TestCase`` subclass runs each method through ``TestCase.debug`` (setUp, tearDown, cleanups,
    ``unittest.skip*`` and ``expectedFailure`` as unittest decides them); a plain ``Test*`` class gets a fresh
    instance per test, with ``setup_class`` / ``setup_method`` and their teardowns."""
    chain, seen = [], set()
    todo = [cls]
    while todo:  # the class and the module's classes it derives from, nearest first
        c = todo.pop(0)
        if c.name in seen:
            continue
        seen.add(c.name)
        chain.append(c)
        todo += [classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in classes]
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for c in chain:
        for node in c.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in methods:
                methods[node.name] = node
    is_unit = cls.name in unit
    class_marks = [m for c in chain for m in _marks(c.decorator_list) + _pytestmark(c.body)]
    tests: list[TestCase] = []
    for name, fn in methods.items():
        if not name.startswith("test"):
            continue
        if is_unit:
            if isinstance(fn, ast.AsyncFunctionDef) and not any(
                ast.unparse(b).endswith("IsolatedAsyncioTestCase") for c in chain for b in c.bases
            ):
                raise RowError(f"{cls.name}.{name}: an async test (not supported)")
            if any(_decorator_name(d) in ("unittest.skip", "skip") for d in fn.decorator_list) or any(
                _decorator_name(d) in ("unittest.skip", "skip") for c in chain for d in c.decorator_list
            ):
                continue  # unittest.skip: never runs
            code = _wrap(
                src,
                _xunit_run(f"__grpo_wb_unittest({cls.name}, {name!r})", xunit),
                _marks(fn.decorator_list) + class_marks + module_marks,
            )
            if code is not None:
                tests.append(TestCase(name=f"{cls.name}::{name}", code=code))
            continue
        static = any(_decorator_name(d) == "staticmethod" for d in fn.decorator_list)
        for suffix, kwargs, used in _expand_test(src, fn, f"{cls.name}.{name}", bound=not static, fixtures=fixtures):
            fx = f", {used!r}" if used else ""
            code = _wrap(
                src,
                _xunit_run(f"__grpo_wb_method({cls.name}, {name!r}, {kwargs or '{}'}{fx})", xunit),
                _marks(fn.decorator_list) + class_marks + module_marks,
            )
            if code is not None:
                tests.append(TestCase(name=f"{cls.name}::{name}{suffix}", code=code))
    return tests


def _is_test_class(node: ast.ClassDef, classes: dict[str, ast.ClassDef], unit: set[str]) -> bool:
    """pytest's rule: any ``unittest.TestCase`` subclass; else a ``Test*`` class without ``__init__``."""
    if any(
        isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__test__" for t in s.targets)
        and _literal(s.value, True) is False
        for s in node.body
    ):
        return False
    if node.name in unit:
        return True
    if not node.name.startswith("Test"):
        return False
    todo, seen = [node], set()
    while todo:
        c = todo.pop()
        if c.name in seen:
            continue
        seen.add(c.name)
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init__" for s in c.body):
            return False  # pytest: "cannot collect test class because it has a __init__ constructor"
        todo += [classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in classes]
    return True


def _autouse(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(d, ast.Call)
        and _decorator_name(d).endswith("fixture")
        and _literal(_kw(d, "autouse"), False) is not False
        for d in node.decorator_list
    )


def _pytest_tests(module: str) -> tuple[str, list[TestCase]]:
    """A KodCode-style pytest module as (setup, one test per test function, test method and parameter set).

    ``from solution import ...`` lines go (the completion's names are already in scope, as rllm does); other
    imports of ``solution`` (``import solution as s``, ``from solution import f as g``, imports inside a test) find
    a module ``solution`` holding the completion's names. ``@pytest.mark.parametrize`` over a literal list expands;
    the module's own fixtures (plain or yield, asking only for each other) are set up afresh for each test that
    asks for one; a test asking for any other fixture is an error. ``setup_module`` / ``teardown_module`` run
    around every test, ``setup_function`` / ``teardown_function`` around each test function. Test classes
    are collected as pytest does (``Test*`` classes without ``__init__``, and ``unittest.TestCase`` subclasses);
    ``skip`` marks drop a test, ``skipif`` runs it only when its condition is false, and an ``xfail`` test is not
    required to pass (unless ``strict``), as pytest's exit status has it.
    """
    try:
        tree = ast.parse(module)
    except SyntaxError as e:
        raise RowError(f"test module does not compile ({e.msg})") from None
    keep = []
    tests: list[TestCase] = []
    module_marks = _pytestmark(tree.body)
    classes: dict[str, ast.ClassDef] = {}
    unit: set[str] = set()
    collected = 0
    helpers = False
    # `import solution (as s)`, `from solution import f as g` and imports inside a test need a module named
    # solution: the completion's names, registered before the test module runs
    top = set(map(id, tree.body))
    needs_module = any(
        isinstance(n, ast.Import)
        and any(a.name == "solution" for a in n.names)
        or isinstance(n, ast.ImportFrom)
        and n.module == "solution"
        and (id(n) not in top or any(a.asname not in (None, a.name) for a in n.names))
        for n in ast.walk(tree)
    )
    xunit = _xunit(tree.body)
    fixtures = _fixtures(tree.body)
    if needs_module:
        keep.append(ast.parse(_SOLUTION_MODULE).body[0])
    for node in tree.body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "solution"
            and all(a.asname in (None, a.name) for a in node.names)
        ):
            continue  # the names are in scope already
        keep.append(node)
        if _autouse(node) or isinstance(node, ast.ClassDef) and any(_autouse(n) for n in node.body):
            raise RowError(f"an autouse fixture ({getattr(node, 'name', '?')}), which grpo_wb does not run")
        if isinstance(node, ast.ClassDef):
            classes[node.name] = node
            if any(ast.unparse(b) in _UNITTEST_BASES or (isinstance(b, ast.Name) and b.id in unit) for b in node.bases):
                unit.add(node.name)
            if _is_test_class(node, classes, unit):
                if any(_decorator_name(d).endswith("parametrize") for d in node.decorator_list):
                    raise RowError(f"{node.name}: a parametrized test class (not supported)")
                collected += sum(
                    isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
                    for n in node.body
                )
                tests += _class_tests(module, node, classes, unit, module_marks, xunit, fixtures)
                helpers = True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            if isinstance(node, ast.AsyncFunctionDef):
                raise RowError(f"{node.name}: an async test (pytest needs a plugin to run it)")
            collected += 1
            marks = _marks(node.decorator_list) + module_marks
            for suffix, kwargs, used in _expand_test(module, node, node.name, fixtures=fixtures):
                run = f"{node.name}(**{kwargs})" if kwargs else f"{node.name}()"
                if used:
                    given = f"**{kwargs}, " if kwargs else ""
                    run = f"__grpo_wb_fixtures(lambda fx: {node.name}({given}**fx), {used!r})"
                if xunit:
                    run = _xunit_run(run, xunit, node.name)
                code = _wrap(module, run, marks)
                if code is not None:
                    helpers = helpers or code != run or bool(xunit) or bool(used)
                    tests.append(TestCase(name=node.name + suffix, code=code))
    if not tests:
        raise RowError("every test is skipped" if collected else "the test module defines no test functions")
    setup = ast.unparse(ast.Module(body=keep, type_ignores=[]))
    if "pytest" in _imported_modules(module):
        setup += "\n" + _PYTEST_INTACT
    if any("__grpo_wb_fixtures(" in t.code for t in tests):
        setup += (
            "\n__grpo_wb_fixture_spec = {"
            + ", ".join(f"{k!r}: ({f}, {deps!r})" for k, (f, deps) in fixtures.items())
            + "}"
        )
    return (setup + "\n" + _PYTEST_HELPERS if helpers else setup), tests


def _fixture_decorator(fn: ast.AST) -> ast.expr | None:
    return next(
        (d for d in getattr(fn, "decorator_list", ()) if _decorator_name(d) in ("pytest.fixture", "fixture")), None
    )


def _fixtures(body: list[ast.stmt]) -> dict[str, tuple[str, list[str]]]:
    """The module's own fixtures grpo_wb can set up: fixture name -> (function name, the fixtures it asks for).
    Those with ``params``, async ones, and those asking for a fixture the module does not define are left out
    (a test asking for one is refused)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for node in body:
        dec = _fixture_decorator(node)
        if dec is None or not isinstance(node, ast.FunctionDef):
            continue
        call = dec if isinstance(dec, ast.Call) else None
        if call is not None and (_kw(call, "params") is not None or call.args):
            continue
        name = _literal(_kw(call, "name"), None) if call is not None else None
        args = [a.arg for a in node.args.args]
        found[name if isinstance(name, str) else node.name] = (node.name, args[: len(args) - len(node.args.defaults)])
    ok: dict[str, tuple[str, list[str]]] = {}
    changed = True
    while changed:  # keep those whose dependencies are all kept
        changed = False
        for k, (f, deps) in found.items():
            if k not in ok and all(d in ok and d != k for d in deps):
                ok[k] = (f, deps)
                changed = True
    return ok


def _expand_test(
    src: str,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    where: str,
    bound: bool = False,
    fixtures: dict[str, tuple[str, list[str]]] | None = None,
) -> list[tuple[str, str, list[str]]]:
    """``(name suffix, keyword-arguments source, the module fixtures it asks for)`` per parameter set of a test
    (``("", "", [])`` when it has none); ``bound``: a method, whose first argument is the instance."""
    if isinstance(fn, ast.AsyncFunctionDef):
        raise RowError(f"{where}: an async test (pytest needs a plugin to run it)")
    params = [a.arg for a in fn.args.args][1 if bound else 0 :]
    n_defaults = len(fn.args.defaults)
    if n_defaults:  # arguments with defaults are not fixtures
        params = params[:-n_defaults] if n_defaults < len(params) else []
    cases: list[str] = []
    stacked = [d for d in fn.decorator_list if _decorator_name(d).endswith("parametrize")]
    if len(stacked) > 1:
        raise RowError(f"{fn.name}: stacked parametrize decorators (not supported)")
    for dec in fn.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        target = _decorator_name(dec)
        if not target.endswith("parametrize") or call is None:
            continue
        if (
            len(call.args) < 2
            or not isinstance(call.args[0], ast.Constant)
            or not isinstance(call.args[1], (ast.List, ast.Tuple))
        ):
            raise RowError(f"{fn.name}: parametrize over something other than a literal list")
        names = [n.strip() for n in str(call.args[0].value).split(",") if n.strip()]
        if not names:
            raise RowError(f"{fn.name}: parametrize without argument names")
        for elt in call.args[1].elts:
            if isinstance(elt, ast.Call) and ast.unparse(elt.func).endswith("param"):
                raise RowError(f"{fn.name}: pytest.param cases (not supported)")
            values = ast.get_source_segment(src, elt) or ast.unparse(elt)
            if len(names) > 1:
                cases.append(f"dict(zip({names!r}, {values}))")
            else:
                cases.append(f"{{{names[0]!r}: {values}}}")
        params = [p for p in params if p not in names]
    used = [p for p in params if p in (fixtures or {})]
    params = [p for p in params if p not in used]
    if params:
        raise RowError(f"{fn.name} asks for pytest fixture {params[0]!r}, which grpo_wb does not provide")
    if not cases:
        return [("", "", used)]
    return [("" if len(cases) == 1 else f"[{i}]", c, used) for i, c in enumerate(cases)]


def task_from_parsed(p: ParsedRow, task_id: str, metadata: dict[str, Any]) -> Task:
    """The canonical task for a parsed row; checked like a task file line (a RowError says what fails)."""
    setup = ""
    c = p.cases
    if c.kind == "stdio":
        names = (
            [f"io_{i}" for i in range(len(c.inputs))]
            if not c.sets
            else [f"{name}_{c.sets[:i].count(name)}" for i, name in enumerate(c.sets)]
        )
        tests = [TestCase(name=n, type="stdio", input=x, output=y) for n, x, y in zip(names, c.inputs, c.outputs)]
        entry = ""
    elif c.kind == "call":
        tests, entry = apps_io_tests(
            {"inputs": c.inputs, "outputs": c.outputs, "fn_name": c.fn_name}, compare=p.call_compare
        )
    elif c.kind == "assert":
        if not c.code:
            raise RowError("no assert tests")
        tests = [TestCase(name=f"assert_{i}", code=code) for i, code in enumerate(c.code)]
        entry = c.fn_name or ""
    else:
        setup, tests = _pytest_tests(c.code[0])
        entry = c.fn_name or ""
    task = Task(
        task_id=task_id,
        prompt=p.prompt,
        entry_point=entry,
        tests=tuple(tests),
        test_setup=setup,
        canonical_solution=p.solution,
        solutions=p.solutions,
        wrong_solutions=p.wrong_solutions,
        prelude=p.prelude,
        language=p.language,
        checker=p.checker,
        checker_style=p.checker_style,
        time_limit=p.time_limit,
        memory_limit_mb=p.memory_limit_mb,
        output_match=p.output_match if c.kind == "stdio" else "lines",
        metadata={**{k: v for k, v in p.extra.items() if v is not None}, **metadata},
    )
    _, errs = parse_task(task.to_json())
    if errs:
        raise RowError(errs[0])
    return task


def source_metadata(fmt: str, path: str | Path, split: str | None, row: int, sha: str) -> dict[str, Any]:
    """Where a task came from (``path`` absolute), so an export can find and check its row."""
    meta: dict[str, Any] = {"source": fmt, "source_file": str(path), "source_row": row, "row_sha256": sha}
    if split:
        meta["source_split"] = split
    return meta


@dataclass
class RowImportSummary:
    """What an import read, made and left out; nothing is dropped without being counted here."""

    read: int = 0
    """Rows read."""
    imported: int = 0
    """Tasks written."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Rows left out (``--skip-bad``), by reason."""
    notes: dict[str, int] = field(default_factory=dict)
    """Imported rows worth a second look, by what was noticed."""
    solutions_dropped: int = 0
    """Programs (references and wrong ones) the cap of ``MAX_SOLUTIONS`` per list left out of the tasks."""
    examples: list[str] = field(default_factory=list)
    """The first skipped rows, as ``PATH:LINE: reason`` (JSON lines) or ``PATH: row ROW (0-based): reason``."""

    def skip(self, where: str, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1
        if len(self.examples) < 10:
            self.examples.append(f"{where}: {why}")

    def note(self, what: str) -> None:
        self.notes[what] = self.notes.get(what, 0) + 1


def iter_row_tasks(
    fmt: str,
    src: RowSource,
    summary: RowImportSummary,
    *,
    mapping: dict[str, str] | None = None,
    limit: int | None = None,
    skip_bad: bool = False,
    progress: bool = False,
    recipe: str | None = None,
    test_set: str | None = None,
    language: str | None = None,
) -> Iterator[Task]:
    """Tasks from the rows of ``src``, streamed; a bad row raises ``WHERE: why`` (:func:`iter_located_rows`) unless
    ``skip_bad``. ``recipe``: a trainer's own way with the rows (``RECIPES``; the export reads the rows back the
    same way). ``test_set``: only that set's tests (:data:`TEST_SETS`), so headroom can be asked on each."""
    if fmt not in FORMATS:
        raise UserError(f"unknown row format {fmt!r} (choose {', '.join(FORMATS)})")
    if language not in (None, "python") and fmt not in LANGUAGE_FORMATS:
        raise UserError(f"--language {language} goes with {', '.join(LANGUAGE_FORMATS)} rows, not {fmt}")
    if test_set is not None and test_set not in TEST_SETS.get(fmt, ()):
        raise UserError(
            f"--test-set {test_set} does not go with {fmt} rows"
            + "".join(f"; {f} rows have {', '.join(s)}" for f, s in TEST_SETS.items())
        )
    if recipe is not None and recipe not in RECIPES.get(fmt, ()):
        raise UserError(
            f"--recipe {recipe} does not go with {fmt} rows"
            + "".join(f"; {f} takes {', '.join(r)}" for f, r in RECIPES.items())
        )
    total = count_rows(src)
    bar = tqdm(
        total=min(total, limit) if total is not None and limit is not None else (total or limit),
        unit=" rows",
        desc=f"import {fmt}",
        disable=not progress,
        file=sys.stderr,
        mininterval=0.5,
    )
    seen: set[str] = set()
    resolved = str(Path(src.path).resolve())
    try:
        for row, where, obj in iter_located_rows(src, limit=limit):
            summary.read += 1
            bar.update(1)
            try:
                parsed = parse_row(fmt, obj, mapping, recipe, language)
                if test_set is not None:
                    parsed = select_test_set(parsed, test_set)
                prefix = id_prefix(fmt, src)  # a DatasetDict's split is in the id: splits never collide
                base = f"{prefix}/{parsed.row_id}" if parsed.row_id else f"{prefix}/{row}"
                task_id = base if base not in seen else f"{base}#row{row}"
                if task_id != base:
                    summary.note("duplicate ids, made unique with the row number")
                try:
                    meta = source_metadata(fmt, resolved, src.split, row, row_hash(obj))
                    if test_set is not None:
                        meta["test_set"] = test_set
                    if parsed.messages:  # what the trainer's rollout sends (grpo_wb.rollouts.sampling)
                        meta["messages"] = parsed.messages
                    task = task_from_parsed(parsed, task_id, meta)
                except RowError:
                    raise
                except (IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
                    raise RowError(f"cannot build the tests ({type(e).__name__}: {one_line(e, 120)})") from None
            except RowError as e:
                if not skip_bad:
                    raise UserError(f"{where}: {e} (--skip-bad leaves such rows out, counted)") from None
                summary.skip(where, str(e))
                continue
            seen.add(task_id)
            for n in parsed.notes:
                summary.note(n)
            summary.solutions_dropped += parsed.solutions_dropped
            summary.imported += 1
            yield task
        if not summary.imported:  # raised inside the writer, so nothing is written
            raise UserError(
                f"no row became a task ({summary.read} read"
                + "".join(f"; {n} skipped: {why}" for why, n in summary.skipped.items())
                + ")",
                path=src.label,
            )
    finally:
        bar.close()


def import_rows(
    fmt: str,
    src: str | Path,
    out: str | Path,
    *,
    split: str | None = None,
    column_map: str | None = None,
    limit: int | None = None,
    skip_bad: bool = False,
    progress: bool = False,
    recipe: str | None = None,
    test_set: str | None = None,
    language: str | None = None,
) -> tuple[RowSource, RowImportSummary]:
    """Import a row file into the canonical task file ``out`` (written whole, or not at all); return the source
    read and the summary. ``column_map``: the ``rows`` format's ``FIELD=COL,...``; ``recipe``: see ``RECIPES``."""
    try:
        mapping = parse_mapping(column_map) if column_map is not None else None
    except ValueError as e:
        raise UserError(str(e)) from None
    source = resolve_source(str(src), split)
    summary = RowImportSummary()
    write_tasks(
        out,
        iter_row_tasks(
            fmt,
            source,
            summary,
            mapping=mapping,
            limit=limit,
            skip_bad=skip_bad,
            progress=progress,
            recipe=recipe,
            test_set=test_set,
            language=language,
        ),
    )
    return source, summary
