"""Row datasets in (verl, open-r1, TACO/APPS rows, CodeContests, LiveCodeBench, KodCode, mapped rows) and out.

The fixtures in tests/fixtures/rows are small rows written from each published schema (see
grpo_wb/tasks/rowformats/, a module per dataset family, for the sources), with awkward ones: multi-line stdin,
trailing whitespace, float outputs, a ``class Solution`` entry point, compressed private tests, missing fields, a
hostile pickle.
"""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest
from conftest import import_argv, import_rows, read_jsonl, write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.rollouts.sampling import SamplingConfig
from grpo_wb.scoring.verdicts import stdio_matches
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowexport import EXPORT_FORMATS
from grpo_wb.tasks.rowformats import RowError, decode_compressed_json, parse_mapping, parse_row
from grpo_wb.tasks.rows import RowSource, iter_located_rows, iter_rows, row_hash

FIX = Path(__file__).parent / "fixtures" / "rows"
FORMATS = ["verl", "open-r1", "taco", "code-contests", "livecodebench", "kodcode", "deepcoder", "acecode", "nemo-gym"]


_import = import_rows


# ----------------------------------------------------------------------------- what each format reads


def test_verl_rows():
    tasks, s = _import("verl", skip_bad=True)
    assert (s.read, s.imported) == (7, 5)
    assert s.skipped == {"ground_truth has 1 inputs but 0 outputs": 1, "missing field 'reward_model'": 1}
    by = {t.task_id: t for t in tasks}
    stdin = by["verl/taco/0"]
    assert stdin.is_script and [x.input for x in stdin.tests] == ["2 3\n", "10 -4\n"]
    assert stdin.metadata["data_source"] == "taco" and stdin.metadata["source_row"] == 0
    # the last user message is the prompt; the trailing spaces of the expected output stay in the task
    multi = by["verl/codecontests/1"]
    assert multi.prompt.startswith("Print the lines") and multi.tests[0].output == "c\nb\na   \n"
    # prime_code's call encoding: one JSON value per line, the output JSON
    call = by["verl/apps/2"]
    assert call.entry_point == "add" and call.tests[0].code == "assert apps_equal(candidate(*[1, 2]), 3)"
    assert call.tests[1].code == "assert apps_equal(candidate(*[[1], [2]]), [1, 2])"
    # APPS-style list inputs (what Eurus rows carry) are read as argument lists, and noted
    assert by["verl/apps/3"].tests[0].code == "assert apps_equal(candidate(*[1237]), [False])"
    assert any("prime_code cannot run" in n for n in s.notes)
    # LiveCodeBench's base64/zlib/pickle ground truth decodes
    assert by["verl/livecodebench/code_generation_lite/4"].tests[0].input == "3\n"
    assert any("not routed to a code scorer" in n for n in s.notes)


def test_open_r1_rows():
    tasks, s = _import("open-r1", skip_bad=True)
    assert s.skipped == {"missing field 'verification_info'": 1}
    stdin, call, cpp = tasks
    assert stdin.task_id == "open-r1/vcp_1" and stdin.is_script and stdin.canonical_solution
    assert stdin.prompt == "Print the square of n."
    # function_call cases as PrimeIntellect's harness runs them: the input pasted as the arguments, str compared
    assert call.entry_point == "double" and call.tests[1].code == "assert str(candidate(2.5)).strip() == '5.0'"
    # a C++ row is a C++ task: no Python prelude, its gold solution a C++ program
    assert cpp.language == "cpp" and cpp.prelude == "" and cpp.is_script and "#include" in cpp.canonical_solution
    assert stdin.language == "python" and stdin.prelude


def test_taco_rows():
    tasks, s = _import("taco", skip_bad=True)
    assert s.skipped == {"input_output is empty": 1}
    squares, mean, doubled = tasks
    assert squares.prompt.endswith("Use Standard Input format\nANSWER:\n") and squares.tests[0].output == "1\n4\n9\n"
    assert mean.tests[0].input == "3\n1 2 4\n"  # a list of lines is joined
    assert doubled.entry_point == "doubled" and "class Solution" in doubled.prompt
    assert doubled.tests[0].code == "assert apps_equal(candidate(*[[1, 2]]), [[2, 4]])"


def test_code_contests_rows():
    tasks, s = _import("code-contests", skip_bad=True)
    assert s.skipped == {"no public, private or generated tests": 1}
    total, ratio = tasks
    assert len(total.tests) == 3 and total.output_match == "tokens"
    assert total.canonical_solution == "print(sum(map(int, input().split())))"  # the Python 3 one (language 3)
    assert ratio.tests[0].output == "0.333333\n"


def test_livecodebench_rows():
    tasks, s = _import("livecodebench", skip_bad=True)
    assert list(s.skipped) == ["private_test_cases is neither JSON nor base64/zlib/pickle (UnpicklingError)"]
    func, stdin = tasks
    assert func.entry_point == "addTwo" and len(func.tests) == 3  # 1 public + 2 compressed private
    assert func.tests[1].code == "assert values_equal(candidate(*[-5, 5]), 0)"
    assert "class Solution" in func.prompt
    assert stdin.is_script and stdin.output_match == "numeric-lines"


def test_kodcode_rows():
    tasks, s = _import("kodcode", skip_bad=True)
    assert s.skipped == {"test_f asks for pytest fixture 'tmp_path', which grpo_wb does not provide": 1}
    triple, stack = tasks
    assert triple.entry_point == "triple" and [t.code for t in triple.tests] == ["test_triple()", "test_zero()"]
    assert "from solution" not in triple.test_setup and "def test_triple" in triple.test_setup
    # test_info is null for classes: the entry point is what the tests import; parametrize expands
    assert stack.entry_point == "Stack"
    assert [t.name for t in stack.tests] == ["test_push_pop[0]", "test_push_pop[1]", "test_empty"]
    assert any("import pytest" in n for n in s.notes)


def test_mapped_rows_and_mapping_errors():
    tasks, _ = _import("rows", FIX / "mapped.jsonl", mapping=parse_mapping("prompt=problem,tests=cases,task_id=id"))
    assert [t.task_id for t in tasks] == ["rows/p1", "rows/p2"] and tasks[1].tests[1].output == "X\n"
    for spec, msg in (
        ("tests=cases", "needs prompt"),
        ("prompt=p", "needs the tests"),
        ("prompt=p,tests", "FIELD=COLUMN"),
        ("prompt=p,tests=t,colour=c", "unknown field 'colour'"),
        ("prompt=p,inputs=i", "go together"),
    ):
        with pytest.raises(ValueError, match=msg):
            parse_mapping(spec)
    with pytest.raises(RowError, match="missing column 'nope'"):
        parse_row("rows", {"problem": "x"}, parse_mapping("prompt=nope,tests=cases"))


def test_every_imported_row_keeps_where_it_came_from():
    for fmt in FORMATS:
        tasks, _ = _import(fmt, skip_bad=True)
        rows = read_jsonl(FIX / f"{fmt}.jsonl")
        for t in tasks:
            m = t.metadata
            assert m["source"] == fmt and Path(m["source_file"]).is_absolute()
            assert m["row_sha256"] == row_hash(rows[m["source_row"]])


def test_a_bad_row_fails_the_import_naming_file_and_row(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    out.write_text("keep me\n")
    assert main(import_argv("verl", FIX / "verl.jsonl", out, "--force")) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"grpo-wb: error: {FIX / 'verl.jsonl'}:6: ground_truth has 1 inputs but 0 outputs "
        "(--skip-bad leaves such rows out, counted)"
    )
    assert out.read_text() == "keep me\n"  # nothing already written is lost
    assert main(import_argv("verl", FIX / "verl.jsonl", out, "--force", "--skip-bad", "--limit", "6")) == 0
    printed = capsys.readouterr().out
    assert "read 6 rows" in printed and "wrote 5 tasks" in printed and "skipped 1: ground_truth has 1 inputs" in printed
    assert len(load_tasks(out)) == 5


def test_an_import_where_no_row_is_a_task_writes_nothing(tmp_path, capsys):
    src = write_jsonl(tmp_path / "rows.jsonl", [{"data_source": "taco"}])
    out = tmp_path / "t.jsonl"
    assert main(["tasks", "import", "verl", "--src", str(src), "--out", str(out), "--skip-bad"]) == 1
    assert "no row became a task (1 read; 1 skipped: missing field 'prompt')" in capsys.readouterr().err
    assert not out.exists()


def test_duplicate_row_ids_are_made_unique_and_noted(tmp_path):
    rows = read_jsonl(FIX / "open-r1.jsonl")[:1] * 2
    tasks, s = _import("open-r1", write_jsonl(tmp_path / "dup.jsonl", rows))
    assert [t.task_id for t in tasks] == ["open-r1/vcp_1", "open-r1/vcp_1#row1"]
    assert s.notes == {"duplicate ids, made unique with the row number": 1}


class _Boom:
    def __reduce__(self):
        import os

        return (os.mkdir, ("/tmp/grpo_wb_pickle_ran",))


def test_compressed_tests_never_unpickle_a_global(tmp_path):
    """LiveCodeBench's own loader would run this pickle; ours refuses every global."""
    marker = Path("/tmp/grpo_wb_pickle_ran")
    if marker.exists():
        marker.rmdir()
    hostile = base64.b64encode(zlib.compress(pickle.dumps(_Boom()))).decode()
    with pytest.raises(RowError, match="UnpicklingError"):
        decode_compressed_json(hostile, "private_test_cases")
    assert not marker.exists()
    ok = base64.b64encode(zlib.compress(pickle.dumps(json.dumps([{"input": "1", "output": "2"}])))).decode()
    assert decode_compressed_json(ok, "x") == [{"input": "1", "output": "2"}]


def test_output_match_modes():
    # CodeContests: tokens, case-insensitive, numbers within 1e-5
    assert stdio_matches("0.3333333333\n", "0.333333\n", "tokens")
    assert not stdio_matches("0.3334\n", "0.333333\n", "tokens")
    assert stdio_matches("YES  1\n2", "yes 1 2", "tokens") and not stdio_matches("1 2", "1 2 3", "tokens")
    assert not stdio_matches("yes", "no", "tokens")
    # LiveCodeBench stdin: stripped lines, equal as text or as decimals
    assert stdio_matches("1.50\n2\n", "1.5\n2.0", "numeric-lines")
    assert not stdio_matches("1.5000001\n", "1.5\n", "numeric-lines")
    assert not stdio_matches("1\n2\n", "1 2\n", "numeric-lines")
    # the default keeps the line count and trailing-space rule
    assert stdio_matches("a  \nb\n\n", "a\nb", "lines") and not stdio_matches("0.3333333333", "0.333333", "lines")


# ----------------------------------------------------------------------------- containers


def _rows():
    return read_jsonl(FIX / "taco.jsonl")


@pytest.mark.datasets
def test_every_container_reads_the_same_rows(tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows()
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    (tmp_path / "wrapped.json").write_text(json.dumps({"data": rows}))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    ds = datasets.Dataset.from_list(rows)
    ds.save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"train": ds.select(range(2)), "test": ds.select([3])}).save_to_disk(str(tmp_path / "dict"))
    ds.to_json(str(tmp_path / "to_json.json"))  # datasets writes JSON lines under a .json name
    srcs = {
        name: RowSource(str(tmp_path / name))
        for name in ("rows.json", "wrapped.json", "rows.parquet", "saved", "dict", "to_json.json")
    }
    columns = sorted({k for r in rows for k in r})
    tabular = [{k: r.get(k) for k in columns} for r in rows]  # Arrow tables fill a column a row lacks with null
    for name, src in srcs.items():
        got = [r for _, r in iter_rows(src)]
        want = rows if name in ("rows.json", "wrapped.json") else tabular
        assert [dict(sorted(r.items())) for r in got] == [
            dict(sorted(r.items())) for r in (want[:2] if name == "dict" else want)
        ], name
    assert [r for _, r in iter_rows(RowSource(str(tmp_path / "dict"), "test"))] == [tabular[3]]
    with pytest.raises(UserError, match=r"no split 'valid' \(splits: train, test\)"):
        list(iter_rows(RowSource(str(tmp_path / "dict"), "valid")))
    a, _ = _import("taco", tmp_path / "rows.parquet", skip_bad=True)
    b, _ = _import("taco", FIX / "taco.jsonl", skip_bad=True)

    # the same tasks; only where they came from differs (the file, and the hash of a row Arrow filled with nulls)
    def strip(t):
        return {
            **t.to_json(),
            "metadata": {k: v for k, v in t.metadata.items() if k not in ("source_file", "row_sha256")},
        }

    assert [strip(t) for t in a] == [strip(t) for t in b]


def test_unknown_containers_and_missing_files_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "rows.csv").write_text("a,b\n")
    for src, msg in (
        (tmp_path / "rows.csv", "unknown row file type"),
        (tmp_path / "nope.jsonl", "no such file"),
        (tmp_path, "not a save_to_disk folder"),
    ):
        assert main(["tasks", "import", "taco", "--src", str(src), "--out", str(tmp_path / "o.jsonl")]) == 1
        assert msg in capsys.readouterr().err


# ----------------------------------------------------------------------------- verdicts


@pytest.mark.sandbox
def test_reference_and_wrong_solutions_get_their_verdicts(tmp_path):
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, ScoreRequest

    tasks = {t.task_id: t for fmt in FORMATS for t in _import(fmt, skip_bad=True)[0]}
    cases = [  # (task, completion, passes)
        ("taco/0", "n=int(input())\nfor i in range(1,n+1):\n    print(i*i)", True),
        ("taco/0", "print(1)", False),
        ("taco/1", "n=int(input()); xs=list(map(int,input().split())); print(sum(xs)/n)", False),  # lines: exact
        ("taco/2", "class Solution:\n    def doubled(self, xs):\n        return [2 * x for x in xs]", True),
        ("code-contests/ratio", "p,q=map(int,input().split())\nprint(p/q)", True),  # tokens: 1e-5
        ("code-contests/ratio", "print(0.3334)", False),
        # fenced: LiveCodeBench's rule (the default judge) takes code only from a ``` block
        (
            "livecodebench/3001",
            "```python\nclass Solution:\n    def addTwo(self, a, b):\n        return a + b\n```",
            True,
        ),
        (
            "livecodebench/3001",
            "```python\nclass Solution:\n    def addTwo(self, a, b):\n        return [a + b]\n```",
            False,
        ),
        ("livecodebench/abc1_a", "```\nn=int(input())\nprint(n/2)\n```", True),  # 2.0 vs 2 as decimals
        ("verl/codecontests/1", "import sys\nprint(''.join(reversed(sys.stdin.readlines())), end='')", True),
        ("verl/apps/2", "def add(a, b):\n    return a + b", True),
        ("open-r1/vcp_2", "def double(x):\n    return 2 * x", True),
        ("open-r1/vcp_2", "def double(x):\n    return 2 * int(x)", False),
        ("kodcode/Algorithm_1_I", "def triple(x):\n    return 3 * x", True),
        ("kodcode/Algorithm_1_I", "def triple(x):\n    return 3 * x if x else 1", False),
    ]
    with Scorer(SandboxLimits(timeout=5.0), workers=2, cache=False) as sc:
        got = list(sc.score([ScoreRequest(tasks[tid], comp) for tid, comp, _ in cases]))
    assert [(tid, r.passed) for (tid, _, _), r in zip(cases, got)] == [(tid, ok) for tid, _, ok in cases], [
        (tid, r.status, r.error) for (tid, _, _), r in zip(cases, got)
    ]
    # KodCode tests that use pytest.raises need the caller's site-packages (where pytest is)
    stack = tasks["kodcode/Data_Structure_2_I"]
    with Scorer(SandboxLimits(timeout=10.0, site_packages=True), workers=1, cache=False) as sc:
        (r,) = sc.score([ScoreRequest(stack, stack.canonical_solution)])
    assert r.passed and r.tests_passed == 3, (r.status, r.error)


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", FORMATS)
def test_import_smoke_headroom_filter_and_export_from_the_cli(fmt, tmp_path, capsys):
    """Each format end to end: rows in, a mock smoke run, headroom and filter on the run, the rows back out."""
    tasks = tmp_path / "tasks.jsonl"
    assert main(["tasks", "import", fmt, "--src", str(FIX / f"{fmt}.jsonl"), "--out", str(tasks), "--skip-bad"]) == 0
    run = tmp_path / "run"
    assert (
        main(
            [
                "smoke",
                "--tasks",
                str(tasks),
                "--backend",
                "mock",
                "--steps",
                "2",
                "--batch-size",
                "2",
                "--group-size",
                "4",
                "--out",
                str(run),
                "--no-progress",
                "--mock-skill",
                "0.5",
            ]
        )
        == 0
    )
    metrics = read_jsonl(run / "metrics.jsonl")
    assert {"reward", "reward_std", "frac_reward_zero_std"} <= set(metrics[0])
    capsys.readouterr()
    assert main(["headroom", str(run), "--json", str(tmp_path / "h.json")]) == 0
    originals = read_jsonl(FIX / f"{fmt}.jsonl")
    for out_fmt in ("jsonl", fmt) if fmt in EXPORT_FORMATS else ("jsonl",):  # as read, and in its own schema
        kept_path = tmp_path / f"kept-{out_fmt}.jsonl"
        assert (
            main(
                [
                    "filter",
                    str(run),
                    "--band",
                    "0",
                    "1",
                    "--tasks",
                    str(tasks),
                    "--out",
                    str(kept_path),
                    "--format",
                    out_fmt,
                ]
            )
            == 0
        )
        kept = read_jsonl(kept_path)
        assert kept and all({k: v for k, v in r.items() if not k.startswith("grpo_wb_")} in originals for r in kept)
        assert all(r["grpo_wb_category"] in ("too_easy", "too_hard", "frontier", "unrewardable") for r in kept)


@pytest.mark.datasets
def test_import_benchmark_runs_and_reports_both_containers():
    """The benchmark's bookkeeping (the figures themselves are read from `grpo-wb bench --set import`)."""
    from grpo_wb.bench.rows import bench_import, synthetic_rows

    rows = synthetic_rows(3)
    assert all(len(json.loads(r["input_output"])["inputs"]) == 10 for r in rows)
    lines: list[str] = []
    recs = bench_import(out=lines.append, sizes=(20, 80))
    assert [(r["container"], r["rows"]) for r in recs] == [
        ("jsonl", 20),
        ("parquet", 20),
        ("jsonl", 80),
        ("parquet", 80),
    ]
    assert all(r["import_rows_per_s"] > 0 and r["peak_mib"] > 0 for r in recs)
    assert lines[-1].startswith("parquet: peak traced memory") and "bytes per row" in lines[-1]


@pytest.mark.datasets
def test_broken_containers_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "x.parquet").write_bytes(b"PAR1 not really")
    (tmp_path / "x.arrow").write_bytes(b"\x00" * 64)
    (tmp_path / "x.json").write_bytes(b"\xff\xfe not utf-8")
    (tmp_path / "dd").mkdir()
    (tmp_path / "dd" / "dataset_dict.json").write_text("[1, 2]")
    for name, msg in (
        ("x.parquet", "not a Parquet file"),
        ("x.arrow", "not an Arrow file"),
        ("x.json", "cannot read"),
        ("dd", "no list of split names"),
    ):
        assert main(["tasks", "import", "taco", "--src", str(tmp_path / name), "--out", str(tmp_path / "o.jsonl")]) == 1
        err = capsys.readouterr().err
        assert err.startswith("grpo-wb: error: ") and msg in err and "Traceback" not in err, err


def test_tokens_mode_is_codecontests_not_python():
    assert not stdio_matches("1_000", "1000", "tokens")  # Python's float() reads 1_000; SimpleAtod does not
    assert not stdio_matches("a\xa0b", "a b", "tokens")  # only ASCII whitespace separates tokens
    assert stdio_matches("A\tb\r\n", "a b", "tokens")


def test_pytest_shapes_grpo_wb_cannot_run_are_skipped_rows_not_broken_tasks(tmp_path):
    base = {"question": "q", "solution": "def f(x):\n    return x", "test_info": [{"function_name": "f"}]}
    rows = [
        {
            **base,
            "question_id": "stacked",
            "test": "import pytest\nfrom solution import f\n"
            "@pytest.mark.parametrize('a', [1, 2])\n@pytest.mark.parametrize('b', [3])\n"
            "def test_f(a, b):\n    assert f(a) == a\n",
        },
        {
            **base,
            "question_id": "param",
            "test": "import pytest\nfrom solution import f\n"
            "@pytest.mark.parametrize('a', [pytest.param(1)])\ndef test_f(a):\n    assert f(a) == a\n",
        },
        {**base, "question_id": "default", "test": "from solution import f\ndef test_f(a=2):\n    assert f(a) == 2\n"},
    ]
    tasks, s = _import("kodcode", write_jsonl(tmp_path / "k.jsonl", rows), skip_bad=True)
    assert [t.task_id for t in tasks] == ["kodcode/default"]
    assert sorted(s.skipped) == [
        "test_f: pytest.param cases (not supported)",
        "test_f: stacked parametrize decorators (not supported)",
    ]


def test_an_unparsable_json_line_is_a_bad_row_like_any_other(tmp_path, capsys):
    """Without --skip-bad the import stops naming the file and row; with it the line is counted and skipped."""
    good = FIX / "verl.jsonl"
    lines = good.read_text().splitlines()
    src = tmp_path / "rows.jsonl"
    src.write_text("\n".join([lines[0], '{"data_source": "taco", "prompt": [', lines[1]]) + "\n")
    out = tmp_path / "t.jsonl"
    assert main(["tasks", "import", "verl", "--src", str(src), "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"grpo-wb: error: {src}:2: invalid JSON: Expecting value (column 1) (--skip-bad leaves such rows out, counted)"
    )
    assert not out.exists()
    assert main(["tasks", "import", "verl", "--src", str(src), "--out", str(out), "--skip-bad"]) == 0
    printed = capsys.readouterr().out
    assert "read 3 rows" in printed and "wrote 2 tasks" in printed and "skipped 1: invalid JSON" in printed


def test_a_chat_rows_messages_travel_with_its_task_to_the_sampler(tmp_path):
    """The row's own messages, system message included, are what a chat request sends (the trainer's prompt)."""
    row = {
        "data_source": "taco",
        "prompt": [
            {"role": "system", "content": "Reason, then answer."},
            {"role": "user", "content": "Read a and b, print a+b."},
        ],
        "reward_model": {"ground_truth": json.dumps({"inputs": ["2 3\n"], "outputs": ["5\n"]})},
    }
    (task,), _ = _import("verl", write_jsonl(tmp_path / "r.jsonl", [row]))
    assert task.metadata["messages"] == row["prompt"] and task.prompt == "Read a and b, print a+b."
    p = SamplingConfig(mode="auto").prompt(task)
    assert (p.endpoint, p.source, list(p.messages)) == ("chat", "row", row["prompt"])
    assert SamplingConfig(mode="completions").prompt(task).text == task.prompt  # asked for: the text alone


def test_json_lines_rows_are_named_by_their_line(tmp_path, capsys):
    """The 1-based line (blank lines counted, as an editor counts): a bad first row is line 1, not 0."""
    bad = {"data_source": "taco"}
    good = read_jsonl(FIX / "verl.jsonl")[0]
    jl = tmp_path / "rows.jsonl"
    jl.write_text(json.dumps(bad) + "\n")
    assert main(["tasks", "import", "verl", "--src", str(jl), "--out", str(tmp_path / "a.jsonl")]) == 1
    assert f"{jl}:1: missing field 'prompt'" in capsys.readouterr().err
    jl.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    assert main(["tasks", "import", "verl", "--src", str(jl), "--out", str(tmp_path / "a.jsonl")]) == 1
    assert f"{jl}:3: missing field 'prompt'" in capsys.readouterr().err
    assert [w for _, w, _ in iter_located_rows(RowSource(str(jl)))] == [f"{jl}:1", f"{jl}:3"]


@pytest.mark.datasets
def test_parquet_and_json_list_rows_are_named_by_their_0_based_row(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = {"data_source": "taco"}
    good = read_jsonl(FIX / "verl.jsonl")[0]
    pq.write_table(pa.Table.from_pylist([good, {**good, "prompt": None}]), tmp_path / "rows.parquet")
    (tmp_path / "rows.json").write_text(json.dumps([good, bad]))
    for name in ("rows.parquet", "rows.json"):
        src = tmp_path / name
        assert main(import_argv("verl", src, tmp_path / "b.jsonl")) == 1
        err = capsys.readouterr().err
        assert f"{src}: row 1 (0-based): " in err, err
        assert main(import_argv("verl", src, tmp_path / f"{name}.tasks.jsonl", "--skip-bad")) == 0
        printed = capsys.readouterr()
        assert f"{src}: row 1 (0-based): missing field 'prompt'" in printed.out + printed.err
