"""Shared fixtures, and the tiers' contract.

Tiers (markers registered in pyproject.toml, ``--strict-markers``): ``sandbox`` starts sandbox
workers, ``data`` reads the bundled real data (data/external), ``notebooks`` executes notebooks,
``trl`` / ``hf`` need those extras, ``ray`` starts Ray, ``slow`` takes seconds. ``make test-fast`` runs
the rest (the unit tier); a test of that tier that starts or uses a sandbox worker fails, in this
process or any it starts (below), so the unit tier stays free of bubblewrap and of the sandbox, and a test
that runs code is marked as such.
"""

import atexit
import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from grpo_wb.bundled import TOY_TASKS
from grpo_wb.scoring.sandbox import CACHE_ENV, FAILURES_ENV, FORBID_ENV
from grpo_wb.tasks.rowformats import RowImportSummary, iter_row_tasks
from grpo_wb.tasks.rows import RowSource

pytest_plugins = ["pytester"]  # tests/test_tiers.py runs the tier guard in an inner session

# the session's own cache (precompiled headers, compiled C++ programs): never the user's, empty at the start, so
# counts of compiles mean the same on every run; subprocesses inherit it
_CACHE = tempfile.mkdtemp(prefix="grpo_wb_test_cache_")
os.environ[CACHE_ENV] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)

ROOT = Path(__file__).resolve().parents[1]
TOY = TOY_TASKS


@pytest.fixture
def toy_tasks_path() -> Path:
    return TOY


ROW_FIXTURES = Path(__file__).parent / "fixtures" / "rows"
"""One file of real-shaped rows per row format: ``FORMAT.jsonl``."""


def import_rows(fmt: str, path: Path | None = None, **kw):
    """The tasks of a row file (default: the format's fixture) and the import's summary."""
    summary = RowImportSummary()
    tasks = list(iter_row_tasks(fmt, RowSource(str(path or ROW_FIXTURES / f"{fmt}.jsonl")), summary, **kw))
    return tasks, summary


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path: Path, limit: int | None = None):
    """The rows of a JSONL file (``*.gz`` too); a missing file fails the test, it never skips."""
    from grpo_wb.jsonio import iter_jsonl

    rows = []
    for _, obj in iter_jsonl(need(path)):
        if limit is not None and len(rows) >= limit:
            break
        rows.append(obj)
    return rows


def need(path: Path) -> Path:
    """A bundled data file (data/external), or a failure naming it."""
    if not Path(path).exists():
        pytest.fail(f"required bundled data is missing: {path} (see data/external/PROVENANCE.md)", pytrace=False)
    return Path(path)


def binary_scored(tmp_path: Path, tasks, pass_counts, n: int = 8) -> Path:
    """A scored file, ``scored.jsonl``: ``pass_counts[i]`` of ``n`` samples of task i pass (binary reward)."""
    rows = [
        {"task_id": t.task_id, "passed": j < c, "reward": float(j < c)}
        for t, c in zip(tasks, pass_counts)
        for j in range(n)
    ]
    return write_jsonl(tmp_path / "scored.jsonl", rows)


# ----------------------------------------------------------------------------- command lines shared by the CLI tests


def score_argv(tasks, completions, out, *extra: str) -> list[str]:
    """`grpo-wb score` of a completions file against a tasks file, into ``out``; then ``extra``."""
    return ["score", "--tasks", str(tasks), "--completions", str(completions), "--out", str(out), *extra]


def import_argv(fmt: str, src, out, *extra: str) -> list[str]:
    """`grpo-wb tasks import FMT --src SRC --out OUT`; then ``extra``."""
    return ["tasks", "import", fmt, "--src", str(src), "--out", str(out), *extra]


def filter_argv(scored, tasks, out, fmt: str, *extra: str) -> list[str]:
    """`grpo-wb filter` keeping the band [0.1, 0.9] of a scored file's tasks, written as ``fmt`` rows."""
    argv = ["filter", str(scored), "--band", "0.1", "0.9", "--tasks", str(tasks), "--out", str(out)]
    return [*argv, "--format", fmt, *extra]


def export_frontier_argv(scored, tasks, out, fmt: str) -> list[str]:
    """`grpo-wb headroom` writing the frontier tasks at G = 4 as ``fmt`` rows."""
    argv = ["headroom", str(scored), "--tasks", str(tasks), "--export-frontier", str(out), "--format", fmt]
    return [*argv, "--group-size", "4"]


def replay_model(srv) -> list[str]:
    """The flags that sample a ``ReplayServer`` (``grpo_wb.testing.loopback``): its OpenAI API and model."""
    return ["--backend", "openai", "--base-url", srv.base_url, "--model", srv.model]


EARLY_STOP = "--group-size 4 --batch-size 5 --steps 6 --patience 2 --min-informative-fraction 0.5".split()
"""Smoke flags that stop a mock run on ``all_pass_toy`` after 2 of its 6 steps (patience 2, no informative group)."""


def all_pass_toy(tmp_path: Path) -> Path:
    """The toy tasks, each with mock_skill 1.0 (every mock completion passes), written to ``easy.jsonl``."""
    easy = [dict(t, metadata={**t["metadata"], "mock_skill": 1.0}) for t in read_jsonl(TOY)]
    return write_jsonl(tmp_path / "easy.jsonl", easy)


_RECORDS = Path(tempfile.mkdtemp(prefix="grpo_wb_tiers_"))
_FORBID_RECORD = _RECORDS / "attempts"
_FAILURES_RECORD = _RECORDS / "sandbox_failures"
STRICT_ENV = "GRPO_WB_STRICT_SANDBOX_TESTS"


@contextlib.contextmanager
def _sandbox_forbidden_unless_marked(item):
    """Around each phase (setup, call, teardown) of a test not marked ``sandbox``: the process-wide
    switch that the sandbox itself checks (``GRPO_WB_FORBID_SANDBOX``, inherited by every subprocess,
    kernel and Ray worker the test starts). Starting or using a worker then raises
    ``SandboxForbidden`` (a BaseException: no ``except Exception`` turns it into a verdict) and
    leaves a line in the record, which fails the phase even if something swallowed the exception."""
    names = {FORBID_ENV: str(_FORBID_RECORD), FORBID_ENV + "_TEST": item.nodeid, FORBID_ENV + "_PID": str(os.getpid())}
    if item.get_closest_marker("sandbox") is not None:
        for k in names:
            os.environ.pop(k, None)
        with _sandbox_must_work(item):
            yield
        return
    _FORBID_RECORD.write_text("")
    os.environ.update(names)
    try:
        yield
    finally:
        for k in names:
            os.environ.pop(k, None)
    attempts = _FORBID_RECORD.read_text()
    if attempts:
        pytest.fail(
            f"{item.nodeid} is not marked sandbox but started or used a sandbox worker: mark it "
            f"@pytest.mark.sandbox (attempts: {attempts.strip().splitlines()[0]})",
            pytrace=False,
        )


@contextlib.contextmanager
def _sandbox_must_work(item):
    """Around each phase of a test marked ``sandbox``: any failure of the sandbox itself (a worker that cannot
    start or dies, a ``sandbox_error``; recorded by the sandbox through ``GRPO_WB_SANDBOX_FAILURES``, in this
    process or any it starts) fails the test, so a test that says it runs code fails when the code cannot
    run, however weak its own assertions. Tests that break the sandbox on purpose say so:
    ``@pytest.mark.sandbox_breaks``. On by default; ``GRPO_WB_STRICT_SANDBOX_TESTS=0`` turns it off (to see what
    a broken sandbox's tests would assert on their own)."""
    if item.get_closest_marker("sandbox_breaks") is not None or os.environ.get(STRICT_ENV, "1") == "0":
        os.environ.pop(FAILURES_ENV, None)
        yield
        return
    _FAILURES_RECORD.write_text("")
    os.environ[FAILURES_ENV] = str(_FAILURES_RECORD)
    try:
        yield
    finally:
        os.environ.pop(FAILURES_ENV, None)
    failures = _FAILURES_RECORD.read_text()
    if failures:
        pytest.fail(
            f"{item.nodeid}: the sandbox failed ({failures.splitlines()[0]}); a test that runs code "
            f"fails when its code cannot run (mark a test that breaks the sandbox on purpose "
            f"@pytest.mark.sandbox_breaks)",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with _sandbox_forbidden_unless_marked(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with _sandbox_forbidden_unless_marked(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    with _sandbox_forbidden_unless_marked(item):
        return (yield)


# ----------------------------------------------------------------------------- the parallel run (pytest-xdist)

_SHARED_MODULES = {
    "test_wheel": "wheel",  # one wheel built and installed (a module fixture), not once per worker
    "test_chat_reply_agreement": "chat",  # 3,344 chat replies scored once (a module fixture)
    "test_reward_audit": "audit",  # the audits' sandboxed functions one at a time (the full batteries run `alone`)
    "test_agreement": "audit",
}
_SHARED_MARKS = {"ray": "ray", "trl": "torch", "hf": "torch", "live": "torch"}
"""A Ray cluster at a time (two on 2 cores time out starting); one torch model at a time (memory)."""


def _group_of(item) -> str | None:
    module = item.path.stem
    group = next((g for m, g in _SHARED_MARKS.items() if item.get_closest_marker(m)), None)
    group = group or _SHARED_MODULES.get(module)
    if group is None and module == "test_docs_examples" and "reward-audit_--reward_builtin" in item.nodeid:
        group = "audit"
    return group


_GROUPS_ENV = "GRPO_WB_XDIST_GROUPS"


def pytest_configure(config):
    """In the controller of a parallel run: where its workers write each test's group (they inherit the variable)."""
    if not hasattr(config, "workerinput") and config.getoption("dist", "no") == "loadgroup":
        os.environ[_GROUPS_ENV] = str(_RECORDS / "xdist_groups.json")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """In a worker of a parallel run: each test's group, by its markers and module, for the controller's scheduler."""
    path = os.environ.get(_GROUPS_ENV)
    if path and hasattr(config, "workerinput"):
        groups = {item.nodeid: g for item in items if (g := _group_of(item)) is not None}
        tmp = f"{path}.{config.workerinput['workerid']}"
        Path(tmp).write_text(json.dumps(groups))
        os.replace(tmp, path)


def pytest_xdist_make_scheduler(config, log):
    """A parallel run (``pytest -n 2 --dist loadgroup``, what ``make test`` runs):
    the tests that share an expensive module fixture, start Ray, load a torch model or run a reward audit's
    sandboxed functions are each one unit of work, which one worker runs, in order (the full batteries are marked
    ``alone`` and run after it); every other test is a unit of its own, run
    wherever a worker is free. (pytest-xdist's own ``xdist_group`` marks do nothing under pytest 9: it renames
    ``item._nodeid``, which pytest 9 no longer reads; so the workers write the groups, by marker, and this
    scheduler reads them.)"""
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = json.loads(Path(os.environ[_GROUPS_ENV]).read_text())
            group = self.groups.get(nodeid)
            return f"group:{group}" if group else nodeid

    return Groups(config, log)
