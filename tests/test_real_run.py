"""The real TRL run bundled in data/runs/smollm2-mbpp-trl (issue 43): SmolLM2-135M-Instruct, 20 GRPO steps with
LoRA on CPU on its sanitized-MBPP frontier. The forecast check read from its files is what docs/forecast.md shows,
table and headline; the run is what its README says it is."""

import json

import pytest
from conftest import ROOT, read_jsonl

from grpo_wb import load_run
from grpo_wb.runs.forecast_check import forecast_check, markdown

pytestmark = pytest.mark.data

RUN = ROOT / "data" / "runs" / "smollm2-mbpp-trl"


def test_the_bundled_run_is_a_twenty_step_trl_run_of_the_frontier():
    summary = json.loads((RUN / "run" / "summary.json").read_text())
    assert summary["trainer"] == "trl" and summary["finished"] is True and summary["trained_weights"] is True
    assert summary["steps_completed"] == 20
    manifest = json.loads((RUN / "run" / "checkpoint_manifest.json").read_text())
    assert manifest["final_checkpoint"] == "checkpoint-20"
    assert manifest["checkpoints"][-1]["files"]["adapter_model.safetensors"]["sha256"]  # the adapter, by its hash
    logged = [r for r in read_jsonl(RUN / "run" / "trl_log.jsonl") if "frac_reward_zero_std" in r]
    assert [r["step"] for r in logged] == list(range(1, 21)) and all(r["step_time"] > 0 for r in logged)
    run = load_run(RUN / "run")
    frontier = {t["task_id"] for t in read_jsonl(RUN / "frontier.jsonl")}
    assert len(run.groups) == 20 * 3 and set(run.groups["task_id"]) <= frontier and len(frontier) == 10
    assert set(run.groups["n_total"]) == {4}


def test_docs_forecast_md_shows_this_runs_forecast_check():
    check = forecast_check(RUN / "pre.scored.jsonl.gz", RUN / "run")
    docs = (ROOT / "docs" / "forecast.md").read_text()
    assert markdown(check) in docs  # the step table, as measured
    h = check.headline()
    assert h["realized_from"] == "TRL's log" and h["steps"] == h["judged_steps"] == 20
    line = f"inside the band on {h['inside_band']} of 20 steps (re-forecast: {h['inside_band_reforecast']} of 20)"
    assert line in docs, line
