"""DeepCoder, AceCode and NeMo Gym rows in, judged, and back out in their own shape.

The fixtures (tests/fixtures/rows/{deepcoder,acecode,nemo-gym}.jsonl) are written from each published schema
(the sources are named in grpo_wb/tasks/rowformats/: deepcoder.py, acecode.py, nemo_gym.py): DeepCoder's four
subsets (TACO's dict, PrimeIntellect's typed cases, LiveCodeBench's functional and stdin cases with ``metadata``,
Codeforces' bare cases, ``tests`` as a JSON string and once decoded), AceCode's assert rows with their chat prompt
and sampled programs, NeMo Gym's Responses-API prompt and unit tests; each file ends with bad rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TOY, import_rows, read_jsonl, write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowexport import export_rows
from grpo_wb.tasks.rowformats import RLLM_MAX_TESTS, parse_row, rllm_selection
from grpo_wb.tasks.rows import RowSource

FIX = Path(__file__).parent / "fixtures" / "rows"
NEW = ["deepcoder", "acecode", "nemo-gym"]


_import = import_rows


# ----------------------------------------------------------------------------- what each format reads


def test_deepcoder_rows():
    tasks, s = _import("deepcoder", skip_bad=True)
    assert (s.read, s.imported) == (10, 7)
    assert s.skipped == {
        "tests is not JSON (Expecting value)": 1,
        "functional tests without metadata.func_name": 1,
        "missing field 'tests'": 1,
    }
    by = {t.task_id: t for t in tasks}
    assert [by[f"deepcoder/{i}"].metadata["subset"] for i in range(7)] == [
        "primeintellect",
        "taco",
        "taco",
        "lcbv5",
        "lcbv5",
        "codeforces",
        "primeintellect",
    ]
    # PrimeIntellect's stdin cases: stdio tests, its fenced gold solution the reference
    pi = by["deepcoder/0"]
    assert pi.is_script and len(pi.tests) == 6 and pi.canonical_solution.startswith("```python")
    # TACO's dict: every test by default; the first solution is the reference, the other one kept
    taco = by["deepcoder/1"]
    assert len(taco.tests) == 17 and taco.output_match == "lines" and len(taco.solutions) == 1
    assert taco.metadata["trainer_reward"] == "taco"
    assert by["deepcoder/2"].tests[0].code == "assert apps_equal(candidate(*[0]), [1])"
    # lcbv5: LiveCodeBench's rules, the starter code under the problem
    func, stdin = by["deepcoder/3"], by["deepcoder/4"]
    assert func.entry_point == "addTwo" and func.tests[1].code == "assert values_equal(candidate(*[-5, 5]), 0)"
    assert "class Solution" in func.prompt and func.metadata["trainer_reward"] == "livecodebench"
    assert stdin.output_match == "numeric-lines" and stdin.prelude == ""
    # Codeforces' bare cases, given decoded (not as a JSON string)
    assert by["deepcoder/5"].is_script and by["deepcoder/5"].tests[0].input == "3\n1 5 2\n"
    # PrimeIntellect's function_call cases: its own rule, and no trainer reward
    fc = by["deepcoder/6"]
    assert fc.tests[0].code == "assert str(candidate(1)).strip() == '2'"
    assert "spreads it into one argument per character" in fc.metadata["trainer_unrewardable"]
    assert "trainer_reward" not in fc.metadata and "import_recipe" not in fc.metadata


def test_deepcoder_rllm_recipe_runs_the_tests_rllm_runs(tmp_path):
    """rllm 874daa4's check_correctness: over 15 tests, the 15 longest inputs, longest first; lcbv5 keeps all."""
    tasks, s = _import("deepcoder", skip_bad=True, recipe="rllm")
    by = {t.task_id: t for t in tasks}
    rows = read_jsonl(FIX / "deepcoder.jsonl")
    ins = json.loads(rows[1]["tests"])["inputs"]
    longest = sorted(ins, key=len, reverse=True)[:RLLM_MAX_TESTS]
    assert [t.input for t in by["deepcoder/1"].tests] == longest
    assert by["deepcoder/1"].metadata["tests_dropped_by_recipe"] == 2
    assert by["deepcoder/1"].metadata["import_recipe"] == "rllm"
    # a call-based dict over 15 tests loses fn_name in rllm's selection: its trainer cannot reward it
    call = by["deepcoder/2"]
    assert call.entry_point == "add_one" and len(call.tests) == 15
    assert "drops fn_name" in call.metadata["trainer_unrewardable"]
    assert sum(n for what, n in s.notes.items() if what.startswith("over 15 tests")) == 2
    # under 15 tests nothing changes
    assert len(by["deepcoder/0"].tests) == 6 and "tests_dropped_by_recipe" not in by["deepcoder/0"].metadata
    # lcbv5 rows go to rllm's LiveCodeBench grader, which runs every test
    lcb = {
        "problem": "p",
        "tests": json.dumps([{"input": "x" * k, "output": "1\n", "testtype": "stdin"} for k in range(1, 19)]),
        "metadata": "{}",
    }
    (t,), _ = _import("deepcoder", write_jsonl(tmp_path / "lcb.jsonl", [lcb]), recipe="rllm")
    assert len(t.tests) == 18
    # the selection itself, on PrimeIntellect's list shape: ties keep their order
    cases = [{"input": "ab" if i % 2 else "a", "output": str(i)} for i in range(20)]
    kept, dropped = rllm_selection(cases)
    assert dropped == 5 and [c["output"] for c in kept] == [str(i) for i in range(1, 20, 2)] + ["0", "2", "4", "6", "8"]


def test_recipe_goes_with_deepcoder_only(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    assert (
        main(["tasks", "import", "acecode", "--src", str(FIX / "acecode.jsonl"), "--out", str(out), "--recipe", "rllm"])
        == 1
    )
    assert "--recipe goes with tasks import deepcoder (rllm)" in capsys.readouterr().err
    with pytest.raises(UserError, match="--recipe rllm does not go with nemo-gym rows"):
        _import("nemo-gym", recipe="rllm")
    with pytest.raises(ValueError, match="acecode rows take no recipe 'rllm'"):
        parse_row("acecode", read_jsonl(FIX / "acecode.jsonl")[0], recipe="rllm")
    assert (
        main(
            [
                "tasks",
                "import",
                "deepcoder",
                "--src",
                str(FIX / "deepcoder.jsonl"),
                "--out",
                str(out),
                "--skip-bad",
                "--recipe",
                "rllm",
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    assert "wrote 7 tasks" in printed.out and "rllm's 15 with the longest inputs kept" in printed.err
    assert len(load_tasks(out)) == 7


def test_acecode_rows():
    tasks, s = _import("acecode", skip_bad=True)
    assert s.skipped == {"test_cases is empty": 1, "test_cases[1] does not compile (invalid syntax)": 1}
    add, counter, words = tasks
    rows = read_jsonl(FIX / "acecode.jsonl")
    # the chat prompt is the task's messages, as other chat formats keep theirs
    assert add.task_id == "acecode/oss_0" and add.metadata["messages"] == rows[0]["context_messages"]
    assert add.prompt == rows[0]["question"] and add.entry_point == "add_numbers"
    assert [t.code for t in add.tests] == rows[0]["test_cases"]
    # sampled programs are counted, never references: the schema says none of them is known right
    assert add.metadata["n_inferences"] == 2 and add.canonical_solution is None and not add.solutions
    assert counter.entry_point == "Counter" and len(counter.tests) == 5
    # no context_messages: the question is the prompt
    assert "messages" not in words.metadata and words.prompt == rows[2]["question"]


def test_acecode_v2_names_its_tests_column_tests(tmp_path):
    row = {"id": "v2_0", "question": "Write f(x) returning x.", "tests": ["assert f(1) == 1", "assert f(0) == 0"]}
    (t,), _ = _import("acecode", write_jsonl(tmp_path / "v2.jsonl", [row]))
    assert t.entry_point == "f" and len(t.tests) == 2
    with pytest.raises(Exception, match="missing field 'test_cases' \\(or 'tests'\\)"):
        parse_row("acecode", {"question": "q"})
    with pytest.raises(Exception, match="cannot tell which function test_cases call"):
        parse_row("acecode", {"question": "q", "test_cases": ["assert 1 == 1"]})


def test_nemo_gym_rows():
    tasks, s = _import("nemo-gym", skip_bad=True)
    assert s.skipped == {"unit_tests has 2 inputs but 1 outputs": 1, "missing field 'verifier_metadata'": 1}
    rows = read_jsonl(FIX / "nemo-gym.jsonl")
    plus, half, spaces = tasks
    assert plus.task_id == "nemo-gym/" + rows[0]["hash_id"]
    assert plus.metadata["messages"] == rows[0]["responses_create_params"]["input"]
    assert plus.prompt.endswith("Read two integers a and b and print a + b.")
    # LiveCodeBench's comparison, which the verifier runs
    assert all(t.output_match == "numeric-lines" and t.metadata["trainer_reward"] == "livecodebench" for t in tasks)
    assert (plus.metadata["dataset"], plus.metadata["origin"]) == ("code_contests", "codeforces")
    assert spaces.tests[0].output == "1 \n1 2 3 \n"


def test_nemo_gym_call_based_unit_tests(tmp_path):
    """LiveCodeBench's functional format (fn_name, one JSON value per input line)."""
    base = read_jsonl(FIX / "nemo-gym.jsonl")[0]
    call = {
        **base,
        "hash_id": "call",
        "verifier_metadata": {
            "unit_tests": {"inputs": ["1\n2", "[1, 2]\n3"], "outputs": ["3", "[1, 2, 3]"], "fn_name": "f"}
        },
    }
    (c,), _ = _import("nemo-gym", write_jsonl(tmp_path / "n.jsonl", [call]))
    assert c.entry_point == "f" and c.tests[1].code == "assert values_equal(candidate(*[[1, 2], 3]), [1, 2, 3])"


def test_a_bad_row_is_named_by_its_line(tmp_path, capsys):
    for fmt, line, why in (
        ("deepcoder", 8, "tests is not JSON (Expecting value)"),
        ("acecode", 4, "test_cases is empty"),
        ("nemo-gym", 4, "unit_tests has 2 inputs but 1 outputs"),
    ):
        src = FIX / f"{fmt}.jsonl"
        assert main(["tasks", "import", fmt, "--src", str(src), "--out", str(tmp_path / f"{fmt}.jsonl")]) == 1
        assert capsys.readouterr().err.strip() == (
            f"grpo-wb: error: {src}:{line}: {why} (--skip-bad leaves such rows out, counted)"
        )


# ----------------------------------------------------------------------------- back out


@pytest.mark.parametrize("fmt", NEW)
def test_export_in_its_own_schema_writes_the_source_row_back_with_the_columns(fmt, tmp_path):
    tasks, _ = _import(fmt, skip_bad=True)
    rows = read_jsonl(FIX / f"{fmt}.jsonl")
    cols = {t.task_id: {"grpo_wb_pass_rate": i / 10, "grpo_wb_category": "frontier"} for i, t in enumerate(tasks)}
    export_rows(tasks, fmt, tmp_path / "out.jsonl", cols)
    out = read_jsonl(tmp_path / "out.jsonl")
    assert len(out) == len(tasks)
    for t, got in zip(tasks, out):
        assert {k: v for k, v in got.items() if not k.startswith("grpo_wb_")} == rows[t.metadata["source_row"]]
        assert got["grpo_wb_pass_rate"] == cols[t.task_id]["grpo_wb_pass_rate"]
    # and the written rows import back to the same tests
    back, _ = _import(fmt, tmp_path / "out.jsonl")
    assert [[(x.input, x.output, x.code) for x in t.tests] for t in back] == [
        [(x.input, x.output, x.code) for x in t.tests] for t in tasks
    ]


@pytest.mark.datasets
@pytest.mark.parametrize("fmt", NEW)
def test_parquet_in_parquet_out_keeps_the_columns(fmt, tmp_path):
    import pyarrow.parquet as pq

    from grpo_wb.tasks.rows import iter_rows, write_rows

    rows = [r for r in read_jsonl(FIX / f"{fmt}.jsonl") if not isinstance(r.get("tests"), list)]
    write_rows(tmp_path / "rows.parquet", rows)
    tasks, _ = _import(fmt, tmp_path / "rows.parquet", skip_bad=True)
    export_rows(tasks, fmt, tmp_path / "out.parquet", {t.task_id: {"grpo_wb_n_samples": 8} for t in tasks})
    src = [r for _, r in iter_rows(RowSource(str(tmp_path / "rows.parquet")))]
    out = [r for _, r in iter_rows(RowSource(str(tmp_path / "out.parquet")))]
    assert [{k: v for k, v in r.items() if k != "grpo_wb_n_samples"} for r in out] == [
        src[t.metadata["source_row"]] for t in tasks
    ]
    assert pq.read_schema(tmp_path / "out.parquet").names == pq.read_schema(tmp_path / "rows.parquet").names + [
        "grpo_wb_n_samples"
    ]


def test_other_tasks_become_rows_of_the_new_formats(tmp_path):
    taco, _ = _import("taco", FIX / "taco.jsonl", skip_bad=True)
    lcb, _ = _import("livecodebench", FIX / "livecodebench.jsonl", skip_bad=True)
    tests = lambda ts: [[(x.input, x.output, x.code) for x in t.tests] for t in ts]  # noqa: E731
    # DeepCoder: each comparison in the subset shape that keeps it (TACO's dict, lcbv5's typed cases)
    for src in (taco, lcb):
        export_rows(src, "deepcoder", tmp_path / "d.jsonl")
        back, _ = _import("deepcoder", tmp_path / "d.jsonl")
        assert tests(back) == tests(src)
        assert [t.output_match for t in back] == [t.output_match for t in src]
    assert [r["metadata"] for r in read_jsonl(tmp_path / "d.jsonl")] == ['{"func_name": "addTwo"}', "{}"]
    # NeMo Gym: stdin/stdout and LiveCodeBench's calls
    export_rows(lcb, "nemo-gym", tmp_path / "n.jsonl")
    back, _ = _import("nemo-gym", tmp_path / "n.jsonl")
    assert tests(back) == tests(lcb)
    # AceCode: assert tests calling the function by its name; calls as exact asserts (a LeetCode method on
    # Solution())
    toy = load_tasks(TOY)[:2]
    export_rows(toy + [t for t in lcb if t.entry_point], "acecode", tmp_path / "a.jsonl")
    rows = read_jsonl(tmp_path / "a.jsonl")
    assert rows[0]["test_cases"] == [t.code.replace("candidate", toy[0].entry_point) for t in toy[0].tests]
    assert rows[2]["test_cases"][0] == "assert Solution().addTwo(1, 2) == 3"
    back, _ = _import("acecode", tmp_path / "a.jsonl")
    assert [t.entry_point for t in back] == [toy[0].entry_point, toy[1].entry_point, "Solution"]
    with pytest.raises(UserError, match="stdin/stdout cases, which acecode rows cannot hold"):
        export_rows(taco[:1], "acecode", tmp_path / "x.jsonl")
    with pytest.raises(UserError, match="assert statements, which nemo-gym rows cannot hold"):
        export_rows(load_tasks(TOY)[:1], "nemo-gym", tmp_path / "x.jsonl")


def test_a_recipe_import_exports_its_tests_to_other_schemas(tmp_path):
    """The export reads the row back with the recipe the import used, so the 15 tests travel, not all 17."""
    tasks, _ = _import("deepcoder", skip_bad=True, recipe="rllm")
    taco = [t for t in tasks if t.task_id == "deepcoder/1"]
    export_rows(taco, "nemo-gym", tmp_path / "n.jsonl")
    (row,) = read_jsonl(tmp_path / "n.jsonl")
    assert len(row["verifier_metadata"]["unit_tests"]["inputs"]) == 15
    export_rows(taco, "deepcoder", tmp_path / "d.jsonl")  # its own schema: the row as it came, every test
    assert len(json.loads(read_jsonl(tmp_path / "d.jsonl")[0]["tests"])["inputs"]) == 17


# ----------------------------------------------------------------------------- verdicts


@pytest.mark.sandbox
def test_right_and_wrong_programs_get_their_verdicts():
    """Each format's tasks through the scorer, judged as the trainer judges (the default)."""
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, ScoreRequest

    tasks = {t.task_id: t for fmt in NEW for t in _import(fmt, skip_bad=True)[0]}
    tasks.update({f"rllm:{t.task_id}": t for t in _import("deepcoder", skip_bad=True, recipe="rllm")[0]})
    fence = "```python\n{}\n```".format
    sum_k = "k = int(input())\nprint(sum(map(int, input().split())))"
    cases = [  # (task, completion, passes, judge)
        ("deepcoder/0", tasks["deepcoder/0"].canonical_solution, True, "taco"),
        ("deepcoder/0", fence("a, b = map(int, input().split())\nprint(a - b)"), False, "taco"),
        ("deepcoder/1", fence(sum_k), True, "taco"),
        ("rllm:deepcoder/1", fence(sum_k), True, "taco"),
        ("deepcoder/1", fence("k = int(input())\nprint(sum(map(int, input().split()[:-1])))"), False, "taco"),
        ("deepcoder/2", "def add_one(x):\n    return x + 1", True, "taco"),
        ("deepcoder/2", "def add_one(x):\n    return x + 2", False, "taco"),
        # lcbv5: LiveCodeBench's rule takes code from a fenced block only; 2 and 2.0 agree as decimals
        (
            "deepcoder/3",
            fence("class Solution:\n    def addTwo(self, a, b):\n        return a + b"),
            True,
            "livecodebench",
        ),
        ("deepcoder/3", "class Solution:\n    def addTwo(self, a, b):\n        return a + b", False, "livecodebench"),
        ("deepcoder/4", fence("print(int(input()) / 2)"), True, "livecodebench"),
        ("deepcoder/4", fence("print(int(input()) // 2)"), False, "livecodebench"),
        ("deepcoder/5", fence("input()\nprint(max(map(int, input().split())))"), True, "taco"),
        ("deepcoder/5", fence("input()\nprint(min(map(int, input().split())))"), False, "taco"),
        # PrimeIntellect's function_call rule; its trainer cannot reward it, so grpo_wb's rule judges
        ("deepcoder/6", tasks["deepcoder/6"].canonical_solution, True, "grpo_wb"),
        ("deepcoder/6", fence("def double(x):\n    return x + 2"), False, "grpo_wb"),
        ("acecode/oss_0", fence("def add_numbers(a, b):\n    return a + b"), True, "grpo_wb"),
        ("acecode/oss_0", "def add_numbers(a, b):\n    return a - b", False, "grpo_wb"),
        (
            "acecode/evol_1",
            fence(
                "class Counter:\n    def __init__(self):\n        self.n = 0\n"
                "    def increment(self):\n        self.n += 1\n        return self.n\n"
                "    def value(self):\n        return self.n"
            ),
            True,
            "grpo_wb",
        ),
        (
            "acecode/evol_1",
            fence(
                "class Counter:\n    def __init__(self):\n        self.n = 0\n"
                "    def increment(self):\n        return self.n + 1\n"
                "    def value(self):\n        return self.n"
            ),
            False,
            "grpo_wb",
        ),
        (
            "acecode/bigcode_python_fns_2",
            "def reverse_words(s):\n    return ' '.join(s.split(' ')[::-1])",
            True,
            "grpo_wb",
        ),
        ("acecode/bigcode_python_fns_2", "def reverse_words(s):\n    return s[::-1]", False, "grpo_wb"),
        (
            "nemo-gym/3f1c0b8e2a9d4c7e8b6a5d4c3b2a1f0e",
            "Sum them.\n" + fence("print(sum(map(int, input().split())))"),
            True,
            "livecodebench",
        ),
        (
            "nemo-gym/3f1c0b8e2a9d4c7e8b6a5d4c3b2a1f0e",
            "print(sum(map(int, input().split())))",
            False,
            "livecodebench",
        ),  # no fenced block: the verifier takes no code
        ("nemo-gym/9a8b7c6d5e4f30211203f4e5d6c7b8a9", fence("print(int(input()) / 2)"), True, "livecodebench"),
        (
            "nemo-gym/c69268d8bdb4da0685d7b187c88296c1",
            fence("t = int(input())\nfor _ in range(t):\n    print(*range(1, int(input()) + 1))"),
            True,
            "livecodebench",
        ),
        (
            "nemo-gym/c69268d8bdb4da0685d7b187c88296c1",
            fence("t = int(input())\nfor _ in range(t):\n    print(*range(int(input())))"),
            False,
            "livecodebench",
        ),
    ]
    with Scorer(SandboxLimits(timeout=5.0), workers=2, cache=False) as sc:
        got = list(sc.score([ScoreRequest(tasks[tid], comp) for tid, comp, _, _ in cases]))
    assert [(tid, r.passed, r.judge) for (tid, *_), r in zip(cases, got)] == [
        (tid, ok, judge) for tid, _, ok, judge in cases
    ], [(tid, r.status, r.error) for (tid, *_), r in zip(cases, got)]
    assert got[13].unrewardable and not got[0].unrewardable


@pytest.mark.sandbox
def test_tasks_written_as_acecode_rows_still_pass_their_reference(tmp_path):
    """A call-based LeetCode task and assert tasks, exported as AceCode asserts and imported back, judge alike."""
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, ScoreRequest

    lcb = [t for t in _import("livecodebench", FIX / "livecodebench.jsonl", skip_bad=True)[0] if t.entry_point]
    toy = load_tasks(TOY)[:2]
    export_rows(toy + lcb, "acecode", tmp_path / "a.jsonl")
    back, _ = _import("acecode", tmp_path / "a.jsonl")
    right = [
        t.canonical_solution
        if t.canonical_solution and t.canonical_solution.lstrip().startswith(("def", "class"))
        else t.prompt + (t.canonical_solution or "")
        for t in toy
    ]
    right.append("class Solution:\n    def addTwo(self, a, b):\n        return a + b")
    wrong = "class Solution:\n    def addTwo(self, a, b):\n        return a - b"
    with Scorer(SandboxLimits(timeout=5.0), workers=2, cache=False) as sc:
        got = list(sc.score([ScoreRequest(t, c) for t, c in zip(back, right)] + [ScoreRequest(back[-1], wrong)]))
    assert [r.passed for r in got] == [True, True, True, False], [(r.status, r.error) for r in got]


@pytest.mark.datasets
def test_import_benchmark_covers_the_new_formats():
    """``grpo-wb bench --set import`` imports each format's synthetic rows too (the figures: docs/datasets.md)."""
    from grpo_wb.bench.rows import FORMAT_ROWS, bench_formats, bench_import

    assert list(FORMAT_ROWS) == [*NEW, "open-r1/cf", "cc-plus", "hardtests", "klear"]
    for fmt, make in FORMAT_ROWS.values():
        assert all(
            len(parse_row(fmt, make(i, 10)).cases.inputs or parse_row(fmt, make(i, 10)).cases.code) == 10
            for i in range(4)
        )  # DeepCoder's four subsets in turn
    assert parse_row("open-r1", FORMAT_ROWS["open-r1/cf"][1](0, 10)).checker  # the codeforces rows have a checker
    lines: list[str] = []
    recs = bench_formats(out=lines.append, n=20)
    assert [(r["format"], r["container"]) for r in recs] == [(f, c) for f in FORMAT_ROWS for c in ("jsonl", "parquet")]
    assert all(r["import_rows_per_s"] > 0 for r in recs) and lines[0].startswith("== import: other formats")
    lines.clear()
    bench_import(out=lines.append, sizes=(8, 16))
    assert "== import: other formats, 8 rows with 10 tests each" in lines
    assert lines[-1].startswith("parquet: peak traced memory")


def test_hostile_rows_are_skipped_with_a_reason(tmp_path):
    deep = "assert f(1) == " + "+".join(["1"] * 3000)
    rows = [
        {"id": "deep", "question": "q", "test_cases": [deep]},
        {
            "id": "none",
            "question": "q",
            "test_cases": ["assert f(1) == 1"],
            "context_messages": [{"role": "user", "content": None}],
        },
        {"id": "good", "question": "q", "test_cases": ["assert f(1) == 1"]},
    ]
    tasks, s = _import("acecode", write_jsonl(tmp_path / "a.jsonl", rows), skip_bad=True)
    assert len(tasks) == 1 and s.skipped == {
        "test_cases[0] does not compile (nested too deeply)": 1,
        "the user message's content is not text (NoneType)": 1,
    }
    mismatched = {"problem": "p", "tests": json.dumps({"inputs": ["1\n"] * 20, "outputs": ["1\n"] * 25})}
    good = {"problem": "p", "tests": json.dumps({"inputs": ["1\n"] * 20, "outputs": ["1\n"] * 20})}
    for recipe in (None, "rllm"):  # the recipe's choice of 15 does not hide the mismatch
        tasks, s = _import(
            "deepcoder", write_jsonl(tmp_path / "d.jsonl", [mismatched, good]), skip_bad=True, recipe=recipe
        )
        assert len(tasks) == 1 and list(s.skipped) == ["tests has 20 inputs but 25 outputs"], (recipe, s.skipped)


@pytest.mark.sandbox
def test_acecode_export_refuses_setup_code_and_keeps_apps_wrapped_outputs(tmp_path):
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, ScoreRequest
    from grpo_wb.tasks.records import Task, TestCase

    checked = Task(
        task_id="t/check",
        prompt="def f(x):\n",
        entry_point="f",
        tests=(TestCase("t0", "check(f)"),),
        check="def check(candidate):\n    assert candidate(1) == 2\n",
    )
    with pytest.raises(UserError, match="t/check.*setup code"):
        export_rows([checked], "acecode", tmp_path / "a.jsonl")
    row = {
        "question": "primes",
        "solutions": "[]",
        "starter_code": "",
        "input_output": json.dumps({"fn_name": "primes_below", "inputs": [[3], [4]], "outputs": [[2], [2, 3]]}),
    }
    (task,), _ = _import("taco", write_jsonl(tmp_path / "t.jsonl", [row]))
    export_rows([task], "acecode", tmp_path / "b.jsonl")
    back, _ = _import("acecode", tmp_path / "b.jsonl")
    assert back[0].tests[0].code == "assert primes_below(3) in ([2], 2)"  # APPS takes [x] and x alike
    right = "def primes_below(n):\n    return [p for p in range(2, n) if all(p % d for d in range(2, p))]\n"
    with Scorer(SandboxLimits(timeout=5.0), workers=1, cache=False) as sc:
        (r,) = sc.score([ScoreRequest(back[0], right)])
    assert r.passed, (r.status, r.error)
