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
  logic, ``abs``/``len``/``sorted``/``round``/... and ``math.isclose``), on values
  the completion chose, so within bounds: a decoded value is refused past
  :data:`MAX_ITEMS` elements or :data:`MAX_INT_BITS` bits, and a rest that can make
  a large object out of a small one (``*``, ``**``, ``%``, ``range``, ``sum``) runs in
  a budgeted interpreter that stops before it does (:class:`EvalBudget`: the test fails).
* only calls Python would certainly make are cut out: a candidate call under
  ``and``/``or``, in a branch of a conditional expression, after the first link of a
  chained comparison, in a comprehension or a lambda runs (or not) depending on
  what came before it, so such a test stays an ``exec`` test and keeps Python's
  evaluation order.

Tests that do not fit (loops, helper functions of the test module, names the
child defines) are ``exec`` tests: they run in the job's child, the tester, and
the program in a process of its own that answers their calls by value and
never holds them (``worker/wb_remote.py``). A task whose tests are all value
tests never sends its ``check`` source to the sandbox either.
"""

from __future__ import annotations

import ast
import decimal
import functools
import math
import operator
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from grpo_wb.scoring import astlock
from grpo_wb.scoring.worker.wb_values import (
    MAX_INT_BITS,
    MAX_SAME_HASH,  # noqa: F401 - re-exported
    DecodeError,
    check_hashes,  # noqa: F401 - re-exported
    decode_value,  # noqa: F401 - re-exported (the scorer and tests import it from here)
)

_SAFE_FUNCS: dict[str, Any] = {
    "abs": abs,
    "len": len,
    "sorted": sorted,
    "round": round,
    "min": min,
    "max": max,
    "sum": sum,
    "all": all,
    "any": any,
    "set": set,
    "frozenset": frozenset,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "reversed": reversed,
    "type": type,
    "isinstance": isinstance,
    "range": range,
}
_SAFE_MATH = {
    "isclose": math.isclose,
    "fabs": math.fabs,
    "floor": math.floor,
    "ceil": math.ceil,
    "sqrt": math.sqrt,
    "isnan": math.isnan,
    "isinf": math.isinf,
    "pi": math.pi,
    "e": math.e,
    "inf": math.inf,
}
_ALLOWED_NODES = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.keyword,
    ast.IfExp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.USub,
    ast.UAdd,
    ast.Not,
    ast.And,
    ast.Or,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Is,
    ast.IsNot,
    ast.In,
    ast.NotIn,
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


def values_equal(output: Any, expected: Any) -> bool:
    """LiveCodeBench's functional rule: exact equality, tuples compared as lists."""

    def norm(v: Any) -> Any:
        return [norm(x) for x in v] if isinstance(v, (tuple, list)) else v

    return norm(output) == norm(expected)


def taco_equal(output: Any, expected: Any) -> bool:
    """TACO's call-based rule (``metrics/testing_util.py`` ``execute_cb_code``), exactly: a tuple result is a list;
    it passes equal to ``expected`` or to ``expected[0]``, or, when its first element is a tuple, with every element
    made a list and equal to ``expected[0]``. Stricter than :func:`apps_equal` on deeper tuples."""
    if isinstance(output, tuple):
        output = list(output)
    ok = output == expected
    if isinstance(expected, list) and expected:
        ok = ok or output == expected[0]
    try:
        if isinstance(output[0], tuple):
            output = [list(x) for x in output]
            ok = ok or output == expected[0]
    except Exception:  # noqa: BLE001 - TACO's bare except: no first element, not iterable, ...
        pass
    return bool(ok)


def lcb_equal(output: Any, expected: Any) -> bool:
    """LiveCodeBench's call-based rule (``grade_call_based``), exactly: a tuple result is a list, then ``==``
    (tuples inside stay tuples: stricter than :func:`values_equal`)."""
    if isinstance(output, tuple):
        output = list(output)
    return bool(output == expected)


_SAFE_FUNCS["apps_equal"] = apps_equal
_SAFE_FUNCS["values_equal"] = values_equal
_SAFE_FUNCS["taco_equal"] = taco_equal
_SAFE_FUNCS["lcb_equal"] = lcb_equal


def normalise_output(text: str) -> list[str]:
    """Stdout as compared: trailing whitespace of each line and trailing blank lines dropped."""
    return [line.rstrip() for line in text.replace("\r\n", "\n").rstrip().split("\n")]


_CC_SPACE = re.compile("[ \n\t\r\v]+")
_CC_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
"""A decimal number. Written so that one reading fits each text: ``\\d+\\.?\\d*`` backtracks in quadratic time
over a long run of digits that fails to match at its end (16,000 digits: 14 s)."""


def _tokens_match(output: str, expected: str) -> bool:
    """CodeContests' ``OutputsMatch``: tokens split on ASCII whitespace, ASCII lower-cased; two tokens that
    both read as decimal numbers match within 1e-5, others exactly."""

    def tokens(text: str) -> list[str]:
        return [t.translate(_ASCII_LOWER) for t in _CC_SPACE.split(text) if t]

    a, b = tokens(output), tokens(expected)
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        if not (_CC_NUMBER.fullmatch(x) and _CC_NUMBER.fullmatch(y)):
            return False
        fx, fy = float(x), float(y)
        if not (math.isfinite(fx) and math.isfinite(fy)) or abs(fx - fy) >= 1e-5:
            return False
    return True


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _numeric_lines_match(output: str, expected: str) -> bool:
    """LiveCodeBench's stdin rule: stripped lines, equal as text or as decimal-number tokens."""
    a = output.strip().split("\n")
    b = expected.strip().split("\n")
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = x.strip(), y.strip()
        if x == y:
            continue
        tx, ty = x.split(), y.split()
        if len(tx) != len(ty):
            return False
        try:
            if any(decimal.Decimal(p) != decimal.Decimal(q) for p, q in zip(tx, ty)):
                return False
        except decimal.InvalidOperation:
            return False
    return True


def _digits(s: str) -> bool:
    return s.isdigit()


def prime_code_output_matches(output: str, expected: str) -> bool:
    """verl prime_code's stdin comparison (``testing_util.run_test``, standard input), as a function of the two
    texts; each step is one of its checks, in its order. Its set-of-tokens step never decides (it compares lists
    of strings with lists of sets), so it is left out. ``np.allclose`` is written out: ``|a - b| <= 1e-8 +
    1e-5 * |b|``, equal infinities pass, NaN never does."""
    lines = output.splitlines()
    if "\n".join(lines).strip() == expected.strip() or "\n".join(x.strip() for x in lines).strip() == expected.strip():
        return True
    if lines == [expected]:
        return True
    want = [x.strip() for x in expected.split("\n") if x]
    if lines == want:
        return True
    lines = [x for x in lines if x]
    if lines == want:
        return True
    if len(lines) != len(want) or all(_digits(a) and _digits(b) for a, b in zip(lines, want)):
        return False
    try:
        got, exp = [float(a) for a in lines], [float(b) for b in want]
    except ValueError:
        return False
    return all(a == b or abs(a - b) <= 1e-8 + 1e-5 * abs(b) for a, b in zip(got, exp))


def _allclose(got: list[float], want: list[float]) -> bool:
    """``np.allclose`` written out: ``|a - b| <= 1e-8 + 1e-5 * |b|``, equal infinities pass, NaN never does."""
    return all(a == b or abs(a - b) <= 1e-8 + 1e-5 * abs(b) for a, b in zip(got, want))


def taco_output_matches(output: str, expected: str) -> bool:
    """TACO's stdin comparison (``metrics/testing_util.py`` ``compare_std_results``, commit 2ba6235) as it runs
    there: stdout is one string (``subprocess.run(text=True)``: newlines translated), the expected output a string
    (a list of lines joined). Its steps that compare a string with a list never decide and are left out; the rest
    are its own, in its order, including their quirks: the float step reads stdout *character by character*
    (``[float(e) for e in exec_outputs]``), and the set steps compare the characters of each stdout token with
    the tokens of each expected line. So ``0.30000000000000004`` against ``0.3`` fails (no tolerance reaches
    real stdout), ``123`` passes against ``1\n2\n3`` and ``2\n1`` against ``1\n2``."""
    output = output.replace("\r\n", "\n").replace("\r", "\n")
    if output.strip() == expected.strip():
        return True
    want = [x.strip() for x in expected.split("\n") if x]
    try:
        got = [float(c) for c in output]
        exp = [float(e) for e in want]
        if len(got) == len(exp) and _allclose(got, exp):
            return True
    except ValueError:
        pass
    want_sets = [set(line.split()) for line in want]
    tokens = {t for t in output.split() if t}
    if {frozenset(t) for t in tokens} == {frozenset(s) for s in want_sets}:
        return True
    try:
        return {frozenset(round(float(c), 3) for c in t) for t in tokens} == {
            frozenset(round(float(t), 3) for t in s) for s in want_sets
        }
    except (ValueError, OverflowError):
        return False


def open_r1_output_matches(output: str, expected: str) -> bool:
    """open-r1 ``code_reward``'s comparison: stdout stripped, both split on newlines, each pair stripped and equal,
    pairs cut to the shorter list (``zip``), so a first line alone passes."""
    return all(a.strip() == b.strip() for a, b in zip(output.strip().split("\n"), expected.split("\n")))


_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def _codeforces_normal(text: str) -> str:
    text = "\n".join(line for line in text.split("\n") if line.strip())
    return " ".join(_YES_NO.sub(lambda m: m.group(1).upper(), text).split())


def codeforces_output_matches(output: str, expected: str) -> bool:
    """open-r1's Codeforces comparison (the Piston ``codeforces`` package's ``run``, used by ``cf_code_reward`` when a
    problem has no checker): blank lines dropped, whole-word yes/no upper-cased, every run of whitespace (newlines
    included) one space, then compared (``diff -b``)."""
    return _codeforces_normal(output) == _codeforces_normal(expected)


def _klear_normal(text: str) -> str:
    lines = [line.strip(" \t\r\v\f") for line in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines).rstrip()


def klear_output_matches(output: str, expected: str) -> bool:
    """Klear-CodeTest's comparison (Kwai-Klear/CodeTest ``sandbox/judge.cpp`` ``compare_outputs``): each line's end
    trimmed and its leading spaces and tabs dropped, leading empty lines dropped, trailing whitespace trimmed, then
    equal."""
    return _klear_normal(output) == _klear_normal(expected)


def stdio_matches(output: str, expected: str, mode: str = "lines") -> bool:
    """Whether stdout matches under the task's ``output_match`` (``lines``: line count included)."""
    if mode == "tokens":
        return _tokens_match(output, expected)
    if mode == "numeric-lines":
        return _numeric_lines_match(output, expected)
    if mode == "prime_code":
        return prime_code_output_matches(output, expected)
    if mode == "open-r1":
        return open_r1_output_matches(output, expected)
    if mode == "taco":
        return taco_output_matches(output, expected)
    if mode == "codeforces":
        return codeforces_output_matches(output, expected)
    if mode == "klear":
        return klear_output_matches(output, expected)
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
    output_match: str = "lines"
    """stdio: how stdout is compared (see :func:`stdio_matches`)."""

    def for_child(self) -> dict[str, Any]:
        """What is sent to the child: never ``rest`` nor ``expected_output``."""
        if self.kind == "values":
            return {"kind": "values", "exprs": list(self.exprs)}
        if self.kind == "stdio":
            return {"kind": "stdio", "input": self.input}
        return {"kind": "exec", "code": self.code}


def _rest_is_safe(tree: ast.Expression, n_values: int) -> bool:
    allowed_names = (
        set(_SAFE_FUNCS) | {"math", "True", "False", "None"} | {_PLACEHOLDER.format(i) for i in range(n_values)}
    )
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


_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _conditional_parts(node: ast.AST) -> list[ast.expr]:
    """The children of ``node`` that Python evaluates only depending on what it evaluated before."""
    if isinstance(node, ast.BoolOp):
        return node.values[1:]
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.Compare):
        return node.comparators[1:]  # `a < b < c`: c only when a < b
    return []


def _candidate_calls(test: ast.expr, callees: set[str]) -> list[ast.Call] | None:
    """The outermost calls of the candidate in ``test``, in source order; None when they cannot be cut
    out: the rest holds an f-string (positions inside one cannot be trusted), or a call Python might
    not make (under and/or, a conditional branch, a chained comparison, a comprehension or a lambda)."""
    calls: list[ast.Call] = []
    stack: list[tuple[ast.AST, bool]] = [(test, False)]
    while stack:
        node, conditional = stack.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in callees:
            if conditional:
                return None
            calls.append(node)  # its arguments go with it to the child
            continue
        if isinstance(node, ast.JoinedStr):
            return None
        cond = {id(c) for c in _conditional_parts(node)}
        for child in ast.iter_child_nodes(node):
            stack.append((child, conditional or id(child) in cond or isinstance(node, _SCOPES)))
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
            mod = astlock.parse(src)
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
        # the parser sets the end position of every node it makes (only hand-built nodes lack one)
        end_lineno, end_col_offset = cast(int, node.end_lineno), cast(int, node.end_col_offset)
        return starts[node.lineno - 1] + node.col_offset, starts[end_lineno - 1] + end_col_offset

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


MAX_ITEMS = 1 << 20
"""Most elements (and characters of strings and bytes) a value in the scorer may have, in all."""
MAX_STEPS = 100_000
"""Most AST nodes one budgeted evaluation may visit."""
_GROWING = (ast.Mult, ast.Pow, ast.Mod)
"""Operators whose result can be far larger than their operands (``'ab' * n``, ``2 ** n``, ``'%*d' % (n, 1)``)."""
_ITERATING = {
    "range",
    "sum",
    "sorted",
    "min",
    "max",
    "all",
    "any",
    "list",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "reversed",
}


class EvalBudget(ValueError):
    """Evaluating the rest would exceed the scorer's bounds; the test fails (it is never evaluated)."""


class _Rest(NamedTuple):
    code: Any
    """The compiled rest (for rests that cannot grow a value)."""
    tree: ast.Expression | None
    """The parsed rest, interpreted under a budget, when it can."""


@functools.lru_cache(maxsize=65536)
def _compiled_rest(rest: str, n_values: int) -> _Rest:
    tree = astlock.parse(rest, mode="eval")
    if not _rest_is_safe(tree, n_values):
        raise ValueError(f"unsafe test expression: {rest}")
    grows = any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, _GROWING)
        or isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in _ITERATING
        for n in ast.walk(tree)
    )
    return _Rest(astlock.compile_ast(tree, "<rest>", "eval"), tree if grows else None)


def evaluate_rest(rest: str, values: list[Any]) -> bool:
    """Evaluate the scorer-side part of an assertion on decoded builtin values (bounded: :class:`EvalBudget`).

    Values are size-checked; a rest that cannot grow a value (no ``*``, ``**``, ``%``, ``range``, no
    function that iterates) is evaluated as compiled, any other one by :class:`_Budgeted`."""
    for v in values:
        value_size(v)
    plan = _compiled_rest(rest, len(values))
    env: dict[str, Any] = {"__builtins__": {}, "math": _MathNS(), "True": True, "False": False, "None": None}
    env.update(_SAFE_FUNCS)
    env.update({_PLACEHOLDER.format(i): v for i, v in enumerate(values)})
    if plan.tree is None:
        return bool(eval(plan.code, env))  # noqa: S307 - whitelisted AST, builtin values only
    return bool(_Budgeted(env).eval(plan.tree.body))


def value_size(v: Any, limit: int = MAX_ITEMS) -> int:
    """Elements (and characters) in ``v``, counted up to ``limit``; past it, or an int past
    :data:`MAX_INT_BITS`, an :class:`EvalBudget`."""
    seen, stack = 0, [v]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is int:
            if x.bit_length() > MAX_INT_BITS:
                raise EvalBudget(f"an integer of {x.bit_length()} bits is more than the scorer evaluates")
            seen += 1
        elif t in (str, bytes):
            seen += 1 + len(x)
        elif t in (list, tuple, set, frozenset) or isinstance(x, tuple):  # a namedtuple is the tuple it is
            seen += 1
            if len(x) > limit:
                raise EvalBudget(f"a value of {len(x)} elements is more than the scorer evaluates")
            stack.extend(x)
        elif t is dict:
            seen += 1
            if len(x) > limit:
                raise EvalBudget(f"a value of {len(x)} elements is more than the scorer evaluates")
            stack.extend(x.keys())
            stack.extend(x.values())
        elif t is range:
            seen += 1
            if len(x) > limit:
                raise EvalBudget(f"a range of {len(x)} elements is more than the scorer evaluates")
        else:
            seen += 1
        if seen > limit:
            raise EvalBudget(f"a value of more than {limit} elements is more than the scorer evaluates")
    return seen


class _Budgeted:
    """The whitelisted subset of Python, interpreted with every step counted and every result sized
    before it is built: what ``eval`` would do, minus the chance to allocate gigabytes or run for hours."""

    def __init__(self, env: dict[str, Any]):
        self.env = env
        self.steps = 0

    def eval(self, node: ast.AST) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise EvalBudget(f"the test takes more than {MAX_STEPS} steps to evaluate")
        return getattr(self, "_" + type(node).__name__)(node)

    def _Constant(self, n: ast.Constant) -> Any:
        return n.value

    def _Name(self, n: ast.Name) -> Any:
        return self.env[n.id]

    def _Attribute(self, n: ast.Attribute) -> Any:
        return _SAFE_MATH[n.attr]  # _rest_is_safe allows math.<whitelisted> only

    def _sized(self, v: Any) -> Any:
        value_size(v)
        return v

    def _Tuple(self, n: ast.Tuple) -> Any:
        return self._sized(tuple(self.eval(e) for e in n.elts))

    def _List(self, n: ast.List) -> Any:
        return self._sized([self.eval(e) for e in n.elts])

    def _Set(self, n: ast.Set) -> Any:
        return self._sized({self.eval(e) for e in n.elts})

    def _Dict(self, n: ast.Dict) -> Any:
        # a `**` splat's key is None: eval(None) raises (AttributeError) and the test fails, as it always has
        return self._sized({self.eval(k): self.eval(v) for k, v in zip(n.keys, n.values)})  # type: ignore[arg-type]

    def _UnaryOp(self, n: ast.UnaryOp) -> Any:
        v = self.eval(n.operand)
        ops: dict[type[ast.unaryop], Callable[[Any], Any]] = {
            ast.USub: operator.neg,
            ast.UAdd: operator.pos,
            ast.Not: operator.not_,
        }
        return ops[type(n.op)](v)

    def _BoolOp(self, n: ast.BoolOp) -> Any:
        v = None
        for e in n.values:
            v = self.eval(e)
            if (not v) if isinstance(n.op, ast.And) else v:
                return v
        return v

    def _IfExp(self, n: ast.IfExp) -> Any:
        return self.eval(n.body) if self.eval(n.test) else self.eval(n.orelse)

    def _Compare(self, n: ast.Compare) -> Any:
        left = self.eval(n.left)
        for op, comp in zip(n.ops, n.comparators):
            right = self.eval(comp)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _Subscript(self, n: ast.Subscript) -> Any:
        return self.eval(n.value)[self.eval(n.slice)]

    def _Slice(self, n: ast.Slice) -> Any:
        return slice(*(None if e is None else self.eval(e) for e in (n.lower, n.upper, n.step)))

    def _BinOp(self, n: ast.BinOp) -> Any:
        a, b = self.eval(n.left), self.eval(n.right)
        op = type(n.op)
        if op is ast.Mult:
            for seq, k in ((a, b), (b, a)):
                if (
                    isinstance(seq, (str, bytes, list, tuple))
                    and isinstance(k, int)
                    and len(seq) * max(k, 0) > MAX_ITEMS
                ):
                    raise EvalBudget("the test repeats a sequence into more than the scorer evaluates")
            if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_INT_BITS:
                raise EvalBudget("the test multiplies integers past the scorer's bound")
        elif op is ast.Pow:
            if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 and a.bit_length() * b > MAX_INT_BITS:
                raise EvalBudget("the test raises an integer to a power past the scorer's bound")
        elif op is ast.Mod and isinstance(a, (str, bytes)):
            args = b if isinstance(b, tuple) else (b,)
            if any(isinstance(x, int) and abs(x) > MAX_ITEMS for x in args):
                raise EvalBudget("the test formats a string wider than the scorer evaluates")
        return self._sized(_BINOPS[op](a, b))

    def _Call(self, n: ast.Call) -> Any:
        fn = self.eval(n.func)
        args = [self.eval(a) for a in n.args]
        kwargs = {k.arg: self.eval(k.value) for k in n.keywords}
        if fn is range:
            r = range(*args)
            value_size(r)
            return r
        if fn in (set, frozenset, dict) and args:
            args[0] = _spread(args[0], fn is dict)
        if fn is sum and (len(args) > 1 or "start" in kwargs):
            start = args[1] if len(args) > 1 else kwargs["start"]
            if not isinstance(start, (int, float, complex)):
                raise EvalBudget("sum() with a sequence start concatenates in quadratic time")
        # (its arguments are sized: each came from eval); a `**` splat's None key makes the call raise TypeError
        return self._sized(fn(*args, **kwargs))  # type: ignore[arg-type]


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _spread(source: Any, pairs: bool) -> list:
    """What ``set``/``frozenset`` (or, with ``pairs``, ``dict``) would read from ``source``, as a list whose members
    (or keys) are checked by :func:`check_hashes` first. Past the bound, an :class:`EvalBudget`."""
    if isinstance(source, dict):
        items: list = list(source.items()) if pairs else list(source)
    else:
        items = [tuple(p) for p in source] if pairs else list(source)
    try:
        check_hashes([p[0] for p in items if len(p) == 2] if pairs else items)
    except DecodeError as e:
        raise EvalBudget(str(e)) from None
    return items
