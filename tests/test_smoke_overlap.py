"""The smoke loop with generation and scoring overlapped writes what the sequential loop writes.

Every artifact is compared line by line, key order included, after masking only the fields that measure time,
the verdict cache's bookkeeping (which of two identical programs a thread reached first) and, from a model
server, each request's latency and the id the server gave its response (a counter in arrival order): none of
them is the same between two sequential runs either.
"""

import json
import random
import re
import threading
from pathlib import Path

import pytest
from conftest import EARLY_STOP, TOY, all_pass_toy, read_jsonl, replay_model, write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.runs.artifacts import RunWriter
from grpo_wb.scoring.scorer import RESULT_TIMING_FIELDS
from grpo_wb.signal.diagnostics import TIMING_FIELDS
from grpo_wb.tasks.records import load_tasks
from grpo_wb.testing.loopback import ReplayServer

FAST = ["--timeout", "2", "--no-progress"]
TIMING = {
    "metrics.jsonl": TIMING_FIELDS,
    "last_rollouts.jsonl": RESULT_TIMING_FIELDS,
    "summary.json": ("seconds_this_session",),
}


SERVER = ("latency_s", "response_id")


def _masked(row: dict, drop) -> str:
    row = {k: ("<timing>" if k in drop else v) for k, v in row.items()}
    extra = (row.get("meta") or {}).get("extra")
    if extra:
        row["meta"] = {**row["meta"], "extra": {k: ("<timing>" if k in SERVER else v) for k, v in extra.items()}}
    return json.dumps(row)


def _artifacts(run: Path) -> dict:
    """Every artifact as text lines, timing fields masked; the manifest without its clock, the hashes of the files
    that hold timing fields (the files themselves are compared above) and the sandbox uid each run leased (in a
    parallel run another pytest worker may hold the uid the first run had)."""
    out = {}
    for name in ("metrics.jsonl", "groups.jsonl", "last_rollouts.jsonl"):
        out[name] = [_masked(json.loads(line), TIMING.get(name, ())) for line in (run / name).read_text().splitlines()]
    out["summary.json"] = _masked(json.loads((run / "summary.json").read_text()), TIMING["summary.json"])
    manifest = json.loads((run / "checkpoint_manifest.json").read_text())
    manifest.pop("updated_unix")
    manifest["files"] = {k: v for k, v in manifest["files"].items() if k == "groups.jsonl"}
    for k in ("out", "overlap"):
        manifest["config"].pop(k)
    out["checkpoint_manifest.json"] = re.sub(r'("child_uid": |uid )\d+', r"\1<leased>", json.dumps(manifest))
    return out


def _smoke(out: Path, *args: str) -> int:
    return main(["smoke", "--out", str(out), *FAST, *args])


def _same_runs(tmp_path: Path, *args: str) -> tuple[dict, dict]:
    seq, ovl = tmp_path / "sequential", tmp_path / "overlapped"
    assert _smoke(seq, *args, "--no-overlap") == 0
    assert _smoke(ovl, *args) == 0
    a, b = _artifacts(seq), _artifacts(ovl)
    for name in a:
        assert a[name] == b[name], f"{name} differs between the sequential and the overlapped run"
    assert (seq / "groups.jsonl").read_bytes() == (ovl / "groups.jsonl").read_bytes()
    return json.loads((seq / "summary.json").read_text()), json.loads((ovl / "summary.json").read_text())


@pytest.mark.sandbox
@pytest.mark.slow
def test_overlapped_mock_run_writes_the_sequential_artifacts(tmp_path):
    s, o = _same_runs(
        tmp_path,
        "--tasks",
        str(TOY),
        "--backend",
        "mock",
        "--group-size",
        "4",
        "--batch-size",
        "5",
        "--steps",
        "5",
        "--seed",
        "3",
        "--min-informative-fraction",
        "0",
    )
    assert s["steps_completed"] == o["steps_completed"] == 5
    assert s["lookahead_discarded_completions"] == o["lookahead_discarded_completions"] == 0


@pytest.mark.sandbox
@pytest.mark.slow
def test_overlapped_run_from_a_server_that_answers_out_of_order(tmp_path):
    """Requests in flight at once, each with its own latency: completions reach the scorer out of request order,
    and the steps still come out as the sequential run writes them."""
    tasks = load_tasks(TOY)
    rng = random.Random(0)
    rows = [dict(t.to_json()) for t in tasks]
    tpath = write_jsonl(tmp_path / "t.jsonl", rows)
    samples = {
        t.task_id: [t.canonical_solution if rng.random() < 0.5 else "    return None\n" for _ in range(64)]
        for t in tasks
    }
    for name in ("sequential", "overlapped"):
        with ReplayServer(tasks, samples, latency_s=0.02, jitter_s=0.1) as srv:  # answers cross
            args = ["--tasks", str(tpath), *replay_model(srv), "--max-concurrency", "4", "--group-size", "4"]
            args += ["--batch-size", "5", "--steps", "3", "--min-informative-fraction", "0"]
            assert _smoke(tmp_path / name, *args, *(["--no-overlap"] if name == "sequential" else [])) == 0
    a, b = _artifacts(tmp_path / "sequential"), _artifacts(tmp_path / "overlapped")
    for name in ("metrics.jsonl", "groups.jsonl", "last_rollouts.jsonl", "summary.json"):
        assert a[name] == b[name], name


@pytest.mark.sandbox
def test_overlapped_early_stop_stops_at_the_same_step_and_says_what_it_threw_away(tmp_path):
    tasks = all_pass_toy(tmp_path)
    s, o = _same_runs_but_summary(tmp_path, "--tasks", str(tasks), "--backend", "mock", *EARLY_STOP)
    assert s["stopped_early"] and o["stopped_early"] and s["steps_completed"] == o["steps_completed"] == 2
    assert s["lookahead_discarded_completions"] == 0
    # the step after the stop may have been generated (one step ahead), never more
    assert 0 <= o["lookahead_discarded_completions"] <= 5 * 4


def _same_runs_but_summary(tmp_path: Path, *args: str) -> tuple[dict, dict]:
    seq, ovl = tmp_path / "sequential", tmp_path / "overlapped"
    assert _smoke(seq, *args, "--no-overlap") == 0
    assert _smoke(ovl, *args) == 0
    a, b = _artifacts(seq), _artifacts(ovl)
    for name in ("metrics.jsonl", "groups.jsonl", "last_rollouts.jsonl"):
        assert a[name] == b[name], name
    sa, sb = (json.loads(a["summary.json"]), json.loads(b["summary.json"]))
    sa.pop("lookahead_discarded_completions"), sb.pop("lookahead_discarded_completions")
    assert sa == sb
    return json.loads((seq / "summary.json").read_text()), json.loads((ovl / "summary.json").read_text())


@pytest.mark.sandbox
@pytest.mark.slow
def test_the_next_step_is_generated_while_this_one_is_scored(tmp_path):
    """The overlapped run asks for step 1's completions before step 0 is written, the sequential run after;
    neither runs more than one step ahead. Decided by events, not by how long scoring takes: in the overlapped
    run, writing step 0 waits until step 1 has been asked for (a run that does not overlap never asks: after
    60 s the write goes on and the step-1 assertion names it)."""
    tasks = read_jsonl(TOY)[:2]
    tpath = write_jsonl(tmp_path / "t.jsonl", tasks)
    spath = write_jsonl(
        tmp_path / "s.jsonl",
        [{"task_id": t["task_id"], "completion": "    return None\n"} for t in tasks for _ in range(8)],
    )
    from grpo_wb.rollouts import replay

    seen = []
    asked = {}
    real, real_write = replay.ReplayBackend.generate, RunWriter.write_step

    def generate(self, requests):
        run = Path(self._test_out)
        written = len((run / "metrics.jsonl").read_text().splitlines()) if (run / "metrics.jsonl").exists() else 0
        seen.append((requests[0].step, written))
        asked.setdefault(requests[0].step, threading.Event()).set()
        return real(self, requests)

    def write_step(self, step, *args, **kwargs):
        if step == 0:
            asked.setdefault(1, threading.Event()).wait(60)
        return real_write(self, step, *args, **kwargs)

    for name in ("sequential", "overlapped"):
        seen.clear()
        asked.clear()
        replay.ReplayBackend._test_out = str(tmp_path / name)
        replay.ReplayBackend.generate = generate
        if name == "overlapped":
            RunWriter.write_step = write_step
        try:
            assert (
                _smoke(
                    tmp_path / name,
                    "--tasks",
                    str(tpath),
                    "--backend",
                    "replay",
                    "--completions",
                    str(spath),
                    "--group-size",
                    "2",
                    "--batch-size",
                    "2",
                    "--steps",
                    "4",
                    "--min-informative-fraction",
                    "0",
                    *(["--no-overlap"] if name == "sequential" else []),
                )
                == 0
            )
        finally:
            replay.ReplayBackend.generate = real
            RunWriter.write_step = real_write
            del replay.ReplayBackend._test_out
        steps_written_at_start = {}
        for step, written in seen:
            steps_written_at_start.setdefault(step, written)
            assert written >= step - 1, f"{name}: step {step} was generated more than one step ahead"
        if name == "sequential":
            assert steps_written_at_start == {0: 0, 1: 1, 2: 2, 3: 3}
        else:
            assert steps_written_at_start[1] == 0, "step 1 should be generated while step 0 is scored"
