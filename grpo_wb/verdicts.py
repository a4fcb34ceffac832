"""Plan tests so that the scoring process decides them, then decide them from data.

An execution reward a wrong completion can forge teaches the policy to forge.
So wherever a test has the shape "call the function, compare with an expected
value", the comparison is taken out of the child's reach:

* :func:`plan_test` splits an ``assert`` into the calls of the candidate (the
  ``candidate(...)`` / entry-point calls, evaluated in the child) and the rest
  of the assertion (evaluated here, in the scoring process, on the values the
  child returned). The expected values stay in the rest: they never enter the
  child -- not its memory, its disk or its stack.
* the child returns each produced value encoded from builtin types only (exact
  types, checked recursively; a subclass such as an ``AlwaysEqual`` is refused),
  and :func:`decode_value` rebuilds plain builtins here, so no code of the
  completion runs during the comparison.
* the rest of the assertion is evaluated by :func:`evaluate_rest` over a
  whitelisted subset of Python (literals, arithmetic, comparisons, boolean
  logic, ``abs``/``len``/``sorted``/``round``/... and ``math.isclose``).

Tests that do not fit (loops, helper functions of the test module, names the
child defines) run in the child as before, after the completion's module code
finished and with builtins checked and restored around them; they are
``exec`` tests, reported as such, and a completion cannot do better than forge
those. A task whose tests are all value tests never sends its ``check`` source
to the child either.
"""
from __future__ import annotations

import ast
import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any

_SAFE_FUNCS: dict[str, Any] = {
    "abs": abs, "len": len, "sorted": sorted, "round": round, "min": min, "max": max, "sum": sum,
    "all": all, "any": any, "set": set, "frozenset": frozenset, "list": list, "tuple": tuple, "dict": dict,
    "int": int, "float": float, "str": str, "bool": bool, "reversed": reversed, "type": type,
    "isinstance": isinstance, "range": range,
}
_SAFE_MATH = {"isclose": math.isclose, "fabs": math.fabs, "floor": math.floor, "ceil": math.ceil,
              "sqrt": math.sqrt, "isnan": math.isnan, "isinf": math.isinf, "pi": math.pi, "e": math.e,
              "inf": math.inf}
_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Tuple, ast.List, ast.Set, ast.Dict,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.Attribute, ast.Subscript, ast.Slice,
    ast.keyword, ast.IfExp,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd, ast.Not,
    ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
)
_PLACEHOLDER = "__grpo_wb_value_{}"


class _MathNS:
    """``math`` as the evaluator sees it: only the whitelisted names."""

    def __init__(self) -> None:
        for k, v in _SAFE_MATH.items():
            setattr(self, k, v)


def apps_equal(output: Any, expected: Any) -> bool:
    """APPS's call-based rule: tuples compare as lists, and ``[x]`` also accepts ``x``."""
    def norm(v: Any) -> Any:
        if isinstance(v, tuple):
            return [norm(x) for x in v]
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v
    out = norm(output)
    if out == norm(expected):
        return True
    return isinstance(expected, list) and len(expected) > 0 and out == norm(expected[0])


_SAFE_FUNCS["apps_equal"] = apps_equal


def normalise_output(text: str) -> list[str]:
    """Stdout as compared: trailing whitespace of each line and trailing blank lines dropped."""
    return [line.rstrip() for line in text.replace("\r\n", "\n").rstrip().split("\n")]


def stdio_matches(output: str, expected: str) -> bool:
    """The whole output must match, line count included."""
    return normalise_output(output) == normalise_output(expected)


@dataclass(frozen=True)
class PlannedTest:
    """A test as the child and the scorer see it."""

    kind: str
    """``values`` (decided in the scoring process), ``stdio`` (output compared here) or ``exec``."""
    exprs: tuple[str, ...] = ()
    """values: the candidate calls the child evaluates, in order."""
    rest: str = ""
    """values: the assertion over the placeholders, evaluated here (holds the expected values)."""
    code: str = ""
    """exec: the test code the child runs."""
    input: str = ""
    """stdio: what the child feeds the program on stdin."""
    expected_output: str = ""
    """stdio: what stdout must be (kept here)."""

    def for_child(self) -> dict[str, Any]:
        """What is sent to the child: never ``rest`` nor ``expected_output``."""
        if self.kind == "values":
            return {"kind": "values", "exprs": list(self.exprs)}
        if self.kind == "stdio":
            return {"kind": "stdio", "input": self.input}
        return {"kind": "exec", "code": self.code}


def _rest_is_safe(tree: ast.Expression, n_values: int) -> bool:
    allowed_names = set(_SAFE_FUNCS) | {"math", "True", "False", "None"} | {
        _PLACEHOLDER.format(i) for i in range(n_values)}
    maths = attributes = 0
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            return False
        if isinstance(node, ast.Name):
            if node.id not in allowed_names:
                return False
            maths += node.id == "math"
        elif isinstance(node, ast.Attribute):
            if not (isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in _SAFE_MATH):
                return False
            attributes += 1
    # every attribute is math.<whitelisted>, so "math" appears only that way iff the counts match
    return maths == attributes


def _candidate_calls(test: ast.expr, callees: set[str]) -> list[ast.Call] | None:
    """The outermost calls of the candidate in ``test``, in source order; None when the rest
    holds an f-string (positions inside one cannot be trusted, and the rest may not hold one)."""
    calls, stack = [], [test]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in callees:
            calls.append(node)  # its arguments go with it to the child
            continue
        if isinstance(node, ast.JoinedStr):
            return None
        stack.extend(ast.iter_child_nodes(node))
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def plan_test(code: str, entry_point: str) -> PlannedTest:
    """Turn one test into a value test when it is a single assert whose rest is safe to evaluate here.

    The candidate calls are cut out of the source text (not re-generated from the tree: planning
    every test of a task is on the path of its first completion) and the rest is checked exactly
    as :func:`evaluate_rest` will compile it."""
    src = code.replace("\r\n", "\n").replace("\r", "\n")  # so that lines split as the parser counts them
    try:
        with warnings.catch_warnings():  # e.g. "invalid escape sequence" in a dataset's test
            warnings.simplefilter("ignore")
            mod = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return PlannedTest(kind="exec", code=code)
    if len(mod.body) != 1 or not isinstance(mod.body[0], ast.Assert):
        return PlannedTest(kind="exec", code=code)
    test = mod.body[0].test
    calls = _candidate_calls(test, {"candidate", entry_point})
    if not calls:
        return PlannedTest(kind="exec", code=code)
    raw = src.encode("utf-8")  # AST columns are UTF-8 byte offsets
    starts = [0]
    for line in raw.split(b"\n"):
        starts.append(starts[-1] + len(line) + 1)

    def span(node: ast.expr) -> tuple[int, int]:
        return starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset

    exprs, pieces = [], []
    at, end = span(test)
    for i, call in enumerate(calls):
        lo, hi = span(call)
        exprs.append(raw[lo:hi].decode("utf-8"))
        pieces += [raw[at:lo].decode("utf-8"), f" {_PLACEHOLDER.format(i)} "]  # spaced: `f(1)if x` stays apart
        at = hi
    pieces.append(raw[at:end].decode("utf-8"))
    rest = "(" + "".join(pieces) + "\n)"  # parenthesised: the assert may span lines
    try:
        with warnings.catch_warnings():  # the rest's literals warn as the test's did
            warnings.simplefilter("ignore")
            _compiled_rest(rest, len(exprs))
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return PlannedTest(kind="exec", code=code)
    return PlannedTest(kind="values", exprs=tuple(exprs), rest=rest)


@functools.lru_cache(maxsize=65536)
def _compiled_rest(rest: str, n_values: int) -> Any:
    tree = ast.parse(rest, mode="eval")
    if not _rest_is_safe(tree, n_values):
        raise ValueError(f"unsafe test expression: {rest}")
    return compile(tree, "<rest>", "eval")


def evaluate_rest(rest: str, values: list[Any]) -> bool:
    """Evaluate the scorer-side part of an assertion on decoded builtin values."""
    code = _compiled_rest(rest, len(values))
    env: dict[str, Any] = {"__builtins__": {}, "math": _MathNS(), "True": True, "False": False, "None": None}
    env.update(_SAFE_FUNCS)
    env.update({_PLACEHOLDER.format(i): v for i, v in enumerate(values)})
    return bool(eval(code, env))  # noqa: S307 - whitelisted AST, builtin values only


class DecodeError(ValueError):
    pass


def decode_value(obj: Any, depth: int = 0) -> Any:
    """Rebuild a value the child encoded; anything off-format is an error (the test fails)."""
    if depth > 64:
        raise DecodeError("value nested too deeply")
    if obj is None or type(obj) in (bool, str):
        return obj
    if type(obj) is int:
        return obj
    if type(obj) is float:
        return obj
    if type(obj) is list:
        return [decode_value(v, depth + 1) for v in obj]
    if type(obj) is dict and set(obj) == {"$", "v"}:
        tag, v = obj["$"], obj["v"]
        if tag == "tuple" and type(v) is list:
            return tuple(decode_value(x, depth + 1) for x in v)
        if tag == "dict" and type(v) is list:
            out = {}
            for pair in v:
                if type(pair) is not list or len(pair) != 2:
                    raise DecodeError("bad dict item")
                out[_hashable(decode_value(pair[0], depth + 1))] = decode_value(pair[1], depth + 1)
            return out
        if tag in ("set", "frozenset") and type(v) is list:
            items = [_hashable(decode_value(x, depth + 1)) for x in v]
            return set(items) if tag == "set" else frozenset(items)
        if tag == "bigint" and type(v) is str:
            return int(v)
        if tag == "float" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "bytes" and type(v) is str:
            return bytes.fromhex(v)
        if tag == "complex" and type(v) is list and len(v) == 2:
            return complex(float(v[0]), float(v[1]))
    raise DecodeError(f"not an encoded builtin value: {str(obj)[:80]}")


def _hashable(v: Any) -> Any:
    try:
        hash(v)
    except TypeError:
        raise DecodeError("unhashable key") from None
    return v
