"""Red team, round 3 (issue 42, point 7): hostile completions (and, for the audit, hostile references and rows)
against the KodCode pytest emulation, the Python special judges, HardTests' decoded tests, ``grpo-wb tasks
audit``, ``grpo-wb sample --adaptive`` and the link between the tester and the candidate's process.

Each test builds its task and its hostile input, scores it with the real scorer in the sandbox (or runs the real
command), and asserts the property that must hold. Docstrings say which it is:

* **open on f41e53b**: the attack worked on that commit; the test fails there on purpose (never xfail'd).
* **regression**: the attack was tried and held; the test keeps it held.
* **control**: a right answer still passes through the same path.

The six link attacks issue 42 assigns elsewhere (a callable-object entry point, a second imported function,
shadowed ``range``/``abs``/``poly``, in-place mutation with always-equal objects, generator/Fraction/Decimal/
namedtuple answers refused) are not repeated here.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import import_rows, read_jsonl, replay_model, write_jsonl
from hostile import assert_task, score_one

from grpo_wb.cli.main import main
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer
from grpo_wb.tasks.records import Task, TestCase
from grpo_wb.tasks.rowformats import parse_row, task_from_parsed

pytestmark = [pytest.mark.sandbox]

ROWS = Path(__file__).parent / "fixtures" / "rows"


@pytest.fixture(scope="module")
def scorer():
    # site_packages: KodCode test modules import pytest in the sandbox
    sc = Scorer(
        SandboxLimits(timeout=5.0, check_timeout=2.0, site_packages=True),
        RewardConfig("binary"),
        workers=2,
        cache=False,
    )
    yield sc
    sc.close()


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def run(scorer, task: Task, code: str):
    return score_one(scorer, task, fenced(code))


def no_reward(r) -> None:
    """The property every attack below must meet: not a pass, reward 0 (never None: not the sandbox's fault)."""
    assert r.status != "pass" and not r.passed, (r.status, r.error)
    assert r.reward == 0.0, (r.status, r.reward, r.error)
    assert r.status != "sandbox_error", r.error


def kodcode(test: str, fn: str | None, solution: str = "def f(x):\n    return x\n") -> Task:
    """A KodCode row's task, as ``grpo-wb tasks import kodcode`` makes it."""
    row = {
        "version": "v1.0",
        "style": "instruct",
        "subset": "Red",
        "question_id": "Red_1_I",
        "question": "Write the function (or class) the tests import from solution.",
        "solution": solution,
        "test": test,
        "test_info": None
        if fn is None
        else [{"function_name": fn, "parameter_list": "", "docstring": None, "function_declaration": ""}],
        "gpt_difficulty": "medium",
    }
    return task_from_parsed(parse_row("kodcode", row), "red", {})


ALWAYS_EQUAL = (
    "class _Any:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
    "        return False\n    def __bool__(self):\n        return True\n    __hash__ = object.__hash__\n"
)

# ============================================================================ 1. the KodCode pytest emulation

# string conditions: pytest evaluates them with its own os/sys/platform (the module's own names over them)
SKIPIF_ROW = (
    "import pytest\nfrom solution import square\n\n"
    "@pytest.mark.skipif(\"sys.platform == 'win32'\", reason='not on windows')\n"
    "def test_two():\n    assert square(2) == 4\n\n"
    "@pytest.mark.skipif(\"os.name == 'nt'\")\n"
    "def test_three():\n    assert square(3) == 9\n\n"
    "@pytest.mark.skipif(\"platform.system() == 'Windows'\")\n"
    "def test_four():\n    assert square(4) == 16\n"
)
XFAIL_ROW = (
    "import pytest\nfrom solution import square\n\n"
    "@pytest.mark.xfail(\"sys.version_info < (3, 0)\", reason='python 2 only')\n"
    "def test_two():\n    assert square(2) == 4\n"
)
SQUARE = "def square(x):\n    return x * x\n"


def test_kodcode_skipif_string_condition_reads_the_candidates_sys_os_platform(scorer):
    """open on f41e53b: a ``skipif`` string condition is evaluated with ``**globals()`` over os/sys/platform
    (``_PYTEST_HELPERS.__grpo_wb_cond``), and the test module's globals held every candidate name: a completion that
    defines ``sys``/``os``/``platform`` objects claiming Windows skips every test, and a wrong ``square`` passes
    (real pytest evaluates with the real modules: the tests run and fail)."""
    task = kodcode(SKIPIF_ROW, "square")
    hostile = (
        "class _Win:\n    platform = 'win32'\n    name = 'nt'\n    def system(self):\n        return 'Windows'\n"
        "sys = os = platform = _Win()\n\ndef square(x):\n    return 0\n"
    )
    no_reward(run(scorer, task, hostile))


def test_kodcode_xfail_string_condition_reads_the_candidates_sys(scorer):
    """open on f41e53b: the same through a conditional ``xfail``: the candidate's ``sys.version_info`` compares
    below (3, 0), the test becomes a non-strict xfail, and its failure is accepted."""
    task = kodcode(XFAIL_ROW, "square")
    hostile = (
        "class _Old:\n    def __lt__(self, other):\n        return True\n"
        "class _Sys:\n    version_info = _Old()\nsys = _Sys()\n\ndef square(x):\n    return 0\n"
    )
    no_reward(run(scorer, task, hostile))


def test_kodcode_string_conditions_control(scorer):
    """control: with string conditions, the right ``square`` passes and a wrong one fails."""
    for row in (SKIPIF_ROW, XFAIL_ROW):
        task = kodcode(row, "square")
        assert run(scorer, task, SQUARE).status == "pass"
        no_reward(run(scorer, task, "def square(x):\n    return 0\n"))


@pytest.mark.parametrize(
    "body",
    [
        "import pytest\n    pytest.skip('not today')",
        "import pytest\n    pytest.xfail('known bug')",
        "import pytest\n    pytest.importorskip('no_such_module_anywhere')",
        "import unittest\n    raise unittest.SkipTest('skip')",
        "import pytest\n    pytest.exit('bye', returncode=0)",
    ],
    ids=["skip", "xfail", "importorskip", "SkipTest", "exit"],
)
def test_kodcode_a_candidate_that_skips_or_xfails_from_inside_its_call_fails(scorer, body):
    """regression (held on f41e53b): real pytest counts a test skipped or xfailed by the code under test as not
    failed (exit status 0 when every test skips); here the outcome exception reaches the tester as the candidate's
    exception and the test fails -- in a pytest module and in a unittest.TestCase module alike."""
    fn = f"def square(x):\n    {body}\n"
    pytest_row = "import pytest\nfrom solution import square\n\ndef test_two():\n    assert square(2) == 4\n"
    unittest_row = (
        "import unittest\nfrom solution import square\n\nclass TestSquare(unittest.TestCase):\n"
        "    def test_two(self):\n        self.assertEqual(square(2), 4)\n"
    )
    for row in (pytest_row, unittest_row):
        no_reward(run(scorer, kodcode(row, "square"), fn))


STACK_ROW = (
    "from solution import Stack\n\n"
    "def test_push_pop():\n    s = Stack()\n    s.push(10)\n    s.push(20)\n    assert s.pop() == 20\n"
    "    assert s.pop() == 10\n\n"
    "def test_size():\n    s = Stack()\n    s.push(1)\n    assert s.size() == 1\n\n"
    "def test_peek():\n    s = Stack()\n    s.push(7)\n    assert s.peek() == 7 and s.size() == 1\n"
)
STACK = (
    "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n"
    "        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n"
    "    def peek(self):\n        return self.items[-1]\n    def size(self):\n        return len(self.items)\n"
)


def test_kodcode_class_entry_point_methods_answering_always_equal_objects(scorer):
    """open on f41e53b: a class entry point (``from solution import Stack``) is not guarded, and its methods'
    answers cross as handles whose ``==`` the candidate answers: ``s.pop() == 20`` is asked of an object that says
    yes to everything. Not the documented gap (two of the candidate's objects compared): here the other side is
    the test's plain value."""
    hostile = (
        ALWAYS_EQUAL + "class Stack:\n    def push(self, x):\n        pass\n    def pop(self):\n"
        "        return _Any()\n    peek = size = pop\n"
    )
    no_reward(run(scorer, kodcode(STACK_ROW, None, STACK), hostile))


def test_kodcode_class_entry_point_control(scorer):
    """control: the right class passes; a wrong one fails."""
    task = kodcode(STACK_ROW, None, STACK)
    assert run(scorer, task, STACK).status == "pass"
    no_reward(run(scorer, task, STACK.replace("self.items.pop()", "self.items[0]")))


# ============================================================================ 2. Python special judges

SPLIT_TESTS = (
    TestCase(name="five", type="stdio", input="5\n", output="1 4\n"),
    TestCase(name="nine", type="stdio", input="9\n", output="2 7\n"),
)
_JUDGE = (
    "    n = int(inp.split()[0])\n    got = out.split()\n    if len(got) != 2:\n        return False\n"
    "    a, b = int(got[0]), int(got[1])\n    return a > 0 and b > 0 and a != b and a + b == n\n"
)
CHECKERS = {
    "open-r1": "import sys\n\ndef ok(inp, exp, out):\n"
    + _JUDGE
    + "inp, exp, out = (open(p).read() for p in sys.argv[1:4])\nprint(1 if ok(inp, exp, out) else 0)\n",
    "klear": "def is_valid_output(inp, out, exp):\n" + _JUDGE,
    "hardtests": "def output_judging_function(inp, out, exp):\n" + _JUDGE,
}
SPLIT_RIGHT = "n = int(input())\nprint(1, n - 1)\n"


def split_task(style: str, checker: str | None = None) -> Task:
    return Task(
        task_id=f"red/split-{style}",
        prompt="Print two different positive integers whose sum is n.",
        entry_point="",
        tests=SPLIT_TESTS,
        checker=checker or CHECKERS[style],
        checker_style=style,
    )


HOSTILE_OUTPUTS = {
    # what an accepting checker prints, printed by the completion instead
    "result_true": "input()\nprint('Result: True')\n",
    "one": "input()\nprint(1)\n",
    "hundred": "input()\nprint(100)\n",
    "true": "input()\nprint(True)\n",
    "empty": "input()\n",
    # output the judge cannot parse (its int() raises): the checker crashes, the answer is rejected
    "unparsable": "input()\nprint('x y')\n",
    "control_chars": "input()\nprint('\\x00\\r1\\r\\n2\\x1b[2J')\n",
    "bad_utf8": "import sys\ninput()\nsys.stdout.flush()\nsys.stdout.buffer.write(b'\\xff\\xfe 1 \\xc3\\n')\n",
    "huge_ints": "input()\nprint('9' * 5000, '-' + '9' * 5000)\n",
    "too_large": "input()\nprint('1 ' * 600000)\n",
    # the judge's events, forged on every descriptor, for every test
    "forged_checked": "import os, json\ninput()\nprint('0 0')\nfor i in range(2):\n    for fd in range(3, 16):\n"
    "        for ev in ({'event': 'stdout', 'index': i, 'output': '1 4\\n'},\n"
    "                   {'event': 'checked', 'index': i, 'ok': True, 'message': ''}):\n"
    "            try:\n                os.write(fd, (json.dumps(ev) + '\\n').encode())\n"
    "            except OSError:\n                pass\nos._exit(0)\n",
}


@pytest.mark.parametrize("style", sorted(CHECKERS))
def test_special_judge_outputs_that_look_like_a_verdict_or_break_the_parse_get_no_reward(scorer, style):
    """regression (held on f41e53b): for open-r1 (``checker.py IN EXPECTED ACTUAL``, stdout 1/100), Klear
    (``Result: True``) and HardTests (a true value), outputs that print an accepting verdict themselves, that the
    judge cannot parse (so it crashes), with control characters, invalid UTF-8, huge numbers, past the output cap,
    or that forge ``checked`` events on every descriptor: each a fail with reward 0, never a pass and never
    ``sandbox_error``."""
    task = split_task(style)
    assert run(scorer, task, SPLIT_RIGHT).status == "pass"  # control
    for label, code in HOSTILE_OUTPUTS.items():
        r = run(scorer, task, code)
        assert r.status != "pass" and r.reward == 0.0 and r.status != "sandbox_error", (label, r.status, r.error)


SLOW_JUDGE = (
    "def output_judging_function(inp, out, exp):\n    toks = out.split()\n    s = 0\n    for a in toks:\n"
    "        for b in toks:\n            s += len(a) + len(b)\n"
    + _JUDGE.replace("    got = out.split()\n", "    got = toks\n")
)


def test_an_output_that_makes_the_judge_run_out_of_time_is_a_fail_not_the_tasks_fault(scorer):
    """regression (held on f41e53b): 200,000 tokens make a quadratic judge run past ``check_timeout``: the
    completion's fail (reward 0), not ``sandbox_error`` (reward None); the right answer still passes the same
    judge."""
    task = split_task("hardtests", SLOW_JUDGE)
    assert run(scorer, task, SPLIT_RIGHT).status == "pass"
    no_reward(run(scorer, task, "input()\nprint('1 ' * 200000)\n"))


# ====================================================================== 3. HardTests' and LiveCodeBench's decoded tests

DEEP_JSON = "[" * 100000 + "]" * 100000


def _encoded(data: bytes) -> str:
    import base64
    import zlib

    return base64.b64encode(zlib.compress(data)).decode()


@pytest.mark.parametrize(
    "fmt, field, value",
    [
        ("hardtests", "test_cases", DEEP_JSON),
        ("hardtests", "test_cases", "pickled"),
        ("livecodebench", "private_test_cases", "pickled"),
    ],
    ids=["hardtests-json", "hardtests-pickle", "livecodebench-pickle"],
)
def test_a_row_whose_tests_decode_to_deeply_nested_json_is_skipped_not_a_crash(tmp_path, fmt, field, value):
    """open on f41e53b: ``decode_compressed_json`` catches ``JSONDecodeError`` only, and ``parse_row`` only
    Attribute/Key/Type/Value/IndexError: JSON nested 100,000 deep (plain, or inside the base64/zlib/pickle
    envelope) raises ``RecursionError``, which ends ``grpo-wb tasks import --skip-bad`` for the whole file instead
    of skipping the row."""
    import pickle

    good = json.loads((ROWS / f"{fmt}.jsonl").read_text().splitlines()[0])
    bad = dict(good, **{field: value if value != "pickled" else _encoded(pickle.dumps(DEEP_JSON))})
    bad["pid" if fmt == "hardtests" else "question_id"] = "deep"
    src = write_jsonl(tmp_path / "rows.jsonl", [bad, good])
    tasks, summary = import_rows(fmt, src, skip_bad=True)
    assert len(tasks) == 1 and sum(summary.skipped.values()) == 1, summary.skipped


def test_pickled_tests_without_globals_hold(tmp_path):
    """regression (held on f41e53b): pickles that name a global (``os.system``), build a list holding itself,
    or nest 200,000 lists deep (the unpickler's stack is not Python's) are each refused as a skip reason, and the
    good row beside them is imported."""
    import os
    import pickle

    good = json.loads((ROWS / "hardtests.jsonl").read_text().splitlines()[0])
    n = 200000
    bodies = {
        "global": pickle.dumps(os.system),
        "self_list": b"\x80\x04]\x94h\x00a.",
        "self_dict": b"\x80\x04}\x94(\x8c\x01a\x94h\x00u.",
        "deep": b"\x80\x04" + b"]" * n + b"a" * (n - 1) + b".",
    }
    rows = [dict(good, pid=k, test_cases=_encoded(v)) for k, v in bodies.items()] + [good]
    tasks, summary = import_rows("hardtests", write_jsonl(tmp_path / "rows.jsonl", rows), skip_bad=True)
    assert len(tasks) == 1 and sum(summary.skipped.values()) == len(bodies), summary.skipped


# ============================================================================ 4. grpo-wb tasks audit

INC = 'def inc(x):\n    """Return x plus one."""\n'
INC_BODY = "    return x + 1\n"
WEAK_TESTS = [f"assert isinstance(candidate({i}), int)" for i in range(6)]


def _self_checking(body: str) -> str:
    """``body`` followed by a check, inside a string constant (never mutated), that the entry point's code object is
    the one the reference was written with: any mutant of the function exits at load."""
    ns: dict = {}
    exec(compile(INC + body, "<candidate>", "exec"), ns)
    c = ns["inc"].__code__
    sig = hashlib.sha256(c.co_code + repr(c.co_consts).encode() + repr(c.co_names).encode()).hexdigest()
    check = (
        "import hashlib\nc = inc.__code__\n"
        f"if hashlib.sha256(c.co_code + repr(c.co_consts).encode() + repr(c.co_names).encode()).hexdigest() != "
        f"{sig!r}:\n    raise SystemExit(1)\n"
    )
    return body + f"\n\nexec({check!r})\n"


def _audit(tmp_path, tasks, *extra):
    f = write_jsonl(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "audit"
    argv = ["tasks", "audit", str(f), "--out", str(out), "--mutants", "12", "--repeat", "1", "--workers", "2"]
    rc = main([*argv, "--no-progress", *extra])
    return rc, {r["task_id"]: r for r in read_jsonl(out / "tasks.jsonl")} if rc == 0 else {}


def _fn_task(tid, body, tests=WEAK_TESTS):
    return {
        "task_id": tid,
        "prompt": INC,
        "entry_point": "inc",
        "canonical_solution": body,
        "tests": [{"name": f"t{i}", "type": "assert", "code": c} for i, c in enumerate(tests)],
    }


@pytest.mark.slow
def test_audit_a_reference_that_detects_its_mutants_does_not_make_weak_tests_look_strong(tmp_path):
    """open on f41e53b: the reference hashes its entry point's code object and exits on a mismatch (the check sits
    in a string constant, which no operator mutates). Every mutant of the function then dies at load and counts as
    killed (``killed_by: {"error": ...}``): tests that only check the answer is an int score 1.0 and lose their
    ``weak`` flag, where the same tests on the plain reference score 0.5 and are weak (``--weak-below 0.9``)."""
    rc, recs = _audit(
        tmp_path,
        [_fn_task("weak/plain", INC_BODY), _fn_task("weak/self-checking", _self_checking(INC_BODY))],
        "--weak-below",
        "0.9",
    )
    assert rc == 0
    assert "weak" in recs["weak/plain"]["flags"], recs["weak/plain"]  # control
    m = recs["weak/self-checking"]["mutation"]
    assert "weak" in recs["weak/self-checking"]["flags"], m


@pytest.mark.slow
def test_audit_a_deeply_nested_reference_is_one_note_and_the_audit_goes_on(tmp_path):
    """open on f41e53b: a reference ``return 1+1+...+1`` (100,000 terms) raises ``RecursionError`` in
    ``task_audit._program``'s ``compile`` (it catches SyntaxError and ValueError only): ``grpo-wb tasks audit``
    ends with a traceback for the whole task set. It must be the task's note (``reference 0 is not a program``)
    while the other task is audited."""
    rc, recs = _audit(tmp_path, [_fn_task("deep", "    return " + "1+" * 100000 + "1\n"), _fn_task("ok", INC_BODY)])
    assert rc == 0 and set(recs) == {"deep", "ok"}
    assert recs["ok"]["references"]["passed"] == 1


# ============================================================================ 5. grpo-wb sample --adaptive

ADAPTIVE_TASKS = [
    assert_task("ad/hostile", "def double(x):\n", "double", [f"assert candidate({i}) == {2 * i}" for i in range(3)]),
    assert_task("ad/plain", "def triple(x):\n", "triple", [f"assert candidate({i}) == {3 * i}" for i in range(3)]),
]
HOSTILE_COMPLETIONS = [
    fenced(c)
    for c in (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef double(x):\n    return 0\n",  # the worker
        'import os\nos.write(3, b\'{"event": "test", "index": 0, "ok": true}\\n\' * 300000)\n'
        "def double(x):\n    return 0\n",  # a flood of forged events
        "import time\ndef double(x):\n    time.sleep(30)\n",  # a timeout
        "def double(x):\n    return '\\ud800' * 100000\n",  # lone surrogates in what reaches the scored file
        "import os\nos._exit(0)\n",
        "def double(x):\n    raise MemoryError\n",
        "import sys\nsys.setrecursionlimit(10**6)\ndef double(x):\n    return double(x)\n",  # C stack overflow
        "def double(x):\n    return 0\n",
    )
]


def _adaptive_counts(tmp_path, name, hostile):
    tasks = write_jsonl(tmp_path / f"{name}.tasks.jsonl", [t.to_json() for t in ADAPTIVE_TASKS])
    replies = {
        "ad/hostile": hostile,
        "ad/plain": [fenced("def triple(x):\n    return 3 * x\n")] * 3 + [fenced("def triple(x):\n    return 0\n")],
    }
    from grpo_wb.testing.loopback import ReplayServer

    out = tmp_path / f"{name}.jsonl"
    with ReplayServer(ADAPTIVE_TASKS, replies) as srv:
        argv = [
            "sample",
            "--tasks",
            str(tasks),
            *replay_model(srv),
            "--n",
            "16",
            "--score",
            "--adaptive",
            "--workers",
            "2",
        ]
        rc = main([*argv, "--round-size", "8", "--timeout", "2", "--out", str(out), "--no-progress"])
    scored = read_jsonl(tmp_path / f"{name}.scored.jsonl")
    return rc, Counter(r["task_id"] for r in scored), scored


@pytest.mark.slow
def test_adaptive_sampling_counts_do_not_depend_on_how_a_completion_fails(tmp_path):
    """regression (held on f41e53b): a task whose completions kill the worker, flood the event channel, time out,
    return lone surrogates, exit early or overflow the C stack is sampled exactly as often as one whose completions
    are merely wrong, and the other task's count is untouched; every row is scored with a reward (no
    ``sandbox_error``, no None) and the run ends normally."""
    rc, hostile, rows = _adaptive_counts(tmp_path, "hostile", HOSTILE_COMPLETIONS)
    rc0, plain, _ = _adaptive_counts(tmp_path, "plain", [fenced("def double(x):\n    return 0\n")])
    assert rc == 0 and rc0 == 0
    assert hostile == plain, (hostile, plain)
    assert all(r["reward"] == 0.0 and r["status"] != "sandbox_error" for r in rows if r["task_id"] == "ad/hostile")


# ============================================================================ 6. the tester/candidate link

# exec tests (loops: they run in the tester), the round trip first
ROUND_TRIP = [
    "for s in ['', 'x', 'abab']:\n    assert decode(encode(s)) == s",
    "for s, want in [('aaabcc', 'a3b1c2')]:\n    assert encode(s) == want",
    "for s, want in [('a3b1c2', 'aaabcc')]:\n    assert decode(s) == want",
]
RLE = (
    "def encode(s):\n    out, i = [], 0\n    while i < len(s):\n        j = i\n"
    "        while j < len(s) and s[j] == s[i]:\n            j += 1\n        out.append(s[i] + str(j - i))\n"
    "        i = j\n    return ''.join(out)\n\n"
    "def decode(s):\n    import re\n    return ''.join(c * int(n) for c, n in re.findall(r'(\\D)(\\d+)', s))\n"
)
# eval'd in the tester, this rebinds the tester's builtins.exec to a no-op: each later test's exec "passes"
_PATCH = "(__import__('builtins').__setattr__('exec', lambda *a, **k: None), %r)[1]"
EVAL_CROSSING = f"def encode(s):\n    return {_PATCH!r} % (s,)\n\ndecode = eval\n"


def test_link_a_candidate_name_bound_to_eval_runs_the_candidates_text_in_the_tester(scorer):
    """open on f41e53b (and on the working tree of 2026-12 that guards named functions): a candidate name bound to
    a builtin crosses as ``{"$": "builtin"}`` and the tester binds *its own* builtin of that name. With
    ``decode = eval``, ``decode(encode(s))`` evaluates the candidate's string in the tester, whose code rebinds
    the tester's ``builtins.exec``: every later test's ``exec`` is a no-op and "passes" (a wrong ``encode`` gets
    reward 1). The text could as well read the expected values or write the event channel."""
    task = assert_task("red/rle", "Write encode (run-length) and decode.\n", "encode", ROUND_TRIP)
    no_reward(run(scorer, task, EVAL_CROSSING))


def test_link_an_entry_point_bound_to_eval_runs_the_candidates_text_in_the_tester(scorer):
    """open on f41e53b: the same with the entry point itself ``decode = eval`` (a builtin is not a remote function,
    so it is not guarded either, and ``candidate`` is the tester's eval)."""
    task = assert_task("red/rle-decode", "Write decode (run-length) and encode.\n", "decode", ROUND_TRIP)
    no_reward(run(scorer, task, EVAL_CROSSING))


def test_link_eval_through_a_kodcode_solution_module(scorer):
    """open on f41e53b: the same through a KodCode module that imports ``solution`` (``import solution as s``)."""
    row = (
        "import solution as s\n\n"
        "def test_round_trip():\n    for x in ['', 'x', 'abab']:\n        assert s.decode(s.encode(x)) == x\n\n"
        "def test_encode():\n    assert s.encode('aaabcc') == 'a3b1c2'\n\n"
        "def test_decode():\n    assert s.decode('a3b1c2') == 'aaabcc'\n"
    )
    no_reward(run(scorer, kodcode(row, "encode", RLE), EVAL_CROSSING))


def test_link_round_trip_controls(scorer):
    """control: the right encode/decode passes each shape above; ``encode = repr; decode = eval`` (an honest round
    trip) passes only the round-trip test."""
    plain = assert_task("red/rle", "Write encode (run-length) and decode.\n", "encode", ROUND_TRIP)
    assert run(scorer, plain, RLE).status == "pass"
    r = run(scorer, plain, "encode = repr\ndecode = eval\n")
    assert r.status == "fail" and r.tests_passed == 1, (r.status, r.tests_passed, r.error)


EXC_ROW = (
    "import pytest\nfrom solution import withdraw\n\n"
    "def test_ok():\n    assert withdraw(100, 30) == 70\n\n"
    "def test_short():\n    with pytest.raises(ValueError) as e:\n        withdraw(10, 30)\n"
    "    assert e.value.shortfall == 20\n"
)
WITHDRAW = (
    "class Short(ValueError):\n    def __init__(self, n):\n        super().__init__(n)\n        self.shortfall = n\n\n"
    "def withdraw(balance, amount):\n    if amount > balance:\n        raise Short(amount - balance)\n"
    "    return balance - amount\n"
)


def test_link_an_exception_with_an_always_equal_attribute(scorer):
    """open on f41e53b: the guarded entry point's answers must be plain values, but an exception it raises crosses
    with a handle, and an attribute the test reads from it (``e.value.shortfall``) is answered by the candidate
    unguarded: an always-equal object passes ``== 20``."""
    hostile = ALWAYS_EQUAL + (
        "class Short(ValueError):\n    shortfall = _Any()\n\n"
        "def withdraw(balance, amount):\n    if amount > balance:\n        raise Short('short')\n"
        "    return balance - amount\n"
    )
    no_reward(run(scorer, kodcode(EXC_ROW, "withdraw", WITHDRAW), hostile))


def test_link_exception_attribute_control(scorer):
    """control: the right exception with its attribute passes; a wrong shortfall fails."""
    task = kodcode(EXC_ROW, "withdraw", WITHDRAW)
    assert run(scorer, task, WITHDRAW).status == "pass"
    no_reward(run(scorer, task, WITHDRAW.replace("Short(amount - balance)", "Short(amount)")))


def test_link_stop_iteration_ends_the_tests_map(scorer):
    """open on f41e53b (Python semantics, real pytest agrees): the entry point raises ``StopIteration``, which
    crosses as itself; inside ``all(map(lambda ...))`` it ends the map, and ``all`` of nothing is True. The link
    could turn a candidate's StopIteration into a RuntimeError, as PEP 479 does for generators."""
    task = assert_task(
        "red/stop", "def double(x):\n", "double", ["assert all(map(lambda a: candidate(a) == 2 * a, [1, 2, 3]))"]
    )
    assert run(scorer, task, "def double(x):\n    return 2 * x\n").status == "pass"  # control
    no_reward(run(scorer, task, "def double(x):\n    raise StopIteration\n"))


@pytest.mark.parametrize(
    "answer",
    [
        "import re\n    return re.match('.', 'x')",  # crosses as True (a match is only ever truthy)
        "return (1 << 80)",  # a big int (hex on the wire)
        "return [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",  # deeper than encode goes
        "import sys\n    return sys.modules['builtins']",  # a module: the tester imports its own
        "return len",  # a builtin function: the tester's own
        "return type('int', (int,), {'__eq__': lambda s, o: True})(0)",  # an int subclass named int
    ],
    ids=["re_match", "bigint", "too_deep", "module", "builtin", "int_named_int"],
)
def test_link_answers_that_are_not_plain_values_get_no_reward(scorer, answer):
    """regression (held on f41e53b): through an exec test, answers that cross oddly (a match object, a big int, a
    value too deep for the link, a module, a builtin, an int subclass named ``int``) never pass
    ``candidate(x) == 2 * x`` for a wrong answer, and the scorer scores the next completion right."""
    task = assert_task(
        "red/odd", "def double(x):\n", "double", ["for i in range(1, 4):\n    assert candidate(i) == 2 * i"]
    )
    no_reward(run(scorer, task, f"def double(x):\n    {answer}\n"))
    assert run(scorer, task, "def double(x):\n    return 2 * x\n").status == "pass"
