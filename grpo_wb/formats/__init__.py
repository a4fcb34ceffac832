"""The on-disk formats: what code needs of them at import time here, their schemas in :mod:`grpo_wb.formats.schema`.

The schemas are pydantic models, and importing pydantic and building them takes some 0.1 s: a reader loads that
module lazily (by the first record it checks), so ``grpo-wb --help`` does not pay for it. This module is cheap.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
"""The task format's version: a task record's ``schema_version``."""

WRITTEN_WHEN_SET = frozenset(
    {"solutions", "wrong_solutions", "prelude", "output_match", "language", "checker", "checker_style", "time_limit",
     "memory_limit_mb"}
)  # fmt: skip
"""The task record's fields a writer leaves out when they hold their default: those added after the format's first
files, so that a task that does not use them is written as it always was. The others are always written."""

PARAMETER_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict}
"""A notebook parameter's annotation -> the type of its values (checked strictly: a bool is no int, an int is a
float)."""
