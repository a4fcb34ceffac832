"""Bad input to the CLI: one clear line on stderr, a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TOY

from grpo_wb.cli.main import main

REPO = Path(__file__).resolve().parent.parent
N_TOY = sum(1 for line in TOY.read_text().splitlines() if line.strip())
PREFIX = "grpo-wb: error: "


@pytest.fixture
def ws(tmp_path):
    """A workspace: a copy of the toy tasks and a few completions files."""
    tasks = tmp_path / "tasks.jsonl"
    shutil.copy(TOY, tasks)
    good = {"task_id": "toy/add", "completion": "    return a + b\n"}
    files = {
        "tasks": tasks,
        "good": tmp_path / "good.jsonl",
        "bad_json": tmp_path / "bad_json.jsonl",
        "unknown_task": tmp_path / "unknown_task.jsonl",
        "no_completion": tmp_path / "no_completion.jsonl",
        "int_completion": tmp_path / "int_completion.jsonl",
        "not_object": tmp_path / "not_object.jsonl",
        "empty": tmp_path / "empty.jsonl",
    }
    files["good"].write_text(json.dumps(good) + "\n")
    files["bad_json"].write_text(json.dumps(good) + "\n" + '{"task_id": "toy/add", "completion": \n')
    files["unknown_task"].write_text(
        json.dumps(good) + "\n" + json.dumps({"task_id": "toy/nope", "completion": "x"}) + "\n"
    )
    files["no_completion"].write_text(json.dumps({"task_id": "toy/add"}) + "\n")
    files["int_completion"].write_text(json.dumps({"task_id": "toy/add", "completion": 3}) + "\n")
    files["not_object"].write_text("[1, 2]\n")
    files["empty"].write_text("\n")
    files["dir"] = tmp_path
    files["out"] = tmp_path / "results.jsonl"
    files["run"] = tmp_path / "run"
    return files


def run_main(capsys, argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        rc = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out, err
    return rc, out, err


def run_sub(argv, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    p = subprocess.run(
        [sys.executable, "-m", "grpo_wb.cli", *map(str, argv)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr
    return p.returncode, p.stdout, p.stderr


def score(ws, completions, *extra):
    return [
        "score",
        "--tasks",
        ws["tasks"],
        "--completions",
        ws[completions],
        "--out",
        ws["out"],
        "--no-progress",
        "--timeout",
        "2",
        *extra,
    ]


def smoke(ws, *extra):
    return ["smoke", "--tasks", ws["tasks"], "--out", ws["run"], "--no-progress", "--timeout", "2", *extra]


# name -> (argv builder, expected single stderr line prefix builder)
USER_ERRORS = {
    "score_bad_json": (lambda w: score(w, "bad_json"), lambda w: f"{PREFIX}{w['bad_json']}:2: invalid JSON"),
    "score_unknown_task_id": (
        lambda w: score(w, "unknown_task"),
        lambda w: f"{PREFIX}{w['unknown_task']}:2: task_id 'toy/nope' is not in the task file",
    ),
    "score_missing_completion": (
        lambda w: score(w, "no_completion"),
        lambda w: f"{PREFIX}{w['no_completion']}:1: missing or non-string field 'completion'",
    ),
    "score_non_string_completion": (
        lambda w: score(w, "int_completion"),
        lambda w: f"{PREFIX}{w['int_completion']}:1: missing or non-string field 'completion'",
    ),
    "score_not_an_object": (
        lambda w: score(w, "not_object"),
        lambda w: f"{PREFIX}{w['not_object']}:1: expected a JSON object",
    ),
    "score_empty_completions": (lambda w: score(w, "empty"), lambda w: f"{PREFIX}{w['empty']}: no completions in file"),
    "score_missing_completions_file": (
        lambda w: ["score", "--tasks", w["tasks"], "--completions", w["dir"] / "nope.jsonl", "--out", w["out"]],
        lambda w: f"{PREFIX}{w['dir'] / 'nope.jsonl'}: no such file",
    ),
    "score_completions_is_directory": (
        lambda w: ["score", "--tasks", w["tasks"], "--completions", w["dir"], "--out", w["out"]],
        lambda w: f"{PREFIX}{w['dir']}: is a directory, expected a file",
    ),
    "smoke_batch_size_too_large": (
        lambda w: smoke(w, "--batch-size", N_TOY + 1),
        lambda w: f"{PREFIX}batch-size {N_TOY + 1} exceeds the number of tasks",
    ),
    "smoke_group_size_1": (lambda w: smoke(w, "--group-size", "1"), lambda w: f"{PREFIX}group-size must be at least 2"),
    "smoke_replay_without_completions": (
        lambda w: smoke(w, "--backend", "replay"),
        lambda w: f"{PREFIX}--backend replay needs --completions FILE",
    ),
    "smoke_replay_missing_file": (
        lambda w: smoke(w, "--backend", "replay", "--completions", w["dir"] / "nope.jsonl"),
        lambda w: f"{PREFIX}{w['dir'] / 'nope.jsonl'}: no such file",
    ),
    "smoke_replay_uncovered_tasks": (
        lambda w: smoke(w, "--backend", "replay", "--completions", w["good"]),
        lambda w: f"{PREFIX}{w['good']}: no completions for {N_TOY - 1} task(s)",
    ),
    "smoke_resume_and_overwrite": (
        lambda w: smoke(w, "--resume", "--overwrite"),
        lambda w: f"{PREFIX}--resume and --overwrite contradict each other",
    ),
    "smoke_negative_epsilon": (lambda w: smoke(w, "--epsilon", "-1"), lambda w: f"{PREFIX}epsilon must be >= 0"),
}


@pytest.mark.parametrize("case", sorted(USER_ERRORS))
def test_user_error_is_one_line(capsys, ws, case):
    argv, expect = USER_ERRORS[case]
    rc, out, err = run_main(capsys, argv(ws))
    assert rc == 1
    assert len(err.splitlines()) == 1, err
    assert err.startswith(expect(ws)), err
    assert err.endswith("\n")
    assert out == ""
    assert not ws["out"].exists()
    assert not ws["run"].exists(), "a failed smoke run must not leave a run directory"
    assert not (ws["out"].parent / (ws["out"].name + ".partial")).exists()


@pytest.mark.sandbox
def test_score_refuses_to_overwrite_out(capsys, ws):
    ws["out"].write_text("old results\n")
    rc, out, err = run_main(capsys, score(ws, "good"))
    assert rc == 1
    assert err == f"{PREFIX}{ws['out']} exists; pass --force to replace it\n"
    assert ws["out"].read_text() == "old results\n"
    rc, out, err = run_main(capsys, score(ws, "good", "--force"))
    assert rc == 0, err
    rows = [json.loads(l) for l in ws["out"].read_text().splitlines()]
    assert [(r["task_id"], r["status"]) for r in rows] == [("toy/add", "pass")]


@pytest.mark.sandbox
def test_smoke_refuses_to_reuse_a_run_directory(capsys, ws):
    args = smoke(ws, "--steps", "1", "--batch-size", "2", "--group-size", "2")
    rc, out, err = run_main(capsys, args)
    assert rc == 0, err
    rc, out, err = run_main(capsys, args)
    assert rc == 1
    assert len(err.splitlines()) == 1 and err.startswith(f"{PREFIX}{ws['run']} already holds a run"), err


# ----------------------------------------------------------------------------- bad task files


@pytest.mark.parametrize("command", ["validate", "score", "smoke"])
@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_bad_task_file(capsys, ws, command, kind):
    path = ws["dir"] / "nope.jsonl" if kind == "missing" else ws["dir"]
    what = "no such file" if kind == "missing" else "is a directory, expected a file"
    if command == "validate":
        argv = ["tasks", "validate", path]
    elif command == "score":
        argv = ["score", "--tasks", path, "--completions", ws["good"], "--out", ws["out"]]
    else:
        argv = ["smoke", "--tasks", path, "--out", ws["dir"] / "run"]
    rc, out, err = run_main(capsys, argv)
    assert rc == 1
    lines = err.splitlines()
    assert lines[-1].startswith(PREFIX), err
    assert f"{path}: {what}" in err
    assert len(lines) <= 2
    assert out == ""
    assert not ws["out"].exists() and not (ws["dir"] / "run").exists()


@pytest.mark.parametrize("command", ["score", "smoke"])
def test_missing_task_file_is_one_line_naming_the_file(capsys, ws, command):
    path = ws["dir"] / "nope.jsonl"
    if command == "score":
        argv = ["score", "--tasks", path, "--completions", ws["good"], "--out", ws["out"]]
    else:
        argv = ["smoke", "--tasks", path, "--out", ws["run"]]
    rc, out, err = run_main(capsys, argv)
    assert rc == 1
    assert err == f"{PREFIX}{path}: no such file\n"


def test_score_with_an_invalid_task_file_lists_its_problems(capsys, ws):
    ws["tasks"].write_text(ws["tasks"].read_text() + '{"task_id": "toy/x"}\n')
    rc, out, err = run_main(capsys, score(ws, "good"))
    assert rc == 1
    lines = err.splitlines()
    assert lines[-1].startswith(PREFIX)
    assert all(l.startswith(f"{ws['tasks']}:{N_TOY + 1}: missing field") for l in lines[:-1])
    assert len(lines) == 1 + 3  # prompt, entry_point, tests
    assert not ws["out"].exists()


# ----------------------------------------------------------------------------- malformed command lines (argparse)

USAGE_ERRORS = {
    "steps_abc": (lambda w: smoke(w, "--steps", "abc"), "argument --steps: expected an integer, got 'abc'"),
    "steps_0": (lambda w: smoke(w, "--steps", "0"), "argument --steps: must be at least 1"),
    "fraction_2": (
        lambda w: smoke(w, "--min-informative-fraction", "2"),
        "argument --min-informative-fraction: must be in [0, 1]",
    ),
    "fraction_abc": (
        lambda w: smoke(w, "--min-informative-fraction", "lots"),
        "argument --min-informative-fraction: expected a number in [0, 1]",
    ),
    "group_size_0": (lambda w: smoke(w, "--group-size", "0"), "argument --group-size: must be at least 1"),
    "mock_skill": (lambda w: smoke(w, "--mock-skill", "1.5"), "argument --mock-skill: must be in [0, 1]"),
    "seed_abc": (lambda w: smoke(w, "--seed", "x"), "argument --seed: invalid int value"),
    "timeout_0": (lambda w: score(w, "good", "--timeout", "0"), "argument --timeout: must be a positive number"),
    "timeout_nan": (lambda w: score(w, "good", "--timeout", "nan"), "argument --timeout: must be a positive number"),
    "k_0": (lambda w: score(w, "good", "-k", "1,0"), "argument -k/--k: k values must be >= 1"),
    "k_abc": (lambda w: score(w, "good", "-k", "a,b"), "argument -k/--k: expected comma-separated integers"),
    "bad_reward": (lambda w: score(w, "good", "--reward", "dense"), "argument --reward: invalid choice"),
    "missing_out": (
        lambda w: ["score", "--tasks", w["tasks"], "--completions", w["good"]],
        "the following arguments are required: --out",
    ),
    "unknown_command": (lambda w: ["fly"], "argument COMMAND: invalid choice"),  # "train" exists now
    "no_command": (lambda w: [], "the following arguments are required: COMMAND"),
}


@pytest.mark.parametrize("case", sorted(USAGE_ERRORS))
def test_malformed_flags_are_usage_errors(capsys, ws, case):
    argv, message = USAGE_ERRORS[case]
    rc, out, err = run_main(capsys, argv(ws))
    assert rc == 2
    assert err.startswith("usage: grpo-wb")
    assert "error: " + message in err.splitlines()[-1], err
    assert not ws["out"].exists() and not ws["run"].exists()


# ----------------------------------------------------------------------------- as a real process


@pytest.mark.parametrize(
    "case",
    [
        "score_bad_json",
        "score_unknown_task_id",
        "score_missing_completion",
        "smoke_batch_size_too_large",
        "smoke_group_size_1",
        "smoke_replay_without_completions",
    ],
)
def test_subprocess_user_error(ws, case):
    argv, expect = USER_ERRORS[case]
    rc, out, err = run_sub(argv(ws), cwd=ws["dir"])
    assert rc == 1
    assert len(err.splitlines()) == 1, err
    assert err.startswith(expect(ws)), err
    assert out == ""


def test_subprocess_score_out_exists(ws):
    ws["out"].write_text("x\n")
    rc, out, err = run_sub(score(ws, "good"), cwd=ws["dir"])
    assert (rc, err) == (1, f"{PREFIX}{ws['out']} exists; pass --force to replace it\n")
    assert ws["out"].read_text() == "x\n"


@pytest.mark.parametrize("case", ["steps_abc", "fraction_2"])
def test_subprocess_usage_error(ws, case):
    argv, message = USAGE_ERRORS[case]
    rc, out, err = run_sub(argv(ws), cwd=ws["dir"])
    assert rc == 2
    assert err.startswith("usage: grpo-wb smoke")
    assert err.splitlines()[-1].startswith("grpo-wb smoke: error: " + message), err


def test_subprocess_missing_task_file(ws):
    path = ws["dir"] / "nope.jsonl"
    rc, out, err = run_sub(["tasks", "validate", path], cwd=ws["dir"])
    assert rc == 1
    assert err.splitlines() == [f"{path}: no such file", f"{PREFIX}{path}: 1 problem(s); nothing was run"]


@pytest.mark.sandbox
def test_subprocess_success_control(ws):
    # the same machinery on good input exits 0, so the failures above are not artefacts of the harness
    rc, out, err = run_sub(score(ws, "good"), cwd=ws["dir"])
    assert rc == 0, err
    assert "status: pass 1," in out
    assert ws["out"].exists()
