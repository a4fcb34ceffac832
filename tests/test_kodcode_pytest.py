"""Issue 24: KodCode rows judged by grpo_wb's default judge against the trainer's real harness, real pytest.

KodCode's own check (kodcode ``pipeline/run_test.sh``) and rllm's ``kodcode`` reward run ``pytest`` on the
solution and the row's ``test`` module and pay exit status 0. Here each (row, reply) is judged twice:

* by grpo_wb: the rows imported with ``grpo-wb tasks import kodcode``, scored through :class:`Scorer` (default
  judge, ``site_packages`` so ``import pytest`` works in the sandbox);
* by real pytest: ``sys.executable -m pytest -q`` in a temporary directory holding ``solution.py`` (the code
  the trainer takes from the reply: rllm's rule, the last fenced block of any tag, stripped; see
  ``shared/docs/datasets-2.md`` section 1) and ``test_solution.py`` (the row's ``test``); pass = exit status 0.

The replies are written here (trusted), so running real pytest on them outside the sandbox is fine. The two
verdicts agree on every case except :data:`FORGERIES`: replies real pytest pays that grpo_wb must not.
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

# ----------------------------------------------------------------------------- the rows


def _row(qid: str, question: str, solution: str, test: str, fn: str | None) -> dict:
    return {"version": "v1.0", "style": "instruct", "subset": qid.split("_")[0], "question_id": qid,
            "question": question, "solution": solution, "test": test,
            "test_info": None if fn is None else [{"function_name": fn, "parameter_list": "", "docstring": None,
                                                   "function_declaration": f"def {fn}(...):"}],
            "gpt_difficulty": "medium"}


ROWS = [
    _row("Algorithm_plain_I", "Write is_palindrome(s), ignoring case and non-alphanumerics.",
         "def is_palindrome(s):\n    t = ''.join(c.lower() for c in s if c.isalnum())\n    return t == t[::-1]\n",
         "from solution import is_palindrome\n\n"
         "def test_simple():\n    assert is_palindrome('racecar')\n\n"
         "def test_not_palindrome():\n    assert not is_palindrome('abc')\n\n"
         "def test_case_and_spaces():\n    assert is_palindrome('A man, a plan, a canal: Panama')\n\n"
         "def test_empty():\n    assert is_palindrome('')\n",
         "is_palindrome"),
    _row("Algorithm_param_I", "Write fizzbuzz(n) for n >= 1; raise ValueError otherwise.",
         "def fizzbuzz(n):\n    if n < 1:\n        raise ValueError(n)\n"
         "    return 'Fizz' * (n % 3 == 0) + 'Buzz' * (n % 5 == 0) or str(n)\n",
         "import pytest\nfrom solution import fizzbuzz\n\n"
         "@pytest.mark.parametrize('n, expected', [(1, '1'), (3, 'Fizz'), (5, 'Buzz'), (15, 'FizzBuzz'), (7, '7')])\n"
         "def test_values(n, expected):\n    assert fizzbuzz(n) == expected\n\n"
         "@pytest.mark.parametrize('bad', [0, -3])\n"
         "def test_rejects_non_positive(bad):\n    with pytest.raises(ValueError):\n        fizzbuzz(bad)\n",
         "fizzbuzz"),
    _row("Data_Structure_class_I", "Write a class BoundedStack(capacity) with push, pop and is_full; "
         "push on a full stack raises OverflowError.",
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
         None),
    _row("Docs_unittest_I", "Write word_count(text): a dict of word -> count; TypeError for None.",
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
         "word_count"),
    _row("Algorithm_marks_I", "Write safe_div(a, b): a / b, or None when b is 0.",
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
         "safe_div"),
    _row("Algorithm_import_module_I", "Write gcd(a, b).",
         "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
         "import solution\n\n"
         "def test_gcd():\n    assert solution.gcd(12, 18) == 6\n\n"
         "def test_coprime():\n    assert solution.gcd(7, 5) == 1\n\n"
         "def test_zero():\n    assert solution.gcd(0, 9) == 9\n",
         "gcd"),
    _row("Algorithm_star_I", "Write add_one(xs): each element plus one, as a new list.",
         "def add_one(xs):\n    return [x + 1 for x in xs]\n",
         "from solution import *\n\nDATA = [1, 2, 3]\n\n"
         "def test_add_one():\n    assert add_one(DATA) == [2, 3, 4]\n\n"
         "def test_new_list():\n    out = add_one(DATA)\n    assert out is not DATA and DATA == [1, 2, 3]\n\n"
         "def test_empty():\n    assert add_one([]) == []\n",
         "add_one"),
    _row("Algorithm_two_names_I", "Write encode(s) (run-length, 'aab' -> 'a2b1') and decode(s), its inverse.",
         "def encode(s):\n    out, i = [], 0\n    while i < len(s):\n        j = i\n"
         "        while j < len(s) and s[j] == s[i]:\n            j += 1\n        out.append(s[i] + str(j - i))\n"
         "        i = j\n    return ''.join(out)\n\n"
         "def decode(s):\n    import re\n    return ''.join(c * int(n) for c, n in re.findall(r'(\\D)(\\d+)', s))\n",
         "from solution import encode, decode\n\n"
         "def test_encode():\n    assert encode('aaabcc') == 'a3b1c2'\n\n"
         "def test_decode():\n    assert decode('a3b1c2') == 'aaabcc'\n\n"
         "def test_round_trip():\n    for s in ['', 'x', 'zzzzzzzzzzzz', 'abab']:\n        assert decode(encode(s)) == s\n",
         "encode"),
]

# ----------------------------------------------------------------------------- the replies


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def untagged(code: str) -> str:
    return f"```\n{code}```"


def prose(code: str) -> str:
    return (f"Let me think about the edge cases first.\n\nHere is the solution:\n\n```python\n{code}```\n\n"
            "It runs in linear time.")


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
        ("wrong", "class BoundedStack:\n    def __init__(self, capacity):\n        self.items = []\n"
                  "    def push(self, x):\n        self.items.insert(0, x)\n"
                  "    def pop(self):\n        return self.items.pop()\n"
                  "    def is_full(self):\n        return True\n"),
        ("partial", "class BoundedStack:\n    def __init__(self, capacity):\n        self.capacity = capacity\n"
                    "        self.items = []\n    def push(self, x):\n        self.items.append(x)\n"
                    "    def pop(self):\n        return self.items.pop()\n"
                    "    def is_full(self):\n        return len(self.items) >= self.capacity\n"),
    ],
    "Docs_unittest_I": [
        ("wrong", "def word_count(text):\n    return {w: 1 for w in text.split()}\n"),
        ("partial", "def word_count(text):\n    counts = {}\n    for w in (text or '').split():\n"
                    "        counts[w] = counts.get(w, 0) + 1\n    return counts\n"),
        # a dict subclass compares equal to the dict the test expects: pytest passes it
        ("counter", "from collections import Counter\n\ndef word_count(text):\n"
                    "    if text is None:\n        raise TypeError('text')\n    return Counter(text.split())\n"),
    ],
    "Algorithm_marks_I": [
        ("wrong", "def safe_div(a, b):\n    return a // b if b else 0\n"),
        ("partial", "def safe_div(a, b):\n    return a / b if b else 0\n"),  # fails test_zero only
        # breaks only the skipped test and the xfail one: pytest passes it
        ("breaks_xfail_only", "def safe_div(a, b):\n    return None if b == 0 else round(a / b, 3) + (a == 1) * 0.001\n"),
        ("xpass", "def safe_div(a, b):\n    return None if b == 0 else round(a / b, 3)\n"),  # xfail passes: fine
    ],
    "Algorithm_import_module_I": [
        ("wrong", "def gcd(a, b):\n    return min(a, b)\n"),
        ("partial", "def gcd(a, b):\n    while a % b:\n        a, b = b, a % b\n    return b\n"),  # gcd(0, 9) = 9 ok
    ],
    "Algorithm_star_I": [
        ("wrong", "def add_one(xs):\n    return xs\n"),
        ("partial", "def add_one(xs):\n    for i in range(len(xs)):\n        xs[i] += 1\n    return xs\n"),
    ],
    "Algorithm_two_names_I": [
        ("wrong", "def encode(s):\n    return s\n\ndef decode(s):\n    return s[::-1]\n"),
        ("partial", SOLUTION["Algorithm_two_names_I"].replace("str(j - i)", "str(j - i) if j - i > 1 else ''")
         .replace(r"(\d+)", r"(\d*)").replace("int(n)", "int(n or 1)")),  # 'a3bc2': test_encode fails only
        ("no_decode", "def encode(s):\n    return s\n"),  # `from solution import encode, decode` fails
    ],
}

CRASH = "import no_such_module_anywhere\n\n"
PRINT = "print('debug: module loaded')\n\n"


def answers() -> list[tuple[str, str, str]]:
    """(row id, label, reply) for every row: the reference in four reply styles, a crash at import, an extra
    print, and the row's wrong and partial answers."""
    out = []
    for qid, sol in SOLUTION.items():
        out += [(qid, "right/fenced", fenced(sol)), (qid, "right/untagged", untagged(sol)),
                (qid, "right/prose", prose(sol)), (qid, "right/think", thinking(sol)),
                (qid, "crash_at_import", fenced(CRASH + sol)), (qid, "extra_print", fenced(PRINT + sol))]
        out += [(qid, label, fenced(code)) for label, code in OTHER[qid]]
    return out


#: replies real pytest passes and grpo_wb must not, with why (the known exceptions to agreement)
FORGERIES = {
    ("Algorithm_plain_I", "forged/os_exit_at_import"): (
        fenced("import os\nos._exit(0)\n"),
        "the solution ends the pytest process with status 0 while pytest collects the tests"),
    ("Docs_unittest_I", "forged/atexit_exit_0"): (
        fenced("import atexit, os\natexit.register(lambda: os._exit(0))\n\ndef word_count(text):\n    return 0\n"),
        "every test fails, then an atexit hook turns pytest's exit status 1 into 0"),
    ("Algorithm_param_I", "forged/always_equal"): (
        fenced("class _Any(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n\n"
               "def fizzbuzz(n):\n    if n < 1:\n        raise ValueError(n)\n    return _Any()\n"),
        "a str subclass whose __eq__ is always true passes every `==` assert"),
    ("Docs_unittest_I", "forged/patch_unittest"): (
        fenced("import unittest\nunittest.TestCase.assertEqual = lambda self, first, second, msg=None: None\n\n"
               "def word_count(text):\n    raise TypeError(text)\n"),
        "the solution makes unittest's assertEqual a no-op"),
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
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", d,
                            "test_solution.py"], cwd=d, env=env, capture_output=True, timeout=60)
        return p.returncode == 0


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    d = tmp_path_factory.mktemp("kodcode")
    out = d / "tasks.jsonl"
    assert main(["tasks", "import", "kodcode", "--src", str(write_jsonl(d / "rows.jsonl", ROWS)),
                 "--out", str(out)]) == 0
    return {t.task_id.removeprefix("kodcode/"): t for t in load_tasks(out)}


def _judge_all(tasks, cases):
    tests = {r["question_id"]: r["test"] for r in ROWS}
    with ThreadPoolExecutor(2) as pool:
        theirs = list(pool.map(lambda c: real_pytest(tests[c[0]], c[2]), cases))
    with Scorer(SandboxLimits(timeout=10.0, site_packages=True), workers=2, cache=False) as sc:
        ours = list(sc.score([ScoreRequest(tasks[qid], reply, sample_index=i)
                              for i, (qid, _, reply) in enumerate(cases)]))
    return theirs, ours


def test_every_row_imports_with_its_tests(tasks):
    assert sorted(tasks) == sorted(SOLUTION)
    assert [t.name for t in tasks["Algorithm_param_I"].tests] == [
        *(f"test_values[{i}]" for i in range(5)), "test_rejects_non_positive[0]", "test_rejects_non_positive[1]"]
    assert [t.name for t in tasks["Algorithm_marks_I"].tests] == [
        "test_basic", "test_zero", "test_negative", "test_string_condition", "test_float_exact"]
    assert tasks["Data_Structure_class_I"].entry_point == "BoundedStack"


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
    assert disagree == set(FORGERIES), {k: table[k] for k in disagree ^ set(FORGERIES)}
    assert all(table[k][:2] == (True, False) for k in FORGERIES), {k: table[k] for k in FORGERIES}
    agreed = len(table) - len(disagree)
    print(f"\nkodcode parity: {agreed}/{len(table)} agree; the {len(disagree)} others are forgeries real pytest pays")
