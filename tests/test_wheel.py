"""The package built as a wheel and installed anywhere (issue 44, point 4): what it needs when it runs ships in it.

The wheel is built from this checkout and installed, without its dependencies, into a fresh virtual environment
whose only other path is this project's venv's site-packages (its libraries, not the editable install of this
checkout: a path named in a ``.pth`` file is not a site directory, so the editable finder there never loads). Every
command then runs from an empty folder, so nothing can be read from the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CCP = ROOT / "tests" / "fixtures" / "rows" / "code-contests-plus.jsonl"

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def _not_sources(folder: str, names: list[str]) -> set[str]:
    """What a copy of the checkout leaves out: the checkout's own venv, git folder, builds and outputs."""
    top = {".git", ".venv", "build", "reports"} if Path(folder) == ROOT else set()
    return {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the venv's bin folder, an empty working folder, the wheel)."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    # built from a copy of the checkout's files, not in it: setuptools builds in the source's build/, where a stale
    # tree (or another build at the same moment) would change what the wheel holds
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=_not_sources)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = dist.glob("grpo_wb-*.whl")
    venv = tmp / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    inst = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True
    )
    assert inst.returncode == 0, inst.stderr[-3000:]
    target = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
    ).stdout.strip()
    (Path(target) / "project_libraries.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp / "empty"
    work.mkdir()
    return venv / "bin", work, wheel


def _run(installed, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    bin_dir, work, _ = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    # the libraries' data files (nbconvert's templates) are in the prefix they were installed into, this project's
    # venv; a wheel installed with its dependencies has them in its own
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    cmd = [str(bin_dir / argv[0]), *argv[1:]]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_carries_the_data_the_package_reads_with_its_licences(installed):
    names = set(zipfile.ZipFile(installed[2]).namelist())
    for path in (
        "grpo_wb/data/testlib/testlib.h.gz",
        "grpo_wb/data/testlib/LICENSE",
        "grpo_wb/data/mbpp/sanitized-mbpp.json.gz",
        "grpo_wb/data/mbpp/LICENSE",
        "grpo_wb/data/reward_harnesses/LICENSE",
        "grpo_wb/data/reward_harnesses/evalplus-0.3.1/evalplus/eval/__init__.py",
        "grpo_wb/data/reward_harnesses/verl-0.9.1/prime_code/__init__.py",
        "grpo_wb/scoring/worker/main.py",
        "grpo_wb/reward_audit/exploits/exit_sys.py",
        "grpo_wb/tasks/rowformats/programs/pytest_helpers.py",
        "grpo_wb/tasks/rowformats/programs/pytest_intact.py",
        "grpo_wb/runs/programs/equivalence.py",
    ):
        assert path in names, path
    assert not any(n.startswith(("data/", "tests/", "notebooks/")) for n in names)


def test_the_wheel_ships_the_notebooks_byte_for_byte(installed):
    """One copy of each in the repository (notebooks/), shipped as grpo_wb.notebooks; the toy tasks they default to
    land where their ../data/toy_tasks.jsonl points from there."""
    wheel = zipfile.ZipFile(installed[2])
    shipped = {n.removeprefix("grpo_wb/notebooks/") for n in wheel.namelist() if n.endswith(".ipynb")}
    assert shipped == {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    for name in shipped:
        assert wheel.read(f"grpo_wb/notebooks/{name}") == (ROOT / "notebooks" / name).read_bytes(), name
    assert wheel.read("grpo_wb/data/toy_tasks.jsonl") == (ROOT / "data" / "toy_tasks.jsonl").read_bytes()


def test_the_installed_package_is_the_wheels_not_the_checkouts(installed):
    p = _run(installed, "python", "-c", "import grpo_wb, grpo_wb.bundled as b; print(grpo_wb.__file__, b.TESTLIB)")
    assert p.returncode == 0, p.stderr
    where, testlib = p.stdout.split()
    assert str(ROOT) not in where and str(installed[0].parent) in where, where
    assert Path(testlib).exists() and str(ROOT) not in testlib


def test_doctor_and_the_training_bridge(installed):
    p = _run(installed, "grpo-wb", "doctor")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    p = _run(installed, "python", "-c", "import grpo_wb.training.bridge as b; print(b.ExecutionReward.__name__)")
    assert p.returncode == 0 and p.stdout.strip() == "ExecutionReward", p.stderr[-2000:]


def test_the_importers_read_the_data_the_package_carries(installed):
    for kind, n in (("mbpp", 427), ("apps", 5), ("humaneval", 164)):
        p = _run(installed, "grpo-wb", "tasks", "import", kind, "--out", f"{kind}.jsonl", "--force")
        assert p.returncode == 0, p.stderr
        assert sum(1 for _ in (installed[1] / f"{kind}.jsonl").open()) == n


def test_a_code_contests_plus_row_is_judged_by_its_testlib_checker(installed):
    work = installed[1]
    p = _run(installed, "grpo-wb", "tasks", "import", "code-contests-plus", "--src", str(CCP), "--out", "ccp.jsonl",
             "--skip-bad", "--force")  # fmt: skip
    assert p.returncode == 0, p.stderr
    task = json.loads((work / "ccp.jsonl").read_text().splitlines()[0])
    assert task["checker_style"] == "testlib"
    (work / "c.jsonl").write_text(
        json.dumps({"task_id": task["task_id"], "completion": "```python\n" + task["canonical_solution"] + "```"})
        + "\n"
        + json.dumps({"task_id": task["task_id"], "completion": "```python\nprint('no')\n```"})
        + "\n"
    )
    p = _run(installed, "grpo-wb", "score", "--tasks", "ccp.jsonl", "--completions", "c.jsonl", "--out", "r.jsonl",
             "--compile-timeout", "120", "--no-progress")  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = [json.loads(line) for line in (work / "r.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["pass", "fail"], rows
    assert rows[1]["error"].startswith("rejected by the checker"), rows[1]["error"]


@pytest.mark.parametrize("reward", ["evalplus", "verl-prime-code"])
def test_the_builtin_reward_audits_run_from_the_package(installed, reward):
    p = _run(installed, "grpo-wb", "reward-audit", "--reward", f"builtin:{reward}", "--exploit", "exit_sys",
             "--out", reward, "--no-progress")  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert (installed[1] / reward / "audit.json").exists()


def test_a_shipped_notebook_is_reported_by_its_name(installed):
    p = _run(installed, "grpo-wb", "report", "--list")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 9, p.stdout + p.stderr
    p = _run(installed, "grpo-wb", "report", "task_headroom", "-p", "n_samples", "2", "-p", "ks", "[1]",
             "-p", "export_frontier", "false", timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    out = installed[1] / "reports" / "task_headroom"
    assert "Task headroom" in (out / "report.html").read_text()
    result = json.loads((out / "result.json").read_text())
    assert result["notebook"] == f"{_site(installed)}/grpo_wb/notebooks/task_headroom.ipynb", result["notebook"]
    # a default that is a checkout's file (make demo writes it) is one line, before any kernel
    p = _run(installed, "grpo-wb", "report", "rollout_explorer")
    assert p.returncode == 1 and p.stderr.strip().splitlines() == [
        "grpo-wb: error: rollout_explorer.ipynb: input_path defaults to "
        f"'../reports/headroom-codegen16b-humaneval/scored.jsonl' (relative to {_site(installed)}/grpo_wb/notebooks), "
        "which is not there: give -p input_path PATH"
    ], p.stderr


def _site(installed) -> str:
    p = _run(installed, "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
    return str(Path(p.stdout.strip()).resolve())
