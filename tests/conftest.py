"""Shared fixtures, and the tiers' contract.

Tiers (markers registered in pyproject.toml, ``--strict-markers``): ``sandbox`` starts sandbox
workers, ``data`` reads the bundled real data (data/external), ``notebooks`` executes notebooks,
``trl`` / ``hf`` need those extras, ``ray`` starts Ray, ``slow`` takes seconds. ``make test-fast`` runs
the rest (the unit tier); a test of that tier that starts a sandbox worker fails (below), so the
unit tier stays free of bubblewrap and of the sandbox.
"""
import json
from pathlib import Path

import pytest

from grpo_wb.bundled import TOY_TASKS

ROOT = Path(__file__).resolve().parents[1]
TOY = TOY_TASKS


@pytest.fixture
def toy_tasks_path() -> Path:
    return TOY


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


@pytest.fixture(autouse=True)
def _unit_tier_starts_no_sandbox(request, monkeypatch):
    """A test not marked ``sandbox`` that starts a sandbox worker is mislabelled: fail it."""
    if request.node.get_closest_marker("sandbox") is None:
        from grpo_wb.scoring import sandbox

        def refuse(*args, **kwargs):
            raise AssertionError(f"{request.node.nodeid} starts a sandbox worker: mark it @pytest.mark.sandbox")

        monkeypatch.setattr(sandbox.Worker, "__init__", refuse)
        monkeypatch.setattr(sandbox.WorkerPool, "run", refuse)  # a pool a wider-scoped fixture made
