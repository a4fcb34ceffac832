"""grpo_wb: will this task set plus an execution reward give GRPO a learning signal?

The folders follow the data flow, each importing only the ones before it (the contract is in
pyproject.toml, checked by ``lint-imports`` in ``make test``):

* base: :mod:`~grpo_wb.errors`, :mod:`~grpo_wb.config`, :mod:`~grpo_wb.jsonio`, :mod:`~grpo_wb.bundled`,
  :mod:`~grpo_wb.version`, :mod:`~grpo_wb.formats` (the on-disk formats' schemas), :mod:`~grpo_wb.layout` (the
  file names of each folder grpo_wb writes)
* :mod:`grpo_wb.tasks`: the task record and its JSONL format, importers
* :mod:`grpo_wb.rollouts`: where completions come from (mock, replay, a served model, a local one)
* :mod:`grpo_wb.scoring`: extraction, the sandbox, verdicts, rewards, the scorer and its executors
* :mod:`grpo_wb.signal`: advantages, group statistics, headroom (arithmetic on scored rows only)
* :mod:`grpo_wb.testing`: a loopback model server for tests and benchmarks (never on a user's path)
* :mod:`grpo_wb.runs`: the smoke loop, run artifacts, run tables, the notebooks' recipes
* :mod:`grpo_wb.reports`: notebooks run strictly with papermill, batches, their index, the plots
* :mod:`grpo_wb.training`: the TRL bridge and ``grpo-wb train``
* :mod:`grpo_wb.reward_audit`: ``grpo-wb reward-audit``, a red team for a reward function
* :mod:`grpo_wb.bench`: the benchmarks of ``grpo-wb bench``, each printed beside its anchor in one run
* :mod:`grpo_wb.cli`: ``grpo-wb``

The names below are importable from here; each is looked up on first use, so ``import grpo_wb.scoring``
(a sandbox worker's Ray actor, say) does not import pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

from grpo_wb.version import __version__

_NAMES = {
    "load_run": "grpo_wb.runs.load",
    "Run": "grpo_wb.runs.load",
    "SmokeConfig": "grpo_wb.runs.smoke",
    "SmokeRun": "grpo_wb.runs.smoke",
    "Task": "grpo_wb.tasks.records",
    "TestCase": "grpo_wb.tasks.records",
    "load_tasks": "grpo_wb.tasks.records",
    "Scorer": "grpo_wb.scoring.scorer",
    "ScoreRequest": "grpo_wb.scoring.scorer",
    "compute_advantages": "grpo_wb.signal.advantages",
    "AdvantageConfig": "grpo_wb.signal.advantages",
    "analyze": "grpo_wb.signal.headroom",
}


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'grpo_wb' has no attribute {name!r}")


__all__ = ["__version__", *_NAMES]
