"""Mutation testing's mutants: one small, plausible bug planted at a time in a whole program.

A task's tests that still pass on a mutant leave a gap there -- or the mutant is equivalent to the original
(``x * 1`` for ``x / 1``, a deleted statement with no effect). Telling the two apart is undecidable in general, so
the survivors of a mutation run are an upper bound on the test gaps, not a count of them.

The operator families are mutmut's and cosmic-ray's (https://github.com/boxed/mutmut,
https://github.com/sixty-north/cosmic-ray), one family per name in :data:`ALL`:

- ``arith``: ``+``/``-``, ``*``/``/``, ``//`` -> ``/``, ``%`` -> ``//``, ``**`` -> ``*``, ``<<``/``>>``,
  ``&``/``|``, ``^`` -> ``&``, in expressions and augmented assignments;
- ``compare``: ``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``is``/``is not``, ``in``/``not in`` (each operator of
  a chain);
- ``bool``: ``and``/``or``, ``True``/``False``, ``not x`` -> ``x``;
- ``const``: an int constant +1, and -1 (two mutants; bools are not ints here);
- ``bound``: off by one: each argument of ``range(...)`` and each bound of a slice ``a[i:j]`` +1 and -1;
- ``negate``: the test of an ``if``, ``while`` or ternary becomes ``not (test)``;
- ``delete``: a statement becomes ``pass`` (in a block of more than one statement; never a definition, a
  docstring, a bare constant or a ``pass``);
- ``early-return``: ``return None`` inserted first in a function body (after its docstring), and each
  ``return e`` becomes ``return None`` (two kinds);
- ``swap-args``: a call's first two positional arguments swapped.

Docstrings and string constants are never touched, nor type annotations (a mutant there is equivalent).
Mutants whose AST equals the original's or an earlier mutant's are dropped (``ast.dump`` after a round trip
through ``ast.unparse``: a cheap form of Trivial Compiler Equivalence); equivalence beyond that is not detected.
:func:`mock_mutant` is the mock backend's older, narrower operator set, kept byte-for-byte so that mock runs
replay unchanged. Standard library only: this is the ``tasks`` layer.
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

ALL: tuple[str, ...] = ("arith", "compare", "bool", "const", "bound", "negate", "delete", "early-return", "swap-args")
"""The operator families, in the order their sites are listed at one node."""


@dataclass(frozen=True)
class Site:
    """One place a mutation can be made; ``index`` identifies it in its source for :func:`mutate`."""

    operator: str
    description: str
    line: int
    index: int
    function: str | None = None
    """The innermost function the site is in (``None`` at module level)."""


@dataclass(frozen=True)
class Mutant:
    """A mutated program (``source``, the whole module) and where it differs from the original."""

    operator: str
    description: str
    line: int
    source: str
    diff: str


class _Place(NamedTuple):
    node: ast.AST
    parent: ast.AST | None
    field: str | None
    position: int | None  # in the parent's list field; None for a single-node field (not ``index``: tuple has one)
    function: str | None


@dataclass
class _Edit:
    operator: str
    description: str
    line: int
    function: str | None
    apply: Callable[[], None]


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_ANNOTATIONS = {
    (ast.arg, "annotation"),
    (ast.FunctionDef, "returns"),
    (ast.AsyncFunctionDef, "returns"),
    (ast.AnnAssign, "annotation"),
}
_SYMBOL = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.And: "and",
    ast.Or: "or",
}
_ARITH = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}
_COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
# the mock backend's tables: narrower, and Mult -> Add / FloorDiv -> Mult where mutmut has / and /
_MOCK_COMPARE = {op: _COMPARE[op] for op in (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)}
_MOCK_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv}


def _parse(source: str) -> ast.Module:
    """``ast.parse``, failing as a ValueError the caller can report per task (not a SyntaxError traceback)."""
    try:
        return ast.parse(source)
    except SyntaxError as e:
        raise ValueError(f"source does not parse: {e.msg} (line {e.lineno})") from None
    except (ValueError, RecursionError) as e:  # null bytes (3.11), nesting too deep for the parser
        raise ValueError(f"source does not parse: {e}") from None


def _places(tree: ast.AST, *, annotations: bool) -> list[_Place]:
    """Every node, children before parents, fields in ``ast.iter_fields`` order: ``ast.NodeTransformer``'s
    order, which :func:`mock_mutant` depends on. Annotations are skipped unless ``annotations``."""
    out: list[_Place] = []

    def visit(node: ast.AST, parent: ast.AST | None, field: str | None, index: int | None, function: str | None):
        inner = node.name if isinstance(node, _FUNCS) else function
        for name, value in ast.iter_fields(node):
            if not annotations and (type(node), name) in _ANNOTATIONS:
                continue
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        visit(item, node, name, i, inner)
            elif isinstance(value, ast.AST):
                visit(value, node, name, None, inner)
        out.append(_Place(node, parent, field, index, inner))

    visit(tree, None, None, None, None)
    return out


def _replace(p: _Place, new: ast.AST) -> None:
    # only the tree's root has no parent, and no operator replaces the root
    assert p.parent is not None and p.field is not None
    if p.position is None:
        setattr(p.parent, p.field, new)
    else:
        getattr(p.parent, p.field)[p.position] = new


def _code(node: ast.AST, limit: int = 40) -> str:
    text = ast.unparse(node).splitlines()[0] if not isinstance(node, ast.Constant) else repr(node.value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _int_value(node: ast.AST) -> int | None:
    """The value of an int literal (not a bool); None for any other node."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _is_int(node: ast.AST) -> bool:
    return _int_value(node) is not None


def _is_none(node: ast.AST | None) -> bool:
    return node is None or isinstance(node, ast.Constant) and node.value is None


def _docstring(body: list[ast.stmt]) -> bool:
    return (
        bool(body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )


def _edit(operator: str, description: str, line: int, p: _Place, apply: Callable[[], None]) -> _Edit:
    return _Edit(operator, f"{description} at line {line}", line, p.function, apply)


def _set(obj: object, name: str, value_of: Callable[[], object]) -> Callable[[], None]:
    return lambda: setattr(obj, name, value_of())


def _set_item(items: list[Any], i: int, value_of: Callable[[], object]) -> Callable[[], None]:
    return lambda: items.__setitem__(i, value_of())


def _replace_with(p: _Place, value_of: Callable[[], ast.AST]) -> Callable[[], None]:
    return lambda: _replace(p, value_of())


def _op_swap(operator: str, table: dict, p: _Place) -> Iterator[_Edit]:
    n = p.node
    if isinstance(n, (ast.BinOp, ast.AugAssign)) and type(n.op) in table:
        new = table[type(n.op)]
        eq = "=" if isinstance(n, ast.AugAssign) else ""
        yield _edit(operator, f"`{_SYMBOL[type(n.op)]}{eq}` -> `{_SYMBOL[new]}{eq}`", n.lineno, p, _set(n, "op", new))


def _compare_swap(table: dict, p: _Place, first_only: bool) -> Iterator[_Edit]:
    n = p.node
    if isinstance(n, ast.Compare):
        for i, op in enumerate(n.ops[:1] if first_only else n.ops):
            if type(op) in table:
                new = table[type(op)]
                yield _edit(
                    "compare", f"`{_SYMBOL[type(op)]}` -> `{_SYMBOL[new]}`", n.lineno, p, _set_item(n.ops, i, new)
                )


def _const_shift(p: _Place, delta: int) -> _Edit:
    n, value = p.node, _int_value(p.node)
    assert isinstance(n, ast.Constant) and value is not None  # callers check _is_int(p.node) first
    return _edit("const", f"`{value}` -> `{value + delta}`", n.lineno, p, _set(n, "value", lambda: value + delta))


def _return_none(p: _Place) -> _Edit:
    n = p.node
    assert isinstance(n, ast.Return) and n.value is not None  # callers check both first
    return _edit(
        "early-return",
        f"`return {_code(n.value)}` -> `return None`",
        n.lineno,
        p,
        _set(n, "value", lambda: ast.Constant(None)),
    )


def _arith(p: _Place) -> Iterator[_Edit]:
    yield from _op_swap("arith", _ARITH, p)


def _compare(p: _Place) -> Iterator[_Edit]:
    yield from _compare_swap(_COMPARE, p, first_only=False)


def _bool(p: _Place) -> Iterator[_Edit]:
    n = p.node
    if isinstance(n, ast.BoolOp):
        new = ast.Or if isinstance(n.op, ast.And) else ast.And
        yield _edit("bool", f"`{_SYMBOL[type(n.op)]}` -> `{_SYMBOL[new]}`", n.lineno, p, _set(n, "op", new))
    elif isinstance(n, ast.Constant) and isinstance(n.value, bool):
        yield _edit("bool", f"`{n.value}` -> `{not n.value}`", n.lineno, p, _set(n, "value", lambda: not n.value))
    elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
        yield _edit(
            "bool", f"`not {_code(n.operand)}` -> `{_code(n.operand)}`", n.lineno, p, lambda: _replace(p, n.operand)
        )


def _const(p: _Place) -> Iterator[_Edit]:
    if _is_int(p.node):
        yield _const_shift(p, +1)
        yield _const_shift(p, -1)


def _shifted(node: ast.expr, delta: int) -> ast.expr:
    """``node`` +/- 1, folded when it is an int literal (so the mutant can equal a ``const`` one and be dropped)."""
    value = _int_value(node)
    if value is not None:
        return ast.Constant(value + delta)
    return ast.BinOp(node, ast.Add() if delta > 0 else ast.Sub(), ast.Constant(1))


def _bound(p: _Place) -> Iterator[_Edit]:
    n = p.node
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range":
        holes = [
            (a, _Place(a, n, "args", i, p.function), "range()")
            for i, a in enumerate(n.args)
            if not isinstance(a, ast.Starred)
        ]
    elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice):
        holes = [
            (b, _Place(b, n.slice, f, None, p.function), "slice")
            for f in ("lower", "upper")
            if (b := getattr(n.slice, f)) is not None
        ]
    else:
        return
    for arg, hole, where in holes:
        for delta in (+1, -1):
            new = _code(_shifted(arg, delta)) if _is_int(arg) else f"{_code(arg)} {'+' if delta > 0 else '-'} 1"
            yield _edit(
                "bound",
                f"`{_code(arg)}` -> `{new}` in {where}",
                n.lineno,
                p,
                _replace_with(hole, functools.partial(_shifted, arg, delta)),
            )


def _negate(p: _Place) -> Iterator[_Edit]:
    n = p.node
    if isinstance(n, (ast.If, ast.While, ast.IfExp)):
        kind = {ast.If: "if", ast.While: "while", ast.IfExp: "ternary"}[type(n)]
        test = n.test
        new = (
            test.operand
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            else ast.UnaryOp(ast.Not(), test)
        )
        yield _edit("negate", f"`{kind}` test `{_code(test)}` negated", n.lineno, p, _set(n, "test", lambda: new))


def _delete(p: _Place) -> Iterator[_Edit]:
    for _, block in ast.iter_fields(p.node):
        if not (isinstance(block, list) and len(block) > 1 and all(isinstance(s, ast.stmt) for s in block)):
            continue
        for i, s in enumerate(block):
            if (
                isinstance(s, (*_FUNCS, ast.ClassDef, ast.Pass))
                or isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Constant)
            ):  # definitions, docstrings, bare constants
                continue
            yield _edit("delete", f"delete `{_code(s)}`", s.lineno, p, _set_item(block, i, ast.Pass))


def _early_return(p: _Place) -> Iterator[_Edit]:
    n = p.node
    if isinstance(n, _FUNCS):
        k = 1 if _docstring(n.body) else 0
        first = n.body[k] if k < len(n.body) else None
        if first is not None and not (isinstance(first, ast.Return) and _is_none(first.value)):
            yield _edit(
                "early-return",
                f"`return None` inserted first in `{n.name}`",
                first.lineno,
                p,
                lambda: n.body.insert(k, ast.Return(ast.Constant(None))),
            )
    elif isinstance(n, ast.Return) and not _is_none(n.value):
        yield _return_none(p)


def _swap_args(p: _Place) -> Iterator[_Edit]:
    n = p.node
    if (
        isinstance(n, ast.Call)
        and len(n.args) >= 2
        and not any(isinstance(a, ast.Starred) for a in n.args[:2])
        and ast.dump(n.args[0]) != ast.dump(n.args[1])
    ):

        def swap() -> None:
            n.args[0], n.args[1] = n.args[1], n.args[0]

        yield _edit(
            "swap-args",
            f"swap `{_code(n.args[0])}` and `{_code(n.args[1])}` in `{_code(n.func)}(...)`",
            n.lineno,
            p,
            swap,
        )


_FAMILIES: dict[str, Callable[[_Place], Iterator[_Edit]]] = {
    "arith": _arith,
    "compare": _compare,
    "bool": _bool,
    "const": _const,
    "bound": _bound,
    "negate": _negate,
    "delete": _delete,
    "early-return": _early_return,
    "swap-args": _swap_args,
}


def _mock(p: _Place) -> Iterator[_Edit]:
    """The mock backend's operator set: the first comparison, :data:`_MOCK_ARITH`, int constants +1 and every
    ``return e`` (``return None`` included) -> ``return None``."""
    n = p.node
    if isinstance(n, ast.Compare):
        yield from _compare_swap(_MOCK_COMPARE, p, first_only=True)
    elif isinstance(n, ast.BinOp):
        yield from _op_swap("arith", _MOCK_ARITH, p)
    elif _is_int(n):
        yield _const_shift(p, +1)
    elif isinstance(n, ast.Return) and n.value is not None:
        yield _return_none(p)


def _edits(
    tree: ast.AST, families: Iterable[Callable[[_Place], Iterator[_Edit]]], *, annotations: bool = False
) -> list[_Edit]:
    families = list(families)
    return [e for p in _places(tree, annotations=annotations) for family in families for e in family(p)]


def _operators(operators: Iterable[str]) -> frozenset[str]:
    ops = frozenset([operators] if isinstance(operators, str) else operators)
    if unknown := sorted(ops - set(ALL)):
        raise ValueError(f"unknown mutation operator(s) {', '.join(unknown)}; known: {', '.join(ALL)}")
    return ops


def sites(source: str, entry_point: str | None = None, operators: Iterable[str] = ALL) -> list[Site]:
    """Every mutation site of the whole program, in source-tree order (children first).

    With ``entry_point``, sites inside functions -- the entry point and its helpers alike -- come before
    module-level ones (imports, constants, a script's statements); ``index`` keeps identifying each site."""
    ops = _operators(operators)
    found = [
        Site(e.operator, e.description, e.line, i, e.function)
        for i, e in enumerate(_edits(_parse(source), _FAMILIES.values()))
        if e.operator in ops
    ]
    if entry_point is not None:
        found.sort(key=lambda s: s.function is None)
    return found


def mutate(source: str, site: Site) -> str:
    """The whole module with ``site``'s mutation made (``ast.unparse``: comments and layout are not kept)."""
    tree = _parse(source)
    edits = _edits(tree, _FAMILIES.values())
    if not 0 <= site.index < len(edits) or (edits[site.index].operator, edits[site.index].description) != (
        site.operator,
        site.description,
    ):
        raise ValueError(f"{site.description!r} is not a mutation site of this source")
    edits[site.index].apply()
    return ast.unparse(ast.fix_missing_locations(tree))


def _dump(source: str) -> str | None:
    try:
        return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError):
        return None


def mutants(source: str, n: int, seed: int = 0, operators: Iterable[str] = ALL) -> list[Mutant]:
    """Up to ``n`` distinct mutants, the same for the same ``(seed, source)``.

    Families take turns in a seeded order, each offering its next site in a seeded order, so a small ``n``
    still covers several kinds of bug. A mutant whose AST equals the original's or an earlier mutant's is
    dropped and the family offers its next site (Trivial Compiler Equivalence, cheaply: equal ASTs only)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    ops = _operators(operators)
    original = ast.unparse(_parse(source))
    seen = {_dump(original)}
    queues: dict[str, list[Site]] = {}
    for s in sites(source, operators=ops):
        queues.setdefault(s.operator, []).append(s)
    digest = hashlib.sha256(f"{seed}\0{source}".encode("utf-8", "surrogatepass")).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    turn = [f for f in ALL if f in queues]
    rng.shuffle(turn)
    for family in turn:
        rng.shuffle(queues[family])
    out: list[Mutant] = []
    while turn and len(out) < n:
        for family in list(turn):
            if len(out) == n:
                break
            queue = queues[family]
            while queue:
                site = queue.pop()
                text = mutate(source, site)
                key = _dump(text)
                if key is None or key in seen:  # a no-op, a duplicate (or an unparse that does not reparse)
                    continue
                seen.add(key)
                diff = difflib.unified_diff(
                    original.splitlines(), text.splitlines(), "original", "mutant", n=1, lineterm=""
                )
                out.append(Mutant(site.operator, site.description, site.line, text, "\n".join(diff)))
                break
            if not queue:
                turn.remove(family)
    return out


def mock_mutant(source: str, entry_point: str | None, rng: random.Random) -> str | None:
    """The mock backend's wrong answer: the ``entry_point`` function alone (``ast.unparse``) with one mutation
    of :func:`_mock`'s set, the ``rng.randrange``-th site; ``None`` when there is no such function or site.

    Kept byte-for-byte, rng draws included, as the mock's own mutator made it: recorded mock runs replay
    unchanged. Sites are counted on the function re-parsed from its unparsed text, as they always were."""
    tree = _parse(source)
    func = next((node for node in ast.walk(tree) if isinstance(node, _FUNCS) and node.name == entry_point), None)
    if func is None:
        return None
    count = len(_edits(ast.parse(ast.unparse(func)), [_mock], annotations=True))
    if count == 0:
        return None
    target = rng.randrange(count)
    edits = _edits(func, [_mock], annotations=True)
    if target < len(edits):
        edits[target].apply()
    ast.fix_missing_locations(func)
    return ast.unparse(func)
