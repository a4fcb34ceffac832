"""`grpo-wb sample`: completions streamed from a backend into the samples file and the scorer, resumable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import TOY, need, read_jsonl, replay_model, score_argv
from test_openai_backend import _loopback_only  # noqa: F401 - the fixture, shared

from grpo_wb.bundled import CODEGEN_SAMPLES
from grpo_wb.cli.main import main
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.records import write_tasks
from grpo_wb.testing.loopback import ReplayServer

pytestmark = [pytest.mark.usefixtures("_loopback_only")]


def _humaneval(tmp_path, k=10, n=8):
    tasks = import_humaneval()[0][:k]
    path = tmp_path / "he.jsonl"
    write_tasks(path, tasks)
    samples: dict[str, list[str]] = {}
    for row in read_jsonl(need(CODEGEN_SAMPLES)):
        if row["task_id"] in {t.task_id for t in tasks} and len(samples.setdefault(row["task_id"], [])) < n:
            samples[row["task_id"]].append(row["completion"])
    return tasks, path, samples


def _replayed(tasks_file, srv, out, n: int, concurrency: int, *extra: str) -> list[str]:
    """`grpo-wb sample`: ``n`` completions a task from a ``ReplayServer``, ``concurrency`` requests at most at once."""
    argv = ["sample", "--tasks", str(tasks_file), *replay_model(srv), "--n", str(n), "--out", str(out)]
    return [*argv, "--no-progress", "--max-concurrency", str(concurrency), *extra]


def test_mock_resume_writes_what_an_uninterrupted_run_writes(tmp_path, capsys):
    whole, cut = tmp_path / "whole.jsonl", tmp_path / "cut.jsonl"
    argv = ["sample", "--tasks", str(TOY), "--backend", "mock", "--n", "4", "--no-progress"]
    assert main([*argv, "--out", str(whole)]) == 0
    lines = whole.read_text().splitlines(keepends=True)
    assert len(lines) == 10 * 4 and len({json.loads(x)["completion_id"] for x in lines}) == 40
    cut.write_text("".join(lines[:13]) + lines[13][:20])  # a crash mid-line
    capsys.readouterr()
    assert main([*argv, "--out", str(cut)]) == 0
    assert "13 were there already" in capsys.readouterr().out
    assert sorted(cut.read_text().splitlines()) == sorted(x.rstrip("\n") for x in lines)


def test_sample_mistakes_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "nope", "completion": "x"}\n')
    for argv, msg in (
        (["--out", str(bad)], "not a line grpo-wb sample wrote"),
        (["--out", str(tmp_path / "a.jsonl"), "--headroom"], "--headroom reads the scores: add --score"),
    ):
        assert main(["sample", "--tasks", str(TOY), "--backend", "mock", "--n", "2", "--no-progress", *argv]) == 1
        assert msg in capsys.readouterr().err


@pytest.mark.sandbox
@pytest.mark.data
def test_streamed_scores_equal_grpo_wb_score_on_the_same_completions(tmp_path, capsys):
    tasks, tasks_file, samples = _humaneval(tmp_path)
    out = tmp_path / "s.jsonl"
    with ReplayServer(tasks, samples, latency_s=0.05) as srv:
        assert main(_replayed(tasks_file, srv, out, 8, 4, "--score", "--headroom")) == 0
        assert len(srv.requests) == 10 and all(r["n"] == 8 for r in srv.requests)
    printed = capsys.readouterr().out
    assert "wrote 80 completions" in printed and "scored 80" in printed and "recommended" in printed
    rows = read_jsonl(out)
    assert sorted((r["task_id"], r["completion"]) for r in rows) == sorted(
        (t, c) for t, cs in samples.items() for c in cs
    )  # the replayed completions, each once
    assert all(r["backend"] == "openai" and r["request_completion_tokens"] and r["latency_s"] for r in rows)
    streamed = Counter(r["task_id"] for r in read_jsonl(tmp_path / "s.scored.jsonl") if r["passed"])
    assert main(score_argv(tasks_file, out, tmp_path / "r.jsonl", "--no-progress")) == 0
    batch = Counter(r["task_id"] for r in read_jsonl(tmp_path / "r.jsonl") if r["passed"])
    assert streamed == batch and sum(batch.values()) > 0


@pytest.mark.sandbox
@pytest.mark.data
@pytest.mark.slow
def test_kill_9_then_the_same_command_loses_nothing_and_asks_for_nothing_twice(tmp_path):
    tasks, tasks_file, samples = _humaneval(tmp_path, k=12, n=4)
    out = tmp_path / "s.jsonl"
    exe = Path(sys.executable).with_name("grpo-wb")
    with ReplayServer(tasks, samples, latency_s=0.4) as srv:
        cmd = [str(exe), *_replayed(tasks_file, srv, out, 4, 2, "--score")]
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 16):
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = {json.loads(x)["task_id"] for x in out.read_text().splitlines() if x.endswith("}")}
        served_before = len(srv.requests)
        assert 4 <= len(before) < 12, "the kill should land mid-run"
        assert subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120).returncode == 0
        again = [r["task_id"] for r in srv.requests[served_before:]]
    assert not set(again) & before  # nothing already written is asked for again
    assert len(srv.requests) <= 12 + 2  # at most the requests in flight at the kill are asked twice
    rows = read_jsonl(out)
    assert Counter((r["task_id"], r["sample_index"]) for r in rows) == {
        (t.task_id, i): 1 for t in tasks for i in range(4)
    }
    scored = read_jsonl(tmp_path / "s.scored.jsonl")
    assert sorted(r["completion_id"] for r in scored) == sorted(r["completion_id"] for r in rows)


@pytest.mark.sandbox
@pytest.mark.data
@pytest.mark.slow
def test_pipeline_benchmark_prints_four_walls_and_the_ratio_last():
    """The benchmark's bookkeeping on 6 tasks (its figures come from `grpo-wb bench --pipeline`)."""
    from grpo_wb.bench.pipeline import bench_pipeline

    lines: list[str] = []
    res = bench_pipeline(n_tasks=6, points={"tiny": (0.05, 100000.0)}, concurrency=4, out=lines.append)
    (r,) = res
    assert (
        min(r.generation_s, r.scoring_s, r.sequential_s, r.streamed_s, r.smoke_sequential_s, r.smoke_overlapped_s) > 0
    )
    assert r.sequential_s >= max(r.generation_s, r.scoring_s) * 0.8
    assert lines[-1] == f"   pipeline ratio (streamed / max): {r.ratio:.2f}"
    assert any(line.startswith("   generation alone") and "streamed" in line for line in lines)
    assert any(line.startswith("   smoke loop, 1 steps of 6 x 16") for line in lines)


def _chat_rows(tmp_path):
    """Three stdin tasks as a verl/TRL chat row file imports them: each with the row's own messages; the last
    one's statement too long for the server's context."""
    from grpo_wb.tasks.records import Task, TestCase

    tasks, samples = [], {}
    for i, statement in enumerate(["Print the sum of two numbers.", "Print their product.", "Long. " * 200]):
        msgs = [{"role": "system", "content": "Answer in one ```python block."}, {"role": "user", "content": statement}]
        tasks.append(
            Task(
                task_id=f"row/{i}",
                prompt=statement,
                entry_point="",
                tests=(TestCase(name="io_0", type="stdio", input="2 3\n", output="5\n"),),
                metadata={"messages": msgs},
            )
        )
        samples[f"row/{i}"] = ["```python\na, b = map(int, input().split())\nprint(a + b)\n```"]
    path = tmp_path / "rows.jsonl"
    write_tasks(path, tasks)
    return tasks, path, samples


def test_sample_sends_each_rows_messages_and_logs_what_it_sent(tmp_path, capsys):
    tasks, path, samples = _chat_rows(tmp_path)
    out = tmp_path / "s.jsonl"
    with ReplayServer(tasks, samples) as srv:
        assert main(_replayed(path, srv, out, 2, 1)) == 0
    sent = {r["task_id"]: r["messages"] for r in srv.requests}
    assert sent == {t.task_id: t.metadata["messages"] for t in tasks}  # the row's own, system message too
    log = read_jsonl(tmp_path / "s.requests.jsonl")
    assert {r["task_id"]: (r["status"], r["endpoint"], r["prompt_source"], r["messages"]) for r in log} == {
        t.task_id: ("ok", "chat", "row", t.metadata["messages"]) for t in tasks
    }
    rows = read_jsonl(out)
    shas = {r["task_id"]: r["prompt_sha256"] for r in log}
    assert len(rows) == 6 and all(
        r["prompt_source"] == "row" and r["prompt_sha256"] == shas[r["task_id"]] for r in rows
    )


def test_a_task_the_server_refuses_is_named_retried_a_bounded_number_of_times_and_the_run_goes_on(tmp_path, capsys):
    """An HTTP 400 (prompt past the context length) for one task: the others are sampled, the task is named and
    logged; asked again until refused --max-refusals times in all (resumes included), then never again."""
    tasks, path, samples = _chat_rows(tmp_path)
    out = tmp_path / "s.jsonl"
    with ReplayServer(tasks, samples, max_prompt_chars=500) as srv:
        argv = _replayed(path, srv, out, 2, 1, "--max-refusals", "3")
        # a first run stopped after one refusal: what a crash or ^C leaves
        (out.parent / "s.requests.jsonl").write_text(
            json.dumps({"task_id": "row/2", "sample_indices": [0, 1], "status": "refused", "error": "earlier"}) + "\n"
        )
        assert main(argv) == 0
        printed = capsys.readouterr().out
        assert "wrote 4 completions" in printed
        assert "refused 1 task(s) 3 times" in printed and "row/2: " in printed and "maximum context length" in printed
        refused = [r["task_id"] for r in srv.requests if r.get("refused")]
        assert set(refused) == {"row/2"} and len(refused) >= 2  # asked twice more (a 400 to n=2 also tries n=1)
        log = read_jsonl(out.parent / "s.requests.jsonl")
        assert [r["status"] for r in log if r["task_id"] == "row/2"] == ["refused"] * 3
        assert all("maximum context length" in r["error"] for r in log[1:] if r["task_id"] == "row/2")
        served = len(srv.requests)
        assert main(argv) == 0  # resumed: nothing is asked again
        assert len(srv.requests) == served
        assert "not asking again for 1 task(s)" in capsys.readouterr().out
    assert sorted({r["task_id"] for r in read_jsonl(out)}) == ["row/0", "row/1"]
