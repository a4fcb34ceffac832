"""Verdicts round three (issue 42): the tester trusts only plain values and the task's own names.

Each attack is a wrong answer; most passed an exec test on f41e53b (those that did not are kept as regressions:
``HELD`` names them). Each asserts one property (no reward, and the scorer still right afterwards). The controls
show that correct answers of every shape pass through every path the attacks use: a function, a callable object,
a ``Solution`` method, a class entry point, a second name the tests read, HumanEval's ``check(candidate)``, value
tests, in-place arguments and generators.
"""

import textwrap

import pytest
from hostile import score_one as score
from test_exec_apart import EXEC, GOOD, WRONG  # the first round's task: answers no completion below knows

from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits, run_program
from grpo_wb.scoring.scorer import Scorer
from grpo_wb.tasks.records import Task, TestCase

pytestmark = [pytest.mark.sandbox]

HELD = (
    "entry point: Solution method, an int subclass, a list holding one, a generator of them",
    "names: sorted, AssertionError",
    "in place: one always-equal row, a generator",
)
"""The attacks below that did not pass on f41e53b: kept so that they keep not passing."""

# an object equal to everything, and never the answer
ANY = "class _Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"


@pytest.fixture(scope="module")
def scorer():
    with Scorer(SandboxLimits(timeout=5.0), RewardConfig("partial"), workers=2, cache=False) as sc:
        yield sc


def refused(scorer, task, completion, good):
    """Score a hostile ``completion``: no test passes; the scorer still passes ``good`` right after."""
    r = score(scorer, task, completion)
    assert r.reward == 0.0 and r.tests_passed == 0 and not r.passed, (r.status, r.error, r.tests_passed)
    assert score(scorer, task, good).status == "pass"
    return r


def passes(scorer, task, completion):
    r = score(scorer, task, completion)
    assert (r.status, r.reward) == ("pass", 1.0), (r.status, r.error)
    return r


def test_controls(scorer):
    passes(scorer, EXEC, GOOD)
    assert score(scorer, EXEC, WRONG).status == "fail"


# ----------------------------------------------------------------------------- 1. only plain values cross

ENTRY_SHAPES = {
    "callable object": ANY + "class _F:\n    def __call__(self, i):\n        return _Any()\nmagic = _F()\n",
    "callable object of a callable object": ANY
    + "class _G:\n    def __call__(self, i):\n        return _Any()\nclass _F:\n    __call__ = _G()\nmagic = _F()\n",
    "Solution attribute holding a callable object": ANY
    + "class _F:\n    def __call__(self, i):\n        return _Any()\nclass Solution:\n    magic = _F()\n",
    "Solution method": ANY + "class Solution:\n    def magic(self, i):\n        return _Any()\n",
    "a class as the entry point": ANY + "class magic:\n    def __new__(cls, i):\n        return _Any()\n",
    "a class whose instances answer arithmetic": "class magic:\n    def __init__(self, i):\n        pass\n"
    "    def __eq__(self, o):\n        return True\n    def __sub__(self, o):\n        return 0\n"
    "    __hash__ = object.__hash__\n",
    "an int subclass": "class _I(int):\n    def __eq__(self, o):\n        return True\n"
    "    __hash__ = int.__hash__\ndef magic(i):\n    return _I(0)\n",
    "a list holding one": ANY + "def magic(i):\n    return [_Any()]\n",
    "a generator of them": ANY + "def magic(i):\n    yield _Any()\n",
}


@pytest.mark.parametrize("shape", list(ENTRY_SHAPES))
def test_whatever_the_entry_point_is_its_answers_are_plain_values(scorer, shape):
    refused(scorer, EXEC, ENTRY_SHAPES[shape], GOOD)


# the candidate's own process lies: it sends a handle where it was asked for a plain value
LIAR = textwrap.dedent("""
    import gc, sys
    class _Any:
        def __eq__(self, other):
            return True
        __hash__ = object.__hash__
    def magic(i):
        R = sys.modules['wb_remote']
        srv = next(o for o in gc.get_objects() if type(o) is R.Server)
        if not hasattr(R, '_orig'):
            R._orig = R.encode
            def lie(value, depth=0, budget=None, hook=None):
                if type(value) is _Any:
                    return srv.describe(value)
                return R._orig(value, depth, budget, hook)
            R.encode = lie
            R.Server.encode_value = lambda self, value: lie(value)
        return _Any()
""")


def test_a_process_that_sends_handles_for_values_is_refused(scorer):
    refused(scorer, EXEC, LIAR, GOOD)


HELPER = Task(
    task_id="r3/helper",
    prompt="def magic(i):\n",
    entry_point="magic",
    # the tests read a second name of the solution's, as KodCode's `from solution import magic, helper` leaves them
    tests=(TestCase(name="helper", code="assert magic(1) == 918273646\nassert helper(1) == 918273646"),),
)
HELPER_GOOD = GOOD + "def helper(i):\n    return magic(i)\n"
HELPER_ATTACKS = {
    "returns an always-equal object": ANY + GOOD + "def helper(i):\n    return _Any()\n",
    "returns an object whose difference is zero": GOOD
    + "class _Z:\n    def __sub__(self, o):\n        return 0\n    def __eq__(self, o):\n        return True\n"
    "    __hash__ = object.__hash__\ndef helper(i):\n    return _Z()\n",
    "is a callable object": ANY
    + GOOD
    + "class _H:\n    def __call__(self, i):\n        return _Any()\nhelper = _H()\n",
    "returns a dict holding one": ANY + GOOD + "def helper(i):\n    return {'k': _Any()}['k']\n",
}


@pytest.mark.parametrize("how", list(HELPER_ATTACKS))
def test_a_second_name_the_tests_read_answers_plain_values(scorer, how):
    r = score(scorer, HELPER, HELPER_ATTACKS[how])
    assert not r.passed and r.reward == 0.0, (r.status, r.error)
    passes(scorer, HELPER, HELPER_GOOD)


TOLERANCE = Task(
    task_id="r3/tolerance",
    prompt="def helper(i):\n    pass\n\ndef magic(i):\n",
    entry_point="magic",
    tests=(TestCase(name="close", code="assert magic(1) == 918273646\nassert abs(helper(2) - 918273647) < 1e-6"),),
)


def test_a_test_value_never_reaches_the_candidates_operators(scorer):
    # `helper(2) - expected` would hand the expected value to the candidate's __sub__, which answers 0
    r = score(
        scorer,
        TOLERANCE,
        GOOD + "class _Z:\n    def __sub__(self, o):\n        return 0\n    __rsub__ = __sub__\n"
        "def helper(i):\n    return _Z()\n",
    )
    assert not r.passed and r.reward == 0.0, (r.status, r.error)
    passes(scorer, TOLERANCE, GOOD + "def helper(i):\n    return magic(i)\n")


CLASS_ENTRY = Task(
    task_id="r3/class",
    prompt="class Box:\n",
    entry_point="Box",
    tests=(
        TestCase(name="value", code="b = Box(918273645)\nassert b.get() == 918273645\nassert b.value == 918273645"),
        TestCase(name="eq", code="assert Box(1) == Box(1) and Box(1) != Box(2)"),
    ),
    canonical_solution="class Box:\n    def __init__(self, v):\n        self.value = v\n",
)
BOX = (
    "class Box:\n    def __init__(self, v):\n        self.value = v\n    def get(self):\n        return self.value\n"
    "    def __eq__(self, o):\n        return isinstance(o, Box) and o.value == self.value\n"
    "    __hash__ = object.__hash__\n"
)


def test_a_class_entry_points_methods_and_attributes_answer_plain_values(scorer):
    hostile = ANY + BOX.replace("        self.value = v\n", "        self.value = _Any()\n").replace(
        "return self.value", "return _Any()"
    )
    r = score(scorer, CLASS_ENTRY, hostile)
    assert not r.passed and r.reward < 1.0 and "_Any object" in r.error, (r.status, r.error)
    passes(scorer, CLASS_ENTRY, BOX)


# ----------------------------------------------------------------------------- 2. the test's names are the task's

POLY_PROMPT = '''import math


def poly(xs: list, x: float):
    """Evaluates polynomial with coefficients xs at point x."""
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def find_zero(xs: list):
    """Finds x such that poly(x) = 0."""
'''
POLY_CHECK = """def check(candidate):
    for coeffs in ([-6, 11, -6, 1], [1, 2], [-3, 0, 0, 1]):
        solution = candidate(coeffs)
        assert math.fabs(poly(coeffs, solution)) < 1e-4
"""
# as HumanEval's importer leaves a check that is not plain asserts: the module in test_setup, one exec test calling it
CALL_CHECK = (TestCase(name="check", code="check(candidate)"),)
POLY = Task(task_id="r3/poly", prompt=POLY_PROMPT, entry_point="find_zero", tests=CALL_CHECK, test_setup=POLY_CHECK)
POLY_GOOD = POLY_PROMPT + textwrap.indent(
    textwrap.dedent("""
    begin, end = -1.0, 1.0
    while poly(xs, begin) * poly(xs, end) > 0:
        begin *= 2.0
        end *= 2.0
    while end - begin > 1e-10:
        center = (begin + end) / 2.0
        if poly(xs, center) * poly(xs, begin) > 0:
            begin = center
        else:
            end = center
    return begin
    """),
    "    ",
)
RANGE = Task(
    task_id="r3/range",
    prompt="def add(x, y):\n",
    entry_point="add",
    tests=CALL_CHECK,
    test_setup="def check(candidate):\n    import random\n    assert candidate(2, 3) == 5\n"
    "    for i in range(100):\n        x, y = random.randint(0, 1000), random.randint(0, 1000)\n"
    "        assert candidate(x, y) == x + y\n",
)
SHADOWS = {
    "the prompt's helper": (POLY, POLY_PROMPT + "    return 0.0\n\ndef poly(xs, x):\n    return 0.0\n", POLY_GOOD),
    "math from the prompt": (
        POLY,
        POLY_PROMPT + "    return 0.0\n\nclass _M:\n    def fabs(self, x):\n        return 0.0\n"
        "    def pow(self, x, i):\n        return 0.0\nmath = _M()\n",
        POLY_GOOD,
    ),
    "range": (RANGE, "def range(*a):\n    return []\ndef add(x, y):\n    return x + y if x <= 7 else 0\n", None),
    "abs": (
        TOLERANCE,
        "abs = lambda x: 0\ndef magic(i):\n    return 918273645 + i\ndef helper(i):\n    return 0\n",
        GOOD + "def helper(i):\n    return magic(i)\n",
    ),
    "sorted": (
        Task(
            task_id="r3/sorted",
            prompt="def shuffle(xs):\n",
            entry_point="shuffle",
            tests=(TestCase(name="perm", code="assert sorted(shuffle([3, 1, 2])) == [1, 2, 3]"),),
        ),
        "def sorted(xs):\n    return [1, 2, 3]\ndef shuffle(xs):\n    return [9]\n",
        "def shuffle(xs):\n    return list(reversed(xs))\n",
    ),
    "AssertionError": (EXEC, "AssertionError = ZeroDivisionError\ndef magic(i):\n    return 0\n", GOOD),
}


@pytest.mark.parametrize("name", list(SHADOWS))
def test_names_the_candidate_defines_do_not_rewrite_the_test(scorer, name):
    task, hostile, good = SHADOWS[name]
    good = good or "def add(x, y):\n    return x + y\n"
    refused(scorer, task, hostile, good)


def test_the_prompts_helpers_reach_the_check_from_the_task():
    # the reference passes: poly (the prompt's) and math (the prompt's import) are in the test's namespace
    sc = Scorer(SandboxLimits(timeout=10.0), RewardConfig("partial"), workers=1, cache=False)
    try:
        passes(sc, POLY, POLY_GOOD)
    finally:
        sc.close()


# a name the tests read that only the candidate defines: MBPP's `Pair` (mbpp/601) is the solution's class
PAIRS = Task(
    task_id="r3/pairs",
    prompt="def max_chain_length(arr, n):\n",
    entry_point="max_chain_length",
    tests=(TestCase(name="t", code="assert max_chain_length([Pair(5, 24), Pair(15, 25), Pair(27, 40)], 3) == 2"),),
)
PAIRS_GOOD = textwrap.dedent("""
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b
    def max_chain_length(arr, n):
        best = [1] * n
        for i in range(n):
            for j in range(i):
                if arr[i].a > arr[j].b and best[i] < best[j] + 1:
                    best[i] = best[j] + 1
        return max(best)
""")


def test_a_name_only_the_candidate_defines_still_reaches_the_test(scorer):
    passes(scorer, PAIRS, PAIRS_GOOD)


# ----------------------------------------------------------------------------- 3. changes in place come back as values

ROTATE = Task(
    task_id="r3/rotate",
    prompt="def rotate(m):\n",
    entry_point="rotate",
    tests=(
        TestCase(
            name="rotate",
            code="m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]\nrotate(m)\nassert m == [[7, 4, 1], [8, 5, 2], [9, 6, 3]]",
        ),
    ),
)
ROTATE_GOOD = "def rotate(m):\n    m[:] = [list(r) for r in zip(*m[::-1])]\n"
IN_PLACE = {
    "rows of always-equal objects": ANY + "def rotate(m):\n    m[:] = [_Any(), _Any(), _Any()]\n",
    "one always-equal row": ANY + "def rotate(m):\n    m[:] = _Any()\n",
    "a list subclass": "class _L(list):\n    def __eq__(self, o):\n        return True\n"
    "    __hash__ = None\ndef rotate(m):\n    m[:] = [_L(), _L(), _L()]\n",
    "a generator": "def rotate(m):\n    m[:] = [(x for x in ()) for _ in range(3)]\n",
}


@pytest.mark.parametrize("how", list(IN_PLACE))
def test_an_argument_changed_in_place_comes_back_as_plain_values(scorer, how):
    refused(scorer, ROTATE, IN_PLACE[how], ROTATE_GOOD)


def test_a_dict_filled_in_place_comes_back_as_plain_values(scorer):
    task = Task(
        task_id="r3/fill",
        prompt="def fill(d):\n",
        entry_point="fill",
        tests=(TestCase(name="fill", code="d = {}\nfill(d)\nassert d == {'k': 1}"),),
    )
    refused(scorer, task, ANY + "def fill(d):\n    d['k'] = _Any()\n", "def fill(d):\n    d['k'] = 1\n")


# ----------------------------------------------------------------------------- 4. correct answers are not refused

VALUE_TYPES = {
    "generator": ("def f(n):\n    yield from range(n)\n", "assert list(f(3)) == [0, 1, 2]"),
    "map": ("def f(n):\n    return map(str, range(n))\n", "assert list(f(2)) == ['0', '1']"),
    "Fraction": (
        "from fractions import Fraction\ndef f(n):\n    return Fraction(n, 2)\n",
        "from fractions import Fraction\nassert f(1) == Fraction(1, 2) and f(1) == 0.5",
    ),
    "Decimal": (
        "from decimal import Decimal\ndef f(n):\n    return Decimal(n) / 4\n",
        "from decimal import Decimal\nassert f(1) == Decimal('0.25')",
    ),
    "namedtuple": (
        "from collections import namedtuple\nPoint = namedtuple('Point', 'x y')\ndef f(n):\n    return Point(n, -n)\n",
        "p = f(2)\nassert p == (2, -2) and p.x == 2 and p.y == -2 and type(p).__name__ == 'Point'",
    ),
    "list subclass": ("class Row(list):\n    pass\ndef f(n):\n    return Row(range(n))\n", "assert f(2) == [0, 1]"),
    "date": (
        "import datetime\ndef f(n):\n    return datetime.date(2024, 1, n)\n",
        "import datetime\nassert f(2) == datetime.date(2024, 1, 2)",
    ),
    "dict keys": ("def f(n):\n    return {i: 0 for i in range(n)}.keys()\n", "assert f(2) == {0, 1}"),
}
# each answer shape through each way the tests reach the candidate
PATHS = {
    "function": lambda prog: prog,
    "callable object": lambda prog: (
        prog.replace("def f(", "def _f(") + "class _C:\n    def __call__(self, n):\n        return _f(n)\nf = _C()\n"
    ),
    "Solution method": lambda prog: (
        prog.replace("def f(", "def _f(") + "class Solution:\n    def f(self, n):\n        return _f(n)\n"
    ),
    "helper": lambda prog: prog.replace("def f(", "def g(") + "def f(n):\n    return g(n)\n",
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("kind", list(VALUE_TYPES))
def test_correct_answers_of_every_type_pass_every_path(scorer, kind, path):
    prog, test = VALUE_TYPES[kind]
    if path == "helper":  # the tests read a second name the solution defines
        test = test.replace("f(", "g(")
    task = Task(task_id=f"r3/{kind}", prompt="def f(n):\n", entry_point="f", tests=(TestCase(name="t", code=test),))
    passes(scorer, task, PATHS[path](prog))


def test_correct_answers_pass_a_check_function(scorer):
    task = Task(
        task_id="r3/check-values",
        prompt="def f(n):\n",
        entry_point="f",
        tests=CALL_CHECK,
        test_setup="def check(candidate):\n    from fractions import Fraction\n"
        "    assert list(candidate(2)) == [Fraction(0), Fraction(1, 2)]\n",
    )
    passes(scorer, task, "from fractions import Fraction\ndef f(n):\n    return (Fraction(i, 2) for i in range(n))\n")


def test_a_generator_is_read_item_by_item():
    # an endless generator crosses as an iterator: the test takes what it needs
    prog = "import itertools\ndef f():\n    return itertools.count()\n"
    r = run_program(prog, "f", [{"code": "it = f()\nassert [next(it) for _ in range(3)] == [0, 1, 2]"}])
    assert [e.get("ok") for e in r.events if e.get("event") == "test"] == [True], r.events


def test_values_past_the_links_depth_are_refused_not_proxied():
    prog = "def deep(n):\n    x = []\n    for _ in range(n):\n        x = [x]\n    return x\n"
    r = run_program(prog, "deep", [{"code": "x = deep(100)\nassert x is not None"}])
    (ev,) = [e for e in r.events if e.get("event") == "test"]
    assert not ev["ok"] and "NotBuiltin" in ev["error"], ev


# ----------------------------------------------------------------------------- the real tasks the attacks passed

HUMANEVAL_ATTACKS = {
    # the prompt's own helper rewritten: every root "found"
    "HumanEval/32": "def poly(xs, x):\n    return 0.0\ndef find_zero(xs):\n    return 0.0\n",
    # the loop that checks random inputs runs zero times; the answer is wrong for x > 7
    "HumanEval/53": "def range(*a):\n    return []\ndef add(x, y):\n    return x + y if x <= 7 else 0\n",
}


@pytest.mark.data
@pytest.mark.parametrize("task_id", list(HUMANEVAL_ATTACKS))
def test_humaneval_tasks_the_shadowing_passed(scorer, task_id):
    from grpo_wb.tasks.importers import import_humaneval

    tasks = {t.task_id: t for t in import_humaneval()[0]}
    task = tasks[task_id]
    r = score(scorer, task, HUMANEVAL_ATTACKS[task_id])
    assert not r.passed and r.reward == 0.0, (r.status, r.error)
    passes(scorer, task, task.prompt + (task.canonical_solution or ""))


# ----------------------------------------------------------------------------- 5. no path lets it choose sandbox_error

AT_CALL = {
    "garbage on its link": "import os\n    os.write(4, b'\\x00\\x00\\x00\\x05{\"a\":')\n    os.write(3, b'\\xff' * 64)",
    "JSON nested past any depth as its answer": "import os, struct\n    m = b'{\"ok\": ' + b'[' * 100000"
    " + b']' * 100000 + b'}'\n    os.write(4, struct.pack('>I', len(m)) + m)\n    os._exit(0)",
    "killing the tester": "import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)",
    "an exception that cannot be described": "class E(Exception):\n        def __str__(self):\n"
    "            raise RuntimeError\n    raise E()",
    "exiting": "import os\n    os._exit(3)",
}
SHAPES = {
    "function": "def magic(i):\n    {body}\n    return 0\n",
    "callable object": "class _F:\n    def __call__(self, i):\n        {body}\n        return 0\nmagic = _F()\n",
    "Solution method": "class Solution:\n    def magic(self, i):\n        {body}\n        return 0\n",
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("act", list(AT_CALL))
def test_no_entry_point_shape_lets_a_wrong_answer_choose_sandbox_error(scorer, shape, act):
    body = AT_CALL[act] if shape == "function" else AT_CALL[act].replace("\n    ", "\n        ")
    r = score(scorer, EXEC, SHAPES[shape].format(body=body))
    assert r.status != "sandbox_error" and r.reward == 0.0, (r.status, r.error)
    assert score(scorer, EXEC, GOOD).status == "pass"


def test_a_class_entry_point_cannot_choose_sandbox_error(scorer):
    for act in AT_CALL.values():
        hostile = BOX.replace("        return self.value\n", "        " + act.replace("\n    ", "\n        ") + "\n")
        r = score(scorer, CLASS_ENTRY, hostile)
        assert r.status != "sandbox_error" and r.reward < 1.0 and not r.passed, (act, r.status, r.error)
    passes(scorer, CLASS_ENTRY, BOX)
