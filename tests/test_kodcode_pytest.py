"""Issue 24: KodCode rows judged by grpo_wb's default judge against the trainer's real harness, real pytest.

KodCode's own check (kodcode ``pipeline/run_test.sh``) and rllm's ``kodcode`` reward run ``pytest`` on the
solution and the row's ``test`` module and pay exit status 0. Here each (row, reply) is judged twice:

* by grpo_wb: the rows imported with ``grpo-wb tasks import kodcode``, scored through :class:`Scorer` (default
  judge, ``site_packages`` so ``import pytest`` works in the sandbox);
* by real pytest: ``sys.executable -m pytest -q`` in a temporary directory holding ``solution.py`` (the code
  the trainer takes from the reply: rllm's rule, the last fenced block of any tag, stripped; see
  ``shared/docs/datasets-2.md`` section 1) and ``test_solution.py`` (the row's ``test``); pass = exit status 0.

The replies are written here (trusted), so running real pytest on them outside the sandbox is fine. The two
verdicts agree on every case except :data:`FORGERIES`, replies real pytest pays that grpo_wb must not:

* ``os._exit(0)`` at import: pytest's process ends with status 0 while it collects the tests;
* an ``atexit`` hook calling ``os._exit(0)``: every test fails, the exit status is still 0;
* a ``str`` subclass whose ``__eq__`` is always true (grpo_wb's entry-point guard refuses non-builtin values);
* ``unittest.TestCase.assertEqual`` rebound to a no-op, and ``pytest.raises`` rebound to a context manager that
  checks nothing (the KodCode test setup checks that both are unittest's and pytest's own).

Not compared here, as they are rules of the judge rather than of the KodCode conversion: a reply without a fence
(rllm: a format error; grpo_wb's default judge takes bare code) and replies whose last block is not the solution
(rllm takes the last block whatever it holds; grpo_wb the last one defining the entry point).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowformats import RowError, parse_row, task_from_parsed

# ----------------------------------------------------------------------------- the rows


def _row(qid: str, question: str, solution: str, test: str, fn: str | None) -> dict:
    return {
        "version": "v1.0",
        "style": "instruct",
        "subset": qid.split("_")[0],
        "question_id": qid,
        "question": question,
        "solution": solution,
        "test": test,
        "test_info": None
        if fn is None
        else [
            {"function_name": fn, "parameter_list": "", "docstring": None, "function_declaration": f"def {fn}(...):"}
        ],
        "gpt_difficulty": "medium",
    }


ROWS = [
    _row(
        "Algorithm_plain_I",
        "Write is_palindrome(s), ignoring case and non-alphanumerics.",
        "def is_palindrome(s):\n    t = ''.join(c.lower() for c in s if c.isalnum())\n    return t == t[::-1]\n",
        "from solution import is_palindrome\n\n"
        "def test_simple():\n    assert is_palindrome('racecar')\n\n"
        "def test_not_palindrome():\n    assert not is_palindrome('abc')\n\n"
        "def test_case_and_spaces():\n    assert is_palindrome('A man, a plan, a canal: Panama')\n\n"
        "def test_empty():\n    assert is_palindrome('')\n",
        "is_palindrome",
    ),
    _row(
        "Algorithm_param_I",
        "Write fizzbuzz(n) for n >= 1; raise ValueError otherwise.",
        "def fizzbuzz(n):\n    if n < 1:\n        raise ValueError(n)\n"
        "    return 'Fizz' * (n % 3 == 0) + 'Buzz' * (n % 5 == 0) or str(n)\n",
        "import pytest\nfrom solution import fizzbuzz\n\n"
        "@pytest.mark.parametrize('n, expected', [(1, '1'), (3, 'Fizz'), (5, 'Buzz'), (15, 'FizzBuzz'), (7, '7')])\n"
        "def test_values(n, expected):\n    assert fizzbuzz(n) == expected\n\n"
        "@pytest.mark.parametrize('bad', [0, -3])\n"
        "def test_rejects_non_positive(bad):\n    with pytest.raises(ValueError):\n        fizzbuzz(bad)\n",
        "fizzbuzz",
    ),
    _row(
        "Data_Structure_class_I",
        "Write a class BoundedStack(capacity) with push, pop and is_full; push on a full stack raises OverflowError.",
        "class BoundedStack:\n    def __init__(self, capacity):\n        self.capacity = capacity\n"
        "        self.items = []\n    def push(self, x):\n        if len(self.items) >= self.capacity:\n"
        "            raise OverflowError('full')\n        self.items.append(x)\n"
        "    def pop(self):\n        return self.items.pop()\n"
        "    def is_full(self):\n        return len(self.items) >= self.capacity\n",
        "import pytest\nfrom solution import BoundedStack\n\n"
        "CAPACITY = 3\nITEMS = [x * 10 for x in range(CAPACITY)]\n\n"
        "def fill(s):\n    for x in ITEMS:\n        s.push(x)\n    return s\n\n"
        "class TestBoundedStack:\n"
        "    def setup_method(self):\n        self.s = BoundedStack(CAPACITY)\n\n"
        "    def test_push_pop(self):\n        fill(self.s)\n        assert self.s.pop() == ITEMS[-1]\n\n"
        "    def test_full(self):\n        assert not self.s.is_full()\n        fill(self.s)\n"
        "        assert self.s.is_full()\n\n"
        "    def test_overflow(self):\n        fill(self.s)\n        with pytest.raises(OverflowError):\n"
        "            self.s.push(99)\n",
        None,
    ),
    _row(
        "Docs_unittest_I",
        "Write word_count(text): a dict of word -> count; TypeError for None.",
        "def word_count(text):\n    if text is None:\n        raise TypeError('text')\n    counts = {}\n"
        "    for w in text.split():\n        counts[w] = counts.get(w, 0) + 1\n    return counts\n",
        "import unittest\nfrom solution import word_count\n\n"
        "class TestWordCount(unittest.TestCase):\n"
        "    def setUp(self):\n        self.text = 'the cat and the hat'\n\n"
        "    def test_counts(self):\n"
        "        self.assertEqual(word_count(self.text), {'the': 2, 'cat': 1, 'and': 1, 'hat': 1})\n\n"
        "    def test_empty(self):\n        self.assertEqual(word_count(''), {})\n\n"
        "    def test_type_error(self):\n        with self.assertRaises(TypeError):\n            word_count(None)\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n",
        "word_count",
    ),
    _row(
        "Algorithm_marks_I",
        "Write safe_div(a, b): a / b, or None when b is 0.",
        "def safe_div(a, b):\n    if b == 0:\n        return None\n    return a / b\n",
        "import sys\nimport pytest\nfrom solution import safe_div\n\n"
        "def test_basic():\n    assert safe_div(6, 3) == 2\n\n"
        "def test_zero():\n    assert safe_div(1, 0) is None\n\n"
        "@pytest.mark.skip(reason='not specified yet')\n"
        "def test_future():\n    assert safe_div(1, 2, precise=True) == 0.5\n\n"
        "@pytest.mark.skipif(sys.version_info < (3, 8), reason='needs 3.8')\n"
        "def test_negative():\n    assert safe_div(-6, 3) == -2\n\n"
        "@pytest.mark.skipif(\"sys.platform == 'no-such-platform'\")\n"
        "def test_string_condition():\n    assert safe_div(9, 3) == 3\n\n"
        "@pytest.mark.xfail(reason='floats are not exact')\n"
        "def test_float_exact():\n    assert safe_div(1, 3) == 0.333\n",
        "safe_div",
    ),
    _row(
        "Algorithm_import_module_I",
        "Write gcd(a, b).",
        "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
        "import solution\n\n"
        "def test_gcd():\n    assert solution.gcd(12, 18) == 6\n\n"
        "def test_coprime():\n    assert solution.gcd(7, 5) == 1\n\n"
        "def test_zero():\n    assert solution.gcd(0, 9) == 9\n",
        "gcd",
    ),
    _row(
        "Algorithm_star_I",
        "Write add_one(xs): each element plus one, as a new list.",
        "def add_one(xs):\n    return [x + 1 for x in xs]\n",
        "from solution import *\n\nDATA = [1, 2, 3]\n\n"
        "def test_add_one():\n    assert add_one(DATA) == [2, 3, 4]\n\n"
        "def test_new_list():\n    out = add_one(DATA)\n    assert out is not DATA and DATA == [1, 2, 3]\n\n"
        "def test_empty():\n    assert add_one([]) == []\n",
        "add_one",
    ),
    _row(
        "Algorithm_two_names_I",
        "Write encode(s) (run-length, 'aab' -> 'a2b1') and decode(s), its inverse.",
        "def encode(s):\n    out, i = [], 0\n    while i < len(s):\n        j = i\n"
        "        while j < len(s) and s[j] == s[i]:\n            j += 1\n        out.append(s[i] + str(j - i))\n"
        "        i = j\n    return ''.join(out)\n\n"
        "def decode(s):\n    import re\n    return ''.join(c * int(n) for c, n in re.findall(r'(\\D)(\\d+)', s))\n",
        "from solution import encode, decode\n\n"
        "def test_encode():\n    assert encode('aaabcc') == 'a3b1c2'\n\n"
        "def test_decode():\n    assert decode('a3b1c2') == 'aaabcc'\n\n"
        "def test_round_trip():\n    for s in ['', 'x', 'zzzzzzzzzzzz', 'abab']:\n"
        "        assert decode(encode(s)) == s\n",
        "encode",
    ),
    _row(
        "Algorithm_alias_I",
        "Write longest_run(xs): the length of the longest run of equal neighbours.",
        "def longest_run(xs):\n    best = run = 0\n    for i, x in enumerate(xs):\n"
        "        run = run + 1 if i and xs[i - 1] == x else 1\n        best = max(best, run)\n    return best\n",
        "from solution import longest_run as lr\nimport solution as sol\n\n"
        "def test_alias():\n    assert lr([1, 1, 2, 2, 2, 3]) == 3\n\n"
        "def test_module_alias():\n    assert sol.longest_run([]) == 0\n\n"
        "def test_import_inside_the_test():\n    from solution import longest_run\n"
        "    assert longest_run([5, 5]) == 2\n",
        "longest_run",
    ),
    _row(
        "Algorithm_xunit_I",
        "Write normalize(s): s stripped and lower-cased.",
        "def normalize(s):\n    return s.strip().lower()\n",
        "from solution import normalize\n\nCASES = []\n\n"
        "def setup_module(module):\n    module.CASES.extend([('  Hello ', 'hello'), ('WORLD', 'world')])\n"
        "    module.READY = True\n\n"
        "def teardown_module():\n    pass\n\n"
        "def setup_function(function):\n    global seen\n    seen = [function.__name__]\n\n"
        "def test_cases_loaded():\n    assert READY and CASES\n    for raw, want in CASES:\n"
        "        assert normalize(raw) == want\n\n"
        "def test_seen_fresh():\n    seen.append(normalize(' X '))\n    assert seen == ['test_seen_fresh', 'x']\n\n"
        "class TestInClass:\n    def test_module_setup_ran(self):\n        assert READY and normalize('A') == 'a'\n",
        "normalize",
    ),
    _row(
        "Algorithm_fixture_I",
        "Write top_k(xs, k): the k largest values, largest first, without changing xs.",
        "def top_k(xs, k):\n    return sorted(xs, reverse=True)[:k]\n",
        "import pytest\nfrom solution import top_k\n\n"
        "@pytest.fixture\ndef scores():\n    return [5, 1, 9, 3, 7]\n\n"
        "@pytest.fixture(name='log')\ndef log_fixture():\n    calls = []\n    yield calls\n"
        "    assert calls == ['done']\n\n"
        "@pytest.fixture\ndef pair(scores):\n    return scores, top_k(scores, 2)\n\n"
        "def test_top2(scores):\n    assert top_k(scores, 2) == [9, 7]\n\n"
        "@pytest.mark.parametrize('k', [0, 1])\ndef test_sizes(scores, k):\n    assert len(top_k(scores, k)) == k\n\n"
        "def test_does_not_mutate(pair, log):\n    scores, top = pair\n    assert scores == [5, 1, 9, 3, 7]\n"
        "    log.append('done')\n\n"
        "class TestInClass:\n    def test_all(self, scores):\n        assert top_k(scores, 9) == [9, 7, 5, 3, 1]\n",
        "top_k",
    ),
    _row(
        "Algorithm_misc_I",
        "Write mean(xs); raise ValueError for an empty list.",
        "def mean(xs):\n    if not xs:\n        raise ValueError('empty')\n    return sum(xs) / len(xs)\n",
        "import pytest\nfrom pytest import approx, raises\nfrom solution import (\n    mean,\n)\n\n"
        "pytestmark = pytest.mark.filterwarnings('ignore::DeprecationWarning')\n\n"
        "def test_mean():\n    assert mean([0.1, 0.2]) == approx(0.15)\n\n"
        "def test_empty():\n    with raises(ValueError, match='empty'):\n        mean([])\n\n"
        "@pytest.mark.xfail(strict=True, reason='integer division is not promised')\n"
        "def test_integer_result():\n    assert isinstance(mean([2, 4]), int)\n",
        "mean",
    ),
]

# ----------------------------------------------------------------------------- the replies


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def untagged(code: str) -> str:
    return f"```\n{code}```"


def prose(code: str) -> str:
    return (
        f"Let me think about the edge cases first.\n\nHere is the solution:\n\n```python\n{code}```\n\n"
        "It runs in linear time."
    )


def thinking(code: str) -> str:
    return f"<think>\nThe tests import from solution.\n</think>\n\n```py\n{code}```\n"


SOLUTION = {r["question_id"]: r["solution"] for r in ROWS}

#: per row: (label, code) of the answers that are not the reference (each is sent fenced)
OTHER = {
    "Algorithm_plain_I": [
        ("wrong", "def is_palindrome(s):\n    return False\n"),
        ("partial", "def is_palindrome(s):\n    return s == s[::-1]\n"),  # fails the case-and-spaces test
    ],
    "Algorithm_param_I": [
        ("wrong", "def fizzbuzz(n):\n    return str(n)\n"),
        ("partial", "def fizzbuzz(n):\n    return 'Fizz' * (n % 3 == 0) + 'Buzz' * (n % 5 == 0) or str(n)\n"),
    ],
    "Data_Structure_class_I": [
        (
            "wrong",
            "class BoundedStack:\n    def __init__(self, capacity):\n        self.items = []\n"
            "    def push(self, x):\n        self.items.insert(0, x)\n"
            "    def pop(self):\n        return self.items.pop()\n"
            "    def is_full(self):\n        return True\n",
        ),
        (
            "partial",
            "class BoundedStack:\n    def __init__(self, capacity):\n        self.capacity = capacity\n"
            "        self.items = []\n    def push(self, x):\n        self.items.append(x)\n"
            "    def pop(self):\n        return self.items.pop()\n"
            "    def is_full(self):\n        return len(self.items) >= self.capacity\n",
        ),
    ],
    "Docs_unittest_I": [
        ("wrong", "def word_count(text):\n    return {w: 1 for w in text.split()}\n"),
        (
            "partial",
            "def word_count(text):\n    counts = {}\n    for w in (text or '').split():\n"
            "        counts[w] = counts.get(w, 0) + 1\n    return counts\n",
        ),
        # a dict subclass compares equal to the dict the test expects: pytest passes it
        (
            "counter",
            "from collections import Counter\n\ndef word_count(text):\n"
            "    if text is None:\n        raise TypeError('text')\n    return Counter(text.split())\n",
        ),
    ],
    "Algorithm_marks_I": [
        ("wrong", "def safe_div(a, b):\n    return a // b if b else 0\n"),
        ("partial", "def safe_div(a, b):\n    return a / b if b else 0\n"),  # fails test_zero only
        # breaks only the skipped test and the xfail one: pytest passes it
        (
            "breaks_xfail_only",
            "def safe_div(a, b):\n    return None if b == 0 else round(a / b, 3) + (a == 1) * 0.001\n",
        ),
        ("xpass", "def safe_div(a, b):\n    return None if b == 0 else round(a / b, 3)\n"),  # xfail passes: fine
    ],
    "Algorithm_import_module_I": [
        ("wrong", "def gcd(a, b):\n    return min(a, b)\n"),
        ("partial", "import math\n\ndef gcd(a, b):\n    return math.gcd(a, b) if a else 1\n"),  # test_zero fails
    ],
    "Algorithm_star_I": [
        ("wrong", "def add_one(xs):\n    return xs\n"),
        ("partial", "def add_one(xs):\n    for i in range(len(xs)):\n        xs[i] += 1\n    return xs\n"),
    ],
    "Algorithm_two_names_I": [
        ("wrong", "def encode(s):\n    return s\n\ndef decode(s):\n    return s[::-1]\n"),
        (
            "partial",
            SOLUTION["Algorithm_two_names_I"]
            .replace("str(j - i)", "str(j - i) if j - i > 1 else ''")
            .replace(r"(\d+)", r"(\d*)")
            .replace("int(n)", "int(n or 1)"),
        ),  # 'a3bc2': test_encode fails only
        ("no_decode", "def encode(s):\n    return s\n"),  # `from solution import encode, decode` fails
    ],
    "Algorithm_alias_I": [
        ("wrong", "def longest_run(xs):\n    return len(set(xs))\n"),
        ("partial", "def longest_run(xs):\n    return max(xs.count(x) for x in xs) if xs else 0\n"),
    ],
    "Algorithm_fixture_I": [
        ("wrong", "def top_k(xs, k):\n    return xs[:k]\n"),
        ("partial", "def top_k(xs, k):\n    xs.sort(reverse=True)\n    return xs[:k]\n"),  # changes xs
    ],
    "Algorithm_misc_I": [
        ("wrong", "def mean(xs):\n    return sum(xs) // max(len(xs), 1)\n"),
        (
            "partial",
            "def mean(xs):\n    if not xs:\n        raise ValueError('no values')\n    return sum(xs) / len(xs)\n",
        ),  # the message does not match
        (
            "strict_xpass",
            "def mean(xs):\n    if not xs:\n        raise ValueError('empty')\n"
            "    m = sum(xs) / len(xs)\n    return int(m) if m == int(m) else m\n",
        ),
    ],
    "Algorithm_xunit_I": [
        ("wrong", "def normalize(s):\n    return s\n"),
        ("partial", "def normalize(s):\n    return s.lower()\n"),
    ],
}

CRASH = "import no_such_module_anywhere\n\n"
PRINT = "print('debug: module loaded')\n\n"


def answers() -> list[tuple[str, str, str]]:
    """(row id, label, reply) for every row: the reference in four reply styles, a crash at import, an extra
    print, and the row's wrong and partial answers."""
    out = []
    for qid, sol in SOLUTION.items():
        out += [
            (qid, "right/fenced", fenced(sol)),
            (qid, "right/untagged", untagged(sol)),
            (qid, "right/prose", prose(sol)),
            (qid, "right/think", thinking(sol)),
            (qid, "crash_at_import", fenced(CRASH + sol)),
            (qid, "extra_print", fenced(PRINT + sol)),
        ]
        out += [(qid, label, fenced(code)) for label, code in OTHER[qid]]
    return out


#: replies real pytest passes and grpo_wb must not, with why (the known exceptions to agreement)
FORGERIES = {
    ("Algorithm_plain_I", "forged/os_exit_at_import"): (
        fenced("import os\nos._exit(0)\n"),
        "the solution ends the pytest process with status 0 while pytest collects the tests",
    ),
    ("Docs_unittest_I", "forged/atexit_exit_0"): (
        fenced("import atexit, os\natexit.register(lambda: os._exit(0))\n\ndef word_count(text):\n    return 0\n"),
        "every test fails, then an atexit hook turns pytest's exit status 1 into 0",
    ),
    ("Algorithm_param_I", "forged/always_equal"): (
        fenced(
            "class _Any(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n\n"
            "def fizzbuzz(n):\n    if n < 1:\n        raise ValueError(n)\n    return _Any()\n"
        ),
        "a str subclass whose __eq__ is always true passes every `==` assert",
    ),
    ("Docs_unittest_I", "forged/patch_unittest"): (
        fenced(
            "import unittest\nunittest.TestCase.assertEqual = lambda self, first, second, msg=None: None\n\n"
            "def word_count(text):\n    if text is None:\n        raise TypeError(text)\n    return 0\n"
        ),
        "the solution makes unittest's assertEqual a no-op",
    ),
    ("Algorithm_param_I", "forged/patch_pytest_raises"): (
        fenced(
            "import contextlib\nimport pytest\npytest.raises = lambda *a, **k: contextlib.nullcontext()\n\n"
            "def fizzbuzz(n):\n    return 'Fizz' * (n % 3 == 0) + 'Buzz' * (n % 5 == 0) or str(n)\n"
        ),
        "the solution replaces pytest.raises with a context manager that checks nothing",
    ),
}

# ----------------------------------------------------------------------------- the two judges

_FENCE = re.compile(r"```(?:\w+)?\n(.*?)```", re.DOTALL)


def trainer_code(reply: str) -> str | None:
    """rllm's ``extract_code_from_model``: the last fenced block, any tag, stripped (None: a format error)."""
    blocks = _FENCE.findall(reply)
    return blocks[-1].strip() if blocks else None


def real_pytest(test_module: str, reply: str) -> bool:
    """KodCode's check: ``pytest`` on ``solution.py`` + ``test_solution.py``; passes iff the exit status is 0."""
    code = trainer_code(reply)
    if code is None:
        return False
    with tempfile.TemporaryDirectory(prefix="kodcode_") as d:
        Path(d, "solution.py").write_text(code + "\n")
        Path(d, "test_solution.py").write_text(test_module)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRPO_WB_"))}
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        p = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", d, "test_solution.py"],
            cwd=d,
            env=env,
            capture_output=True,
            timeout=60,
        )
        return p.returncode == 0


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    d = tmp_path_factory.mktemp("kodcode")
    out = d / "tasks.jsonl"
    assert (
        main(["tasks", "import", "kodcode", "--src", str(write_jsonl(d / "rows.jsonl", ROWS)), "--out", str(out)]) == 0
    )
    return {t.task_id.removeprefix("kodcode/"): t for t in load_tasks(out)}


def _judge_all(tasks, cases):
    tests = {r["question_id"]: r["test"] for r in ROWS}
    with ThreadPoolExecutor(2) as pool:
        theirs = list(pool.map(lambda c: real_pytest(tests[c[0]], c[2]), cases))
    with Scorer(SandboxLimits(timeout=10.0, site_packages=True), workers=2, cache=False) as sc:
        ours = list(
            sc.score([ScoreRequest(tasks[qid], reply, sample_index=i) for i, (qid, _, reply) in enumerate(cases)])
        )
    return theirs, ours


def test_every_row_imports_with_its_tests(tasks):
    assert sorted(tasks) == sorted(SOLUTION)
    assert [t.name for t in tasks["Algorithm_param_I"].tests] == [
        *(f"test_values[{i}]" for i in range(5)),
        "test_rejects_non_positive[0]",
        "test_rejects_non_positive[1]",
    ]
    assert [t.name for t in tasks["Algorithm_marks_I"].tests] == [
        "test_basic",
        "test_zero",
        "test_negative",
        "test_string_condition",
        "test_float_exact",
    ]
    assert tasks["Data_Structure_class_I"].entry_point == "BoundedStack"


def _task(test: str):
    return task_from_parsed(parse_row("kodcode", _row("X_1_I", "q", "def f(x):\n    return x\n", test, "f")), "t", {})


def test_fixture_and_xunit_shapes_that_import_and_those_refused():
    head = "import pytest\nfrom solution import f\n"
    # fixtures of the module's own (plain, yield, renamed, asking for each other) are set up per test
    task = _task(
        head + "@pytest.fixture\ndef a():\n    return 1\n@pytest.fixture(name='b')\ndef _b(a):\n"
        "    yield a + 1\ndef test_x(b):\n    assert f(b) == 2\n"
    )
    assert [t.code for t in task.tests] == ["__grpo_wb_fixtures(lambda fx: test_x(**fx), ['b'])"]
    assert "__grpo_wb_fixture_spec = {'a': (a, []), 'b': (_b, ['a'])}" in task.test_setup
    # a built-in fixture, one asking for one, and a parametrized fixture are not emulated: the row is refused
    for body in (
        "def test_x(tmp_path):\n    pass\n",
        "@pytest.fixture\ndef a(tmp_path):\n    return 1\ndef test_x(a):\n    pass\n",
        "@pytest.fixture(params=[1, 2])\ndef a(request):\n    return request.param\ndef test_x(a):\n    pass\n",
    ):
        with pytest.raises(RowError, match="asks for pytest fixture"):
            _task(head + body)
    # setup_module around every test, setup_function around test functions only
    task = _task(
        head + "def setup_module():\n    pass\ndef setup_function(fn):\n    pass\n"
        "def test_x():\n    pass\nclass TestY:\n    def test_y(self):\n        pass\n"
    )
    assert [t.code for t in task.tests] == [
        "__grpo_wb_xunit(lambda: test_x(), msetup=setup_module, fsetup=setup_function, func=test_x)",
        "__grpo_wb_xunit(lambda: __grpo_wb_method(TestY, 'test_y', {}), msetup=setup_module)",
    ]
    # `from solution import f` goes; an alias or an import inside a test finds a module named solution
    assert "sys').modules['solution']" not in _task(head + "def test_x():\n    pass\n").test_setup
    for test in (
        "from solution import f as g\ndef test_x():\n    assert g(1) == 1\n",
        "import solution as s\ndef test_x():\n    assert s.f(1) == 1\n",
        "def test_x():\n    from solution import f\n    assert f(1) == 1\n",
    ):
        assert _task(test).test_setup.startswith("__import__('sys').modules['solution'] = ")


@pytest.mark.sandbox
@pytest.mark.slow
def test_grpo_wb_agrees_with_real_pytest_except_on_forgeries(tasks):
    cases = answers() + [(qid, label, reply) for (qid, label), (reply, _) in FORGERIES.items()]
    theirs, ours = _judge_all(tasks, cases)
    table = {(qid, label): (p, r.passed, r.status, r.error) for (qid, label, _), p, r in zip(cases, theirs, ours)}
    disagree = {k for k, (p, g, _, _) in table.items() if p != g}
    # the references pass both, and the expected wrong answers fail both (the cases test something)
    assert all(table[(qid, "right/fenced")][:2] == (True, True) for qid in SOLUTION), table
    assert all(table[(qid, "crash_at_import")][:2] == (False, False) for qid in SOLUTION), table
    assert all(table[(qid, "wrong")][:2] == (False, False) for qid in SOLUTION), table
    assert disagree == set(FORGERIES), {k: table[k] for k in disagree ^ set(FORGERIES)}
    assert all(table[k][:2] == (True, False) for k in FORGERIES), {k: table[k] for k in FORGERIES}
    agreed = len(table) - len(disagree)
    print(f"\nkodcode parity: {agreed}/{len(table)} agree; the {len(disagree)} others are forgeries real pytest pays")
