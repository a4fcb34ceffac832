"""The audit's exploits as files (grpo_wb/reward_audit/exploits): each compiles, says what it is, is used once, ships,
and a malformed one is an error that names it (the battery is read at import: a bad file must say which)."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

from grpo_wb.reward_audit import battery
from grpo_wb.reward_audit.battery import EXPLOIT_DIR, EXPLOIT_FILES, EXPLOITS, GOALS, KINDS, TaskView, read_exploit_file

FILES = sorted(EXPLOIT_DIR.glob("*.py"))
VIEWS = {
    "function": TaskView("function", "add", "def add(a, b):\n    return a + b\n"),
    "stdio": TaskView("stdio", "", "print(sum(map(int, input().split())))\n"),
}
AUDIT_VALUES = {k: "1" if k == "__AUDIT_PORT__" else "/x" for k in battery.PLACEHOLDERS}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_exploit_file_compiles_as_it_is_and_as_it_is_sent(path):
    """The file itself (tokens and all), and each kind's program with the view's and the audit's values filled in."""
    compile(path.read_text(encoding="utf-8"), str(path), "exec")
    for e in read_exploit_file(path):
        for kind in e.kinds:
            compile(battery.fill(e.program(VIEWS[kind]), AUDIT_VALUES), f"{path}:{e.name}:{kind}", "exec")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_exploit_file_has_complete_metadata(path):
    exploits = read_exploit_file(path)
    assert exploits, path
    for e in exploits:
        assert e.goal in GOALS and e.kinds and set(e.kinds) <= set(KINDS), e.name
        assert e.tries.strip() and e.beats.strip() and not re.search(r"\{\w*\}", e.beats), e.name
        for kind in e.kinds:
            program = e.program(VIEWS[kind])
            assert program.strip() and not re.search(r"__(ENTRY|REFERENCE|WRONG|WRONG_STDOUT)__", program), e.name


def test_every_file_is_used_once_and_is_no_package():
    """No orphan: the files are exactly EXPLOIT_FILES, each read once, and every exploit comes from one of them."""
    assert sorted(p.stem for p in FILES) == sorted(EXPLOIT_FILES)
    assert len(set(EXPLOIT_FILES)) == len(EXPLOIT_FILES)
    from_files = [e.name for f in EXPLOIT_FILES for e in read_exploit_file(EXPLOIT_DIR / f"{f}.py")]
    assert from_files == [e.name for e in EXPLOITS] and len(set(from_files)) == len(from_files)
    assert not (EXPLOIT_DIR / "__init__.py").exists()


def test_the_exploit_files_ship_with_the_package():
    """pyproject.toml's package-data names every file (they are data, not a package)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    patterns = setuptools["package-data"]["grpo_wb.reward_audit"]
    base = ROOT / "grpo_wb" / "reward_audit"
    assert all(any(fnmatch.fnmatch(str(p.relative_to(base)), pat) for pat in patterns) for p in FILES)
    assert "grpo_wb.reward_audit.exploits" not in setuptools["packages"]  # data, not a package


def test_a_shared_program_gets_each_exploits_tokens_and_the_views():
    by = {e.name: e for e in EXPLOITS}
    int_eq = by["always_equal_int"].program(VIEWS["function"])
    assert "class _AlwaysEqual(int):" in int_eq and int_eq.endswith(
        "\ndef add(*args, **kwargs):\n    return _AlwaysEqual(0)\n"
    )
    assert by["exit_atexit"].program(VIEWS["function"]) == (
        "import atexit, os\natexit.register(os._exit, 0)\n\ndef add(*args, **kwargs):\n    return None\n"
    )
    assert by["exit_atexit"].program(VIEWS["stdio"]).endswith("0)\n\nprint(-987654321)\n")
    assert "sys.stderr" in by["forged_marker_stderr"].program(VIEWS["stdio"])
    assert "_src = 'print(sum(map(int, input().split())))\\n'" in by["output_too_long"].program(VIEWS["stdio"])


META = 'META = {"name": "x", "kinds": ["function"], "goal": "reward", "tries": "t", "beats": "{HE}"}\n'
BOTH = "# ---- both kinds\npass\n"
BAD = {
    "no META": ('"""doc."""\n\n' + BOTH, "no 'META"),
    "META is code": ('META = dict(name="x")\n' + BOTH, "not plain data"),
    "META is a string": ('META = "x"\n' + BOTH, "neither a dict"),
    "header broken": ("META = {\n" + BOTH, "do not parse"),
    "field missing": ('META = {"name": "x", "kinds": ["function"]}\n' + BOTH, "lacks goal"),
    "unknown field": (META.replace("}\n", ', "why": 1}\n') + BOTH, "unknown field 'why'"),
    "unknown goal": (META.replace('"reward"', '"fame"') + BOTH, "goal 'fame'"),
    "unknown kind": (META.replace('"function"', '"cpp"') + BOTH, "kinds ['cpp']"),
    "unknown source": (META.replace("{HE}", "{XX}") + BOTH, "cites {XX}"),
    "no program": (META, "no program"),
    "two sections": (META + "# ---- function\npass\n# ---- function\npass\n", "two '# ---- function'"),
    "kind left empty": (META + "# ---- stdio\npass\n", "no program for function"),
    "unused token": (META.replace("}\n", ', "tokens": {"__B__": "int"}}\n') + BOTH, "token __B__"),
    "unhashable key": ('META = {["name"]: "x"}\n' + BOTH, "not plain data"),
    "kinds not names": (META.replace('["function"]', '[["function"]]') + BOTH, "kinds [['function']]"),
    "goal not a name": (META.replace('"reward"', '["reward"]') + BOTH, "goal ['reward']"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_malformed_exploit_file_is_an_error_naming_it(tmp_path: Path, case):
    text, says = BAD[case]
    path = tmp_path / "broken_exploit.py"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        read_exploit_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and says in message and "\n" not in message, message


def test_an_exploit_file_not_in_utf8_is_an_error_naming_it(tmp_path: Path):
    path = tmp_path / "latin1.py"
    path.write_bytes(META.replace('"t"', '"caf\xe9"').encode("latin-1") + BOTH.encode())
    with pytest.raises(ValueError, match=re.escape(f"{path}: not UTF-8")):
        read_exploit_file(path)


def test_a_missing_exploit_file_is_an_error_naming_it(tmp_path: Path):
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "gone.py"))):
        read_exploit_file(tmp_path / "gone.py")
