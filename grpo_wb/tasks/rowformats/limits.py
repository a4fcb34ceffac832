"""A row's time and memory limits, read as the datasets write them: numbers in a default unit, or strings with a
unit (``2 seconds``, ``1000 ms``, ``256 megabytes``, ``262144 KB``)."""

from __future__ import annotations

import re
from typing import Any

from grpo_wb.tasks.rowformats.common import RowError


def _positive(value: Any, name: str, whole: bool = False) -> Any:
    """A row's limit: None when absent, else a positive number (MB rounded up to a whole number)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
        raise RowError(f"{name} must be a positive number, got {value!r}")
    return int(-(-value // 1)) if whole else float(value)


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
