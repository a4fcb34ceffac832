"""load_run and the per-run / cross-run tables, cross-checked against the raw JSONL artifacts."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from nbfixtures import shared_run

import grpo_wb
from grpo_wb.errors import UserError
from grpo_wb.runs import load as runs
from grpo_wb.scoring.scorer import STATUSES


def _raw_groups(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "groups.jsonl").read_text().splitlines()]


@pytest.mark.sandbox
def test_load_run_tables_match_artifacts():
    path = shared_run(4)
    run = grpo_wb.load_run(path)
    assert isinstance(run, runs.Run)
    assert list(run.steps["step"]) == [0, 1]
    assert len(run.groups) == 8 and len(run.rollouts) == 16
    assert run.config["group_size"] == 4 and run.summary["steps_completed"] == 2
    assert (
        run.groups[["n_correct", "n_fail", "n_error", "n_timeout", "n_parse_failure", "n_sandbox_error"]].sum(axis=1)
        == run.groups["n_total"]
    ).all()
    assert (run.groups["n_fail"] >= 0).all()
    assert run.label == path.parent.name
    json.dumps(run.to_json())


@pytest.mark.sandbox
def test_task_table_recomputed_from_raw_json():
    path = shared_run(4)
    t = runs.task_table(runs.load_run(path).groups)
    raw = _raw_groups(path)
    for tid, row in t.iterrows():
        mine = [g for g in raw if g["task_id"] == tid]
        rewards = [r for g in mine for r in g["rewards"] if r is not None]
        assert row["reward_mean"] == pytest.approx(sum(rewards) / len(rewards))
        assert row["reward_var"] == pytest.approx(statistics.mean(statistics.variance(g["rewards"]) for g in mine))
        assert row["informative"] == any(g["informative"] for g in mine)
        assert row["n_completions"] == 4 * len(mine)
    assert list(t["reward_var"]) == sorted(t["reward_var"], reverse=True)


@pytest.mark.sandbox
def test_status_table_accounts_for_every_completion():
    run = runs.load_run(shared_run(4))
    st = runs.status_table(run.groups)
    assert list(st.columns) == list(STATUSES)
    assert int(st.to_numpy().sum()) == run.summary["n_completions"]
    raw = _raw_groups(run.path)
    assert int(st["pass"].sum()) == sum(g["n_correct"] for g in raw)
    assert int(st["parse_failure"].sum()) == sum(g["n_parse_failure"] for g in raw)


@pytest.mark.sandbox
def test_extremes_distributions_and_headline():
    run = runs.load_run(shared_run(4))
    t = runs.task_table(run.groups)
    least, most = runs.informativeness_extremes(t, 3)
    assert len(least) == len(most) == 3
    assert least["informative_fraction"].max() <= most["informative_fraction"].min()
    assert len(runs.reward_values(run.groups)) == 32 and len(runs.advantage_values(run.groups)) == 32
    h = runs.headline(run)
    assert h["informative_fraction"] == pytest.approx(run.steps["informative_fraction"].mean())
    assert h["pass_rate"] == pytest.approx(run.summary["mean_pass_rate"])
    cfg = runs.config_table(run)
    assert cfg.index.name == "setting" and cfg.loc["group_size", "value"] == "4"
    assert cfg.loc["model", "value"] == "\u2014" and cfg.loc["stop", "value"] == "\u2014"  # unset: a dash
    assert not cfg["value"].str.contains("nan|None", case=False).any()


def test_load_run_errors(tmp_path):
    with pytest.raises(UserError, match="no such run directory"):
        runs.load_run(tmp_path / "nope")
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(UserError, match="no groups.jsonl"):
        runs.load_run(tmp_path)
    (tmp_path / "groups.jsonl").write_text("")
    with pytest.raises(UserError, match="no completed steps"):
        runs.load_run(tmp_path)


@pytest.mark.sandbox
def test_find_runs_expands_globs_and_rejects_empty_matches(tmp_path):
    a, b = shared_run(4), shared_run(2)
    root = a.parent.parent
    found = runs.find_runs([str(root / "g*" / "run"), str(a)])
    assert [p.resolve() for p in found] == sorted({a.resolve(), b.resolve()})
    with pytest.raises(UserError, match="matches no run directory"):
        runs.find_runs([str(tmp_path / "x*")])


@pytest.mark.sandbox
def test_comparison_tables():
    ra, rb = runs.load_run(shared_run(2)), runs.load_run(shared_run(4))
    table = runs.compare_table([ra, rb])
    assert list(table.index) == ["g2", "g4"] and list(table["group_size"]) == [2, 4]
    assert table.loc["g4", "informative_fraction"] == pytest.approx(rb.steps["informative_fraction"].mean())
    long = runs.steps_long([ra, rb], ["small", "big"])
    assert set(long["run"]) == {"small", "big"} and len(long) == 4
    shifts = runs.task_shifts([ra, rb])
    common = set(ra.groups["task_id"]) & set(rb.groups["task_id"])
    assert set(shifts.index) == common
    ta, tb = runs.task_table(ra.groups), runs.task_table(rb.groups)
    for tid in common:
        assert shifts.loc[tid, "shift"] == pytest.approx(tb.loc[tid, "reward_mean"] - ta.loc[tid, "reward_mean"])
    assert list(shifts["shift"].abs()) == sorted(shifts["shift"].abs(), reverse=True)
    with pytest.raises(UserError, match="at least two"):
        runs.task_shifts([ra])
    with pytest.raises(UserError, match="labels"):
        runs.compare_table([ra, rb], ["only-one"])
    h = runs.compare_headline(table)
    assert h["n_runs"] == 2 and h["informative_fraction"] == table["informative_fraction"].max()


def test_weight_files_reads_each_weight_file_once(tmp_path):
    # pure Python: runs without the [trl] extra too (test_trl_bridge.py needs it)
    from grpo_wb.jsonio import sha256_file
    from grpo_wb.training.bridge import weight_files

    ck = tmp_path / "checkpoint-1"
    ck.mkdir()
    (ck / "adapter_model.safetensors").write_bytes(b"weights v1")
    (ck / "trainer_state.json").write_text("{}")  # not a weight file
    known: dict = {}
    first = weight_files(ck, known=known)
    assert list(first) == ["adapter_model.safetensors"]
    assert first["adapter_model.safetensors"] == {"bytes": 10, "sha256": sha256_file(ck / "adapter_model.safetensors")}
    # a known (path, size, mtime) is not read again: a planted digest comes back unchanged
    (key,) = known
    known[key] = "planted"
    assert weight_files(ck, known=known)["adapter_model.safetensors"]["sha256"] == "planted"
    # a rewritten file (new size and mtime) is hashed afresh
    (ck / "adapter_model.safetensors").write_bytes(b"weights v2, longer")
    again = weight_files(ck, known=known)["adapter_model.safetensors"]
    assert again == {"bytes": 18, "sha256": sha256_file(ck / "adapter_model.safetensors")}
    assert weight_files(ck, hashes=False) == {"adapter_model.safetensors": {"bytes": 18}}
