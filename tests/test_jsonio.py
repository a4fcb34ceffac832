"""Crash-safe JSON lines: every line is flushed when write returns; fsyncs are per write, or at most every
sync_every seconds (and at close). No content makes a writer fail."""

import json
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


# a child's `raise ValueError("\ud800")` or a model's "\ud800" escape: lone surrogates, which UTF-8 cannot encode
HOSTILE = {
    "error": "ValueError: \ud800",
    "\udc00key": ["a\ud800b", {"nested \udfff": ("\ud83d", 1.5, None)}],
    "ok": "é ✓ 😀",
}


def test_writers_never_fail_on_lone_surrogates_in_keys_and_values(tmp_path):
    """Each JSON writer writes the row whole and a reader gets back the very strings (escaped as ``\\udXXX``)."""
    expected = json.loads(json.dumps(HOSTILE))  # what ensure_ascii JSON round-trips to: tuples become lists
    line = jsonio.dumps(HOSTILE)
    line.encode("utf-8")
    assert json.loads(line) == expected and "é ✓ 😀" in line  # the rest stays readable, not \u-escaped
    with JsonlAppender(tmp_path / "a.jsonl") as f:
        f.write(HOSTILE)
        f.write_many([HOSTILE, {"i": 1}])
    jsonio.atomic_write_jsonl(tmp_path / "b.jsonl", [HOSTILE, HOSTILE])
    jsonio.atomic_write_json(tmp_path / "c.json", HOSTILE)
    assert [r for _, r in iter_jsonl(tmp_path / "a.jsonl")] == [expected, expected, {"i": 1}]
    assert [r for _, r in iter_jsonl(tmp_path / "b.jsonl")] == [expected, expected]
    assert jsonio.read_json(tmp_path / "c.json") == expected


def test_a_text_writer_never_fails_on_lone_surrogates(tmp_path):
    jsonio.atomic_write_text(tmp_path / "report.md", "error: ValueError: \ud800\n")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "error: ValueError: \\ud800\n"


def test_encodable_text_shows_the_escape_and_joins_valid_pairs():
    clean = jsonio.encodable(HOSTILE)
    assert clean["error"] == "ValueError: \\ud800"
    assert clean["\\udc00key"] == ["a\\ud800b", {"nested \\udfff": ("\\ud83d", 1.5, None)}]
    assert jsonio.encodable("\ud83d\ude00") == "😀"  # a valid pair (from a 'surrogatepass' decode) is its character
    json.dumps(clean, ensure_ascii=False).encode("utf-8")
    text = "plain ascii"
    assert jsonio.encodable(text) is text and jsonio.encodable(HOSTILE["ok"]) is HOSTILE["ok"]


def test_the_fast_reader_reads_what_json_reads(tmp_path):
    """orjson for the analyses, json where orjson refuses (NaN, lone surrogates); the same objects, the same errors."""
    import gzip

    lines = [
        '{"task_id": "a", "passed": true, "reward": 1.0, "meta": {"k": [1, 2.5, null]}}',
        "",
        '{"task_id": "b", "passed": false, "reward": NaN}',
        '{"text": "\\ud800 caf\\u00e9 \u00e9"}',
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    for p in (path, gz):
        slow, fast = list(iter_jsonl(p)), list(iter_jsonl(p, fast=True))
        assert [n for n, _ in fast] == [1, 3, 4] and repr(fast) == repr(slow)
    path.write_text('{"a": 1}\n{"a": \n')
    errors = []
    for fast in (False, True):
        try:
            list(iter_jsonl(path, fast=fast))
        except Exception as e:  # noqa: BLE001 - the message is what is compared
            errors.append(str(e))
    assert errors[0] == errors[1] and errors[0].startswith(f"{path}:2: invalid JSON")
