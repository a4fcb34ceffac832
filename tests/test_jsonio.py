"""Crash-safe JSON lines: every line is flushed when write returns; fsyncs are per write, or at most every
sync_every seconds (and at close)."""
import os

from grpo_wb import jsonio
from grpo_wb.jsonio import JsonlAppender, iter_jsonl


def _count_fsyncs(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(jsonio.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    return calls


def test_every_write_is_flushed_and_fsynced(tmp_path, monkeypatch):
    calls = _count_fsyncs(monkeypatch)
    path = tmp_path / "a.jsonl"
    with JsonlAppender(path) as f:
        for i in range(5):
            f.write({"i": i})
            assert [r["i"] for _, r in iter_jsonl(path)] == list(range(i + 1))  # another reader sees it now
        f.write_many([{"i": 5}, {"i": 6}])
    assert len(calls) == 5 + 1 + 1  # one per write, one for the block, one at close


def test_sync_every_flushes_each_line_but_fsyncs_at_most_that_often(tmp_path, monkeypatch):
    calls = _count_fsyncs(monkeypatch)
    path = tmp_path / "b.jsonl"
    with JsonlAppender(path, sync_every=3600) as f:
        f.write({"i": 0})  # the clock starts when the file is opened: no fsync for an hour
        for i in range(1, 100):
            f.write({"i": i})
            assert sum(1 for _ in iter_jsonl(path)) == i + 1
        during = len(calls)
    assert during == 0 and len(calls) == 1  # none while writing, one at close
