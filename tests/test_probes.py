"""The audit's static parts, without a sandbox: trivial programs, test statistics, test inputs and their variants,
and the test-audit flags carried into filter, headroom and exports."""

from __future__ import annotations

import pytest

from grpo_wb.errors import UserError
from grpo_wb.signal.headroom import TaskSamples
from grpo_wb.signal.testflags import NOT_AUDITED, audit_columns, audit_lines, drop_step, flags_by_category
from grpo_wb.tasks.probes import input_variants, prompt_examples, suite_inputs, suite_stats, trivial_programs
from grpo_wb.tasks.records import Task, TestCase

TRIPLE = Task(
    "t/triple",
    'def triple(x):\n    """Triple x.\n\n    >>> triple(2)\n    6\n    >>> triple(-1)\n    -3\n    """\n',
    "triple",
    (TestCase("a", "assert candidate(2) == 6"), TestCase("b", "assert candidate(5) == 15")),
)
SCRIPT = Task(
    "t/sum",
    "Read a and b, print a + b.\n\nExample\nInput\n1 2\nOutput\n3\n",
    "",
    (
        TestCase("a", type="stdio", input="1 2\n", output="3\n"),
        TestCase("b", type="stdio", input="5 5\n", output="10\n"),
    ),
)


def test_the_prompts_doctest_examples_are_read_without_the_docstrings_end():
    assert prompt_examples(TRIPLE) == [((2,), 6), ((-1,), -3)]


def test_an_mbpp_style_quoted_assert_is_an_example():
    t = Task("m/1", "Write a function.\nassert add(1, 2) == 3\n", "add", (TestCase("a", "assert add(1, 2) == 3"),))
    assert prompt_examples(t) == [((1, 2), 3)]


def test_trivial_programs_use_only_the_prompt():
    progs = dict(trivial_programs(TRIPLE))
    assert progs["return None"] == "def triple(*args, **kwargs):\n    return None\n"
    table = progs["answer the prompt's examples"]
    ns: dict = {}
    exec(table, ns)
    assert ns["triple"](2) == 6 and ns["triple"](-1) == -3 and ns["triple"](5) is None  # no test's answer in it


def test_a_scripts_trivial_programs_print_nothing_echo_and_the_examples():
    names = [n for n, _ in trivial_programs(SCRIPT)]
    assert names == ["print nothing", "echo the input", "print the prompt's examples"]
    assert "5 5" not in dict(trivial_programs(SCRIPT))["print the prompt's examples"]


def test_test_stats_count_distinct_inputs_and_prompt_examples():
    assert suite_stats(TRIPLE) == {
        "tests": 2,
        "distinct_inputs": 2,
        "in_prompt": 1,
        "only_prompt_examples": False,
        "check_calls": 0,
    }
    assert suite_stats(SCRIPT)["in_prompt"] == 1
    only = Task("t/o", TRIPLE.prompt, "triple", (TestCase("a", "assert candidate(2) == 6"),))
    assert suite_stats(only)["only_prompt_examples"] is True


def test_test_inputs_and_variants_are_literals_that_round_trip():
    t = Task(
        "t/v",
        "def f(xs, k):\n",
        "f",
        (
            TestCase("a", "assert candidate([1, 2, 3], 2) == 5"),
            TestCase("b", "assert candidate([4], 0) == 4\nassert candidate([4], 0) == 4"),
        ),
    )
    assert suite_inputs(t) == [([1, 2, 3], 2), ([4], 0)]
    v = input_variants(t, n=10)
    assert v[:2] == [([1, 2, 3], 2), ([4], 0)] and 2 < len(v) <= 12
    assert len({repr(a) for a in v}) == len(v)
    assert all(isinstance(a[0], list) and isinstance(a[1], int) for a in v)
    assert input_variants(t, n=10) == v  # deterministic
    assert input_variants(t, n=10, seed=1) != v


def test_a_tuple_argument_keeps_its_length():
    t = Task("t/i", "def f(a, b):\n", "f", (TestCase("a", "assert candidate((1, 2), (3, 4)) == 'NO'"),))
    assert all(len(x) == 2 and len(y) == 2 for x, y in input_variants(t, n=20))


def _rec(flags, score=None, passed=1, fp=None):
    r = {"flags": flags, "references": {"n": 1, "passed": passed}, "mutation": {"score_without_equivalent": score}}
    if fp is not None:
        r["wrong"] = {"false_positive_rate": fp}
    return r


AUDIT = {"a": _rec([], 0.9), "b": _rec(["broken"], None, passed=0), "c": _rec(["weak", "hackable"], 0.3, fp=0.5)}


def test_the_drop_step_drops_flags_low_scores_and_unaudited_tasks():
    name, why = drop_step(AUDIT, ["broken"], 0.5)
    assert name == "test audit: drop broken; mutation score >= 0.5"
    ts = {k: TaskSamples(k, 4, 2, (1, 0, 1, 0)) for k in ("a", "b", "c", "d")}
    assert {k: why(s) for k, s in ts.items()} == {
        "a": None,
        "b": "test audit: broken",
        "c": "mutation score below the floor",
        "d": NOT_AUDITED,
    }
    with pytest.raises(UserError, match="unknown test-audit flag 'brokn'"):
        drop_step(AUDIT, ["brokn"], None)


def test_headroom_says_which_categories_hold_flagged_tasks():
    cats = {"a": "frontier", "b": "too_hard", "c": "too_easy", "d": "too_hard"}
    assert flags_by_category(cats, AUDIT)["too_hard"] == {"tasks": 2, "broken": 1, NOT_AUDITED: 1}
    assert audit_lines(cats, AUDIT) == [
        "too hard 2: 1 broken, 1 not in the test audit",
        "frontier 1: all clean",
        "too easy 1: 1 hackable, 1 weak",
    ]


def test_export_columns():
    assert audit_columns(AUDIT["c"]) == {
        "grpo_wb_test_flags": "weak,hackable",
        "grpo_wb_test_mutation_score": 0.3,
        "grpo_wb_test_references_passed": 1,
        "grpo_wb_test_false_positive_rate": 0.5,
    }
    assert set(audit_columns(None).values()) == {None}
