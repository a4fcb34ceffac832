"""Smoke-run directories as pandas tables, and the per-run / cross-run views notebooks show.

:func:`load_run` reads the artifacts :mod:`grpo_wb.runs.smoke` writes into a
:class:`Run`; everything else here is a pure function from DataFrames to
DataFrames (or dicts), so notebooks hold one call per step and the logic is
unit-tested without a kernel.

DataFrames (one column per JSON field of the artifact, plus derived columns):

``steps``     metrics.jsonl, one row per step (:class:`~grpo_wb.signal.diagnostics.StepMetrics`)
``groups``    groups.jsonl, one row per (step, prompt) (:class:`~grpo_wb.signal.diagnostics.GroupStats`)
              plus ``n_fail`` (loaded and ran, but failed) and ``reward_var`` (std squared)
``rollouts``  last_rollouts.jsonl, one row per scored completion of the last step
"""

from __future__ import annotations

import glob
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lazy_loader

from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.layout import RunFiles
from grpo_wb.rollouts.types import describe_source
from grpo_wb.scoring.scorer import STATUSES

if TYPE_CHECKING:
    import pandas

pd = lazy_loader.load("pandas")  # imported by the first table built, so that the command line starts without it

_STATUS_COUNT = {
    "error": "n_error",
    "timeout": "n_timeout",
    "parse_failure": "n_parse_failure",
    "sandbox_error": "n_sandbox_error",
}


@dataclass
class Run:
    """A loaded run directory. ``to_json`` gives its identity (path, label, config, summary), not the tables."""

    path: Path
    """The run directory."""
    steps: pandas.DataFrame
    """metrics.jsonl, one row per step."""
    groups: pandas.DataFrame
    """groups.jsonl, one row per (step, prompt), with ``n_fail`` and ``reward_var``."""
    rollouts: pandas.DataFrame
    """last_rollouts.jsonl, the last step's completions."""
    summary: dict[str, Any] = field(default_factory=dict)
    """summary.json ({} when absent)."""
    manifest: dict[str, Any] = field(default_factory=dict)
    """checkpoint_manifest.json ({} when absent)."""

    @property
    def config(self) -> dict[str, Any]:
        """The smoke configuration the run used (from the manifest)."""
        return dict(self.manifest.get("config", {}))

    @property
    def label(self) -> str:
        """Short name: the run's directory name, or its parent's when the directory is called ``run``."""
        p = self.path
        return p.parent.name if p.name == "run" and p.parent.name else p.name

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "label": self.label,
            "config": self.config,
            "summary": self.summary,
            "n_steps": len(self.steps),
            "n_groups": len(self.groups),
        }


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [obj for _, obj in iter_jsonl(path)]


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: unreadable JSON ({e})") from None
    return obj if isinstance(obj, dict) else {}


def _with_derived(groups: pandas.DataFrame) -> pandas.DataFrame:
    if groups.empty:
        return groups
    g = groups.copy()
    others = sum(g[c] for c in _STATUS_COUNT.values())
    g["n_fail"] = g["n_total"] - g["n_correct"] - others
    g["reward_var"] = g["std"].astype(float) ** 2
    return g


def load_run(path: str | Path) -> Run:
    """Load a smoke-run directory; a directory that is not one is a UserError saying which file is missing."""
    p = Path(path)
    if not p.is_dir():
        raise UserError(f"{p}: no such run directory")
    for name in (RunFiles.METRICS, RunFiles.GROUPS):
        if not (p / name).exists():
            raise UserError(f"{p}: not a grpo_wb run directory (no {name})")
    steps = pd.DataFrame(_read_jsonl(p / RunFiles.METRICS))
    if steps.empty:
        raise UserError(f"{p}: the run has no completed steps")
    groups = _with_derived(pd.DataFrame(_read_jsonl(p / RunFiles.GROUPS)))
    rollouts = (
        pd.DataFrame(_read_jsonl(p / RunFiles.LAST_ROLLOUTS))
        if (p / RunFiles.LAST_ROLLOUTS).exists()
        else pd.DataFrame()
    )
    return Run(
        path=p,
        steps=steps,
        groups=groups,
        rollouts=rollouts,
        summary=_read_json(p / RunFiles.SUMMARY),
        manifest=_read_json(p / RunFiles.MANIFEST),
    )


def find_runs(patterns: Sequence[str]) -> list[Path]:
    """Expand run directories and glob patterns (sorted, duplicates dropped); a pattern matching no run is an error."""
    if isinstance(patterns, str):
        patterns = [patterns]
    found: list[Path] = []
    for pat in patterns:
        hits = sorted(Path(h) for h in glob.glob(str(pat))) if glob.has_magic(str(pat)) else [Path(pat)]
        hits = [h for h in hits if (h / RunFiles.METRICS).exists()]
        if not hits:
            raise UserError(f"{pat}: matches no run directory (a directory holding metrics.jsonl)")
        for h in hits:
            if h.resolve() not in {f.resolve() for f in found}:
                found.append(h)
    return found


# ----------------------------------------------------------------------------- one run


def config_table(run: Run) -> pandas.DataFrame:
    """The run's smoke configuration and outcome, indexed by setting (unset values show as an em dash)."""
    rows = [(k, v) for k, v in run.config.items()]
    s = run.summary
    for k in ("steps_completed", "stopped_early", "stop_reason", "n_completions"):
        if k in s:
            rows.append((k, s[k]))
    return pd.DataFrame(
        {"value": [display_value(v) for _, v in rows]}, index=pd.Index([k for k, _ in rows], name="setting")
    )


def display_value(v: Any) -> str:
    """A setting as a report shows it: unset (None, empty, NaN) is an em dash, lists joined."""
    if v is None or v == "" or v == [] or (isinstance(v, float) and v != v):
        return "\u2014"
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    return str(v)


TASK_COLUMNS = (
    "n_groups",
    "n_completions",
    "reward_mean",
    "reward_var",
    "informative_fraction",
    "informative",
    "pass_rate",
)
"""The columns of :func:`task_table`, in order."""


def task_table(groups: pandas.DataFrame) -> pandas.DataFrame:
    """Per task over all its groups: rewards, within-group variance, informative fraction, pass rate."""
    if groups.empty:
        return pd.DataFrame(columns=list(TASK_COLUMNS))
    g = groups.copy()
    g["reward_sum"] = g["rewards"].map(lambda rs: sum(r for r in rs if r is not None))
    g["n_scored"] = g["rewards"].map(lambda rs: sum(r is not None for r in rs))
    t = g.groupby("task_id").agg(
        n_groups=("step", "size"),
        n_completions=("n_total", "sum"),
        reward_sum=("reward_sum", "sum"),
        n_scored=("n_scored", "sum"),
        reward_var=("reward_var", "mean"),
        informative_fraction=("informative", "mean"),
        n_correct=("n_correct", "sum"),
    )
    t["reward_mean"] = t["reward_sum"] / t["n_scored"].where(t["n_scored"] > 0)
    t["informative"] = t["informative_fraction"] > 0
    t["pass_rate"] = t["n_correct"] / t["n_completions"]
    return t[list(TASK_COLUMNS)].sort_values(["reward_var", "reward_mean"], ascending=[False, False])


def status_table(groups: pandas.DataFrame) -> pandas.DataFrame:
    """Completions per task and status (columns in :data:`STATUSES`), tasks sorted by pass count."""
    if groups.empty:
        return pd.DataFrame(columns=list(STATUSES))
    cols = {"pass": "n_correct", "fail": "n_fail", **_STATUS_COUNT}
    t = groups.groupby("task_id")[[cols[s] for s in STATUSES]].sum()
    t.columns = list(STATUSES)
    return t.sort_values(["pass", "fail"], ascending=False)


def informativeness_extremes(tasks: pandas.DataFrame, n: int = 5) -> tuple[pandas.DataFrame, pandas.DataFrame]:
    """``(least, most)`` informative tasks: by informative fraction, then within-group reward variance."""
    keys = ["informative_fraction", "reward_var"]
    least = tasks.sort_values(keys, ascending=True).head(n)
    most = tasks.sort_values(keys, ascending=False).head(n)
    return least, most


def reward_values(groups: pandas.DataFrame) -> pandas.Series:
    """Every scored reward of the run (all steps), for the distribution plot."""
    vals = [r for rs in groups.get("rewards", []) for r in rs if r is not None]
    return pd.Series(vals, dtype=float, name="reward")


def advantage_values(groups: pandas.DataFrame) -> pandas.Series:
    """Every advantage of the run (all steps)."""
    vals = [a for adv in groups.get("advantages", []) for a in adv]
    return pd.Series(vals, dtype=float, name="advantage")


def _mean(df: pandas.DataFrame, col: str) -> float | None:
    if col not in df or df[col].dropna().empty:
        return None
    return float(df[col].dropna().mean())


def headline(run: Run) -> dict[str, Any]:
    """The numbers a batch index shows for a run (means over steps)."""
    s = run.steps
    return {
        "informative_fraction": _mean(s, "informative_fraction"),
        "reward_variance_fraction": _mean(s, "reward_variance_fraction"),
        "pass_rate": _mean(s, "pass_rate"),
        "parse_failure_rate": _mean(s, "parse_failure_rate"),
        "steps": int(len(s)),
        "group_size": run.config.get("group_size"),
        "stopped_early": bool(run.summary.get("stopped_early", False)),
        "source": source(run),
    }


def source(run: Run) -> str:
    """Where the run's completions came from (mock, replay of which file, which model)."""
    return describe_source(run.manifest.get("backend", {}))


# ----------------------------------------------------------------------------- several runs


def _labels(runs: Sequence[Run], labels: Sequence[str] | None) -> list[str]:
    if labels:
        if len(labels) != len(runs):
            raise UserError(f"got {len(labels)} labels for {len(runs)} runs")
        return [str(x) for x in labels]
    out: list[str] = []
    for r in runs:
        lab = r.label
        i = 2
        while lab in out:
            lab = f"{r.label} ({i})"
            i += 1
        out.append(lab)
    return out


def compare_table(runs: Sequence[Run], labels: Sequence[str] | None = None) -> pandas.DataFrame:
    """One row per run: setting that differ most often (G, tasks) and the means over steps."""
    rows = []
    for lab, r in zip(_labels(runs, labels), runs):
        s = r.steps
        rows.append(
            {
                "run": lab,
                "tasks": Path(str(r.config.get("tasks", ""))).name,
                "group_size": r.config.get("group_size"),
                "steps": len(s),
                "informative_fraction": _mean(s, "informative_fraction"),
                "reward_variance_fraction": _mean(s, "reward_variance_fraction"),
                "pass_rate": _mean(s, "pass_rate"),
                "parse_failure_rate": _mean(s, "parse_failure_rate"),
                "timeout_rate": _mean(s, "timeout_rate"),
                "stopped_early": bool(r.summary.get("stopped_early", False)),
                "source": source(r),
            }
        )
    return pd.DataFrame(rows).set_index("run")


def steps_long(runs: Sequence[Run], labels: Sequence[str] | None = None) -> pandas.DataFrame:
    """All runs' step metrics stacked, with a ``run`` column (for per-step comparison plots)."""
    frames = [r.steps.assign(run=lab) for lab, r in zip(_labels(runs, labels), runs)]
    return pd.concat(frames, ignore_index=True)


def task_shifts(
    runs: Sequence[Run], labels: Sequence[str] | None = None, metric: str = "reward_mean"
) -> pandas.DataFrame:
    """Per-task ``metric`` for each run (columns), plus ``shift`` = last run minus first, sorted by |shift|.

    Only tasks every run saw are compared; ``metric`` is a :func:`task_table` column.
    """
    if len(runs) < 2:
        raise UserError("comparing runs needs at least two run directories")
    labs = _labels(runs, labels)
    cols = {lab: task_table(r.groups)[metric].astype(float) for lab, r in zip(labs, runs)}
    t = pd.DataFrame(cols).dropna()
    t["shift"] = t[labs[-1]] - t[labs[0]]
    return t.reindex(t["shift"].abs().sort_values(ascending=False).index)


def compare_headline(table: pandas.DataFrame) -> dict[str, Any]:
    """Headline of a comparison: the run with the highest informative fraction, and how many runs."""
    best = table["informative_fraction"].astype(float).idxmax()
    row = table.loc[best]
    return {
        "informative_fraction": float(row["informative_fraction"]),
        "pass_rate": float(row["pass_rate"]),
        "best_run": str(best),
        "group_size": row["group_size"],
        "n_runs": int(len(table)),
        "source": "; ".join(dict.fromkeys(str(x) for x in table["source"])) if "source" in table else None,
    }
