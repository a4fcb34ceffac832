"""Checkers (special judges) and a judge's limits: the task format's ``checker``, ``checker_style``, ``time_limit`` and
``memory_limit_mb``; open-r1/codeforces rows imported with theirs; a different right answer passes where the checker
says so; the checker runs in a job of its own; open-r1's Codeforces comparison without a checker."""

import json
import time

import pytest
from conftest import ROW_FIXTURES, import_rows

from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest, plan_task
from grpo_wb.scoring.verdicts import codeforces_output_matches
from grpo_wb.tasks.records import parse_task, task_from_json

CF = ROW_FIXTURES / "open-r1-codeforces.jsonl"
SPLIT_TESTS = [
    {"name": f"t{i}", "type": "stdio", "input": f"{n}\n", "output": f"1 {n - 1}\n"}
    for i, n in enumerate((5, 7, 10, 1000000))
]
OPEN_R1_CHECKER = json.loads(CF.read_text().splitlines()[0])["generated_checker"]
KLEAR_CHECKER = (
    "import sys\n\n\ndef is_valid_output(input_str, output_str, reference_output_str):\n"
    "    n = int(input_str.split()[0])\n    got = output_str.split()\n"
    "    return len(got) == 2 and all(x.isdigit() for x in got) and int(got[0]) != int(got[1]) and \\\n"
    "        min(map(int, got)) > 0 and sum(map(int, got)) == n\n\n\n"
    "if __name__ == '__main__':  # Klear's own main takes the three texts as arguments\n"
    "    print(is_valid_output(sys.argv[1], sys.argv[2], sys.argv[3]))\n"
)
TESTLIB_CHECKER = (
    '#include "testlib.h"\n'
    "int main(int argc, char* argv[]) {\n    registerTestlibCmd(argc, argv);\n"
    "    long long n = inf.readLong(), a = ouf.readLong(), b = ouf.readLong();\n"
    '    if (a <= 0 || b <= 0 || a == b || a + b != n) quitf(_wa, "%lld + %lld is no split of %lld", a, b, n);\n'
    '    if (!ouf.seekEof()) quitf(_wa, "extra output");\n    quitf(_ok, "a valid split");\n}\n'
)
HARDTESTS_CHECKER = (
    "def output_judging_function(input_str, candidate_output, reference_output):\n"
    "    n = int(input_str.split()[0])\n    got = candidate_output.split()\n"
    "    try:\n        a, b = map(int, got)\n    except ValueError:\n        return False\n"
    "    return a > 0 and b > 0 and a != b and a + b == n\n"
)
SPLIT = {
    "task_id": "cf/split",
    "prompt": "Print two different positive integers that sum to n.",
    "entry_point": "",
    "tests": SPLIT_TESTS,
    "checker": OPEN_R1_CHECKER,
}
OTHER_RIGHT = "```python\nn = int(input())\nprint(2, n - 2)\n```"
SAME_AS_EXPECTED = "```python\nn = int(input())\nprint(1, n - 1)\n```"
WRONG = "```python\nn = int(input())\nprint(n, 0)\n```"


# ----------------------------------------------------------------------------- format, import, comparison


def test_checker_fields_round_trip_and_bad_ones_are_named():
    task = task_from_json({**SPLIT, "checker_style": "klear", "time_limit": 2, "memory_limit_mb": 256})
    assert task_from_json(task.to_json()) == task and task.time_limit == 2.0
    assert "checker" not in task_from_json({**SPLIT, "checker": None}).to_json()
    for change, problem in [
        ({"checker_style": "pytest"}, "unknown checker_style 'pytest'"),
        ({"checker": "def (:"}, "checker does not compile"),
        ({"checker": "def (:", "checker_style": "klear"}, "checker does not compile"),
        ({"checker": "  "}, "checker is empty"),
        ({"time_limit": 0}, "time_limit must be a positive finite number of seconds"),
        ({"memory_limit_mb": 1.5}, "field 'memory_limit_mb' must be a integer or null"),
        ({"tests": [{"name": "a", "code": "assert f(1)"}], "entry_point": "f"}, "a checker judges stdio tests"),
    ]:
        t, problems = parse_task({**SPLIT, **change})
        assert t is None and any(p.startswith(problem) for p in problems), (change, problems)


def test_the_expected_output_of_a_checker_task_stays_out_of_the_candidates_job():
    plans, _ = plan_task(task_from_json(SPLIT))
    assert all(p.output_match == "checker" for p in plans)
    assert all("1 4" not in json.dumps(p.for_child()) for p in plans)


def test_codeforces_rows_import_with_their_checker_limits_and_language():
    tasks, s = import_rows("open-r1", CF, skip_bad=True)
    assert s.skipped == {"official_tests is empty": 1, "time_limit must be a positive number, got 'fast'": 1}
    split, cpp, py = tasks
    assert split.checker == OPEN_R1_CHECKER and split.checker_style == "open-r1"
    assert (split.time_limit, split.memory_limit_mb) == (1.0, 256) and (cpp.time_limit, cpp.memory_limit_mb) == (
        1.0,
        64,
    )
    assert cpp.language == "cpp" and cpp.checker is None and py.language == "python"
    assert {t.metadata["trainer_reward"] for t in tasks} == {"open-r1-codeforces"}
    assert any("judged by its checker" in n for n in s.notes)
    # the test sets stay apart: named in the tests, and one of them alone on request
    assert [t.name for t in split.tests] == [
        "official_0",
        "official_1",
        "official_2",
        "official_3",
        "generated_0",
        "generated_1",
    ]
    assert any("generated tests live outside the row" in n for n in s.notes)  # py's generated_tests is a count
    only, s2 = import_rows("open-r1", CF, skip_bad=True, test_set="generated")
    assert [t.task_id for t in only] == ["open-r1/1900A"] and [x.input for x in only[0].tests] == ["3\n", "999999\n"]
    assert only[0].metadata["test_set"] == "generated" and s2.skipped["no generated tests (it has official)"] == 2


@pytest.mark.parametrize(
    "output, expected, same",
    [
        ("yes\n", "YES\n", True),  # whole-word yes/no in any case
        ("Yes it is\n", "YES it is\n", True),
        ("yesno\n", "YESNO\n", False),  # not a whole word: compared as it is
        ("1 2\n\n3\n", "1\n2 3\n", True),  # blank lines dropped, whitespace (newlines too) collapsed
        ("1 2 3", "1 2 4", False),
        ("", "\n", True),
    ],
)
def test_open_r1s_codeforces_comparison(output, expected, same):
    assert codeforces_output_matches(output, expected) is same


# ----------------------------------------------------------------------------- judged in the sandbox


@pytest.fixture(scope="module")
def scorer():
    sc = Scorer(SandboxLimits(timeout=3.0, check_timeout=2.0, compile_timeout=60.0), workers=2)
    yield sc
    sc.close()


def score(scorer, task, completion, **kw):
    task = task_from_json(task) if isinstance(task, dict) else task
    return next(scorer.score([ScoreRequest(task, completion, **kw)]))


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "style, checker",
    [
        ("open-r1", OPEN_R1_CHECKER),
        ("klear", KLEAR_CHECKER),
        ("hardtests", HARDTESTS_CHECKER),
        ("testlib", TESTLIB_CHECKER),
    ],
)
def test_a_different_right_answer_passes_where_the_checker_says_so(scorer, style, checker):
    if style == "testlib":
        from test_cpp import need_gxx

        need_gxx()
    task = {**SPLIT, "task_id": f"cf/split-{style}", "checker": checker, "checker_style": style}
    assert score(scorer, task, OTHER_RIGHT).status == "pass"
    assert score(scorer, task, SAME_AS_EXPECTED).status == "pass"
    wrong = score(scorer, task, WRONG)
    assert wrong.status == "fail" and wrong.tests_passed == 0 and wrong.error.startswith("rejected by the checker")
    assert wrong.failure["actual"] == "5 0\n"
    if style == "testlib":  # testlib's own message
        assert "5 + 0 is no split of 5" in wrong.error, wrong.error
    # without the checker, the same right answer fails: only the expected output's exact text passes
    plain = {k: v for k, v in task.items() if k not in ("checker", "checker_style")}
    assert score(scorer, plain, OTHER_RIGHT).status == "fail"


@pytest.mark.sandbox
def test_a_checker_that_fails_or_hangs_rejects_and_a_crashing_program_is_not_checked(scorer):
    crash = {**SPLIT, "task_id": "cf/crash", "checker": "raise SystemExit(3)\n"}
    r = score(scorer, crash, OTHER_RIGHT)
    assert r.status == "fail" and "the checker ended with exit code 3" in r.error
    t0 = time.monotonic()
    hang = {**SPLIT, "task_id": "cf/hang", "checker": "while True:\n    pass\n", "tests": SPLIT_TESTS[:1]}
    r = score(scorer, hang, OTHER_RIGHT)
    assert r.status == "fail" and "the checker ran past 2 s" in r.error and time.monotonic() - t0 < 15
    broken = score(scorer, SPLIT, "```python\nraise ValueError('boom')\n```")
    assert broken.status == "fail" and "ValueError: boom" in broken.error


@pytest.mark.sandbox
def test_an_output_cannot_make_the_checker_accept(scorer):
    """The candidate's output is the checker's input, never its code: a checker that evaluates it runs in a job of
    its own, in the sandbox; an output shaped like the checker's verdict is only an output."""
    naive = {**SPLIT, "task_id": "cf/naive", "checker": "import sys\nprint(eval(open(sys.argv[3]).read()))\n"}
    forged = "```python\nprint(\"__import__('os').system('touch /tmp/grpo_wb_checker_pwned') or 0\")\n```"
    r = score(scorer, naive, forged)
    assert not r.passed
    import os

    assert not os.path.exists("/tmp/grpo_wb_checker_pwned")
    assert score(scorer, SPLIT, "```python\nprint(1)\nprint(100)\n```").status == "fail"


@pytest.mark.sandbox
def test_codeforces_rows_are_judged_as_open_r1_judges_them(scorer, tmp_path):
    split, cpp, py = import_rows("open-r1", CF, skip_bad=True)[0]
    # the trainer's rule: the last ```python block, no APPS imports, the checker
    r = score(scorer, split, "```python\nprint(0)\n```\nor better:\n" + OTHER_RIGHT)
    assert r.status == "pass" and r.judge == "open-r1-codeforces"
    assert (
        score(scorer, py, "```python\nw = int(input())\nprint('yes' if w % 2 == 0 and w > 2 else 'no')\n```").status
        == "pass"
    )  # open-r1 upper-cases a whole-word yes/no
    strict = Scorer(SandboxLimits(timeout=3.0), RewardConfig(judge="strict"), workers=1)
    try:  # grpo_wb's own rule compares lines exactly
        assert (
            score(strict, py, "```python\nw = int(input())\nprint('yes' if w % 2 == 0 and w > 2 else 'no')\n```").status
            == "fail"
        )
    finally:
        strict.close()


@pytest.mark.sandbox
def test_a_judges_limits_hold_per_test_for_cpp(scorer):
    from test_cpp import need_gxx

    need_gxx()
    base = {
        "task_id": "cf/limits",
        "prompt": "Echo n.",
        "entry_point": "",
        "language": "cpp",
        "tests": [
            {"name": f"t{i}", "type": "stdio", "input": f"{n}\n", "output": f"{n}\n"} for i, n in enumerate((1, 2, 3))
        ],
        "time_limit": 0.5,
        "memory_limit_mb": 64,
    }
    slow_on_2 = (
        "```cpp\n#include <iostream>\n#include <unistd.h>\n"
        "int main() { int n; std::cin >> n; if (n == 2) sleep(3); std::cout << n << '\\n'; }\n```"
    )
    r = score(scorer, base, slow_on_2)
    assert r.status == "fail" and r.error == "time limit exceeded (0.5 s)" and r.failure["test"] == "t1"
    hungry = (
        "```cpp\n#include <iostream>\n#include <vector>\nint main() { int n; std::cin >> n;"
        " std::vector<char> v(200u << 20, 1); std::cout << n + v[n] - 1 << '\\n'; }\n```"
    )
    r = score(scorer, base, hungry)
    assert r.status == "fail" and r.error.startswith("runtime error"), r.error
    assert score(scorer, {**base, "memory_limit_mb": 512, "time_limit": 10}, hungry).status == "pass"


def test_every_field_that_can_change_a_verdict_is_in_the_verdict_caches_key():
    """A field left out of the task's fingerprint lets a cached verdict of another task answer (a judge's memory
    limit did, once); only the fields that never change a verdict may be left out."""
    import dataclasses

    from grpo_wb.scoring.scorer import _cache_key, _task_fingerprint, task_deadline
    from grpo_wb.tasks.records import Task, TestCase

    def key(task):  # as Scorer._verdict makes it: the fingerprint and the task's deadline
        return _cache_key(_task_fingerprint(task), "print(1)", SandboxLimits().with_timeout(task_deadline(task)))

    neutral = {"canonical_solution", "solutions", "wrong_solutions", "metadata", "schema_version", "prompt"}
    base = task_from_json({**SPLIT, "checker": None})
    other = {
        "task_id": "x",
        "entry_point": "g",
        "tests": (TestCase("t0", type="stdio", input="1", output="2"),),
        "test_setup": "x = 1",
        "check": "def check(c):\n    pass\n",
        "timeout": 9.0,
        "prelude": "import os",
        "output_match": "tokens",
        "language": "cpp",
        "checker": "print(1)",
        "checker_style": "klear",
        "time_limit": 2.0,
        "memory_limit_mb": 64,
    }
    fields = {f.name for f in dataclasses.fields(Task)}
    assert fields == neutral | set(other), "a new Task field: add it to the fingerprint or to the neutral ones"
    for name, value in other.items():
        changed = dataclasses.replace(base, **{name: value})
        assert key(changed) != key(base), name


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "style, checker, right",
    [
        # Klear prints is_valid_output's value: only the text True accepts (a string 'False' is true to bool())
        ("klear", "def is_valid_output(i, o, e):\n    return 'False'\n", False),
        (
            "klear",
            "def is_valid_output(i, o, e):\n    return o.split()[0] != '0'\n\n\ndef main():\n    print('noise')\n\n\n"
            "main()\n",
            True,
        ),  # Klear cuts the checker at its main
        # HardTests passes the texts as they are: a carriage return is not a newline
        ("hardtests", "def output_judging_function(i, o, e):\n    return '\\r' not in o\n", False),
    ],
)
def test_each_function_checker_is_read_as_its_dataset_reads_it(scorer, style, checker, right):
    task = {
        **SPLIT,
        "task_id": f"cf/{style}-{right}",
        "checker": checker,
        "checker_style": style,
        "tests": SPLIT_TESTS[:1],
    }
    reply = (
        OTHER_RIGHT
        if style != "hardtests"
        else "```python\nimport sys\nn = int(input())\nsys.stdout.write(f'2 {n - 2}\\r\\n')\n```"
    )
    assert score(scorer, task, reply).passed is right


@pytest.mark.sandbox
def test_testlibs_fail_and_a_crashing_checker_are_the_tasks_fault(scorer):
    from test_cpp import need_gxx

    need_gxx()
    for body, name in [('quitf(_fail, "jury answer broken");', "fail"), ("raise(SIGSEGV);", "crash")]:
        checker = TESTLIB_CHECKER.replace("    long long n", f"    {body}\n    long long n").replace(
            '#include "testlib.h"', '#include "testlib.h"\n#include <csignal>'
        )
        r = score(
            scorer,
            {**SPLIT, "task_id": f"cf/testlib-{name}", "checker": checker, "checker_style": "testlib"},
            OTHER_RIGHT,
        )
        assert r.status == "sandbox_error" and "the checker failed on test" in r.error, (name, r.status, r.error)


@pytest.mark.sandbox
def test_a_testlib_checker_without_a_compiler_stops_the_run(monkeypatch):
    monkeypatch.setenv("GRPO_WB_CXX", "/nonexistent/g++")
    from grpo_wb.scoring.scorer import ToolchainMissing

    task = task_from_json({**SPLIT, "checker": TESTLIB_CHECKER, "checker_style": "testlib"})
    with Scorer(SandboxLimits(timeout=3.0), workers=1) as sc:
        with pytest.raises(ToolchainMissing, match="has a testlib checker"):
            list(sc.score([ScoreRequest(task, OTHER_RIGHT)]))


@pytest.mark.sandbox
def test_a_testlib_checker_that_does_not_compile_is_the_tasks_fault_not_the_completions(scorer):
    from test_cpp import need_gxx

    need_gxx()
    assert (
        parse_task({**SPLIT, "checker": TESTLIB_CHECKER, "checker_style": "testlib"})[0] is not None
    )  # C++: no Python check
    broken = {
        **SPLIT,
        "task_id": "cf/broken-checker",
        "checker": '#include "testlib.h"\nint main( {',
        "checker_style": "testlib",
    }
    r = score(scorer, broken, OTHER_RIGHT)
    assert r.status == "sandbox_error" and "does not compile" in r.error and "expected" in r.error, r.error
