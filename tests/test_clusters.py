"""Failure clusters: signatures, set-wide clusters, tasks whose samples all fail one way, and the command line."""

from __future__ import annotations

import pytest
from conftest import write_jsonl

from grpo_wb.bundled import CHAT_REPLIES
from grpo_wb.cli import main
from grpo_wb.errors import UserError
from grpo_wb.runs.recipes import score_samples_file
from grpo_wb.signal.clusters import FailureClusters, cluster_source, failure_kind, message_shape
from grpo_wb.tasks.importers import import_mapcoder
from grpo_wb.tasks.records import write_tasks


def row(tid, i, status="fail", error="AssertionError", test="t0", actual="1", passed=False):
    failure = {} if passed else {"test": test, "kind": "values", "error": error, "actual": actual}
    return {
        "task_id": tid,
        "completion_id": f"{tid}#{i}",
        "status": "pass" if passed else status,
        "passed": passed,
        "reward": float(passed),
        "error": "" if passed else error,
        "failed_tests": [] if passed else [test],
        "failure": failure,
    }


def test_messages_alike_read_alike():
    assert message_shape("NameError: name 'foo' is not defined") == "NameError: name '…' is not defined"
    assert (
        message_shape("Traceback (most recent call last):\nIndexError: index 12 out of 3")
        == "IndexError: index N out of N"
    )
    assert (
        message_shape("SyntaxError: '(' was never closed (<candidate>, line 7)")
        == "SyntaxError: '…' was never closed (<candidate>, line N)"
    )
    assert message_shape("x at 0x7f00ab12") == "x at 0x…"


def test_kinds():
    assert [
        failure_kind(s, e)
        for s, e in [
            ("fail", "AssertionError"),
            ("fail", "wrong output"),
            ("fail", "TypeError: bad"),
            ("error", "NameError: x"),
            ("timeout", ""),
            ("parse_failure", "no Python code block"),
            ("sandbox_error", "x"),
        ]
    ] == ["wrong answer", "wrong answer", "exception", "exception", "timeout", "no code", "sandbox"]


def test_clusters_count_rows_and_tasks_largest_first():
    rows = [
        row("a", 0),
        row("a", 1, error="NameError: name 'x' is not defined", status="error"),
        row("b", 0, error="NameError: name 'y' is not defined", status="error"),
        row("b", 1, passed=True),
        row("c", 0),
        row("c", 1),
    ]
    fc = FailureClusters().add_all(rows)
    assert (fc.rows, fc.failures) == (6, 5)
    top = [(c.kind, c.shape, c.rows, len(c.tasks)) for c in fc.top()]
    assert top == [("wrong answer", "AssertionError", 3, 2), ("exception", "NameError: name '…' is not defined", 2, 2)]
    assert fc.top(1)[0].example["completion_id"] == "a#0"


def test_a_task_that_fails_one_way_is_called_out_and_others_are_not():
    rows = [row("same", i, actual="42") for i in range(5)]  # one wrong output, one test
    rows += [row("env", i, status="error", error="ModuleNotFoundError: No module named 'numpy'") for i in range(4)]
    rows += [row("varied", i, actual=str(i)) for i in range(5)]  # wrong, but each its own way
    rows += [row("solved", i) for i in range(4)] + [row("solved", 4, passed=True)]
    rows += [row("few", i, actual="0") for i in range(3)]  # under min_samples
    same = {s.task_id: s for s in FailureClusters().add_all(rows).same_way(min_samples=4)}
    assert set(same) == {"same", "env"}
    assert same["same"].same_output and "same wrong output on t0" in same["same"].why
    assert same["env"].why.startswith("the environment")


@pytest.mark.sandbox
@pytest.mark.data
def test_the_chat_replies_to_humaneval_163_all_fail_the_same_way(tmp_path):
    """Real data: GPT-4-Turbo's, ChatGPT's and Gemini's replies to HumanEval/163 (whose tests contradict the
    obvious reading of its prompt) all give the same wrong answer to the same test."""
    mc = import_mapcoder(CHAT_REPLIES, "HumanEval")
    tasks = [t for t in mc.tasks if t.task_id == "HumanEval/163"]
    write_tasks(tmp_path / "t.jsonl", tasks)
    write_jsonl(tmp_path / "s.jsonl", [s for s in mc.samples if s["task_id"] == "HumanEval/163"])
    rows = score_samples_file(tmp_path / "t.jsonl", tmp_path / "s.jsonl", out=tmp_path / "scored.jsonl")
    assert len(rows) == 7 and not any(r["passed"] for r in rows)
    (s,) = FailureClusters().add_all(rows).same_way()
    assert (s.task_id, s.samples, s.kind, s.test, s.same_output) == (
        "HumanEval/163",
        7,
        "wrong answer",
        "assert_0",
        True,
    )


def test_headroom_prints_the_clusters(tmp_path, capsys):
    rows = [row("a", i, actual="7") for i in range(4)] + [row("b", 0, passed=True), row("b", 1)]
    f = write_jsonl(tmp_path / "scored.jsonl", rows)
    assert main(["headroom", str(f), "--clusters", "3"]) == 0
    out = capsys.readouterr().out
    assert "failures: 5 of 6 completions, in 1 clusters" in out
    assert "      5     2  wrong answer  AssertionError  (e.g. a#0)" in out
    assert "tasks whose samples all fail the same way: 1\n  a (4 samples" in out


def test_a_run_without_rollouts_is_one_line(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(UserError, match=r"run: has no rollouts.jsonl or last_rollouts.jsonl: no scored rows to read"):
        cluster_source(tmp_path / "run")
