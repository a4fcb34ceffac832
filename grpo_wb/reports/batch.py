"""Batch reports: notebooks x parameter grids, run in parallel, linked from one index page.

A plan is YAML or JSON::

    base_dir: ..          # relative paths below resolve against this (itself relative to the
                          # plan file's directory; default: the plan file's directory)
    out: reports          # report root; every report goes to OUT/NAME, the index to OUT/index.html
    workers: 2            # reports running at once (each in its own process with its own kernel)
    cell_timeout: 300     # seconds one cell may run
    timeout: 900          # seconds one report may run before its process is killed
    reports:
      - id: smoke                                   # optional; lets later entries say after: [smoke]
        notebook: notebooks/smoke_experiment.ipynb
        name: "smoke-{tasks_file}-g{group_size}"    # optional; {param} = its value, a path's file stem
        parameters: {steps: 3}                      # fixed values
        grid: {group_size: [4, 8]}                  # cartesian product over these lists
      - notebook: notebooks/compare_runs.ipynb
        after: [smoke]                              # runs once every smoke report has finished
        parameters: {run_dirs: ["reports/smoke-*/run"]}

The whole plan is checked before anything runs (its format, declared once, is
:class:`~grpo_wb.formats.schema.BatchPlanFile`): unknown keys, missing
notebooks, unknown or mistyped parameters (strictly, as ``grpo-wb report``)
and duplicate report names are errors. Each report runs in a child process
(``python -m grpo_wb.reports.job JOB.json``) so a hung or crashed kernel cannot
take the batch down: a cell timeout, a dead kernel or the per-report
``timeout`` each make that report ``failed`` and the batch goes on. The index
(``index.html`` + ``index.json``) shows every report with its headline numbers,
read from the report's ``headline.json``, and each failure with its error and
failing cell; the command exits non-zero when any report failed.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import lazy_loader
import yaml
from tqdm.auto import tqdm

from grpo_wb.errors import UserError, one_line
from grpo_wb.jsonio import atomic_write_json, atomic_write_text
from grpo_wb.layout import BatchFiles, ReportFiles
from grpo_wb.reports.notebooks import (
    RESULT_FILE,
    ReportResult,
    is_path_parameter,
    notebook_parameters,
    prepare_for_html,
    render_html,
    resolve_path_values,
    validate_parameters,
)
from grpo_wb.scoring.ray_executor import connect

if TYPE_CHECKING:
    from grpo_wb.formats import schema
else:  # pydantic and the models take some 0.1 s: loaded by the first plan read, not by `grpo-wb --help`
    schema = lazy_loader.load("grpo_wb.formats.schema", suppress_warning=True)

_SLUG = re.compile(r"[^A-Za-z0-9._=-]+")


@dataclass(frozen=True)
class ReportJob:
    """One report of a plan, fully expanded; its JSON form is the child process's JOB.json."""

    name: str
    """Report name; also its directory under the plan's ``out``."""
    notebook: str
    """Absolute path of the template."""
    parameters: dict[str, Any]
    """Validated parameters, paths absolute."""
    out_dir: str
    """Report directory."""
    cell_timeout: float
    """Seconds one cell may run."""
    timeout: float
    """Seconds the whole report may run."""
    start_timeout: float = 60.0
    """Seconds to wait for the kernel to start."""
    level: int = 0
    """Dependency level: jobs of level k start after every job of lower levels finished."""
    entry: str = ""
    """The plan entry's id (or notebook stem)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BatchPlan:
    """A checked plan (:class:`~grpo_wb.formats.schema.BatchPlanFile` expanded): where the index goes, how many
    workers, and the jobs."""

    out: Path
    """Report root."""
    workers: int
    """Parallel reports."""
    jobs: list[ReportJob] = field(default_factory=list)
    """Every report, in plan order."""


def _read_plan_file(path: Path) -> Any:
    if not path.is_file():
        raise UserError(f"{path}: no such plan file")
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        raise UserError(
            f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {one_line(e, first_line=True)}"
        ) from None


def _slug_value(name: str, value: Any) -> str:
    if is_path_parameter(name) and isinstance(value, str):
        base = Path(value.rstrip("/")).name
        for ext in (".jsonl.gz", ".jsonl", ".json", ".ipynb"):
            if base.endswith(ext):
                base = base[: -len(ext)]
        return base or "root"
    return str(value)


def _slug(s: str) -> str:
    return _SLUG.sub("-", s).strip("-") or "report"


def report_name(template: str | None, stem: str, params: dict[str, Any], grid_keys: Sequence[str]) -> str:
    """The report's name: ``template`` filled with parameter values (a path's file stem), else stem + grid values."""
    shown = {k: _slug_value(k, v) for k, v in params.items()}
    if template:
        try:
            return _slug(template.format(**shown))
        except (KeyError, IndexError, ValueError) as e:
            raise UserError(f"report name {template!r}: cannot fill {e} (use {{parameter}} fields)") from None
    return _slug("-".join([stem] + [shown[k] for k in grid_keys]))


def _levels(entries: Sequence[schema.ReportEntry], src: Path) -> list[int]:
    """Each entry's dependency level (1 + the highest of those it comes ``after``); ids unique, no cycle."""
    ids: dict[str, int] = {}
    for i, e in enumerate(entries):
        if e.id is not None:
            if e.id in ids:
                raise UserError(f"{src}: reports[{i}]: id must be a unique string, got {e.id!r}")
            ids[e.id] = i
    levels: dict[int, int] = {}

    def level(i: int, seen: tuple[int, ...]) -> int:
        if i in seen:
            raise UserError(f"{src}: reports[{i}]: 'after' forms a cycle")
        if i not in levels:
            for a in entries[i].after:
                if a not in ids:
                    raise UserError(f"{src}: reports[{i}]: after names unknown id {a!r}")
            levels[i] = 1 + max((level(ids[a], seen + (i,)) for a in entries[i].after), default=-1)
        return levels[i]

    return [level(i, ()) for i in range(len(entries))]


def load_batch_plan(path: str | Path, *, workers: int | None = None) -> BatchPlan:
    """Read and check a plan (:class:`~grpo_wb.formats.schema.BatchPlanFile`); every job's parameters are
    validated against its notebook here."""
    src = Path(path)
    plan = schema.check_plan(_read_plan_file(src), str(src))
    base = (src.parent / plan.base_dir).resolve()
    out_dir = Path(os.path.normpath(base / plan.out))
    levels = _levels(plan.reports, src)
    jobs: list[ReportJob] = []
    names: dict[str, int] = {}
    for i, (e, lvl) in enumerate(zip(plan.reports, levels)):
        where = f"{src}: reports[{i}]"
        nb = Path(os.path.normpath(base / e.notebook))
        try:
            declared = notebook_parameters(nb)
        except UserError as err:
            raise UserError(f"{where}: {err}") from None
        fixed, grid = e.parameters or {}, e.grid or {}
        both = sorted(set(fixed) & set(grid))
        if both:
            raise UserError(f"{where}: {both[0]!r} is both a fixed parameter and a grid axis")
        keys = list(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            values = {**fixed, **dict(zip(keys, combo))}
            try:
                params = validate_parameters(declared, values, notebook=str(nb))
            except UserError as err:
                raise UserError(f"{where}: {err}") from None
            if "out_dir" in params:
                raise UserError(f"{where}: out_dir is set by the batch (OUT/NAME); remove it")
            params = resolve_path_values(params, base)
            name = report_name(e.name, e.id or nb.stem, params, keys)
            if name in names:
                raise UserError(
                    f"{where}: report name {name!r} is already used by reports[{names[name]}]; "
                    "give the entry a name template that tells its grid points apart"
                )
            names[name] = i
            jobs.append(
                ReportJob(
                    name=name,
                    notebook=str(nb),
                    parameters=params,
                    out_dir=str(out_dir / name),
                    cell_timeout=plan.cell_timeout,
                    timeout=plan.timeout,
                    start_timeout=plan.start_timeout,
                    level=lvl,
                    entry=e.id or nb.stem,
                )
            )
    return BatchPlan(out=out_dir, workers=workers or plan.workers, jobs=jobs)


# ----------------------------------------------------------------------------- running


def _kill_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _log_tail(path: Path, n: int = 400) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [ln for ln in text.splitlines() if ln.strip() and "running over TCP without encryption" not in ln]
    return (lines[-1] if lines else "")[-n:]


def run_report_job(job: ReportJob) -> ReportResult:
    """Run one report in a child process; a crash, hang or kill still yields a failed result."""
    out = Path(job.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULT_FILE).unlink(missing_ok=True)
    spec = out / ReportFiles.JOB
    atomic_write_json(spec, {**job.to_json(), "base_dir": None})
    log = out / "run.log"
    t0 = time.monotonic()
    killed = False
    with open(log, "w", encoding="utf-8") as lf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "grpo_wb.reports.job", str(spec)],
            stdout=lf,
            stderr=lf,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=job.timeout)
        except subprocess.TimeoutExpired:
            killed = True
            _kill_group(proc)
    rp = out / RESULT_FILE
    if rp.exists() and not killed:
        try:
            return ReportResult.from_json(json.loads(rp.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            pass
    seconds = round(time.monotonic() - t0, 3)
    if killed:
        kind, error = "killed", f"the report ran past the plan's timeout of {job.timeout:g} s and was killed"
    else:
        tail = _log_tail(log)
        kind, error = "error", f"report process exited with code {proc.returncode}: {tail or 'no output'}"
    res = _failed(job, kind, error, seconds)
    _render_partial(job, res)
    atomic_write_json(rp, res.to_json())
    return res


def _failed(job: ReportJob, error_kind: str, error: str, seconds: float = 0.0) -> ReportResult:
    """The result of a job that failed without leaving one of its own."""
    return ReportResult(
        name=job.name,
        notebook=job.notebook,
        out_dir=job.out_dir,
        parameters=job.parameters,
        status="failed",
        error_kind=error_kind,
        error=error,
        seconds=seconds,
    )


def _render_partial(job: ReportJob, res: ReportResult) -> None:
    """Render whatever the killed child left in report.ipynb, so the failure is visible in HTML too."""
    ipynb = Path(job.out_dir) / ReportFiles.NOTEBOOK
    if not ipynb.exists():
        return
    try:
        import nbformat  # where used, as in .notebooks: every grpo-wb command would pay for it

        nb = nbformat.read(str(ipynb), as_version=4)
        html_path = Path(job.out_dir) / ReportFiles.HTML
        atomic_write_text(
            html_path,
            render_html(prepare_for_html(nb, notebook_parameters(job.notebook), job.parameters, res.error), job.name),
        )
        res.ipynb, res.html = str(ipynb), str(html_path)
    except Exception:  # best effort: the index still reports the failure
        pass


def run_batch(
    plan: BatchPlan, *, progress: bool = True, runner: Callable[[ReportJob], ReportResult] = run_report_job
) -> list[ReportResult]:
    """Run every job (level by level, ``plan.workers`` at a time); write the index; results in plan order."""
    results: dict[int, ReportResult] = {}
    bar = tqdm(total=len(plan.jobs), desc="reports", unit="report", disable=not progress, file=sys.stderr)
    failed = 0
    for level in sorted({j.level for j in plan.jobs}):
        todo = [(i, j) for i, j in enumerate(plan.jobs) if j.level == level]
        with ThreadPoolExecutor(max_workers=plan.workers) as pool:
            futs = {pool.submit(runner, j): i for i, j in todo}
            for fut in as_completed(futs):
                i = futs[fut]
                try:
                    res = fut.result()
                except Exception as e:  # a bug in one job must not lose the others
                    res = _failed(plan.jobs[i], "error", f"{type(e).__name__}: {e}")
                results[i] = res
                failed += not res.ok
                bar.update(1)
                bar.set_postfix(failed=failed, last=res.name[:30])
    bar.close()
    ordered = [results[i] for i in range(len(plan.jobs))]
    write_index(plan.out, ordered)
    return ordered


# ----------------------------------------------------------------------------- index


_INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } th, td { padding: 4px 10px; border-bottom: 1px solid #ddd; text-align: left; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td { background: #fff0f0; } .status-ok { color: #1a7f37; } .status-failed { color: #cf222e; font-weight: bold; }
.error { font-family: monospace; font-size: 0.9em; color: #cf222e; } td.source { font-size: 0.9em; }
</style></head><body>
<h1>{{ title }}</h1>
<p>{{ n_ok }} of {{ results|length }} reports succeeded{% if n_failed %}, <span class="status-failed">{{ n_failed }} failed</span>{% endif %}.
Headline numbers come from each report's <code>headline.json</code>; informative fraction and pass rate are means over steps
(smoke and compare reports) or expected values at the recommended G (headroom reports); <b>finding</b> is a reward
audit's verdict. <b>Completions from</b> says what
produced the completions: <i>mock</i> rows are generated from the tasks' canonical solutions and say nothing about any model.</p>
<table>
<thead><tr><th>report</th><th>notebook</th><th>completions from</th><th>status</th><th>informative fraction</th>
<th>pass rate</th><th>G</th><th>finding</th><th>seconds</th><th>error</th></tr></thead>
<tbody>
{% for r in rows %}<tr class="{{ r.status }}">
<td>{% if r.href %}<a href="{{ r.href }}">{{ r.name }}</a>{% else %}{{ r.name }}{% endif %}</td>
<td>{{ r.notebook }}</td><td class="source">{{ r.source }}</td><td class="status-{{ r.status }}">{{ r.status }}</td>
<td class="num">{{ r.informative }}</td><td class="num">{{ r.pass_rate }}</td><td class="num">{{ r.g }}</td>
<td class="source">{{ r.finding }}</td><td class="num">{{ r.seconds }}</td><td class="error">{{ r.error }}</td></tr>
{% endfor %}</tbody></table>
</body></html>
"""


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def index_rows(root: Path, results: Sequence[ReportResult]) -> list[dict[str, str | None]]:
    """The index table, one row per report (links relative to ``root``; ``href`` None when no HTML was written)."""
    rows: list[dict[str, str | None]] = []
    for r in results:
        h = r.headline or {}
        href = None
        if r.html and Path(r.html).exists():
            href = os.path.relpath(r.html, root).replace(os.sep, "/")
        g = h.get("recommended_g", h.get("group_size"))
        rows.append(
            {
                "name": r.name,
                "href": href,
                "notebook": Path(r.notebook).name,
                "status": r.status,
                "source": h.get("source") or "\u2014",
                "informative": _fmt(h.get("informative_fraction")),
                "pass_rate": _fmt(h.get("pass_rate")),
                "g": _fmt(g),
                "finding": h.get("verdict") or "",
                "seconds": f"{r.seconds:.1f}",
                "error": r.error or "",
            }
        )
    return rows


def write_index(root: str | Path, results: Sequence[ReportResult], title: str = "grpo_wb reports") -> Path:
    """Write ``index.html`` (autoescaped jinja2) and ``index.json`` under ``root``; return the HTML path."""
    root = Path(root)
    rows = index_rows(root, results)
    n_failed = sum(not r.ok for r in results)
    env = jinja2.Environment(autoescape=True)
    page = env.from_string(_INDEX).render(
        title=title, rows=rows, results=results, n_failed=n_failed, n_ok=len(results) - n_failed
    )
    atomic_write_text(root / BatchFiles.INDEX_HTML, page)
    atomic_write_json(root / BatchFiles.INDEX_JSON, [r.to_json() for r in results])
    return root / BatchFiles.INDEX_HTML


# ----------------------------------------------------------------------------- on Ray


def report_runner(
    address: str | None = None, *, dashboard: bool = False, isolation: str = "best"
) -> Callable[[Any], Any]:
    """A ``run_batch`` runner that executes each report as a Ray task on any node.

    The report's process, kernel and timeout handling are the local ones
    (:func:`run_report_job`); Ray places it and retries it once when its node dies.
    Paths in the plan must be visible at the same place on every node (a shared
    filesystem), as usual for Ray jobs that write files.
    """
    ray = connect(address, dashboard=dashboard)

    def run_here(job):
        os.environ["GRPO_WB_ISOLATION"] = isolation  # the report's process inherits it, on whichever node
        res = run_report_job(job)
        res.node = ray.get_runtime_context().get_node_id()
        return res

    remote = ray.remote(num_cpus=1, max_retries=1)(run_here)

    def run(job):
        return ray.get(remote.remote(job))

    return run
