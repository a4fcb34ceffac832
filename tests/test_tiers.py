"""The tier guard of tests/conftest.py holds in the ways a test could slip past it.

Each case runs an inner pytest session with this project's conftest: a test not marked ``sandbox`` that
starts or uses a sandbox worker must fail, whether it swallows the refusal, starts the worker in a
module-scoped fixture, or runs the scorer in a subprocess; a marked test is let through. The guard is a
process-wide switch the sandbox itself checks (``GRPO_WB_FORBID_SANDBOX``), so none of these start a worker.
"""

import shutil

import pytest
from conftest import ROOT, TOY

INNER = f"""
import json, subprocess, sys
import pytest
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import load_tasks

TOY = {str(TOY)!r}
ADD = "    return a + b\\n"


def score_add():
    with Scorer(SandboxLimits(), workers=1, cache=False) as sc:
        return list(sc.score([ScoreRequest(load_tasks(TOY)[0], ADD)]))


def test_swallows_everything():
    try:
        score_add()
    except BaseException:
        pass


def test_swallows_exceptions():
    try:
        score_add()
    except Exception:
        pass


@pytest.fixture(scope="module")
def warm_scorer():
    with Scorer(SandboxLimits(), workers=1, cache=False) as sc:
        list(sc.score([ScoreRequest(load_tasks(TOY)[0], ADD)]))  # the pool is warm: its worker started
        yield sc


def test_uses_a_module_fixture(warm_scorer):
    pass


def test_runs_the_cli_in_a_subprocess(tmp_path):
    comp = tmp_path / "c.jsonl"
    comp.write_text(json.dumps({{"task_id": "toy/add", "completion": ADD}}) + "\\n")
    subprocess.run([sys.executable, "-m", "grpo_wb.cli", "score", "--tasks", TOY, "--completions", str(comp),
                    "--out", str(tmp_path / "r.jsonl")], capture_output=True, timeout=120)  # exit status ignored
"""


def _inner(pytester, body: str):
    shutil.copy(ROOT / "tests" / "conftest.py", pytester.path / "conftest.py")
    pytester.makeini("[pytest]\nmarkers =\n    sandbox: runs code\n    sandbox_breaks: breaks the sandbox\n")
    pytester.makepyfile(test_inner=body)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=300)


def test_an_unmarked_test_that_starts_the_sandbox_fails_however_it_hides_it(pytester):
    res = _inner(pytester, INNER)
    res.assert_outcomes(failed=3, errors=1)  # the module fixture's test errors in its set-up
    out = res.stdout.str()
    for name in (
        "test_swallows_everything",
        "test_swallows_exceptions",
        "test_uses_a_module_fixture",
        "test_runs_the_cli_in_a_subprocess",
    ):
        assert f"test_inner.py::{name}" in out and "mark it @pytest.mark.sandbox" in out, out[-3000:]
    assert "passed" not in res.outlines[-1], res.outlines[-1]


def test_an_unmarked_test_that_runs_no_code_passes(pytester):
    """The control: the guard fails only tests that run code."""
    res = _inner(
        pytester,
        f"from grpo_wb.tasks.records import load_tasks\n\ndef test_reads():\n    assert load_tasks({str(TOY)!r})\n",
    )
    res.assert_outcomes(passed=1)


@pytest.mark.sandbox
def test_a_marked_test_runs_the_sandbox_and_leaves_no_warm_worker_to_the_next(pytester):
    """The control the other way: marked ``sandbox``, the code runs and passes; a worker it warmed in a
    module-scoped fixture is still refused to the unmarked test that uses it next."""
    body = (
        INNER.split("def test_swallows_everything")[0]
        + """
@pytest.fixture(scope="module")
def warm_scorer():
    with Scorer(SandboxLimits(), workers=1, cache=False) as sc:
        yield sc


@pytest.mark.sandbox
def test_scores(warm_scorer):
    (r,) = list(warm_scorer.score([ScoreRequest(load_tasks(TOY)[0], ADD)]))
    assert r.status == "pass", r.error


def test_scores_again_unmarked(warm_scorer):
    try:
        list(warm_scorer.score([ScoreRequest(load_tasks(TOY)[0], ADD + "\\n")]))
    except BaseException:
        pass
"""
    )
    res = _inner(pytester, body)
    res.assert_outcomes(passed=1, failed=1)
    assert "test_inner.py::test_scores_again_unmarked is not marked sandbox" in res.stdout.str()


BROKEN = f'''
import os, stat
import pytest
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import load_tasks


@pytest.fixture
def broken_sandbox(tmp_path, monkeypatch):
    """bubblewrap required, and a bwrap on PATH that always fails: no worker can start."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\\nexit 1\\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{{tmp_path}}:{{os.environ['PATH']}}")
    monkeypatch.setenv("GRPO_WB_SANDBOX", "bwrap")


def weak(broken_sandbox):
    try:
        with Scorer(SandboxLimits(), workers=1, cache=False) as sc:
            (r,) = list(sc.score([ScoreRequest(load_tasks({str(TOY)!r})[0], "    return a - b\\n")]))
        status = r.status
    except Exception:  # the run stopped (no sandbox): a weak test that swallows it
        status = "never ran"
    assert status != "pass"  # true of a wrong answer, and of a sandbox that never ran it


@pytest.mark.sandbox
def test_weak_assertion(broken_sandbox):
    weak(broken_sandbox)


@pytest.mark.sandbox
@pytest.mark.sandbox_breaks
def test_breaks_it_on_purpose(broken_sandbox):
    weak(broken_sandbox)
'''


@pytest.mark.sandbox
def test_a_marked_test_fails_when_the_sandbox_cannot_run_whatever_it_asserts(pytester, monkeypatch):
    """A weak assertion ("does not pass") holds for a sandbox that never ran the code; the failure record
    fails the test all the same, unless it says it breaks the sandbox on purpose."""
    monkeypatch.delenv("GRPO_WB_STRICT_SANDBOX_TESTS", raising=False)  # the default
    res = _inner(pytester, BROKEN)
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "test_inner.py::test_weak_assertion: the sandbox failed" in out, out[-3000:]
