"""Configuration declared once, as dataclasses, and everything else derived from them.

A config is a dataclass whose every field carries a one-line docstring under it (cleanrl's ``Args``
style). From that one declaration come:

* the command-line flags (:func:`add_flags`): name ``--field-name``, type and choices from the
  annotation (``Literal[...]`` gives choices, ``list[str]`` a repeatable flag, ``tuple[float, float]`` a flag of two
  values, ``bool`` a switch),
  default from the field, help from its docstring, and an argparse type from ``cli(type=...)`` where
  the value needs checking at parse time (``positive_int``...);
* the config itself from parsed flags (:func:`from_args`), so a flag cannot be accepted and ignored;
* strict loading from JSON or notebook parameters (:func:`from_dict`): unknown keys and wrong types are
  errors, not warnings (nanoGPT's configurator), checked by a pydantic model derived from the dataclass;
* the lines of a notebook's ``parameters`` cell (:func:`parameter_line`), so notebooks declare the same
  names, types, defaults and help as the config they feed.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import json
import math
import operator
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from grpo_wb.errors import UserError


class _Dataclass(Protocol):
    """Any dataclass (the shape of typeshed's ``DataclassInstance``), what :func:`from_args` and :func:`from_dict`
    build."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


T = TypeVar("T", bound=_Dataclass)


# ----------------------------------------------------------------------------- values checked at parse time


def _integer(s: str, least: int) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
    if v < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {v}")
    return v


def positive_int(s: str) -> int:
    return _integer(s, 1)


def non_negative_int(s: str) -> int:
    return _integer(s, 0)


def _number(s: str, ok: Callable[[float], bool], expected: str, problem: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {s!r}") from None
    if not ok(v):
        raise argparse.ArgumentTypeError(f"{problem}, got {s!r}")
    return v


def positive_float(s: str) -> float:
    return _number(s, lambda v: v > 0 and math.isfinite(v), "a number", "must be a positive number")


def fraction(s: str) -> float:
    return _number(s, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]", "must be in [0, 1]")


def checked_band(band: Any, name: str = "band") -> tuple[float, float]:
    """A pass-rate band ``(LOW, HIGH)`` with ``0 <= LOW <= HIGH <= 1`` (a UserError otherwise)."""
    try:
        lo, hi = (float(x) for x in band)
    except (TypeError, ValueError):
        raise UserError(f"{name} needs two numbers LOW HIGH, got {band!r}") from None
    if not 0.0 <= lo <= hi <= 1.0:
        raise UserError(f"{name} needs 0 <= LOW <= HIGH <= 1, got {lo:g} {hi:g}")
    return lo, hi


def int_list(s: str) -> list[int]:
    """``1,10,100``: positive integers, comma-separated."""
    try:
        ks = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"k values must be >= 1, got {s!r}")
    return ks


# ----------------------------------------------------------------------------- declaring a field's flag


def cli(
    *,
    type: Callable[[str], Any] | None = None,
    flags: tuple[str, ...] = (),
    positional: bool = False,
    metavar: str | tuple[str, ...] | None = None,
    nargs: int | None = None,
) -> dict[str, Any]:
    """Field metadata for :func:`add_flags`: an argparse ``type``, other ``flags`` (``("-k", "--k")``), a
    ``positional`` argument, a ``metavar`` or ``nargs`` (a repeatable flag of several values)."""
    return {
        "cli": {
            k: v
            for k, v in dict(type=type, flags=flags, positional=positional, metavar=metavar, nargs=nargs).items()
            if v
        }
    }


@functools.cache
def _class_bodies(module: str) -> dict[str, list[ast.stmt]]:
    """The statements of each top-level class of ``module``, by name: one parse per module, where
    ``inspect.getsource`` per class tokenised its file again for each (a third of ``grpo-wb --help``'s start)."""
    try:
        tree = ast.parse(Path(sys.modules[module].__file__ or "").read_text())
    except (KeyError, OSError, SyntaxError, ValueError):
        return {}
    return {n.name: n.body for n in tree.body if isinstance(n, ast.ClassDef)}


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of ``cls`` and of the dataclasses it extends, whitespace folded."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        body = _class_bodies(klass.__module__).get(klass.__qualname__, [])
        for a, b in zip(body, body[1:]):
            if (
                isinstance(a, ast.AnnAssign)
                and isinstance(a.target, ast.Name)
                and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant)
                and isinstance(b.value.value, str)
            ):
                docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def _plain(tp: Any) -> tuple[Any, bool]:
    """``(type, optional)`` with ``X | None`` unwrapped."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else tp), True
    return tp, False


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _shows_default(default: Any) -> bool:
    """Whether help says ``(default: ...)``: not for a required field, a switch, None or an empty list (by
    identity and type: ``0 == False`` and ``1.0 == True`` are defaults to show)."""
    return not (
        default is dataclasses.MISSING
        or default is None
        or isinstance(default, bool)
        or (isinstance(default, list) and not default)
    )


class _Append(argparse.Action):
    """argparse's ``append``, except that the first use replaces the default instead of extending it: argparse's own
    keeps a non-empty default list, so ``--strategies dapo`` gave the four default strategies plus dapo."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = getattr(namespace, self.dest, None)
        items = [] if items is None or items is self.default else list(items)
        items.append(values)
        setattr(namespace, self.dest, items)


def add_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per field of ``cls`` (see the module docstring)."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    # the ones a command line must give first, then the rest as declared (the dataclasses a config extends first)
    for f in sorted(dataclasses.fields(cls), key=lambda f: _default(f) is not dataclasses.MISSING):
        meta = f.metadata.get("cli", {})
        tp, _ = _plain(hints[f.name])
        default = _default(f)
        kw: dict[str, Any] = {"help": docs.get(f.name, "")}
        if _shows_default(default) and not meta.get("positional"):
            kw["help"] += f" (default: {','.join(map(str, default)) if isinstance(default, list) else default})"
        if meta.get("metavar"):
            kw["metavar"] = meta["metavar"]
        if tp is bool:
            if default is True:
                parser.add_argument("--no-" + f.name.replace("_", "-"), dest=f.name, action="store_false", **kw)
            else:
                parser.add_argument(
                    *(meta.get("flags") or ("--" + f.name.replace("_", "-"),)), dest=f.name, action="store_true", **kw
                )
            continue
        if typing.get_origin(tp) is Literal:
            kw["choices"] = list(typing.get_args(tp))
        elif meta.get("nargs"):
            kw["action"], kw["nargs"] = _Append, meta["nargs"]
        elif typing.get_origin(tp) is tuple:  # a fixed number of values: --band LOW HIGH
            items = typing.get_args(tp)
            kw["nargs"], kw["type"] = len(items), meta.get("type") or items[0]
        elif typing.get_origin(tp) is list and not meta.get("type"):
            kw["action"] = _Append
            item = typing.get_args(tp)[0]
            if typing.get_origin(item) is Literal:
                kw["choices"] = list(typing.get_args(item))
            else:
                kw["type"] = item
        else:
            kw["type"] = meta.get("type") or (tp if tp in (int, float, str) else str)
        if meta.get("positional"):
            if default is not dataclasses.MISSING:  # a positional with a default may be left out
                kw["nargs"], kw["default"] = "?", default
            parser.add_argument(f.name, **kw)
            continue
        if default is dataclasses.MISSING:
            kw["required"] = True
        else:
            kw["default"] = default
        parser.add_argument(*(meta.get("flags") or ("--" + f.name.replace("_", "-"),)), dest=f.name, **kw)


def from_args(cls: type[T], args: argparse.Namespace) -> T:
    """The config the parsed flags describe (every field read); a mistake that ``__post_init__`` finds is a
    one-line UserError."""
    try:
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)})
    except (TypeError, ValueError) as e:
        raise UserError(str(e)) from None


# ----------------------------------------------------------------------------- checks every config shares


@functools.cache
def _choices(cls: type) -> tuple[tuple[str, tuple[Any, ...], bool], ...]:
    """``(field, allowed values, optional)`` for each ``Literal`` field of ``cls``."""
    out = []
    for name, hint in typing.get_type_hints(cls).items():
        tp, optional = _plain(hint)
        if typing.get_origin(tp) is Literal:
            out.append((name, typing.get_args(tp), optional))
    return tuple(out)


def check_choices(obj: Any) -> None:
    """Every ``Literal`` field of the dataclass ``obj`` holds one of its values: the choices are declared once,
    by the annotation, which argparse (``choices``) and :func:`from_dict` read too."""
    cls: type = type(obj)
    for name, allowed, optional in _choices(cls):
        value = getattr(obj, name)
        if value not in allowed and not (optional and value is None):
            raise UserError(f"unknown {name.replace('_', '-')} {value!r} (choose {', '.join(map(str, allowed))})")


def check_at_least_one(obj: Any, *names: str, flags: bool = True) -> None:
    """Each of these int fields of ``obj`` is at least 1 (named as its ``--flag``, or as the field with
    ``flags=False``, for configs built in code)."""
    for name in names:
        value = getattr(obj, name)
        if value < 1:
            raise UserError(f"{name.replace('_', '-') if flags else name} must be at least 1, got {value}")


def post_init_next(obj: Any, cls: type) -> None:
    """Run the ``__post_init__`` that follows ``cls``'s in ``obj``'s MRO: a config that combines several (a
    SmokeConfig is a BackendConfig, a SandboxConfig and an ExecutorConfig) checks every one of them."""
    nxt = getattr(super(cls, obj), "__post_init__", None)
    if nxt is not None:
        nxt()


# ----------------------------------------------------------------------------- strict loading


def _sequence(tp: Any) -> Any:
    """``tp`` with each tuple or list field taking either (JSON and notebook values have lists, code may pass
    tuples)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, map(_sequence, typing.get_args(tp)))
    if origin in (tuple, list):
        item = functools.reduce(operator.or_, [a for a in typing.get_args(tp) if a is not Ellipsis])
        return tp | types.GenericAlias(list, item) | types.GenericAlias(tuple, (item, ...))
    return tp


@functools.cache
def _values_model(cls: type) -> Any:
    """A strict pydantic model of ``cls``'s fields, derived from the dataclass (the config's one declaration):
    a value is of its field's type exactly (a bool is no int, ``"3"`` no number; an int is a float, converted).
    Every field is optional here: a missing one is the dataclass's own error."""
    import pydantic  # where used: 0.1 s that the command line's start does not pay

    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {f.name: (_sequence(hints[f.name]), None) for f in dataclasses.fields(cls) if f.init}
    return pydantic.create_model(
        f"{cls.__name__}Values", __config__=pydantic.ConfigDict(strict=True, extra="forbid"), **fields
    )


def from_dict(cls: type[T], data: dict[str, Any], *, source: str = "config") -> T:
    """Build dataclass ``cls`` from ``data`` (decoded JSON, notebook parameters); an unknown key or a value not of
    its field's type (:func:`_values_model`) is a one-line UserError, and so is a mistake ``__post_init__`` finds."""
    import pydantic  # where used, as in _values_model

    try:
        values = _values_model(cls).model_validate(data)
    except pydantic.ValidationError as e:
        errors = e.errors()
        unknown = sorted(str(err["loc"][0]) for err in errors if err["type"] == "extra_forbidden")
        if unknown:
            known = ", ".join(sorted(f.name for f in dataclasses.fields(cls)))
            raise UserError(f"{source}: unknown key {unknown[0]!r} (known: {known})") from None
        if not errors[0]["loc"]:
            raise UserError(f"{source}: expected an object, got {type(data).__name__}") from None
        k = str(errors[0]["loc"][0])
        hint = typing.get_type_hints(cls)[k]
        raise UserError(f"{source}: {k} must be {hint}, got {type(data[k]).__name__} {data[k]!r}") from None
    try:
        return cls(**{k: getattr(values, k) for k in data})
    except (TypeError, ValueError) as e:
        raise UserError(f"{source}: {e}") from None


# ----------------------------------------------------------------------------- notebook parameters


_NOTEBOOK_TYPES = {int: "int", float: "float", str: "str", bool: "bool"}


def parameter_line(cls: type, name: str, default: Any = dataclasses.MISSING) -> str:
    """The ``parameters``-cell line a notebook declares for field ``name`` of ``cls`` (papermill's format:
    an annotated assignment and the help as a trailing comment; ``None`` defaults become empty values).
    ``default``: the notebook's own (smaller, for a quick run), else the field's."""
    f = next(x for x in dataclasses.fields(cls) if x.name == name)
    tp, _ = _plain(typing.get_type_hints(cls)[name])
    if typing.get_origin(tp) is Literal:
        tp = type(typing.get_args(tp)[0])
    notebook_type = _NOTEBOOK_TYPES.get(tp, "list" if typing.get_origin(tp) in (list, tuple) else "str")
    if default is dataclasses.MISSING:
        default = _default(f)
    if default is None or default is dataclasses.MISSING:
        default = {"str": "", "list": []}.get(notebook_type, default)
    shown = (
        json.dumps(default)
        if isinstance(default, str)
        else repr(list(default) if isinstance(default, tuple) else default)
    )
    return f"{name}: {notebook_type} = {shown}  # {field_docs(cls)[name]}"
