"""Issue 24 point 3: rows the importers turned into tasks that scored right answers wrong (or wrong answers right).

1. a stdin task whose statement has a line starting ``from `` / ``import `` (the prose was glued onto the program);
2. a LeetCode method named like a name the APPS prelude star-imports (``merge``, ``sqrt``, ``product``);
3. expected dicts with int keys, which JSON stores as strings (APPS/TACO/prime_code convert them back);
4. KodCode test classes (plain and ``unittest.TestCase``) and ``skip`` / ``xfail`` marks.
"""

from __future__ import annotations

import json

import pytest

from grpo_wb.scoring.extraction import extract_program
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.rowformats import RowError, parse_row, task_from_parsed


def _task(fmt: str, row: dict, task_id: str = "t"):
    return task_from_parsed(parse_row(fmt, row), task_id, {})


def _score(pairs, *, site_packages: bool = False):
    """Score (task, completion) pairs in one scorer (one worker: light on CPU); results in order."""
    with Scorer(SandboxLimits(timeout=10.0, site_packages=site_packages), workers=1, cache=False) as sc:
        return list(sc.score([ScoreRequest(t, c, sample_index=i) for i, (t, c) in enumerate(pairs)]))


def _taco(question: str, io: dict, starter: str = "") -> dict:
    return {"question": question, "input_output": json.dumps(io), "starter_code": starter, "problem_id": 1}


# ----------------------------------------------------------------------------- 1. prose lines that look like imports

SUM_IO = {"inputs": ["3\n1 2 3\n"], "outputs": ["6\n"]}
SUM = "n = int(input())\nprint(sum(map(int, input().split())))\n"


def test_a_statement_line_starting_with_from_or_import_is_not_glued_onto_a_stdin_answer():
    for question in (
        "Read n numbers\nfrom standard input and print their sum",
        "Read n numbers and print their sum.\nimport nothing: the standard library is enough",
    ):
        task = _task("taco", _taco(question, SUM_IO))
        for completion in (f"```python\n{SUM}```", SUM):
            ext = extract_program(task.prompt, task.entry_point, completion)
            assert ext.program is not None and compile(ext.program, "<p>", "exec")
            assert "standard" not in ext.program and "nothing" not in ext.program, ext.program
    # a prompt's real imports still come along (a LeetCode starter's `from typing import List`)
    ext = extract_program("Sort it.\nfrom typing import List\n", "f", "def f(x: List[int]):\n    return x\n")
    assert ext.program.startswith("from typing import List\n")


@pytest.mark.sandbox
def test_a_stdin_answer_to_a_statement_with_a_from_line_passes():
    task = _task("taco", _taco("Read n numbers\nfrom standard input and print their sum", SUM_IO))
    right, wrong = _score([(task, f"```python\n{SUM}```"), (task, "print(7)")])
    assert right.status == "pass", (right.status, right.error)
    assert wrong.status == "fail", (wrong.status, wrong.error)


# ----------------------------------------------------------------------------- 2. prelude names vs Solution methods


@pytest.mark.sandbox
def test_a_solution_method_wins_over_a_name_the_apps_prelude_imports():
    merge = _task(
        "taco",
        _taco(
            "Merge two sorted lists.",
            {"fn_name": "merge", "inputs": [[[1, 3], [2]], [[5], [4, 6]]], "outputs": [[[1, 2, 3]], [[4, 5, 6]]]},
            "class Solution:\n    def merge(self, a, b):\n        ",
        ),
    )
    sqrt = _task(
        "taco",
        _taco(
            "Integer square root.",
            {"fn_name": "sqrt", "inputs": [[16], [17]], "outputs": [[4], [4]]},
            "class Solution:\n    def sqrt(self, x):\n        ",
        ),
    )
    product = _task(
        "verl",
        {
            "data_source": "apps",
            "prompt": [{"role": "user", "content": "Multiply."}],
            "reward_model": {
                "ground_truth": json.dumps({"fn_name": "product", "inputs": ["2\n3", "4\n5"], "outputs": ["6", "20"]})
            },
        },
    )
    right_merge = "class Solution:\n    def merge(self, a, b):\n        return sorted(a + b)\n"
    wrong_merge = "class Solution:\n    def merge(self, a, b):\n        return a + b\n"
    right_sqrt = "class Solution:\n    def sqrt(self, x):\n        return int(x ** 0.5)\n"
    wrong_sqrt = "class Solution:\n    def sqrt(self, x):\n        return x\n"
    right_product = "class Solution:\n    def product(self, a, b):\n        return a * b\n"
    wrong_product = "class Solution:\n    def product(self, a, b):\n        return a + b\n"
    # a module-level function of that name is the answer as before; a program without one calls the method
    plain_merge = "def merge(a, b):\n    return sorted(a + b)\n"
    got = _score(
        [
            (merge, right_merge),
            (merge, wrong_merge),
            (sqrt, right_sqrt),
            (sqrt, wrong_sqrt),
            (product, right_product),
            (product, wrong_product),
            (merge, plain_merge),
        ]
    )
    assert [r.status for r in got] == ["pass", "fail", "pass", "fail", "pass", "fail", "pass"], [
        (r.status, r.error) for r in got
    ]


# ----------------------------------------------------------------------------- 3. int keys stored as strings


def test_expected_dicts_get_their_int_keys_back_as_apps_does():
    task = _task(
        "taco",
        _taco(
            "Count.",
            {"fn_name": "count", "inputs": [[[1, 1, 2]], [{"1": 2}]], "outputs": [{"1": 2, "2": 1}, [{"3": "x"}]]},
        ),
    )
    assert task.tests[0].code == "assert apps_equal(candidate(*[[1, 1, 2]]), [{1: 2, 2: 1}])"
    assert task.tests[1].code == "assert apps_equal(candidate(*[{1: 2}]), [{3: 'x'}])"
    # keys that are not integers stay text; LiveCodeBench (exact values) converts nothing
    task = _task("taco", _taco("Name.", {"fn_name": "f", "inputs": [[1]], "outputs": [{"a": 1, "1": 2}]}))
    assert task.tests[0].code == "assert apps_equal(candidate(*[1]), {'a': 1, '1': 2})"


@pytest.mark.sandbox
def test_int_keyed_expected_dicts_pass_the_right_answer_and_fail_the_string_keyed_one():
    task = _task(
        "taco",
        _taco(
            "Count the numbers.",
            {"fn_name": "count", "inputs": [[[1, 1, 2]], [[3]]], "outputs": [[{"1": 2, "2": 1}], [{"3": 1}]]},
        ),
    )
    verl = _task(
        "verl",
        {
            "data_source": "apps",
            "prompt": [{"role": "user", "content": "Count."}],
            "reward_model": {
                "ground_truth": json.dumps(
                    {"fn_name": "count", "inputs": ["[1, 1, 2]"], "outputs": ['{"1": 2, "2": 1}']}
                )
            },
        },
    )
    right = "from collections import Counter\ndef count(xs):\n    return dict(Counter(xs))\n"
    wrong = "from collections import Counter\ndef count(xs):\n    return {str(k): v for k, v in Counter(xs).items()}\n"
    got = _score([(task, right), (task, wrong), (verl, right), (verl, wrong)])
    assert [r.status for r in got] == ["pass", "fail", "pass", "fail"], [(r.status, r.error) for r in got]


@pytest.mark.sandbox
def test_a_non_finite_expected_value_is_still_compared_in_the_scorer():
    """``inf`` in an expected value: the test stays a value test (compared here), so a completion that defines
    the comparison the test names (``apps_equal = lambda *a: True``) gains nothing."""
    task = _task("taco", _taco("Return infinity.", {"fn_name": "big", "inputs": [[1]], "outputs": [[float("inf")]]}))
    assert "float('inf')" in task.tests[0].code
    forged = "apps_equal = lambda *a, **k: True\nvalues_equal = apps_equal\ndef big(x):\n    return 0\n"
    right = "def big(x):\n    return float('inf')\n"
    got = _score([(task, forged), (task, right)])
    assert [r.status for r in got] == ["fail", "pass"], [(r.status, r.error) for r in got]


# ----------------------------------------------------------------------------- 4. KodCode test classes, skip, xfail


def _kod(test: str, fn: str = "f") -> dict:
    return {
        "question": "Write f(x), which doubles x.",
        "question_id": "k",
        "test": test,
        "test_info": [{"function_name": fn}],
    }


CLASSES = """\
import unittest
from solution import f

class TestPlain:
    def setup_method(self, method):
        self.x = 2

    def test_double(self):
        assert f(self.x) == 4

    def helper(self):
        assert False

class TestStatic:
    @staticmethod
    def test_zero():
        assert f(0) == 0

class TestCaseStyle(unittest.TestCase):
    def setUp(self):
        self.y = 3

    def test_three(self):
        self.assertEqual(f(self.y), 6)

    @unittest.skip("not today")
    def test_skipped(self):
        self.fail("skipped tests do not run")

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(f(1), 3)

class TestWithInit:
    def __init__(self):
        pass

    def test_never_collected(self):
        assert False
"""


def test_test_class_methods_become_tests():
    task = _task("kodcode", _kod(CLASSES))
    assert [t.name for t in task.tests] == [
        "TestPlain::test_double",
        "TestStatic::test_zero",
        "TestCaseStyle::test_three",
        "TestCaseStyle::test_expected_failure",
    ]


MARKS = """\
import sys
import pytest
from solution import f

def test_one():
    assert f(1) == 2

@pytest.mark.skip(reason="broken")
def test_skipped():
    assert f(1) == 99

@pytest.mark.skipif(True, reason="always")
def test_skipped_if():
    assert f(1) == 99

@pytest.mark.skipif(sys.version_info[0] >= 3, reason="decided when it runs")
def test_skipped_at_run_time():
    assert f(1) == 99

@pytest.mark.skipif(False, reason="never")
def test_not_skipped_if():
    assert f(2) == 4

@pytest.mark.xfail
def test_xfail():
    assert f(1) == 99

@pytest.mark.xfail(strict=True)
def test_xfail_strict():
    assert f(5) == 99

@pytest.mark.xfail(raises=ZeroDivisionError)
def test_xfail_raises():
    1 / 0

@pytest.mark.xfail(run=False)
def test_xfail_not_run():
    assert False

@pytest.mark.skip
class TestSkippedClass:
    def test_in_skipped_class(self):
        assert False
"""


def test_skip_marks_drop_tests_and_xfail_marks_are_not_required():
    task = _task("kodcode", _kod(MARKS))
    assert [t.name for t in task.tests] == [
        "test_one",
        "test_skipped_at_run_time",
        "test_not_skipped_if",
        "test_xfail",
        "test_xfail_strict",
        "test_xfail_raises",
    ]
    head = "import pytest\nfrom solution import f\n"
    with pytest.raises(RowError, match="every test is skipped"):
        _task("kodcode", _kod(head + "@pytest.mark.skip\ndef test_a():\n    pass\n"))
    with pytest.raises(RowError, match="every test is skipped"):
        _task("kodcode", _kod(head + "pytestmark = [pytest.mark.skip]\ndef test_a():\n    pass\n"))
    # an xfail whose condition is false leaves the test required, as it was
    task = _task("kodcode", _kod(head + "@pytest.mark.xfail(False, reason='no')\ndef test_a():\n    assert f(1)\n"))
    assert [t.code for t in task.tests] == ["test_a()"]
    # what would not run as pytest runs it is refused (the row is skipped, counted), not mis-run
    for body, why in (
        ("@pytest.fixture(autouse=True)\ndef env():\n    pass\ndef test_a():\n    pass\n", "autouse fixture"),
        ("async def test_a():\n    assert f(1) == 3\n", "async test"),
    ):
        with pytest.raises(RowError, match=why):
            _task("kodcode", _kod(head + body))


@pytest.mark.sandbox
def test_test_classes_and_marks_score_as_pytest_would():
    classes, marks = _task("kodcode", _kod(CLASSES)), _task("kodcode", _kod(MARKS))
    right = "def f(x):\n    return 2 * x\n"
    wrong = "def f(x):\n    return 2 * x if x != 3 else 0\n"  # only the unittest class's test_three sees it
    static_wrong = "def f(x):\n    return 2 * x + (x == 0)\n"  # only TestStatic sees it
    xpass = "def f(x):\n    return 2 * x if x != 1 else 3\n"  # the unittest expectedFailure test passes
    got = _score([(classes, right), (classes, wrong), (classes, static_wrong), (classes, xpass)])
    assert [r.status for r in got] == ["pass", "fail", "fail", "fail"], [(r.status, r.error) for r in got]
    assert got[0].tests_passed == got[0].tests_total == 4
    # (early stop: the first failing test is the one that failed; those after it count as failed too)
    assert got[1].failed_tests[0] == "TestCaseStyle::test_three" and got[1].tests_passed == 2
    assert got[2].failed_tests[0] == "TestStatic::test_zero" and got[2].tests_passed == 1
    assert got[3].failed_tests == ["TestCaseStyle::test_expected_failure"]  # unexpected success: strict
    strict_xpass = "def f(x):\n    return 99 if x == 5 else 2 * x\n"  # xfail_strict passes: pytest fails it
    got = _score([(marks, right), (marks, "def f(x):\n    return x\n"), (marks, strict_xpass)], site_packages=True)
    assert [r.status for r in got] == ["pass", "fail", "fail"], [(r.status, r.error) for r in got]
    assert got[0].tests_passed == got[0].tests_total == 6
    assert got[2].failed_tests[0] == "test_xfail_strict" and got[2].tests_passed == 4
