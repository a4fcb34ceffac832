"""What an exec test's namespace holds in the tester: the task's names, not the candidate's.

A split job's tests run in the tester (``worker/wb_harness.run_split``) with the tester's own builtins and the
task's trusted text executed there (its ``prelude`` and the prompt's code, minus the stubs the candidate is to
write: HumanEval/32's ``poly`` is the prompt's, not the completion's). From the candidate come only the entry point
and the names the tests use that nothing else binds (:func:`wanted_names`): a completion that defines ``range``,
``abs`` or ``poly`` changes nothing a test sees. A test module that imports ``solution`` gets a module of the
candidate's names, each crossing the link's checks (``worker/wb_remote``).

Computed here, in the scorer, once per task: the tester only executes the result.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable
from functools import lru_cache

SOLUTION_MODULE_LINE = (
    "__import__('sys').modules['solution'] = __import__('types').SimpleNamespace("
    "**{k: v for k, v in globals().items() if not k.startswith('__')})"
)
"""The line KodCode imports put before a test module that imports ``solution``
(``tasks.rowformats.kodcode_pytest``): it would build the module from the test's globals; the tester registers a
module of the candidate's names instead."""

_BUILTINS = frozenset(dir(builtins))


def _is_stub(node: ast.stmt) -> bool:
    """A function the prompt leaves for the candidate: only a docstring, ``pass`` or ``...``."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return all(
        isinstance(s, ast.Pass) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in node.body
    )


@lru_cache(maxsize=4096)
def trusted_text(prompt: str, prelude: str) -> tuple[str, ...]:
    """The task's own code the tests may use, one statement a piece (the tester runs each on its own: one that
    fails leaves the others): its prelude, then the prompt's statements when the prompt is Python (a chat prompt is
    not), with the functions it leaves for the candidate to write taken out."""
    parts = [prelude] if prelude.strip() else []
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return tuple(parts)
    body = [s for s in tree.body if not _is_stub(s)]
    defines = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    if any(isinstance(s, defines) for s in body):
        parts.extend(ast.unparse(s) for s in body)
    return tuple(parts)


def _names(code: str) -> tuple[set[str], set[str]]:
    """(names ``code`` reads, names it binds anywhere)."""
    tree = ast.parse(code)
    used: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    return used, bound


@lru_cache(maxsize=4096)
def _wanted(codes: tuple[str, ...]) -> tuple[str, ...]:
    used: set[str] = set()
    bound: set[str] = set()
    for code in codes:
        try:
            u, b = _names(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # the tester reports it when it runs the test
        used |= u
        bound |= b
    return tuple(sorted(used - bound - _BUILTINS))


def wanted_names(codes: Iterable[str]) -> list[str]:
    """The names the tests read that no test binds and that are not builtins: the only module-level names of the
    candidate's besides its entry point that reach the tests (and only when the trusted text does not define them).
    A name a test binds anywhere, even on one branch, is never seeded: it fails closed (a NameError), not open."""
    return list(_wanted(tuple(c for c in codes if c)))


@lru_cache(maxsize=4096)
def entry_kind(entry_point: str, *sources: str) -> str | None:
    """``class`` when the task's entry point is a class (KodCode's ``Stack``: its instances are what the tests
    inspect), ``function`` when it is a function or a ``Solution`` method (its answers must be plain values), from
    the first of ``sources`` (the prompt, the references) that defines it; None when none does."""
    for src in sources:
        try:
            tree = ast.parse(src or "")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == entry_point:
                return "class"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
                return "function"
            if isinstance(node, ast.ClassDef) and node.name == "Solution":
                if any(getattr(n, "name", None) == entry_point for n in node.body):
                    return "function"
    return None


def split_setup(test_setup: str) -> tuple[str, bool]:
    """``test_setup`` without the line that builds a ``solution`` module from the test's globals, and whether it had
    it (the tester then registers one of the candidate's names)."""
    if SOLUTION_MODULE_LINE in test_setup:
        return test_setup.replace(SOLUTION_MODULE_LINE, "pass"), True
    return test_setup, False
