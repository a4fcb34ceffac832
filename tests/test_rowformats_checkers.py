"""The checker datasets: CodeContests+ (testlib checkers, C++), HardTests (output judging functions, pickled tests),
Klear-CodeTest (checker lists, mixed-type limits): each fixture imported, its verdicts through the scorer (a different
right answer passes where the checker says so), its round trip in its own schema and from another one."""

import json

import pytest
from conftest import ROW_FIXTURES, import_rows

from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.scoring.verdicts import klear_output_matches
from grpo_wb.tasks.rowexport import export_rows
from grpo_wb.tasks.rowformats import RowError, parse_limit

OTHER_RIGHT = "```python\nn = int(input())\nprint(2, n - 2)\n```"
WRONG = "```python\nn = int(input())\nprint(n, 0)\n```"
CPP_OTHER_RIGHT = (
    "```cpp\n#include <iostream>\nint main() { long long n; std::cin >> n;"
    " std::cout << 3 << ' ' << n - 3 << '\\n'; }\n```"
)


def test_code_contests_plus_rows():
    tasks, s = import_rows("code-contests-plus", skip_bad=True)
    assert s.skipped == {"test_cases is empty (the tests are in configs 1x to 5x)": 1}
    split, melon = tasks
    assert split.task_id == "code-contests-plus/1900A" and split.prompt.startswith("Two Different Parts\n\n")
    assert (split.checker_style, split.time_limit, split.memory_limit_mb) == ("testlib", 1.0, 256)
    assert "registerTestlibCmd" in split.checker and melon.checker is None
    # references in the task's language: py3 (not py2, not C++), the labelled wrong ones apart
    assert split.canonical_solution.startswith("n = int(input())") and split.solutions == ()
    assert split.wrong_solutions == ("n = int(input())\nprint(n, 0)\n",)
    assert split.metadata["true_negative_rate"] == 0.97
    cpp, _ = import_rows("code-contests-plus", skip_bad=True, language="cpp")[0]
    assert cpp.language == "cpp" and cpp.canonical_solution.startswith("#include") and cpp.prelude == ""


def test_hardtests_rows():
    tasks, s = import_rows("hardtests", skip_bad=True)
    assert s.skipped == {
        "test_cases is neither JSON nor base64/zlib/pickle (UnpicklingError)": 1,
        "no statement (question_content): join the hardtests_problems row on pid": 1,
    }
    split, melon = tasks
    # the public tests and the generated ones (decoded from base64/zlib/pickle), each named by its set
    assert [t.name for t in split.tests] == ["public_0", "generated_0", "generated_1", "generated_2"]
    assert (split.checker_style, split.time_limit, split.memory_limit_mb) == ("hardtests", 1.0, 256)
    assert "output_judging_function" in split.checker and melon.checker is None
    assert (melon.time_limit, melon.memory_limit_mb) == (1.0, 64)  # "1000 ms", "64 MB"
    gen, _ = import_rows("hardtests", skip_bad=True, test_set="generated")
    assert [t.name for t in gen[0].tests] == ["generated_0", "generated_1", "generated_2"]


def test_klear_rows():
    tasks, s = import_rows("klear", skip_bad=True)
    assert s.skipped == {"tests of type 'function' (grpo_wb reads Klear's stdin rows)": 1}
    split, melon = tasks
    # the last checker of the list, as Klear's pipeline uses; "2" and "256" as numbers
    assert split.checker.endswith("sys.argv[3]))\n") and "n + 1" not in split.checker
    assert (split.checker_style, split.output_match, split.time_limit, split.memory_limit_mb) == (
        "klear",
        "klear",
        2.0,
        256,
    )
    # untagged solutions told apart: the Python one here, the C++ one with --language cpp
    assert split.canonical_solution.startswith("n = int(input())")
    assert import_rows("klear", skip_bad=True, language="cpp")[0][0].canonical_solution.startswith("#include")
    assert len(melon.tests) == 4  # the CodeTests shape


@pytest.mark.parametrize(
    "value, kind, unit, want",
    [
        (1000, "time", "ms", 1.0),
        ("2", "time", "s", 2.0),
        ("1 second", "time", "s", 1.0),
        ("2.5 seconds", "time", "s", 2.5),
        ("1500 ms", "time", "s", 1.5),
        (256, "memory", "mb", 256),
        ("256 megabytes", "memory", "mb", 256),
        ("262144 KB", "memory", "mb", 256),
        ("1 GB", "memory", "mb", 1024),
        (None, "time", "s", None),
    ],
)
def test_limits_in_the_units_rows_write_them(value, kind, unit, want):
    assert parse_limit(value, "limit", kind, unit) == want


@pytest.mark.parametrize(
    "value, kind, unit, want",
    [
        ("3 secs", "time", "s", 3.0),
        ("1,000 ms", "time", "ms", 1.0),
        ("1 GiB", "memory", "mb", 1024),
        ("256m", "memory", "mb", 256),
        (268435456, "memory", "mb", 256),
    ],
)
def test_limits_written_other_ways(value, kind, unit, want):
    assert parse_limit(value, "limit", kind, unit) == want


def test_a_klear_checker_given_as_text_is_kept_and_an_empty_last_one_is_a_skip_reason(tmp_path):
    from conftest import write_jsonl

    row = json.loads((ROW_FIXTURES / "klear.jsonl").read_text().splitlines()[0])
    last = row["checker"][-1]
    rows = [
        {**row, "custom_id": "a", "checker": last},
        {**row, "custom_id": "b", "checker": json.dumps(row["checker"])},
        {**row, "custom_id": "c", "checker": [last, ""]},
    ]
    tasks, s = import_rows("klear", write_jsonl(tmp_path / "k.jsonl", rows), skip_bad=True)
    assert [t.checker for t in tasks] == [last, last]
    assert s.skipped == {"its last checker (the one Klear runs) is empty": 1}


@pytest.mark.parametrize("value", ["fast", "0", "-1 s", "2 fortnights", True])
def test_a_limit_that_is_not_one_is_the_rows_skip_reason(value):
    with pytest.raises(RowError, match="limit"):
        parse_limit(value, "time_limit", "time", "s")


@pytest.mark.parametrize(
    "output, expected, same",
    [
        ("  1 2\n\t3\n", "1 2\n3\n", True),
        ("\n\n1\n", "1", True),
        ("1 \n", "1", True),
        ("1\n\n2", "1\n2", False),
        ("1 2", "1  2", False),
    ],
)
def test_klears_comparison(output, expected, same):
    assert klear_output_matches(output, expected) is same


@pytest.fixture(scope="module")
def scorer():
    sc = Scorer(SandboxLimits(timeout=5.0, compile_timeout=60.0), workers=2)
    yield sc
    sc.close()


@pytest.mark.sandbox
@pytest.mark.parametrize("fmt", ["code-contests-plus", "hardtests", "klear"])
def test_each_datasets_checker_passes_a_different_right_answer(scorer, fmt):
    from test_cpp import need_gxx

    need_gxx()
    split, melon = import_rows(fmt, skip_bad=True)[0]
    got = {
        name: r
        for name, r in zip(
            ("other", "wrong", "ref", "melon"),
            scorer.score(
                [
                    ScoreRequest(split, OTHER_RIGHT),
                    ScoreRequest(split, WRONG),
                    ScoreRequest(split, "```python\n" + split.canonical_solution + "```"),
                    ScoreRequest(melon, "```python\n" + melon.canonical_solution + "```"),
                ]
            ),
        )
    }
    assert {k: r.status for k, r in got.items()} == {"other": "pass", "wrong": "fail", "ref": "pass", "melon": "pass"}
    assert got["wrong"].error.startswith("rejected by the checker")
    if fmt == "code-contests-plus":  # the same checker judges a C++ task's answer
        cpp = import_rows(fmt, skip_bad=True, language="cpp")[0][0]
        assert next(scorer.score([ScoreRequest(cpp, CPP_OTHER_RIGHT)])).status == "pass"


@pytest.mark.parametrize("fmt", ["code-contests-plus", "hardtests", "klear"])
def test_round_trip_in_its_own_schema_and_back(tmp_path, fmt):
    tasks = import_rows(fmt, skip_bad=True)[0]
    out = tmp_path / f"{fmt}.jsonl"
    export_rows(tasks, fmt, out, {t.task_id: {"grpo_wb_pass_rate": 0.5} for t in tasks})
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    originals = [json.loads(line) for line in (ROW_FIXTURES / f"{fmt}.jsonl").read_text().splitlines()]
    kept = [r for r in originals if any(str(r.get(k)) in t.task_id for t in tasks for k in ("id", "pid", "custom_id"))]
    assert [{k: v for k, v in r.items() if k != "grpo_wb_pass_rate"} for r in rows] == kept
    assert all(r["grpo_wb_pass_rate"] == 0.5 for r in rows)
    back = import_rows(fmt, out)[0]
    assert [(t.tests, t.checker, t.time_limit, t.memory_limit_mb) for t in back] == [
        (t.tests, t.checker, t.time_limit, t.memory_limit_mb) for t in tasks
    ]


def test_an_export_says_which_test_set_was_scored_and_refuses_a_comparison_its_rows_cannot_hold(tmp_path):
    gen = import_rows("hardtests", skip_bad=True, test_set="generated")[0]
    export_rows(gen, "hardtests", tmp_path / "h.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert {r["grpo_wb_test_set"] for r in rows} == {"generated"}
    from grpo_wb.errors import UserError

    melon = import_rows("klear", skip_bad=True)[0][1]  # no checker: compared by Klear's rule
    with pytest.raises(UserError, match="compared by 'klear', which code-contests-plus rows"):
        export_rows([melon], "code-contests-plus", tmp_path / "c.jsonl")


def test_built_from_another_schema_they_read_back_the_same(tmp_path):
    """A task from another dataset, written as each new format's row and imported back: tests, checker and limits
    survive; a checker of another style is refused, not dropped."""
    from dataclasses import replace

    cf = import_rows("open-r1", ROW_FIXTURES / "open-r1-codeforces.jsonl", skip_bad=True)[0]
    melon = replace(cf[2], checker=None)
    for fmt in ("code-contests-plus", "hardtests"):  # compared line by line, as the task is
        out = tmp_path / f"melon-{fmt}.jsonl"
        export_rows([melon], fmt, out)
        (back,) = import_rows(fmt, out)[0]
        assert [(t.input, t.output) for t in back.tests] == [(t.input, t.output) for t in melon.tests]
        assert (back.time_limit, back.memory_limit_mb) == (melon.time_limit, melon.memory_limit_mb)
    from grpo_wb.errors import UserError

    with pytest.raises(UserError, match="compared by 'lines', which klear rows"):  # Klear's rule is another
        export_rows([melon], "klear", tmp_path / "melon-klear.jsonl")
    klear = import_rows("klear", skip_bad=True)[0][0]
    out = tmp_path / "k.jsonl"
    export_rows([klear], "klear", out)  # its own style: kept
    assert import_rows("klear", out)[0][0].checker == klear.checker
    with pytest.raises(UserError, match="judged by a klear checker, which new hardtests rows cannot hold"):
        export_rows([klear], "hardtests", tmp_path / "h.jsonl")
