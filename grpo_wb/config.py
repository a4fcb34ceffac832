"""Strict configuration helpers: unknown keys and wrong types are errors, not warnings."""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar

from .errors import UserError

T = TypeVar("T")


def _accepts(tp: Any, value: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is dict or tp is dict:
        return isinstance(value, dict)
    if origin in (list, tuple) or tp in (list, tuple):
        return isinstance(value, (list, tuple))
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


def from_dict(cls: type[T], data: dict[str, Any], *, source: str = "config") -> T:
    """Build dataclass ``cls`` from ``data``; unknown keys or mistyped values raise UserError."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: expected an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise UserError(f"{source}: unknown key {unknown[0]!r} (known: {', '.join(sorted(names))})")
    for k, v in data.items():
        if not _accepts(hints[k], v):
            raise UserError(f"{source}: {k} must be {hints[k]}, got {type(v).__name__} {v!r}")
    kwargs = {k: (float(v) if hints[k] is float and isinstance(v, int) else v) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise UserError(f"{source}: {e}") from None
