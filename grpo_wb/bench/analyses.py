"""``grpo-wb bench --set analyses``: reading a results file of millions of rows, streamed, against keeping every row.

A results file holds each completion's text; the estimates need a pass and a reward per sample. The streamed
reader (:func:`grpo_wb.runs.scored.samples_from_scored_file`, orjson, a few bytes a sample) is timed beside the
anchor, the reader that keeps every row (:func:`~grpo_wb.runs.scored.read_scored_file`, what the estimates read
before), each in a fresh process so that its peak RSS is its own (the seconds are the reading; ``analyze``'s on
the samples read are printed apart), on synthetic files shaped like a real one
(CodeGen-16B's HumanEval rows: a completion of some 300 characters, a failure record, 10,000 tasks). The
explorer's pass (counts, clusters and the byte-offset index, :func:`grpo_wb.runs.explore.open_rollouts`) and one
task's rows fetched through the saved index (``group``: the rows read, not the file) are timed too.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grpo_wb.runs.explore import RolloutIndex, open_rollouts
from grpo_wb.runs.scored import read_scored_file, samples_from_scored_file
from grpo_wb.signal.clusters import cluster_file
from grpo_wb.signal.headroom import analyze, samples_from_scored_rows

ROW_TEMPLATE = {
    "task_id": "",
    "completion_id": "",
    "sample_index": 0,
    "completion": "    result = []\n    for i, x in enumerate(numbers):\n        if i > 0:\n"
    "            result.append(delimeter)\n        result.append(x)\n    return result\n" * 2,
    "status": "",
    "passed": False,
    "reward": 0.0,
    "tests_passed": 0,
    "tests_total": 7,
    "duration_s": 0.0091,
    "extraction_mode": "continuation",
    "error": "",
    "failed_tests": [],
    "stderr_tail": "",
    "cached": False,
    "meta": {"sample_idx": 0, "source_line": 1},
    "stopped_early": False,
    "extraction": {"mode": "continuation", "rule": "raw", "block": None, "n_blocks": 0},
    "judge": "grpo_wb",
    "unrewardable": "",
    "failure": {},
}


def write_results(path: Path, rows: int, tasks: int = 10_000, seed: int = 0) -> int:
    """A results file of ``rows`` rows over ``tasks`` tasks (each its own pass rate); returns its size in bytes."""
    rng = random.Random(seed)
    rates = [rng.random() for _ in range(tasks)]
    fail = dict(
        ROW_TEMPLATE,
        status="fail",
        error="AssertionError",
        failed_tests=["assert_2", "assert_3"],
        failure={
            "test": "assert_2",
            "kind": "values",
            "error": "AssertionError",
            "code": "assert candidate([1, 2, 3], 4) == [1, 4, 2, 4, 3]",
            "actual": "[1, 2, 3]",
        },
    )
    ok = dict(ROW_TEMPLATE, status="pass", passed=True, reward=1.0, tests_passed=7)
    # the constant part of each row serialised once; the ids spliced in
    parts = {
        k: json.dumps({**v, "task_id": "@T", "completion_id": "@C"}).split('"@T"') for k, v in (("p", ok), ("f", fail))
    }
    with open(path, "w", encoding="utf-8") as f:
        buf = []
        for i in range(rows):
            t = i % tasks
            head, tail = parts["p" if rng.random() < rates[t] else "f"]
            tid = f"task/{t}"
            buf.append(head + json.dumps(tid) + tail.replace('"@C"', json.dumps(f"{tid}#{i // tasks}"), 1) + "\n")
            if len(buf) >= 10_000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    return path.stat().st_size


def _child(kind: str, path: str) -> None:
    """Run one reader in this (fresh) process and print what it cost."""
    t0 = time.perf_counter()
    then = 0.0
    if kind in ("anchor", "streamed"):
        samples = (
            samples_from_scored_rows(read_scored_file(path)) if kind == "anchor" else samples_from_scored_file(path)
        )
        n = sum(s.n for s in samples)
        t1 = time.perf_counter()
        analyze(samples)
        then = time.perf_counter() - t1
        t0 += then  # the seconds printed are the reading's
    elif kind == "explorer":
        n = open_rollouts(path).rows
    elif kind == "group":  # one task's rows through the saved index, as a notebook opens one task
        index = RolloutIndex.load(Path(path))
        assert index is not None, "no saved index: run the explorer kind first"
        n = len(index.rows("task/7"))
    else:
        n = cluster_file(path).rows
    secs = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "rows": n,
                "seconds": secs,
                "analyze_seconds": then,
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def measure(kind: str, path: Path) -> dict[str, Any]:
    """One reader in a fresh interpreter: rows read, seconds and peak RSS."""
    out = subprocess.run(
        [sys.executable, "-c", f"from grpo_wb.bench.analyses import _child; _child({kind!r}, {str(path)!r})"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_analyses(
    sizes: Sequence[int], anchor_max: int = 1_000_000, folder: str | None = None
) -> list[dict[str, Any]]:
    """Time and peak RSS of the streamed reader (and clusters) for each size, with the anchor up to ``anchor_max`` rows
    (it keeps every row: some 2.4 GB per million here)."""
    results = []
    print(f"{'rows':>10} {'file MB':>8}  {'reader':<9} {'seconds':>8} {'rows/s':>9} {'peak MiB':>9} {'analyze s':>9}")
    with tempfile.TemporaryDirectory(dir=folder) as d:
        for n in sizes:
            path = Path(d) / f"results_{n}.jsonl"
            size = write_results(path, n)
            for kind in ("streamed", "clusters", "explorer", "group") + (("anchor",) if n <= anchor_max else ()):
                r = measure(kind, path)
                r.update(kind=kind, file_mb=size / 1e6)
                results.append(r)
                rate = "" if kind == "group" else f"{r['rows'] / r['seconds']:>9.0f}"
                then = f"{r['analyze_seconds']:>9.1f}" if kind in ("streamed", "anchor") else ""
                print(
                    f"{n:>10} {size / 1e6:>8.0f}  {kind:<9} {r['seconds']:>8.3g} {rate:>9} {r['peak_mib']:>9.0f} {then}"
                )
            path.unlink()
            RolloutIndex.index_path(path).unlink(missing_ok=True)
    return results
