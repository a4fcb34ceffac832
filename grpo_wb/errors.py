"""User-facing errors.

A :class:`UserError` is a mistake in the user's input or configuration. The CLI
prints it as one line (``grpo-wb: error: ...``) and exits non-zero; it never
shows a traceback. Anything else escaping the CLI is a bug in grpo_wb.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class UserError(Exception):
    """A problem the user can fix; its message is one line, ready to print."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.detail = message
        super().__init__(format_location(path, line, message))


def require(module: str, install_hint: str) -> ModuleType:
    """Import an optional dependency on first use, or fail as a :class:`UserError` saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(install_hint) from None


def format_location(path: str | None, line: int | None, message: str) -> str:
    """``PATH:LINE: message`` (or ``PATH: message``, or just ``message``)."""
    if path is None:
        return message
    if line is None:
        return f"{path}: {message}"
    return f"{path}:{line}: {message}"


def one_line(text: object, limit: int = 300, *, first_line: bool = False) -> str:
    """Text fit for a one-line message: whitespace collapsed (``first_line``: only the first non-blank line,
    as of a traceback's ``str``), cut at ``limit`` characters."""
    s = str(text)
    if first_line:
        s = next((ln for ln in s.splitlines() if ln.strip()), "")
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def exception_line(e: BaseException, limit: int = 200) -> str:
    """``Type: first line of the message`` (just ``Type`` when the message is empty)."""
    text = one_line(e, limit, first_line=True)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class ValidationError(UserError):
    """Several problems in one file, each already formatted as ``PATH:LINE: problem``."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        head = self.problems[0] if self.problems else "invalid input"
        more = f" (and {len(self.problems) - 1} more problems)" if len(self.problems) > 1 else ""
        super().__init__(head + more)
