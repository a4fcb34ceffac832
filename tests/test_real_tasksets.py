"""MBPP and APPS importers on the real copies bundled in data/external, and stdin/stdout tests."""

import json

import pytest
from conftest import need, read_jsonl

from grpo_wb.bundled import APPS_TRAIN as APPS
from grpo_wb.bundled import MBPP
from grpo_wb.bundled import MBPP_SANITIZED as MBPP_SAN
from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.scoring.verdicts import apps_equal, stdio_matches
from grpo_wb.tasks.importers import import_apps, import_mbpp, mbpp_entry_point
from grpo_wb.tasks.records import Task, TestCase, load_tasks

pytestmark = [pytest.mark.data]


@pytest.fixture(scope="module")
def scorer():
    # a hang guard, not a speed claim: mbpp/123's reference (amicable numbers to 9999) takes 6.7 s alone on a
    # quiet core, and these tests must pass beside other load
    with Scorer(SandboxLimits(timeout=120.0), workers=2) as sc:
        yield sc


@pytest.mark.sandbox
@pytest.mark.slow
def test_mbpp_original_every_reference_passes(scorer):
    tasks, rep = import_mbpp(need(MBPP))
    assert rep.n_tasks == len(tasks) == 974
    res = list(scorer.score(ScoreRequest(t, t.canonical_solution) for t in tasks))
    bad = [(t.task_id, r.status, r.error) for t, r in zip(tasks, res) if not r.passed]
    assert bad == []
    assert all(r.tests_passed == r.tests_total == 3 for r in res)


@pytest.mark.sandbox
def test_mbpp_sanitized_every_reference_passes_with_test_imports(scorer):
    tasks, rep = import_mbpp(need(MBPP_SAN))
    assert rep.n_tasks == 427
    with_imports = [t for t in tasks if t.test_setup]
    assert with_imports and all("import" in t.test_setup for t in with_imports)
    res = list(scorer.score(ScoreRequest(t, t.canonical_solution) for t in tasks))
    assert [(t.task_id, r.status, r.error) for t, r in zip(tasks, res) if not r.passed] == []


@pytest.mark.sandbox
def test_mbpp_prompt_names_the_function_and_shows_one_test():
    tasks, _ = import_mbpp(need(MBPP))
    t = next(t for t in tasks if t.task_id == "mbpp/2")
    assert t.entry_point == "similar_elements"
    src = [r for r in read_jsonl(MBPP) if r["task_id"] == 2][0]
    assert src["text"] in t.prompt and src["test_list"][0] in t.prompt and src["test_list"][1] not in t.prompt
    compile(t.prompt, "<prompt>", "exec")  # the prompt is code (a docstring), so continuations work
    # the tests call the function by name, not `candidate`
    assert all("similar_elements(" in tc.code for tc in t.tests)


def test_mbpp_entry_point_comes_from_the_tests():
    assert mbpp_entry_point(["assert set(f((1, 2))) == set((1,))"], "def f(x):\n    return x\n") == "f"
    assert mbpp_entry_point(["assert len(g([1])) == 1"], None) == "g"
    assert mbpp_entry_point(["assert 1 == 1"], None) is None


@pytest.mark.sandbox
def test_mbpp_wrong_answer_gets_partial_credit(scorer):
    tasks, _ = import_mbpp(need(MBPP))
    t = next(t for t in tasks if t.task_id == "mbpp/2")
    wrong = "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b)))[:1]\n"
    (r,) = list(scorer.score([ScoreRequest(t, wrong)]))
    assert r.status == "fail" and 0 <= r.tests_passed < 3


@pytest.mark.sandbox
def test_apps_import_kinds_and_references(scorer):
    tasks, rep = import_apps(need(APPS))
    kinds = {t.metadata["folder"]: ("script" if t.is_script else "call") for t in tasks}
    assert kinds == {"0001": "script", "0111": "script", "2287": "script", "2404": "call", "4184": "call"}
    assert tasks[0].prelude and "Use Standard Input format" in tasks[0].prompt
    res = list(scorer.score(ScoreRequest(t, t.canonical_solution) for t in tasks))
    assert [r.status for r in res] == ["pass"] * 5


@pytest.mark.sandbox
@pytest.mark.slow
def test_apps_verdicts_agree_with_the_published_ones_on_83_programs():
    """Every generated program's verdict must equal CodeRL's published ``result`` (True = passed).

    Disagreements would be listed here with their reason; on this machine there were none
    (83/83), so the list must stay empty.
    """
    tasks, _ = import_apps(need(APPS))
    reqs, published = [], []
    for t in tasks:
        gens = json.loads((APPS / t.metadata["folder"] / "gen_solutions.json").read_text())
        for i, g in enumerate(gens):
            reqs.append(ScoreRequest(t, g["code"], i))
            published.append((t.task_id, i, g["result"], g["error_type"]))
    assert len(reqs) == 83
    with Scorer(SandboxLimits(timeout=4.0), workers=2) as sc:
        res = list(sc.score(reqs))
    disagreements = [
        (tid, i, pub, et, r.status, r.error)
        for (tid, i, pub, et), r in zip(published, res)
        if (pub is True) != r.passed
    ]
    assert disagreements == []
    assert sum(r.passed for r in res) == sum(1 for p in published if p[2] is True) == 35


def test_apps_bad_folders(tmp_path):
    with pytest.raises(UserError, match="expected an APPS problem folder"):
        import_apps(tmp_path / "nope")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "question.txt").write_text("q")
    with pytest.raises(UserError, match="missing input_output.json"):
        import_apps(tmp_path / "p")
    (tmp_path / "p" / "input_output.json").write_text('{"inputs": ["1"], "outputs": []}')
    with pytest.raises(UserError, match="1 inputs but 0 outputs"):
        import_apps(tmp_path / "p")


@pytest.mark.sandbox
@pytest.mark.slow
def test_cli_imports_and_smoke_with_each_importer(tmp_path, capsys):
    for kind, src in (("mbpp", MBPP_SAN), ("apps", APPS)):
        out = tmp_path / f"{kind}.jsonl"
        assert main(["tasks", "import", kind, "--src", str(need(src)), "--out", str(out)]) == 0
        tasks = load_tasks(out)
        run = tmp_path / f"run_{kind}"
        assert (
            main(
                [
                    "smoke",
                    "--tasks",
                    str(out),
                    "--backend",
                    "mock",
                    "--group-size",
                    "2",
                    "--batch-size",
                    str(min(4, len(tasks))),
                    "--steps",
                    "1",
                    "--out",
                    str(run),
                    "--timeout",
                    "4",
                    "--min-informative-fraction",
                    "0",
                    "--no-progress",
                ]
            )
            == 0
        )
        rows = read_jsonl(run / "last_rollouts.jsonl")
        assert rows and all(r["status"] in ("pass", "fail", "error", "timeout", "parse_failure") for r in rows)
    # MBPP and APPS without --src: the copies the package carries (grpo_wb/data); a set it does not carry needs one
    assert main(["tasks", "import", "mbpp", "--out", str(tmp_path / "x.jsonl")]) == 0
    assert len(read_jsonl(tmp_path / "x.jsonl")) == 427
    assert main(["tasks", "import", "mapcoder", "--out", str(tmp_path / "y.jsonl")]) == 1
    assert "needs --src" in capsys.readouterr().err


# ----------------------------------------------------------------------------- stdin/stdout


SUM = Task(
    "s/sum",
    "Read two integers and print their sum.",
    "",
    (TestCase("a", type="stdio", input="1 2\n", output="3\n"), TestCase("b", type="stdio", input="5 5\n", output="10")),
)


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "completion,status,passed",
    [
        ("a, b = map(int, input().split())\nprint(a + b)\n", "pass", 2),
        (
            "```python\nimport sys\na, b = map(int, sys.stdin.buffer.read().split())\n"
            "print(a + b)   \nsys.exit(0)\n```",
            "pass",
            2,
        ),  # trailing spaces, exit() at the end
        ("print(3)\n", "fail", 1),
        ("a, b = map(int, input().split())\nprint(a + b)\nprint()\nprint('extra')\n", "fail", 0),  # line count
        ("a, b = map(int, input().split())\nprint(a + b, end='')\n", "pass", 2),  # a missing final newline is fine
        ("import os\nprint(10)\nos._exit(0)\n", "error", 0),
        ("I would read the input and add.", "parse_failure", 0),
    ],
)
def test_stdio_tests(scorer, completion, status, passed):
    (r,) = list(scorer.score([ScoreRequest(SUM, completion)]))
    assert (r.status, r.tests_passed) == (status, passed), r.error


@pytest.mark.sandbox
def test_stdio_expected_output_never_reaches_the_child(scorer):
    # a script that prints whatever it can find that looks like the expected answer
    leak = (
        "import gc\nfound = [o for o in gc.get_objects() if isinstance(o, dict) and 'output' in o]\n"
        "print(found[0]['output'] if found else 'nothing')\n"
    )
    (r,) = list(scorer.score([ScoreRequest(SUM, leak)]))
    assert (r.status, r.tests_passed) == ("fail", 0), r.error  # it ran, and printed no expected output


def test_stdio_comparison_rules():
    assert stdio_matches("1\n2  \n\n\n", "1\n2")
    assert not stdio_matches("1\n2\n3", "1\n2")
    assert not stdio_matches("1\n\n2", "1\n2")
    assert apps_equal((1, 2), [1, 2]) and apps_equal(5, [5]) and not apps_equal(4, [5])


def test_stdio_task_format_is_validated(tmp_path, capsys):
    good = {
        "task_id": "s",
        "prompt": "p",
        "entry_point": "",
        "tests": [{"name": "a", "type": "stdio", "input": "1", "output": "1"}],
    }
    mixed = dict(good, task_id="m", tests=good["tests"] + [{"name": "b", "code": "assert 1"}])
    missing = dict(good, task_id="x", tests=[{"name": "a", "type": "stdio", "input": "1"}])
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in (good, mixed, missing)) + "\n")
    assert main(["tasks", "validate", str(p), "--no-run"]) == 1
    err = capsys.readouterr().err
    assert f"{p}:2: " in err and "mix stdio and assert" in err
    assert f"{p}:3: tests[0]: missing field 'output'" in err
    assert f"{p}:1:" not in err
