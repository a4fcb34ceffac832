"""The rollout explorer's data and HTML: counts, the byte-offset index, one task's group, what a group view shows,
and bad input as one line."""

from __future__ import annotations

import gzip
import json
import os
import re
from html import unescape

import numpy as np
import pytest
from conftest import TOY, write_jsonl

from grpo_wb.errors import UserError
from grpo_wb.reports import explorer
from grpo_wb.runs import explore
from grpo_wb.runs.artifacts import RunWriter
from grpo_wb.runs.recipes import score_samples_file
from grpo_wb.runs.smoke import SmokeConfig, SmokeRun
from grpo_wb.signal.advantages import compute_advantages
from grpo_wb.tasks.records import Task, TestCase, write_tasks


def row(tid, i, status="fail", passed=False, reward=None, **kw):
    failure = (
        {}
        if passed
        else {
            "test": "t0",
            "kind": "values",
            "error": "AssertionError",
            "code": "assert candidate(1) == 2",
            "actual": str(i % 2),
        }
    )
    r = {
        "task_id": tid,
        "completion_id": f"{tid}#{i}",
        "sample_index": i,
        "completion": f"    return {i}\n",
        "status": "pass" if passed else status,
        "passed": passed,
        "reward": float(passed) if reward is None else reward,
        "error": "" if passed else "AssertionError",
        "failure": failure,
    }
    return {**r, **kw}


@pytest.fixture
def scored(tmp_path):
    rows = [
        row("a", 0, passed=True),
        row("a", 1),
        row("b", 0),
        row("a", 2, passed=True),
        row("b", 1, "timeout"),
        row("c", 0, passed=True),
        row("a", 3),
    ]
    return write_jsonl(tmp_path / "scored.jsonl", rows), rows


def test_counts_categories_and_the_index_give_each_task_its_own_rows_in_order(scored):
    path, rows = scored
    ro = explore.open_rollouts(path)
    assert ro.rows == 7 and list(ro.counts) == ["a", "b", "c"]
    recs = {r["task_id"]: r for r in explore.task_records(ro)}
    assert [(recs[t]["category"], recs[t]["passed"], recs[t]["samples"]) for t in "abc"] == [
        ("frontier", 2, 4),
        ("too hard", 0, 2),
        ("too easy", 1, 1),
    ]
    assert recs["b"]["statuses"] == "fail 1 · timeout 1"
    got = ro.group("a")
    assert [r["completion_id"] for r in got] == ["a#0", "a#1", "a#2", "a#3"]
    assert [r["advantage"] for r in got] == pytest.approx(compute_advantages([[1.0, 0.0, 1.0, 0.0]])[0])
    assert ro.group("nope") == []


def test_the_index_is_saved_beside_the_file_and_rebuilt_when_the_file_changes(scored):
    path, rows = scored
    explore.open_rollouts(path)
    ip = explore.RolloutIndex.index_path(path)
    assert ip.exists()
    idx = explore.RolloutIndex.load(path)
    assert idx is not None and [r["completion_id"] for r in idx.rows("b")] == ["b#0", "b#1"]
    with open(path, "a") as f:
        f.write(json.dumps(row("b", 2)) + "\n")
    assert explore.RolloutIndex.load(path) is None  # stale: size and mtime changed
    assert [r["completion_id"] for r in explore.open_rollouts(path).group("b")] == ["b#0", "b#1", "b#2"]
    with np.load(ip) as z:
        assert int(z["stamp"][0]) == os.path.getsize(path)


def test_a_read_only_folder_keeps_the_index_in_memory(scored, monkeypatch):
    path, _ = scored

    def refuse(*a, **k):
        raise PermissionError("read-only")

    monkeypatch.setattr(explore, "atomic_open", refuse)
    ro = explore.open_rollouts(path)
    assert ro.index.save() is False and not explore.RolloutIndex.index_path(path).exists()
    assert [r["completion_id"] for r in ro.group("c")] == ["c#0"]


def test_a_corrupt_index_is_no_index(scored):
    path, _ = scored
    explore.RolloutIndex.index_path(path).write_bytes(b"")
    assert explore.RolloutIndex.load(path) is None
    assert [r["completion_id"] for r in explore.open_rollouts(path).group("b")] == ["b#0", "b#1"]
    assert explore.RolloutIndex.load(path) is not None  # written again


def test_a_file_changed_after_opening_is_one_line_not_another_tasks_rows(scored):
    path, rows = scored
    ro = explore.open_rollouts(path)
    write_jsonl(path, [row("b", i) for i in range(len(rows))])
    with pytest.raises(UserError, match="changed since it was opened: open it again"):
        ro.group("a")


def test_rows_json_reads_a_bom_nan_and_a_partial_last_line(tmp_path):
    text = (
        json.dumps(row("a", 0)).replace('"reward": 0.0', '"reward": NaN') + "\n" + json.dumps(row("a", 1, passed=True))
    )
    p = tmp_path / "scored.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode() + b"\n" + b'{"task_id": "a", "pas')
    ro = explore.open_rollouts(p)
    assert [r["completion_id"] for r in ro.group("a")] == ["a#0", "a#1"]
    assert ro.notes == ["scored.jsonl:3: a partial last line (still being written?) left out"]


def test_a_gzip_file_is_read_from_a_decompressed_copy(tmp_path, scored):
    path, _ = scored
    gz = tmp_path / "scored.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    ro = explore.open_rollouts(gz)
    assert ro.path == gz and ro.index.path != gz and ro.rows == 7
    assert [r["completion_id"] for r in ro.group("a")] == ["a#0", "a#1", "a#2", "a#3"]
    assert ro.notes[0].startswith("scored.jsonl.gz: gzip-compressed, read from a decompressed copy")
    assert not explore.RolloutIndex.index_path(gz).exists()


def test_a_group_view_shows_a_pass_and_one_row_per_way_it_fails_first():
    rows = [row("t", i, passed=i in (5, 6)) for i in range(10)]
    rows[3]["status"], rows[3]["error"] = "error", "NameError: name 'x' is not defined"
    picked = explore.showcase_rows(rows, 4)
    # a pass (#5), the two wrong outputs ("0" first seen at #0, "1" at #1), the NameError (#3); in order
    assert [r["sample_index"] for r in picked] == [0, 1, 3, 5]
    assert [r["sample_index"] for r in explore.showcase_rows(rows, 100)] == list(range(10))


def test_rows_without_completions_and_tasks_missing_from_the_task_file_are_one_line_each(tmp_path):
    rows = [row("toy/add", 0), {k: v for k, v in row("elsewhere/1", 0).items() if k != "completion"}]
    path = write_jsonl(tmp_path / "scored.jsonl", rows)
    ro = explore.open_rollouts(path, TOY)
    assert ro.notes == [
        "scored.jsonl: 1 of 2 rows carry no completion text (shown with their status, reward and failure only)",
        "scored.jsonl: 1 of 2 tasks are not in toy_tasks.jsonl (first: elsewhere/1); shown without their prompt",
    ]
    page = unescape(explorer.render(ro))
    assert "no completion text recorded" in page and "Return the sum" in page  # toy/add's prompt is there


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "has no scored rows: nothing to explore"),
        ('{"task_id": "a", "passed": true}\n{"task_id": 3}\n', r":2: not a scored completion"),
        ('{"task_id": "a", "passed": true}\nnot json\n', r":2: invalid JSON"),
    ],
)
def test_bad_results_files_are_one_line_naming_the_line(tmp_path, content, message):
    p = tmp_path / "scored.jsonl"
    p.write_text(content)
    with pytest.raises(UserError, match=message) as e:
        explore.open_rollouts(p)
    assert "\n" not in str(e.value)


def test_a_missing_source_is_one_line(tmp_path):
    with pytest.raises(UserError, match="no such results file or run directory"):
        explore.open_rollouts(tmp_path / "nope.jsonl")


def test_the_page_links_every_task_and_holds_each_group_offline(scored):
    path, _ = scored
    page = explorer.render(explore.open_rollouts(path))
    for t in "abc":
        assert f'href="#task={t}"' in page and f'data-task="{t}"' in page
    assert re.findall(r'<section class="wbx-group" data-task="([^"]+)"', page) == ["b", "a", "c"]  # by pass rate
    assert not re.search(r'<script[^>]+src="https?:', page) and "_itables_" in page  # DataTables embedded
    assert 'class="highlight' not in page and 'class="wbx-code"' in page
    assert explorer.task_link("HumanEval/32") == "#task=HumanEval/32"


def test_text_from_the_rows_is_escaped_in_the_table_and_the_groups(tmp_path):
    hostile = "TypeError: <lambda>() takes 1 </script><img src=x onerror=alert(1)>"
    rows = [row("t<1>&'x\"", 0, status="error", error=hostile), row("t<1>&'x\"", 1, passed=True)]
    rows[0]["failure"] = {**rows[0]["failure"], "error": hostile}
    path = write_jsonl(tmp_path / "scored.jsonl", rows)
    page = explorer.render(explore.open_rollouts(path))
    assert "<img src=x" not in page and "</script><img" not in page and "<lambda>" not in page
    assert "&lt;lambda&gt;" in page and 'data-task="t&lt;1&gt;&amp;&#x27;x&quot;"' in page


@pytest.mark.sandbox
def test_real_scored_failures_show_the_call_and_the_diff(tmp_path):
    """Scored here: a stdio task's wrong output is shown as a diff of expected and actual lines, a value test's
    failure as the call and the actual value, a hang as a timeout."""
    task = Task(
        "io/double",
        "Read n, print 2n and then n.",
        "",
        (TestCase("t0", type="stdio", input="21\n", output="42\n21\n"),),
    )
    write_tasks(tmp_path / "tasks.jsonl", [task])
    samples = [
        {"task_id": "io/double", "completion": "n = int(input())\nprint(2 * n)\nprint(n + 1)\n"},
        {"task_id": "io/double", "completion": "while True:\n    pass\n"},
        {"task_id": "io/double", "completion": "n = int(input())\nprint(2 * n)\nprint(n)\n"},
    ]
    write_jsonl(tmp_path / "s.jsonl", samples)
    score_samples_file(tmp_path / "tasks.jsonl", tmp_path / "s.jsonl", timeout=1.0, out=tmp_path / "scored.jsonl")
    ro = explore.open_rollouts(tmp_path / "scored.jsonl", tmp_path / "tasks.jsonl")
    statuses = [r["status"] for r in ro.group("io/double")]
    assert statuses == ["fail", "timeout", "pass"]
    page = explorer.render(ro)
    assert '<span class="wbx-del">- 21</span><span class="wbx-ins">+ 22</span>' in page
    assert "42\n" in unescape(page) and 'data-status="timeout"' in page


@pytest.mark.sandbox
def test_a_smoke_run_keeps_every_steps_rollouts_and_the_explorer_reads_them(tmp_path):
    out = tmp_path / "run"
    cfg = SmokeConfig(tasks=str(TOY), out=str(out), group_size=2, batch_size=2, steps=3, seed=0, timeout=0.5)
    SmokeRun(cfg, overwrite=True, progress=False, log=lambda m: None).run()
    lines = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in lines}) == [0, 1, 2] and len(lines) == 3 * 2 * 2
    last = [json.loads(x) for x in (out / "last_rollouts.jsonl").read_text().splitlines()]
    assert [r for r in lines if r["step"] == 2] == last
    ro = explore.open_rollouts(out)
    assert ro.path.name == "rollouts.jsonl" and ro.rows == 12
    tid = lines[0]["task_id"]
    assert [r["advantage"] for r in ro.group(tid)] == [r["advantage"] for r in lines if r["task_id"] == tid]
    assert "step 0 · #" in explorer.render(ro)


def test_a_resumed_run_drops_the_unfinished_steps_rollouts(tmp_path):
    """RunWriter.truncate_from filters rollouts.jsonl line by line as it does groups and metrics."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("metrics.jsonl", "groups.jsonl", "rollouts.jsonl"):
        write_jsonl(run / name, [{"step": s, "task_id": "a", "passed": True} for s in (0, 0, 1, 2)])
    with RunWriter(run) as w:
        w.truncate_from(1)
        assert [m["step"] for m in w.history] == [0, 0]
    for name in ("metrics.jsonl", "groups.jsonl", "rollouts.jsonl"):
        assert [json.loads(x)["step"] for x in (run / name).read_text().splitlines()] == [0, 0], name
