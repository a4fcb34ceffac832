"""The shipped notebooks' parameter contract: which parameters are fields of a config dataclass.

Such a parameter is declared by the dataclass (its name, its type, its help); the notebook keeps only its own
default, smaller for a quick run. :func:`parameter_problems` says where a notebook's ``parameters`` cell has
drifted from the dataclass, :func:`sync_parameters` rewrites those lines, and the recipes the notebooks call
check the values as strictly as the CLI checks the flags of the same names.

It lives beside the command line because it is the same kind of thing: a front end whose inputs are derived from
the config dataclasses of every room below (runs, signal, audit), so it may import them all.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import nbformat

from grpo_wb.bundled import REPO
from grpo_wb.config import parameter_line
from grpo_wb.errors import UserError
from grpo_wb.reports.notebooks import parameters_cells, read_notebook
from grpo_wb.reward_audit.run import AuditConfig
from grpo_wb.runs.smoke import SmokeConfig
from grpo_wb.signal.filters import FilterRule
from grpo_wb.signal.headroom import HeadroomConfig
from grpo_wb.signal.plan import PlanConfig

NOTEBOOKS = REPO / "notebooks"
CONFIG_PARAMETERS: dict[str, tuple[type, tuple[str, ...]]] = {
    "smoke_experiment.ipynb": (
        SmokeConfig,
        (
            "backend",
            "group_size",
            "batch_size",
            "steps",
            "seed",
            "reward",
            "timeout",
            "mock_skill",
            "min_informative_fraction",
        ),
    ),
    "task_headroom.ipynb": (HeadroomConfig, ("budget", "ks", "confidence")),
    "dataset_filter.ipynb": (FilterRule, ("band", "group_size", "min_samples", "conservative", "confidence")),
    "data_strategy.ipynb": (
        PlanConfig,
        ("group_size", "batch_size", "epochs", "strategies", "band", "max_num_gen_batches", "seed"),
    ),
    "reward_audit.ipynb": (AuditConfig, ("reward", "style", "tasks", "kinds", "exploits", "function_timeout")),
}
"""notebook file name -> (the config dataclass, the parameters that are its fields)."""


def _lines(source: str) -> dict[str, tuple[int, str | None]]:
    """name -> (line index, default's source) for each annotated assignment of a parameters cell (None: a bare
    ``name: type``, with no default)."""
    out: dict[str, tuple[int, str | None]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            default = ast.get_source_segment(source, node.value) if node.value is not None else None
            out[node.target.id] = (node.lineno - 1, default)
    return out


def _default_value(default: str | None) -> Any:
    """The value of a default's source; a missing default is what ``ast.literal_eval(None)`` says it is."""
    if default is None:
        raise ValueError("malformed node or string: None")
    return ast.literal_eval(default)


def _parameters_source(path: str | Path):
    """The notebook and its one ``parameters`` cell."""
    nb = read_notebook(path)
    cells = parameters_cells(nb)
    if len(cells) != 1:
        raise UserError(f"{path}: needs exactly one cell tagged 'parameters', found {len(cells)}")
    return nb, cells[0]


def expected_lines(name: str, source: str) -> dict[int, str]:
    """line index -> the line the dataclass declares for it (keeping the notebook's default), for notebook
    ``name``'s parameters cell ``source``."""
    cls, names = CONFIG_PARAMETERS[name]
    found = _lines(source)
    return {found[n][0]: parameter_line(cls, n, _default_value(found[n][1])) for n in names}


def parameter_problems(path: str | Path) -> list[str]:
    """Lines of the notebook's parameters cell that are not what its config dataclass declares."""
    cls, names = CONFIG_PARAMETERS[Path(path).name]
    source = _parameters_source(path)[1].source
    lines = source.splitlines()
    missing = [n for n in names if n not in _lines(source)]
    if missing:
        return [f"{path}: no parameter {missing[0]!r} ({cls.__name__} declares it)"]
    return [
        f"{path}: line {i + 1} is {lines[i]!r}; {cls.__name__} declares {want!r}"
        for i, want in expected_lines(Path(path).name, source).items()
        if lines[i] != want
    ]


def sync_parameters(path: str | Path) -> bool:
    """Rewrite the config-backed lines of a notebook's parameters cell; True when something changed."""
    nb, cell = _parameters_source(path)
    lines = cell.source.splitlines()
    want = expected_lines(Path(path).name, cell.source)
    if all(lines[i] == w for i, w in want.items()):
        return False
    for i, w in want.items():
        lines[i] = w
    cell.source = "\n".join(lines)
    nbformat.write(nb, str(path))
    return True


if __name__ == "__main__":  # python -m grpo_wb.cli.notebook_params: bring the notebooks in line
    for name in CONFIG_PARAMETERS:
        print(("synced " if sync_parameters(NOTEBOOKS / name) else "in line: ") + name)
