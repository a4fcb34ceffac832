"""The programs grpo_wb sends to the sandbox that are kept as .py files (grpo_wb.tasks.sandbox_programs; issue 44,
point 6): each compiles as it is and as it is sent, ships with the package, is data rather than a module, and the
KodCode helpers are sent byte for byte as they always were (they are part of every imported KodCode task)."""

from __future__ import annotations

import fnmatch
import hashlib
import tomllib

import pytest
from conftest import ROOT

from grpo_wb.runs.task_audit import agreement_program, domain_program
from grpo_wb.tasks.records import Task
from grpo_wb.tasks.rowformats.kodcode_pytest import _PYTEST_HELPERS, _PYTEST_INTACT
from grpo_wb.tasks.sandbox_programs import MARKER, program_text

PKG = ROOT / "grpo_wb"
# (the package whose folder holds them, that folder)
DIRS = (
    ("grpo_wb.tasks.rowformats", PKG / "tasks" / "rowformats" / "programs"),
    ("grpo_wb.runs", PKG / "runs" / "programs"),
)
FILES = [(package, path) for package, folder in DIRS for path in sorted(folder.glob("*.py"))]


@pytest.mark.parametrize("package, path", FILES, ids=lambda x: getattr(x, "stem", ""))
def test_each_program_file_compiles_as_it_is_and_as_it_is_sent(package, path):
    text = path.read_text(encoding="utf-8")
    compile(text, str(path), "exec")
    assert text.count(MARKER) == 1, path
    sent = program_text(package, f"programs/{path.name}")
    assert text.endswith(sent) and MARKER not in sent
    compile(sent, f"{path} (sent)", "exec")


def test_the_program_files_are_data_and_ship_with_the_package():
    """No __init__.py (never imported), not among the packages, named in package-data."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert len(FILES) >= 3
    for package, folder in DIRS:
        assert not (folder / "__init__.py").exists(), folder
        assert f"{package}.programs" not in setuptools["packages"]  # data, not a package
        patterns = setuptools["package-data"][package]
        base = folder.parent
        assert all(any(fnmatch.fnmatch(str(p.relative_to(base)), pat) for pat in patterns) for p in folder.glob("*.py"))


def test_the_kodcode_helpers_are_sent_as_they_always_were():
    """Part of every imported KodCode task's test_setup: a change to them (a reformat too) changes the tasks an import
    makes, so it must be meant (then update these digests)."""
    assert _PYTEST_HELPERS.startswith("\ndef __grpo_wb_call(f, *args):\n")
    assert _PYTEST_INTACT.endswith("\n__grpo_wb_pytest_intact()\n")
    digests = [hashlib.sha256(t.encode()).hexdigest()[:16] for t in (_PYTEST_HELPERS, _PYTEST_INTACT)]
    assert digests == ["f13905bbaa9c1d17", "e5141abaaf3de422"]


def test_the_equivalence_program_is_sent_with_the_tasks_values():
    t = Task(task_id="t", prompt="", entry_point="f", tests=(), prelude="import math")
    for program, mode in (
        (domain_program(t, ["def f(x):\n    return x\n"], [(1,), ([2, 3],)], 2.0), "domain"),
        (agreement_program(t, "def f(x):\n    return x\n", "def f(x):\n    return -x\n", [(1,)], 2.0), "agreement"),
    ):
        compile(program, mode, "exec")
        head, _, call = program.rstrip("\n").rpartition("\n")
        assert head.rstrip("\n") == program_text("grpo_wb.runs", "programs/equivalence.py").rstrip("\n")
        assert call.startswith(f"main(*({mode!r}, 'import math', 'f', ["), call
