"""``ast.parse`` and AST compiles behind one lock.

CPython 3.11 before 3.11.8 can fail with ``SystemError: AST constructor recursion depth mismatch`` when two
threads turn source into AST objects (or AST objects into code) at once (CPython gh-106905). The scorer's worker
threads extract code and plan tests concurrently, so every such call in the scoring process goes through here.
The GIL already runs these calls one at a time; the lock only keeps one from being interleaved with another.
"""

from __future__ import annotations

import ast
import threading
import types
from typing import Literal, overload

_LOCK = threading.Lock()


@overload
def parse(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...
@overload
def parse(source: str, mode: Literal["eval"]) -> ast.Expression: ...
@overload
def parse(source: str, mode: str) -> ast.AST: ...


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(source, mode=mode)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, mode=mode)


def compile_ast(tree: ast.Module | ast.Expression | ast.Interactive, filename: str, mode: str) -> types.CodeType:
    """``compile(tree, filename, mode)`` of an AST object, one thread at a time."""
    with _LOCK:
        return compile(tree, filename, mode)
