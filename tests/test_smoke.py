"""The smoke trainer through its real entry point, with tiny arguments."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import EARLY_STOP, ROOT, TOY, all_pass_toy, read_jsonl, write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.jsonio import sha256_file
from grpo_wb.scoring.scorer import RESULT_TIMING_FIELDS
from grpo_wb.signal.diagnostics import TIMING_FIELDS

FAST = ["--timeout", "2", "--no-progress"]


def smoke_argv(out, *extra, tasks=TOY, backend="mock"):
    return ["smoke", "--tasks", str(tasks), "--backend", backend, "--out", str(out), *FAST, *extra]


def smoke(out, *extra, tasks=TOY, backend="mock"):
    return main(smoke_argv(out, *extra, tasks=tasks, backend=backend))


@pytest.mark.sandbox
@pytest.mark.slow
def test_smoke_writes_the_artifacts_with_the_documented_fields(tmp_path, capsys):
    out = tmp_path / "run"
    assert smoke(out, "--group-size", "8", "--batch-size", "10", "--steps", "2", "--seed", "0") == 0
    printed = capsys.readouterr().out
    assert "informative" in printed and str(out.resolve()) in printed
    metrics = read_jsonl(out / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [0, 1]
    for m in metrics:
        for k in (
            "step",
            "informative_fraction",
            "reward_variance_fraction",
            "mean_reward",
            "parse_failure_rate",
            "n_groups",
            "n_completions",
            "all_pass_fraction",
            "all_fail_fraction",
            "pass_rate",
            "timeout_rate",
            "completions_per_second",
        ):
            assert k in m
        assert m["n_groups"] == 10 and m["n_completions"] == 80
    rollouts = read_jsonl(out / "last_rollouts.jsonl")
    assert len(rollouts) == 80 and {r["step"] for r in rollouts} == {1}
    for r in rollouts:
        for k in ("task_id", "sample_index", "completion", "status", "reward", "advantage"):
            assert k in r
    manifest = json.loads((out / "checkpoint_manifest.json").read_text())
    assert manifest["trained_weights"] is False
    assert "NO trained weights" in manifest["note"]
    assert manifest["validated"] and manifest["remaining_before_real_training"]
    n_parse = round(sum(m["parse_failure_rate"] * m["n_completions"] for m in metrics))
    assert f"code extracted from every completion: {n_parse} of 160 had none (parse failures)" in manifest["validated"]
    assert any("mock" in r and "sample them from the policy" in r for r in manifest["remaining_before_real_training"])
    assert manifest["config"]["group_size"] == 8 and manifest["backend"]["backend"] == "mock"
    assert manifest["files"]["metrics.jsonl"]["sha256"] == sha256_file(out / "metrics.jsonl")
    assert manifest["tasks_sha256"] == sha256_file(TOY)
    assert "isolation" in manifest["sandbox"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps_completed"] == 2 and summary["stopped_early"] is False and summary["stop_reason"] is None
    assert summary["final_informative_fraction"] == metrics[-1]["informative_fraction"]
    assert abs(summary["mean_informative_fraction"] - sum(m["informative_fraction"] for m in metrics) / 2) < 1e-12


@pytest.mark.sandbox
def test_run_has_mixed_all_pass_and_all_fail_groups_and_advantages_follow(tmp_path):
    out = tmp_path / "run"
    assert smoke(out, "--group-size", "8", "--batch-size", "10", "--steps", "1") == 0
    groups = read_jsonl(out / "groups.jsonl")
    kinds = {
        g["task_id"]: ("mixed" if g["informative"] else "all_pass" if g["n_correct"] == g["n_total"] else "all_fail")
        for g in groups
    }
    assert kinds["toy/add"] == "all_pass"  # mock_skill 1.0
    assert "all_fail" in kinds.values()  # toy/balanced_brackets, toy/edit_distance: skill 0.0
    assert "mixed" in kinds.values()
    rollouts = read_jsonl(out / "last_rollouts.jsonl")
    for g in groups:
        rs = [r for r in rollouts if r["task_id"] == g["task_id"]]
        if not g["has_variance"]:
            assert all(r["advantage"] == 0.0 for r in rs)
        else:
            pos = [r["advantage"] for r in rs if r["passed"]]
            neg = [r["advantage"] for r in rs if not r["passed"]]
            assert min(pos) > 0 > max(neg)
            assert abs(sum(r["advantage"] for r in rs)) < 1e-9  # mean baseline: advantages sum to 0
    m = read_jsonl(out / "metrics.jsonl")[0]
    assert m["informative_fraction"] == sum(g["informative"] for g in groups) / len(groups)


@pytest.mark.sandbox
def test_early_stop_when_groups_are_all_pass(tmp_path, capsys):
    out = tmp_path / "run"
    assert smoke(out, *EARLY_STOP, tasks=all_pass_toy(tmp_path)) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_early"] is True and summary["steps_completed"] == 2
    assert "informative-prompt fraction below 0.5" in summary["stop_reason"]
    assert "STOPPED EARLY" in capsys.readouterr().out
    assert len(read_jsonl(out / "metrics.jsonl")) == 2


@pytest.mark.sandbox
def test_existing_run_dir_needs_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    assert smoke(out, "--group-size", "2", "--batch-size", "2", "--steps", "1") == 0
    before = (out / "metrics.jsonl").read_bytes()
    assert smoke(out, "--group-size", "2", "--batch-size", "2", "--steps", "1") == 1
    err = capsys.readouterr().err
    assert "already holds a run" in err and "Traceback" not in err
    assert (out / "metrics.jsonl").read_bytes() == before  # nothing lost
    assert smoke(out, "--group-size", "4", "--batch-size", "2", "--steps", "2", "--resume") == 1
    assert "cannot resume" in capsys.readouterr().err
    assert (out / "metrics.jsonl").read_bytes() == before


def _strip(rows, drop):
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def _compare_runs(a: Path, b: Path):
    assert _strip(read_jsonl(a / "metrics.jsonl"), TIMING_FIELDS) == _strip(
        read_jsonl(b / "metrics.jsonl"), TIMING_FIELDS
    )
    assert read_jsonl(a / "groups.jsonl") == read_jsonl(b / "groups.jsonl")
    drop = (*RESULT_TIMING_FIELDS, "stderr_tail")
    assert _strip(read_jsonl(a / "last_rollouts.jsonl"), drop) == _strip(read_jsonl(b / "last_rollouts.jsonl"), drop)
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    sa.pop("seconds_this_session"), sb.pop("seconds_this_session")
    assert sa == sb


ARGS = ["--group-size", "4", "--batch-size", "4", "--steps", "5", "--seed", "7"]


@pytest.mark.sandbox
@pytest.mark.slow
def test_resume_after_kill_equals_uninterrupted_run(tmp_path):
    ref = tmp_path / "ref"
    assert smoke(ref, *ARGS) == 0
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "grpo_wb.cli", *smoke_argv(out, *ARGS)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            try:  # summary.json is written atomically after each step's metrics line
                if json.loads((out / "summary.json").read_text())["steps_completed"] >= 2:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    done = len(read_jsonl(out / "metrics.jsonl"))
    assert 2 <= done < 5, f"the run should have been killed mid-way, it had {done} steps"
    summary = json.loads((out / "summary.json").read_text())
    # the kill may land between a step's metrics line and its summary: the summary lags by at most one step
    assert done - 1 <= summary["steps_completed"] <= done
    # a crash in the middle of a write leaves a partial line: resume must repair it
    with open(out / "metrics.jsonl", "a") as f:
        f.write('{"step": 99, "informative_fr')
    assert smoke(out, *ARGS, "--resume") == 0
    _compare_runs(ref, out)


@pytest.mark.sandbox
@pytest.mark.slow
def test_resume_of_a_finished_run_changes_nothing_and_can_extend(tmp_path):
    out = tmp_path / "run"
    ref = tmp_path / "ref"
    assert smoke(ref, *ARGS) == 0
    short = [a if a != "5" else "3" for a in ARGS]
    assert smoke(out, *short) == 0
    assert smoke(out, *short, "--resume") == 0
    assert len(read_jsonl(out / "metrics.jsonl")) == 3
    assert smoke(out, *ARGS, "--resume") == 0  # extending the step count is allowed
    _compare_runs(ref, out)


@pytest.mark.sandbox
def test_replay_smoke_records_backend_and_uses_file_order(tmp_path):
    tasks = read_jsonl(TOY)[:3]
    tpath = write_jsonl(tmp_path / "t.jsonl", tasks)
    rows = []
    for t in tasks:
        rows += [
            {"task_id": t["task_id"], "completion": t["canonical_solution"]},
            {"task_id": t["task_id"], "completion": "    return None\n"},
            {"task_id": t["task_id"], "completion": "Sorry, no idea."},
            {"task_id": t["task_id"], "completion": t["canonical_solution"]},
        ]
    spath = write_jsonl(tmp_path / "s.jsonl", rows)
    out = tmp_path / "run"
    args = ["--completions", str(spath), "--group-size", "2", "--batch-size", "3", "--min-informative-fraction", "0"]
    assert smoke(out, *args, "--steps", "2", tasks=tpath, backend="replay") == 0
    m0, m1 = read_jsonl(out / "metrics.jsonl")
    assert m0["informative_fraction"] == 1.0  # [pass, fail] in every group
    assert m1["parse_failure_rate"] == 0.5 and m1["pass_rate"] == 0.5  # [parse failure, pass]
    manifest = json.loads((out / "checkpoint_manifest.json").read_text())
    assert manifest["backend"]["backend"] == "replay" and manifest["backend"]["path"] == str(spath)
    last = read_jsonl(out / "last_rollouts.jsonl")
    assert [r["status"] for r in last] == ["parse_failure", "pass"] * 3
    # a third step would need more completions than recorded: a clear error, earlier steps kept
    assert smoke(out, *args, "--steps", "3", "--resume", tasks=tpath, backend="replay") == 1
    assert len(read_jsonl(out / "metrics.jsonl")) == 2


@pytest.mark.sandbox
@pytest.mark.parametrize("adv,scale", [("rloo", None), ("grpo", "none"), ("grpo", "batch")])
def test_advantage_modes_reach_the_rollouts(tmp_path, adv, scale):
    out = tmp_path / "run"
    extra = ["--advantage", adv] + (["--scale-rewards", scale] if scale else [])
    assert smoke(out, "--group-size", "4", "--batch-size", "4", "--steps", "1", *extra) == 0
    manifest = json.loads((out / "checkpoint_manifest.json").read_text())
    assert manifest["advantage"]["mode"] == adv
    assert manifest["advantage"]["scale_rewards"] == (scale or "none")
    rows = read_jsonl(out / "last_rollouts.jsonl")
    groups = read_jsonl(out / "groups.jsonl")
    for g in groups:
        if adv == "grpo" and scale == "none" and g["has_variance"]:
            rs = [r for r in rows if r["task_id"] == g["task_id"]]
            for r in rs:
                assert abs(r["advantage"] - (r["reward"] - g["mean"])) < 1e-12


@pytest.mark.sandbox
def test_partial_reward(tmp_path):
    out = tmp_path / "run"
    assert smoke(out, "--group-size", "8", "--batch-size", "10", "--steps", "1", "--reward", "partial") == 0
    rows = read_jsonl(out / "last_rollouts.jsonl")
    fractional = [r for r in rows if r["reward"] not in (0.0, 1.0)]
    assert fractional, "partial credit should give some fractional rewards"
    for r in fractional:
        assert abs(r["reward"] - r["tests_passed"] / r["tests_total"]) < 1e-12 and not r["passed"]


def test_what_the_manifest_says_was_validated_comes_from_the_run():
    from grpo_wb.runs.smoke import checks_of_the_run

    step = {
        "n_completions": 8,
        "parse_failure_rate": 0.0,
        "cache_hits": 2,
        "clipped_ratio": 0.25,
        "informative_fraction": 0.5,
    }
    served = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}
    ok_iso = {
        "mode": "bwrap",
        "missing": [],
        "child_uid": 61000,
        "network_isolated": True,
        "root_entries": [],
        "pid_namespace": True,
        "private_tmp": True,
        "limits_set": True,
    }
    validated, remaining = checks_of_the_run([step, step], served, ok_iso, 5, 4, 0.1)
    assert (
        "16 completions over 2 steps, in groups of G=4, from model server: m at http://127.0.0.1:8000/v1" in validated
    )
    assert any("12 executed, 4 answered from the verdict cache" in v for v in validated)
    assert not any("sample them from the policy" in r for r in remaining)  # a model backend ran
    assert any("4 of 16 completions were cut at max_tokens" in r for r in remaining)
    bad = {**step, "parse_failure_rate": 0.5, "informative_fraction": 0.0}
    _, remaining = checks_of_the_run(
        [bad], {"backend": "replay", "path": "/x/s.jsonl"}, {**ok_iso, "missing": ["a private /tmp"]}, 5, 4, 0.1
    )
    assert any("replay of s.jsonl" in r for r in remaining) and any(
        "50% of completions had no usable code" in r for r in remaining
    )
    assert any("informative-prompt fraction 0.00" in r for r in remaining) and any(
        "a private /tmp" in r for r in remaining
    )
