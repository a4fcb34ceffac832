"""``grpo-wb bench --set import``: how fast row datasets import, and whether memory stays flat in rows.

Synthetic TACO rows with ten stdin/stdout tests each are written as JSONL and as Parquet at two sizes. For each
file the benchmark prints, side by side: reading the rows alone (the floor: JSON decoding or Arrow to Python),
the whole import (rows read, tests built, each task checked as ``tasks validate`` checks a line, the canonical
file written), its rows/s against the 5,000 rows/s target, and the import's peak traced Python memory at both
sizes. Rows and tasks stream; what grows with the rows is the set of task ids kept to catch duplicates (about
160 bytes a row here). Timings and memory come from separate passes, because
tracing allocations slows Python down.

Then the formats whose rows are shaped otherwise (:data:`FORMAT_ROWS`: DeepCoder's four subsets in turn, AceCode's
assert rows with their chat prompt and sampled programs, NeMo Gym's nested prompt and tests, open-r1/codeforces rows
with official and generated tests, a checker and limits, CodeContests+ with a testlib checker, HardTests with its
pickled tests, Klear-CodeTest with its checker list), ten tests a row, at the smaller size in both containers:
the same read-only floor and import rate.
"""

from __future__ import annotations

import base64
import json
import pickle
import tempfile
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_wb.tasks.rowformats import import_rows
from grpo_wb.tasks.rows import RowSource, iter_rows, write_rows

TARGET_ROWS_PER_S = 5000
SIZES = (5000, 20000)


def synthetic_rows(n: int, tests: int = 10) -> list[dict]:
    """TACO rows: a question, a solution, and ``tests`` multi-line stdin cases with their outputs."""
    rows = []
    for i in range(n):
        ins = [f"{k + 2}\n" + " ".join(str((i * 7 + k * j) % 97) for j in range(k + 2)) + "\n" for k in range(tests)]
        outs = [f"{sum((i * 7 + k * j) % 97 for j in range(k + 2))}\n" for k in range(tests)]
        rows.append(
            {
                "question": f"Problem {i}: read n, then n numbers; print their sum.",
                "solutions": json.dumps(["n = int(input())\nprint(sum(map(int, input().split())))"]),
                "starter_code": "",
                "input_output": json.dumps({"inputs": ins, "outputs": outs}),
                "difficulty": "EASY",
                "problem_id": i,
            }
        )
    return rows


def _deepcoder_row(i: int, tests: int) -> dict:
    """One row of DeepCoder's subsets in turn: taco (a dict), primeintellect, lcbv5 (functional), codeforces."""
    ins = [f"{k + 2}\n" + " ".join(str((i * 7 + k * j) % 97) for j in range(k + 2)) + "\n" for k in range(tests)]
    outs = [f"{sum((i * 7 + k * j) % 97 for j in range(k + 2))}\n" for k in range(tests)]
    kind = i % 4
    if kind == 0:
        cases: object = {"inputs": ins, "outputs": outs}
    elif kind == 1:
        cases = [{"input": x, "output": y, "type": "stdin_stdout", "fn_name": None} for x, y in zip(ins, outs)]
    elif kind == 2:
        cases = [{"input": f"{k}\n{i}", "output": str(k + i), "testtype": "functional"} for k in range(tests)]
    else:
        cases = [{"input": x, "output": y} for x, y in zip(ins, outs)]
    return {
        "problem": f"Problem {i}: read n, then n numbers; print their sum.",
        "tests": json.dumps(cases),
        "solutions": ["n = int(input())\nprint(sum(map(int, input().split())))"],
        "starter_code": "class Solution:\n    def add(self, a: int, b: int) -> int:\n        " if kind == 2 else "",
        "metadata": json.dumps({"func_name": "add"} if kind == 2 else {}),
    }


def _acecode_row(i: int, tests: int) -> dict:
    q = f"Write a function `add_{i}(a, b)` that returns a + b."
    return {
        "id": f"oss_{i}",
        "source": "oss",
        "question": q,
        "test_cases": [f"assert add_{i}({k}, {i}) == {k + i}" for k in range(tests)],
        "inferences": [
            {
                "completion": f"def add_{i}(a, b):\n    return a + b",
                "completion_id": c,
                "model_name": "m",
                "pass_rate": 1.0,
            }
            for c in range(2)
        ],
        "context_messages": [{"content": q, "role": "user"}],
    }


def _nemo_gym_row(i: int, tests: int) -> dict:
    base = synthetic_rows(1, tests)[0]
    io = json.loads(base["input_output"])
    return {
        "responses_create_params": {"input": [{"role": "user", "content": f"Problem {i}: " + base["question"]}]},
        "verifier_metadata": {"unit_tests": {"inputs": io["inputs"], "outputs": io["outputs"]}},
        "hash_id": f"{i:032x}",
        "dataset": "code_contests",
        "source": "codeforces",
    }


_CF_CHECKER = "import sys\nprint(int(open(sys.argv[2]).read().split() == open(sys.argv[3]).read().split()))\n"


def _codeforces_row(i: int, tests: int) -> dict:
    """An open-r1/codeforces row: a statement in parts, official and generated tests, a checker and limits."""
    io = json.loads(synthetic_rows(1, tests)[0]["input_output"])
    half = tests // 2
    return {
        "id": f"{1000 + i}A",
        "contest_id": str(1000 + i),
        "index": "A",
        "title": f"Problem {i}",
        "description": "Read n, then n numbers; print their sum.",
        "input_format": "n, then n numbers.",
        "output_format": "Their sum.",
        "time_limit": 2.0,
        "memory_limit": 256.0,
        "rating": 800,
        "official_tests": [{"input": x, "output": y} for x, y in zip(io["inputs"][:half], io["outputs"][:half])],
        "generated_tests": [{"input": x, "output": y} for x, y in zip(io["inputs"][half:], io["outputs"][half:])],
        "generated_checker": _CF_CHECKER,
        "input_mode": "stdio",
    }


def _cases(i: int, tests: int) -> list[dict]:
    io = json.loads(synthetic_rows(1, tests)[0]["input_output"])
    return [{"input": x, "output": y} for x, y in zip(io["inputs"], io["outputs"])]


def _ccplus_row(i: int, tests: int) -> dict:
    """A CodeContests+ row (config 1x): tests, a testlib checker, limits in ms and MB, tagged submissions."""
    return {
        "source": "codeforces",
        "id": f"{1000 + i}A",
        "title": f"Problem {i}",
        "description": "Read n, then n numbers; print their sum.",
        "time_limit": 2000,
        "memory_limit": 256,
        "checker": '#include "testlib.h"\nint main(int argc, char* argv[]) { registerTestlibCmd(argc, argv);'
        ' if (ans.readLong() != ouf.readLong()) quitf(_wa, "differ"); quitf(_ok, "ok"); }\n',
        "correct_submissions": [{"code": "n = int(input())\nprint(sum(map(int, input().split())))", "language": "py3"}],
        "incorrect_submissions": [],
        "test_cases": _cases(i, tests),
    }


def _hardtests_row(i: int, tests: int) -> dict:
    """A HardTests problem joined with its tests row: the generated tests base64/zlib/pickle-encoded, as shipped."""
    cases = _cases(i, tests)
    return {
        "pid": f"p{i}",
        "question_title": f"Problem {i}",
        "question_content": "Read n numbers; print their sum.",
        "public_test_cases": [{**cases[0], "testtype": "stdin"}],
        "time_limit": "2 seconds",
        "memory_limit": "256 megabytes",
        "solutions": [{"code": "n = int(input())\nprint(sum(map(int, input().split())))", "language": "python3"}],
        "test_cases_kit": {"pid": f"p{i}", "output_judging_function": None},
        "test_cases": base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases[1:])))).decode(),
    }


def _klear_row(i: int, tests: int) -> dict:
    return {
        "custom_id": f"code_contest_{i}",
        "question": f"Problem {i}: read n numbers; print their sum.",
        "starter_code": "",
        "solutions": ["n = int(input())\nprint(sum(map(int, input().split())))"],
        "checker": ["def is_valid_output(i, o, e):\n    return o.split() == e.split()\n"],
        "type": "stdin",
        "reward": {"ground_truth": {"input_output": _cases(i, tests), "type": "stdin", "fn_name": None}},
        "time-limit": "2",
        "memory-limit": 256.0,
    }


#: a synthetic row of each format whose rows are shaped unlike TACO's: ``label -> (format, (row number, tests) ->
#: row)``
FORMAT_ROWS: dict[str, tuple[str, Callable[[int, int], dict]]] = {
    "deepcoder": ("deepcoder", _deepcoder_row),
    "acecode": ("acecode", _acecode_row),
    "nemo-gym": ("nemo-gym", _nemo_gym_row),
    "open-r1/cf": ("open-r1", _codeforces_row),
    "cc-plus": ("code-contests-plus", _ccplus_row),
    "hardtests": ("hardtests", _hardtests_row),
    "klear": ("klear", _klear_row),
}


def bench_formats(out: Callable[[str], None] = print, n: int = SIZES[0], tmp: Path | None = None) -> list[dict]:
    """Each of :data:`FORMAT_ROWS` at ``n`` rows, JSONL and Parquet: print and return its read and import rates."""
    results: list[dict[str, Any]] = []  # JSON records: names, counts and rates
    with tempfile.TemporaryDirectory(prefix="grpo_wb_bench_formats_") as own:
        tmp_path = tmp or Path(own)
        out(f"== import: other formats, {n} rows with 10 tests each")
        for label, (fmt, make) in FORMAT_ROWS.items():
            rows = [make(i, 10) for i in range(n)]
            for container in ("jsonl", "parquet"):
                src = tmp_path / f"{label.replace('/', '_')}{n}.{container}"
                write_rows(src, rows)
                dst = tmp_path / f"{src.name}.tasks.jsonl"
                read_s = _timed(lambda: sum(1 for _ in iter_rows(RowSource(str(src)))))  # noqa: B023 (called here)
                import_s = _timed(lambda: import_rows(fmt, src, dst))  # noqa: B023 (called here)
                rec: dict[str, Any] = {
                    "format": label,
                    "container": container,
                    "rows": n,
                    "read_rows_per_s": n / read_s,
                    "import_rows_per_s": n / import_s,
                }
                results.append(rec)
                out(
                    f"{label:<10} {container:<7} {n:>6}  {rec['read_rows_per_s']:>8.0f} r/s  "
                    f"{rec['import_rows_per_s']:>8.0f} r/s  {rec['import_rows_per_s'] / TARGET_ROWS_PER_S:>8.2f}x"
                )
    return results


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _peak_mib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def bench_import(out: Callable[[str], None] = print, sizes: tuple[int, ...] = SIZES) -> list[dict]:
    """Run the benchmark; print and return one record per (container, size) of TACO rows (the other formats'
    records: :func:`bench_formats`, whose lines this prints too)."""
    results: list[dict[str, Any]] = []  # JSON records: names, counts and rates
    with tempfile.TemporaryDirectory(prefix="grpo_wb_bench_import_") as tmp:
        tmp_path = Path(tmp)
        out(
            f"== import: TACO rows with 10 stdin tests each, sizes {', '.join(map(str, sizes))}; "
            f"target {TARGET_ROWS_PER_S} rows/s"
        )
        out(f"{'container':<9} {'rows':>6}  {'read only':>12}  {'import':>12}  {'vs target':>9}  {'peak MiB':>8}")
        for n in sizes:
            rows = synthetic_rows(n)
            for container in ("jsonl", "parquet"):
                src = tmp_path / f"rows{n}.{container}"
                write_rows(src, rows)
                dst = tmp_path / f"tasks{n}.{container}.jsonl"
                read_s = _timed(lambda: sum(1 for _ in iter_rows(RowSource(str(src)))))  # noqa: B023 (called here)
                import_s = _timed(lambda: import_rows("taco", src, dst))  # noqa: B023 (called here)
                peak = _peak_mib(lambda: import_rows("taco", src, dst))  # noqa: B023 (called here)
                rec: dict[str, Any] = {
                    "container": container,
                    "rows": n,
                    "read_rows_per_s": n / read_s,
                    "import_rows_per_s": n / import_s,
                    "peak_mib": peak,
                }
                results.append(rec)
                out(
                    f"{container:<9} {n:>6}  {rec['read_rows_per_s']:>8.0f} r/s  {rec['import_rows_per_s']:>8.0f} r/s  "
                    f"{rec['import_rows_per_s'] / TARGET_ROWS_PER_S:>8.2f}x  {peak:>8.1f}"
                )
        bench_formats(out, sizes[0], tmp_path)
    for container in ("jsonl", "parquet"):
        peaks = [r["peak_mib"] for r in results if r["container"] == container]
        per_row = (peaks[-1] - peaks[0]) * 2**20 / (sizes[-1] - sizes[0])
        out(
            f"{container}: peak traced memory {peaks[0]:.1f} MiB at {sizes[0]} rows, {peaks[-1]:.1f} MiB at "
            f"{sizes[-1]} rows: {per_row:.0f} bytes per row more (the set of task ids that catches duplicates; "
            "rows and tasks stream)"
        )
    return results
