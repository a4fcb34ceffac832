"""Batch plans: strict loading (no kernel), the index page, and real batches that keep going past failures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from nbfixtures import NOTEBOOKS, ROOT, TOY, fetched, html_body, make_notebook, shared_run

from grpo_wb.bundled import CODEGEN_SAMPLES
from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.reports import batch
from grpo_wb.reports.notebooks import ReportResult, is_path_parameter
from grpo_wb.runs import load as runs

TINY_PARAMS = 'data_file: str = ""  # a path\nn: int = 1  # a number\nout_dir: str = ""  # report dir\n'


def _plan(tmp_path: Path, plan: dict, name: str = "plan.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(plan) if name.endswith(".yaml") else json.dumps(plan))
    return p


@pytest.fixture
def tiny(tmp_path):
    return make_notebook(tmp_path / "nbs" / "tiny.ipynb", TINY_PARAMS, ["print(n)"])


def test_grid_expansion_names_and_paths(tmp_path, tiny):
    p = _plan(
        tmp_path,
        {
            "out": "out",
            "workers": 3,
            "reports": [
                {
                    "id": "t",
                    "notebook": "nbs/tiny.ipynb",
                    "name": "t-{data_file}-n{n}",
                    "grid": {"data_file": ["d/a.jsonl", "d/b.jsonl"], "n": [1, 2]},
                },
                {"notebook": "nbs/tiny.ipynb", "after": ["t"], "parameters": {"n": 9}},
            ],
        },
    )
    plan = batch.load_batch_plan(p)
    assert plan.workers == 3 and plan.out == tmp_path / "out"
    names = [j.name for j in plan.jobs]
    assert names == ["t-a-n1", "t-a-n2", "t-b-n1", "t-b-n2", "tiny"]
    assert plan.jobs[0].parameters["data_file"] == str(tmp_path / "d" / "a.jsonl")
    assert [j.level for j in plan.jobs] == [0, 0, 0, 0, 1]
    assert plan.jobs[-1].out_dir == str(tmp_path / "out" / "tiny")
    assert batch.load_batch_plan(p, workers=1).workers == 1


def test_base_dir_is_relative_to_the_plan_file(tmp_path, tiny):
    (tmp_path / "plans").mkdir()
    p = _plan(tmp_path / "plans", {"base_dir": "..", "reports": [{"notebook": "nbs/tiny.ipynb"}]}, "p.json")
    plan = batch.load_batch_plan(p)
    assert plan.jobs[0].notebook == str(tiny) and plan.out == tmp_path / "reports"


@pytest.mark.parametrize(
    "bad,message",
    [
        ({"reports": [{"notebook": "nbs/tiny.ipynb"}], "wokers": 2}, "unknown key 'wokers'"),
        ({"reports": [{"notebook": "nbs/tiny.ipynb", "parameters": {"m": 1}}]}, "has no parameter 'm'"),
        ({"reports": [{"notebook": "nbs/tiny.ipynb", "grid": {"n": ["x"]}}]}, "expects int"),
        ({"reports": [{"notebook": "nbs/tiny.ipynb", "grid": {"n": [1, 1]}}]}, "already used"),
        ({"reports": [{"notebook": "nbs/missing.ipynb"}]}, "no such notebook"),
        ({"reports": [{"notebook": "nbs/tiny.ipynb", "after": ["zz"]}]}, "unknown id 'zz'"),
        ({"reports": [{"id": "a", "notebook": "nbs/tiny.ipynb", "after": ["a"]}]}, "cycle"),
        ({"reports": [{"notebook": "nbs/tiny.ipynb", "parameters": {"out_dir": "x"}}]}, "out_dir is set by the batch"),
        ({"reports": []}, "non-empty list"),
        ({"reports": [{"notebook": "nbs/tiny.ipynb"}], "workers": 0}, "workers must be a positive integer"),
    ],
)
def test_bad_plans_fail_before_running(tmp_path, tiny, bad, message):
    with pytest.raises(UserError, match=re.escape(message)):
        batch.load_batch_plan(_plan(tmp_path, bad))


def test_unparsable_plan_is_a_one_line_cli_error(tmp_path, capsys):
    p = tmp_path / "p.yaml"
    p.write_text("reports: [\n")
    assert main(["batch", str(p)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("grpo-wb: error:") and "not valid YAML" in err[0]


def test_index_lists_every_report_and_escapes(tmp_path):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "report.html").write_text("<html></html>")
    results = [
        ReportResult(
            name="ok",
            notebook="/x/smoke.ipynb",
            out_dir=str(tmp_path / "ok"),
            parameters={},
            html=str(tmp_path / "ok" / "report.html"),
            seconds=1.5,
            headline={"informative_fraction": 0.625, "pass_rate": 0.5, "group_size": 8},
        ),
        ReportResult(
            name="bad<script>",
            notebook="/x/t.ipynb",
            out_dir=str(tmp_path / "bad"),
            parameters={},
            status="failed",
            error_kind="cell_error",
            error="ValueError: boom in cell In [4]",
        ),
    ]
    path = batch.write_index(tmp_path, results)
    html = path.read_text()
    assert 'href="ok/report.html"' in html and "0.625" in html and "0.500" in html
    assert "ValueError: boom in cell In [4]" in html and "<script>" not in html_body(html)
    assert fetched(html) == [], fetched(html)  # the index, too, is a page that fetches nothing
    assert "1 of 2 reports succeeded" in html
    assert [r["status"] for r in json.loads((tmp_path / "index.json").read_text())] == ["ok", "failed"]


def test_run_batch_survives_a_crashing_runner(tmp_path, tiny):
    plan = batch.load_batch_plan(
        _plan(tmp_path, {"reports": [{"notebook": "nbs/tiny.ipynb", "grid": {"n": [1, 2, 3]}}]})
    )

    def runner(job):
        if job.parameters["n"] == 2:
            raise RuntimeError("runner bug")
        return ReportResult(name=job.name, notebook=job.notebook, out_dir=job.out_dir, parameters=job.parameters)

    results = batch.run_batch(plan, progress=False, runner=runner)
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    assert "runner bug" in results[1].error and (plan.out / "index.html").exists()


@pytest.mark.notebooks
@pytest.mark.slow
def test_hung_report_is_killed_at_the_plan_timeout(tmp_path):
    """The kind says which limit ended it: the plan's 4 s kill, not the 100 s cell timeout nor the cell's end."""
    make_notebook(tmp_path / "nbs" / "hang.ipynb", "n: int = 1  # n\n", ["import time\ntime.sleep(120)"])
    plan = batch.load_batch_plan(
        _plan(tmp_path, {"timeout": 4, "cell_timeout": 100, "reports": [{"notebook": "nbs/hang.ipynb"}]})
    )
    (res,) = batch.run_batch(plan, progress=False)
    assert res.status == "failed" and res.error_kind == "killed" and "timeout of 4 s" in res.error
    assert json.loads((Path(res.out_dir) / "result.json").read_text())["error_kind"] == "killed"


@pytest.mark.notebooks
@pytest.mark.sandbox
@pytest.mark.slow
def test_batch_of_templates_continues_past_a_failure(tmp_path, capsys):
    """Smoke (loading a run) + headroom (from the run) + a failing notebook, two at a time, through the CLI."""
    run = shared_run(4)
    make_notebook(tmp_path / "nbs" / "broken.ipynb", 'out_dir: str = ""  # out\n', ["1 / 0"])
    plan = _plan(
        tmp_path,
        {
            "base_dir": str(ROOT),
            "out": str(tmp_path / "reports"),
            "workers": 2,
            "cell_timeout": 60,
            "timeout": 120,
            "reports": [
                {
                    "notebook": "notebooks/smoke_experiment.ipynb",
                    "name": "smoke-{run_dir}",
                    "parameters": {"run_dir": str(run)},
                },
                {
                    "notebook": "notebooks/task_headroom.ipynb",
                    "name": "headroom",
                    "parameters": {"input_path": str(run), "tasks_file": str(TOY), "budget": 16},
                },
                {"notebook": str(tmp_path / "nbs" / "broken.ipynb"), "name": "broken"},
            ],
        },
    )
    rc = main(["batch", str(plan), "--no-progress"])
    out = capsys.readouterr()
    index = tmp_path / "reports" / "index.html"
    assert rc == 1 and out.out.strip().splitlines()[-1] == str(index)
    assert "FAILED broken: ZeroDivisionError: division by zero" in out.err
    html = index.read_text()
    results = {r["name"]: r for r in json.loads((tmp_path / "reports" / "index.json").read_text())}
    assert [results[n]["status"] for n in ("smoke-run", "headroom", "broken")] == ["ok", "ok", "failed"]
    expected = runs.headline(runs.load_run(run))
    assert results["smoke-run"]["headline"]["informative_fraction"] == pytest.approx(expected["informative_fraction"])
    assert f"{expected['informative_fraction']:.3f}" in html and 'href="smoke-run/report.html"' in html
    assert "ZeroDivisionError: division by zero in cell In [3]" in html
    assert results["headroom"]["headline"]["recommended_g"] is not None
    assert (tmp_path / "reports" / "headroom" / "frontier.jsonl").exists()
    # where the completions came from: the mock backend, for both reports made from that run
    assert [results[n]["headline"]["source"] for n in ("smoke-run", "headroom")] == [
        runs.source(runs.load_run(run))
    ] * 2
    assert "<th>completions from</th>" in html and html.count("mock (generated from canonical solutions") == 2


def test_demo_plan_is_valid_and_covers_two_group_sizes_and_both_task_sets(tmp_path):
    """The demo plan loads (HumanEval's path only has to be well formed here) and spans the grid the issue asks for."""
    plan = batch.load_batch_plan(ROOT / "data" / "demo_plan.yaml")
    smoke = [j for j in plan.jobs if j.notebook.endswith("smoke_experiment.ipynb")]
    assert {j.parameters["group_size"] for j in smoke} >= {4, 8}
    assert {Path(j.parameters["tasks_file"]).name for j in smoke} == {"toy_tasks.jsonl", "humaneval.jsonl"}
    assert {Path(j.notebook).name for j in plan.jobs} == {p.name for p in NOTEBOOKS.glob("*.ipynb")}
    assert plan.out == ROOT / "reports"
    # real model outputs next to the mock runs: a replay smoke run and headroom on the bundled samples and replies
    by_name = {j.name: j.parameters for j in plan.jobs}
    assert by_name["smoke-replay-codegen16b-g8"]["backend"] == "replay"
    assert Path(by_name["smoke-replay-codegen16b-g8"]["completions_file"]) == CODEGEN_SAMPLES
    assert Path(by_name["headroom-codegen16b-humaneval"]["samples_file"]) == CODEGEN_SAMPLES
    assert Path(by_name["headroom-chat-replies-humaneval"]["samples_file"]).name == "chat_replies_humaneval.jsonl"
    assert "chat_replies_humaneval.jsonl" in (ROOT / "Makefile").read_text()  # made by `make demo` from data/external
    # the live section: a real model's samples, made by `make demo` through the server it starts and stops
    live = by_name["headroom-live-smollm2-mbpp"]
    assert Path(live["input_path"]) == ROOT / "reports/live/samples.scored.jsonl" and max(live["ks"]) <= 4
    makefile = (ROOT / "Makefile").read_text()
    demo_line = makefile.split("\ndemo:")[1].split("\n")[0]
    assert "models sample --serve $(LIVE_MODEL)" in makefile and "$(LIVE)" in demo_line
    # a file the plan names is given to a path parameter (a *_file/_dir/_path name): only those are resolved against
    # the plan's base_dir, any other is read from the notebook's folder (where the bundled run would not be found)
    for j in plan.jobs:
        for name, value in j.parameters.items():
            if isinstance(value, str) and (ROOT / value).exists() and value.strip("./"):
                assert is_path_parameter(name), (j.name, name, value)
    real = by_name["forecast-check-smollm2-trl"]
    assert Path(real["before_path"]).is_file() and (Path(real["run_dir"]) / "trl_log.jsonl").is_file()
