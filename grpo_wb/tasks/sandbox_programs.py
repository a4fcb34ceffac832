"""The programs grpo_wb sends to the sandbox that are kept as ``.py`` files, not strings, so that ruff and mypy
check them: ``grpo_wb/tasks/rowformats/programs/`` (the helpers of the KodCode pytest emulation) and
``grpo_wb/runs/programs/`` (the tasks audit's equivalence search). They import the standard library only, nothing
of grpo_wb (``tests/test_layers.py``), and ship in the wheel as package data, never imported as modules
(``pyproject.toml``); :func:`program_text` reads one.
"""

from __future__ import annotations

from importlib.resources import files

MARKER = "# ---- sent to the sandbox from the next line on ----\n"
"""The line after which a program file is what is sent. Above it: the file's docstring, and stand-ins (for the
checkers) for what the program finds defined when it runs."""


def program_text(package: str, name: str) -> str:
    """The program ``name`` (a path below ``package``'s folder) as it is sent: the file's text after :data:`MARKER`."""
    text = files(package).joinpath(name).read_text(encoding="utf-8")
    _, marker, program = text.partition(MARKER)
    if not marker:
        raise RuntimeError(f"{package}: {name} has no line {MARKER.strip()!r}")
    return program
