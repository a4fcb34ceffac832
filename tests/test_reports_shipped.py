"""The notebooks the package ships (``grpo_wb.notebooks``, the checkout's notebooks/ folder): found by name, listed,
and a default path that is not there said in one line, all without a kernel (the wheel's copy: tests/test_wheel.py)."""

from __future__ import annotations

import tomllib

import pytest
from nbfixtures import NOTEBOOKS, ROOT, make_notebook
from setuptools import find_packages

from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.reports import notebooks as reports


def test_the_shipped_notebooks_are_the_checkouts_notebooks_folder():
    shipped = reports.shipped_notebooks()
    assert list(shipped) == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert {p.resolve() for p in shipped.values()} == {p.resolve() for p in NOTEBOOKS.glob("*.ipynb")}


@pytest.mark.parametrize("ref", ["task_headroom", "task_headroom.ipynb"])
def test_a_name_finds_the_shipped_notebook(ref, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert reports.find_notebook(ref).resolve() == (NOTEBOOKS / "task_headroom.ipynb").resolve()


def test_a_path_that_is_there_wins_over_a_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = make_notebook(tmp_path / "task_headroom.ipynb", "n: int = 1  # n\n", [])
    assert reports.find_notebook("task_headroom.ipynb") == mine.relative_to(tmp_path)
    (tmp_path / "reward_audit").mkdir()  # a folder of that name is not a notebook: the name is looked up
    assert reports.find_notebook("reward_audit").resolve() == (NOTEBOOKS / "reward_audit.ipynb").resolve()


@pytest.mark.parametrize("ref", ["task_headrom", "notebooks/task_headroom.ipynb", "missing.ipynb"])
def test_an_unknown_name_is_one_line_listing_the_names(ref, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="nor a shipped notebook's name") as e:
        reports.find_notebook(ref)
    assert "\n" not in str(e.value) and all(name in str(e.value) for name in reports.shipped_notebooks())
    assert main(["report", ref]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"grpo-wb: error: {ref}: no such notebook file"), err
    assert not (tmp_path / "reports").exists()


def test_report_list_prints_each_name_with_its_title(capsys):
    assert main(["report", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == list(reports.shipped_notebooks())
    assert any(ln.startswith("task_headroom ") and ln.endswith("give GRPO a learning signal?") for ln in lines)
    assert main(["report", "--list", "task_headroom"]) == 1 and "--list takes no NOTEBOOK" in capsys.readouterr().err
    assert main(["report"]) == 1 and "grpo-wb report --list names them" in capsys.readouterr().err


def test_a_default_path_that_is_not_there_is_one_line_before_any_kernel(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "there.jsonl").write_text("")
    params = (
        'tasks_file: str = "../data/there.jsonl"  # present\nin_path: str = "../reports/scored.jsonl"  # absent\n'
        'run_dirs: list = ["../reports/r*/run"]  # a glob\nempty_file: str = ""  # none\n'
        'label: str = "../not/a/path"  # not a path parameter\nout_dir: str = "../reports/lab"  # set by the runner\n'
    )
    nb = make_notebook(tmp_path / "nb" / "d.ipynb", params, ["print(1)"])
    declared = reports.notebook_parameters(nb)
    with pytest.raises(UserError, match=r"d.ipynb: in_path defaults to '../reports/scored.jsonl' \(relative to .*nb\)"):
        reports.check_default_paths(nb, declared, given=set())
    reports.check_default_paths(nb, declared, given={"in_path"})
    rc = main(["report", str(nb), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and err[0].endswith("give -p in_path PATH"), err
    assert not (tmp_path / "o" / "report.ipynb").exists()


def test_pyproject_names_every_package_under_grpo_wb():
    """The package list is written out (a find cannot add the mapped notebooks): a new package must be added there."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    data = ("grpo_wb.data", "grpo_wb.reward_audit.exploits", "grpo_wb.tasks.rowformats.programs")
    data += ("grpo_wb.runs.programs",)
    found = {p for p in find_packages(str(ROOT), include=["grpo_wb*"]) if not p.startswith(data)}
    assert set(setuptools["packages"]) == found | {"grpo_wb.notebooks"}
    assert setuptools["package-dir"] == {"grpo_wb.notebooks": "notebooks"}
