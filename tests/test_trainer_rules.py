"""The trainer's reward rule, run safely: grpo_wb judges a row as its trainer's reward function does.

Parity is checked against the trainers' own code: verl's ``prime_code`` (bundled, unchanged, in
grpo_wb/data/reward_harnesses/verl-0.9.1), the open-r1 ``code_reward`` transcription the audit ships
(grpo_wb/reward_audit/refs/openr1_style.py), TACO's ``metrics/testing_util.py`` (reward_harnesses/taco-2ba6235) and
LiveCodeBench's ``lcb_runner`` (reward_harnesses/livecodebench-28fef95). Each is run here on trusted programs only;
TACO's and LiveCodeBench's in a process of their own (they patch ``os``, ``builtins`` and signals).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import filter_argv, score_argv

from grpo_wb.bundled import REWARD_HARNESSES
from grpo_wb.cli.main import main
from grpo_wb.reward_audit.refs import openr1_style
from grpo_wb.reward_audit.refs.verl_prime_code import prime_code
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.rules import RULES, trainer_rule
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.scoring.verdicts import (
    apps_equal,
    lcb_equal,
    open_r1_output_matches,
    prime_code_output_matches,
    stdio_matches,
    taco_equal,
    taco_output_matches,
    values_equal,
)
from grpo_wb.tasks.importers import apps_int_keys
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowformats import parse_row, task_from_parsed

# (what the program prints, the expected output): the cases where the rules differ from an exact comparison
OUTPUTS = [
    ("3\n", "3\n"),
    ("3.000001\n", "3\n"),
    ("3.01\n", "3\n"),
    ("0 3\n", "3 0\n"),
    ("a  \n\nb\n", "a\nb\n"),
    ("  5\n", "5"),
    ("", ""),
    ("nan\n", "nan\n"),
    ("1e-7\n", "0\n"),
    ("1.0\n2.0\n", "1\n2\n"),
    ("-3\n", "-3.0000001\n"),
    ("Yes\n", "YES\n"),
    ("x\n", "x\n\n\n"),
    ("12\n", "012\n"),
    ("1 2\n", "1  2\n"),
    ("1\n2\n", "1\n"),
    ("1\n", "1\n2\n"),
    ("inf\n", "inf\n"),
    ("3\n4\n", "3\n4.00001\n"),
    ("\n\n7\n", "7\n"),
    ("1\r\n2\r\n", "1\n2\n"),
    ("5 \n", " 5\n"),
    ("2.5\n", "2.50000001\n"),
    ("abc\n", "abc \n"),
]


def _prime_code_passes(completion: str, ground_truth: str) -> bool:
    """verl's call (continuous=True; its binary path raises on a failure, UnboundLocalError in 0.9.1): 1.0 is a pass."""
    score, _ = prime_code.compute_score(completion, ground_truth, continuous=True)
    return float(score) == 1.0


def _printer(text: str) -> str:
    return f"import sys\nsys.stdout.write({text!r})\n"


@pytest.mark.slow  # prime_code runs each program in a process of its own
def test_prime_codes_output_comparison_is_the_bundled_modules():
    """Each (printed, expected) pair: prime_code itself, running the program that prints it, and the port agree."""
    for printed, expected in OUTPUTS:
        theirs = _prime_code_passes(
            f"```python\n{_printer(printed)}```", json.dumps({"inputs": [""], "outputs": [expected]})
        )
        assert prime_code_output_matches(printed, expected) == theirs, (printed, expected, theirs)


@pytest.mark.slow  # python3 -c per case
def test_open_r1s_output_comparison_is_its_code_rewards():
    python = shutil.which("python3") or sys.executable
    for printed, expected in OUTPUTS:
        theirs = openr1_style._case_passes(_printer(printed), {"input": "", "output": expected}, python)
        assert open_r1_output_matches(printed, expected) == theirs, (printed, expected, theirs)


def _verl(data_source="taco", gt=None, prompt="Read a and b; print a+b."):
    row = {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": prompt}],
        "reward_model": {"style": "rule", "ground_truth": json.dumps(gt or {"inputs": ["2 3\n"], "outputs": ["5\n"]})},
    }
    return row, task_from_parsed(parse_row("verl", row), "verl/0", {})


SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
HALF = "a, b = map(int, input().split())\nprint((a + b) / 2)\n"
# oddly formatted answers to "print a+b" (stdin) and "print (a+b)/2" with the expected 2.5
REPLIES = {
    "fenced": f"Here:\n```python\n{SUM}```\n",
    "untagged fence": f"```\n{SUM}```\n",
    "raw code": SUM,
    "trailing output block": f"```python\n{SUM}```\nOutput:\n```\n5\n```\n",
    "think draft then answer": f"<think>\n```python\nprint(4)\n```\n</think>\n```python\n{SUM}```",
    "answer then think-style second block": f"```python\n{SUM}```\nOr:\n```python\nprint(6)\n```",
    "leading spaces and blank lines": f"\n\n   ```python\n{SUM}```",
    "wrong": "```python\nprint(4)\n```",
    "prose": "The answer is 5.",
    "float within tolerance": "```python\nprint(5.000001)\n```",
    "float outside tolerance": "```python\nprint(5.01)\n```",
    "extra blank lines in output": "```python\nprint()\nprint(5)\nprint()\n```",
    "trailing spaces": "```python\nprint('5   ')\n```",
}


@pytest.mark.sandbox
@pytest.mark.slow
def test_verl_rows_are_judged_as_prime_code_judges_them():
    """Every reply above: grpo_wb's trainer judge and prime_code itself give the same binary verdict; the strict
    judge is grpo_wb's own (and differs where prime_code's rule is looser or stricter)."""
    row, task = _verl()
    assert trainer_rule(task, "trainer") is RULES["prime_code"] and trainer_rule(task, "strict") is None
    gt = row["reward_model"]["ground_truth"]
    reqs = [ScoreRequest(task, reply, i) for i, reply in enumerate(REPLIES.values())]
    with Scorer(SandboxLimits(timeout=10.0), workers=1, cache=False) as sc:
        ours = list(sc.score(reqs))
    with Scorer(SandboxLimits(timeout=10.0), RewardConfig(judge="strict"), workers=1, cache=False) as sc:
        strict = list(sc.score(reqs))
    wrong = []
    for (name, reply), r in zip(REPLIES.items(), ours):
        theirs = _prime_code_passes(reply, gt)
        if r.passed != theirs:
            wrong.append(f"{name}: grpo_wb {r.status} ({r.error}), prime_code {theirs}")
    assert not wrong, "\n".join(wrong)
    assert {r.judge for r in ours} == {"prime_code"} and {r.judge for r in strict} == {"grpo_wb"}
    differ = {name for (name, _), a, b in zip(REPLIES.items(), ours, strict) if a.passed != b.passed}
    # prime_code runs a whole reply without a ```python tag (fences and all: a syntax error), takes the code
    # before a trailing output block (grpo_wb's strict rule runs that block, the last one, as the script), and
    # compares numbers with a tolerance and without blank lines
    assert differ == {
        "untagged fence",
        "trailing output block",
        "float within tolerance",
        "extra blank lines in output",
    }, differ


@pytest.mark.sandbox
def test_open_r1_rows_are_judged_as_code_reward_judges_them():
    row = {
        "problem_id": "p1",
        "prompt": "Read a and b; print a+b.",
        "verification_info": {
            "language": "python",
            "test_cases": [{"input": "2 3\n", "output": "5\n7\n", "type": "stdin_stdout"}],
        },
    }
    task = task_from_parsed(parse_row("open-r1", row), "open-r1/p1", {})
    assert task.metadata["trainer_reward"] == "open-r1"
    replies = [f"```python\n{SUM}```", SUM, "```python\nprint(5)\nprint(8)\n```"]
    with Scorer(SandboxLimits(timeout=10.0), workers=1, cache=False) as sc:
        got = [(r.judge, r.status) for r in sc.score([ScoreRequest(task, c, i) for i, c in enumerate(replies)])]
    python = shutil.which("python3") or sys.executable
    theirs = [
        openr1_style._case_passes(
            openr1_style._BLOCK.findall(c)[-1] if "```python\n" in c else "",
            row["verification_info"]["test_cases"][0],
            python,
        )
        for c in replies
    ]
    # zip cuts the comparison to stdout's one line: "5" passes against "5\n7"; raw code is not taken at all
    assert theirs == [True, False, False]
    assert got == [("open-r1", "pass"), ("open-r1", "parse_failure"), ("open-r1", "fail")]


@pytest.mark.parametrize(
    "row, why",
    [
        ({"data_source": "my_code_set"}, "not routed to a code scorer"),
        ({"gt": {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]}}, "list inputs"),
    ],
)
def test_rows_the_trainer_cannot_reward_are_named(row, why):
    _, task = _verl(data_source=row.get("data_source", "apps"), gt=row.get("gt"))
    assert why in task.metadata["trainer_unrewardable"]
    assert trainer_rule(task, "trainer") is None  # judged by grpo_wb's rule, and said so in the task
    fn_call = {
        "problem_id": "p",
        "prompt": "f",
        "verification_info": {
            "language": "python",
            "test_cases": [{"input": "1", "output": "2", "type": "function_call", "fn_name": "f"}],
        },
    }
    t = task_from_parsed(parse_row("open-r1", fn_call), "open-r1/p", {})
    assert "code_reward runs as stdin programs" in t.metadata["trainer_unrewardable"]


@pytest.mark.sandbox
def test_a_row_the_trainer_cannot_reward_is_its_own_category_in_headroom_filter_and_export(tmp_path, capsys):
    """verl rows: one routed to prime_code, one whose data_source verl's default reward does not route. Both are
    solved half the time; only the first has a learning signal under the trainer, and the reports say so."""
    rows = [_verl(data_source=ds)[0] for ds in ("taco", "my_code_set")]
    for i, r in enumerate(rows):
        r["extra_info"] = {"index": i}
    src, tasks_file = tmp_path / "rows.jsonl", tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["tasks", "import", "verl", "--src", str(src), "--out", str(tasks_file)]) == 0
    ids = [t.task_id for t in load_tasks(tasks_file)]
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": t, "completion": c}) + "\n"
            for t in ids
            for c in [f"```python\n{SUM}```", "```python\nprint(4)\n```"] * 2
        )
    )
    scored = tmp_path / "r.jsonl"
    assert main(score_argv(tasks_file, samples, scored, "--no-progress")) == 0
    by = {}
    for line in scored.read_text().splitlines():
        r = json.loads(line)
        by.setdefault(r["task_id"], set()).add((r["judge"], r["unrewardable"] != ""))
    assert by == {ids[0]: {("prime_code", False)}, ids[1]: {("grpo_wb", True)}}
    capsys.readouterr()
    assert main(["headroom", str(scored)]) == 0
    out = capsys.readouterr().out
    assert "frontier: 1" in out and "the trainer cannot reward: 1" in out and "not routed" in out
    kept = tmp_path / "kept.jsonl"
    assert main(filter_argv(scored, tasks_file, kept, "jsonl")) == 0
    out = capsys.readouterr().out
    assert "the trainer cannot reward it" in out
    (row,) = [json.loads(x) for x in kept.read_text().splitlines()]
    assert row["grpo_wb_trainer_reward"] == "supported"


# ----------------------------------------------------------------------------- TACO and LiveCodeBench

HARNESSES = REWARD_HARNESSES
TACO_BUNDLE = HARNESSES / "taco-2ba6235"
LCB_BUNDLE = HARNESSES / "livecodebench-28fef95"

# Each runs one job in a fresh interpreter: both harnesses patch os, builtins and SIGALRM as they run, and their
# in-process paths run the program in the harness's own process. LiveCodeBench takes the code from a reply with
# its own extract_code (chat styles); TACO's harness takes code, not replies, and gets the program grpo_wb took.
TACO_RUN = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
job = json.load(sys.stdin)
import inspect
inspect.getargspec = inspect.getfullargspec  # pyext2 (for Python < 3.11) reads it at import; never called here
sys.modules["IPython"] = None  # pyext2 patches IPython's argspec when it imports; a newer IPython lacks the attribute
from metrics import testing_util
if job["kind"] == "run":
    res = testing_util.run_test({"input_output": json.dumps(job["io"])}, test=job["code"])
    out = all(r is True for r in res)
elif job["kind"] == "std":  # the program that prints it, run by TACO's own stdin path
    out = []
    for printed, expected in job["pairs"]:
        prog = f"import sys\nsys.stdout.write({printed!r})\n"
        res = testing_util.execute_std_code(prog, [""], [expected], timeout=4)
        out.append(res[0][0])
else:  # call: TACO's execute_cb_code on a method returning the value (its guard would break the next call)
    testing_util.reliability_guard = lambda *a, **k: None
    out = []
    for value, expected in job["pairs"]:
        v = eval(value)
        _, expected = testing_util.process_input_output([[]], expected)  # run_test's int keys for JSON's str keys
        res, _ = testing_util.execute_cb_code(lambda: v, [[]], [expected], timeout=4)
        out.append(res[0][0])
print("\n" + json.dumps(out))
"""

LCB_RUN = r"""
import json, signal, sys
sys.path.insert(0, sys.argv[1])
from lcb_runner.evaluation import testing_util
from lcb_runner.lm_styles import LMStyle
from lcb_runner.utils.extraction_utils import extract_code
job = json.load(sys.stdin)
signal.signal(signal.SIGALRM, testing_util.timeout_handler)
if job["kind"] == "run":
    res, _ = testing_util.run_test({"input_output": json.dumps(job["io"])},
                                   test=extract_code(job["reply"], LMStyle.OpenAIChat))
    out = all(r is True for r in res)
elif job["kind"] == "std":
    out = []
    for printed, expected in job["pairs"]:
        res, _ = testing_util.grade_stdio(f"import sys\nsys.stdout.write({printed!r})\n", [""], [expected], 6)
        out.append(res == [True])
else:
    out = []
    for value, expected in job["pairs"]:
        res, _ = testing_util.grade_call_based(f"def f(x):\n    return {value}\n", ["0"], [expected], "f", 6)
        out.append(res == [True])
print("\n" + json.dumps(out))
"""


def _harness(script: str, bundle: Path, job: dict, cwd: Path):
    """The harness's answer to ``job``, from a fresh interpreter (TACO's stdin path runs ``python`` from PATH:
    this interpreter's, which has numpy)."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    p = subprocess.run(
        [sys.executable, "-c", script, str(bundle)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


# (printed, expected): TACO's cascade, its quirks included (it reads the stdout string character by character in
# its float step and compares the characters of stdout tokens with the tokens of expected lines in its set step)
TACO_OUTPUTS = OUTPUTS + [
    ("123", "1\n2\n3\n"),
    ("0.30000000000000004\n", "0.3\n"),
    ("0.3\n", "0.3\n"),
    ("2\n1\n", "1\n2\n"),
    ("1 2 3\n", "1\n2\n3\n"),
    ("3\n", "3.0001\n"),
    ("3\n", "3.01\n"),
    ("1.0\n2.0\n", "1\n2\n"),
    ("21", "1 2\n"),
    ("12\n34\n", "34\n12\n"),
    ("", "\n\n"),
    ("5", "5.000001"),
    ("3 2 1\n", "1 2 3\n"),
    ("x y\n", "y x\n"),
]
LCB_OUTPUTS = OUTPUTS + [
    ("0.30000000000000004\n", "0.3\n"),
    ("0.30\n", "0.3\n"),
    ("1e1\n", "10\n"),
    ("NaN\n", "nan\n"),
    ("Infinity\n", "inf\n"),
    ("1_000\n", "1000\n"),
    ("5\n\n6\n", "5\n6\n"),
    ("  a  b \n", "a b\n"),
]
# (the value the method returns, as Python source; the expected value as the harness holds it)
TACO_CALLS = [
    ("3", [3]),
    ("(3,)", [3]),
    ("[3]", [3]),
    ("((0, 1), (1, 2))", [[[0, 1], [1, 2]]]),
    ("[(0, 1), (1, 2)]", [[[0, 1], [1, 2]]]),
    ("[[0, 1], (1, 2)]", [[[0, 1], [1, 2]]]),
    ("[[(0, 1)]]", [[[[0, 1]]]]),
    ("{1: 2}", [{"1": 2}]),
    ("{'1': 2}", [{"1": 2}]),
    ("3.0", [3]),
    ("True", [1]),
    ("None", []),
    ("[]", []),
    ("'a'", ["a"]),
    ("('a', 'b')", [["a", "b"]]),
]
LCB_CALLS = [
    ("3", "3"),
    ("(3,)", "[3]"),
    ("[3]", "3"),
    ("((0, 1), (1, 2))", "[[0, 1], [1, 2]]"),
    ("[(0, 1), (1, 2)]", "[[0, 1], [1, 2]]"),
    ("{1: 2}", '{"1": 2}'),
    ("{'1': 2}", '{"1": 2}'),
    ("3.0", "3"),
    ("0.30000000000000004", "0.3"),
    ("True", "true"),
    ("None", "null"),
    ("'a'", '"a"'),
]


def test_taco_output_comparison_by_hand():
    """TACO's stdin rule, cases worked out from its source: no float tolerance reaches real stdout (its float step
    reads characters), digits pass as lines, single-character tokens in any order, rounding of digits."""
    assert taco_output_matches(" 5 \n\n", "5") and taco_output_matches("1\r\n2\r\n", "1\n2\n")
    assert not taco_output_matches("0.30000000000000004\n", "0.3\n")
    assert not taco_output_matches("5.000001\n", "5\n") and not taco_output_matches("1.0\n2.0\n", "1\n2\n")
    assert taco_output_matches("123", "1\n2\n3\n") and not taco_output_matches("123\n", "1\n2\n3\n")
    assert taco_output_matches("2\n1\n", "1\n2\n") and not taco_output_matches("12\n34\n", "34\n12\n")
    assert taco_output_matches("3\n", "3.0001\n") and not taco_output_matches("3\n", "3.01\n")
    assert not taco_output_matches("Yes\n", "YES\n") and not taco_output_matches("3 2 1\n", "1 2 3\n")
    assert stdio_matches("123", "1\n2\n3", "taco") and not stdio_matches("123", "1\n2\n3", "lines")


def test_taco_call_comparison_by_hand():
    assert taco_equal((3,), [3]) and taco_equal(3, [3]) and taco_equal([(0, 1), (1, 2)], [[[0, 1], [1, 2]]])
    # a tuple below the first element stays a tuple for TACO; apps_equal makes every tuple a list
    assert not taco_equal([[0, 1], (1, 2)], [[[0, 1], [1, 2]]]) and apps_equal([[0, 1], (1, 2)], [[[0, 1], [1, 2]]])
    assert not taco_equal([[(0, 1)]], [[[[0, 1]]]]) and apps_equal([[(0, 1)]], [[[[0, 1]]]])
    assert not taco_equal(None, []) and not taco_equal({"1": 2}, [{1: 2}]) and taco_equal({1: 2}, [{1: 2}])


def test_livecodebench_comparisons_by_hand():
    assert stdio_matches("0.30\n", "0.3\n", "numeric-lines") and stdio_matches("1e1\n", "10\n", "numeric-lines")
    assert not stdio_matches("0.30000000000000004\n", "0.3\n", "numeric-lines")
    assert not stdio_matches("5\n\n6\n", "5\n6\n", "numeric-lines") and stdio_matches("\n5\n\n", "5", "numeric-lines")
    # a tuple is a list only at the top: values_equal makes every tuple a list
    assert lcb_equal((3,), [3]) and not lcb_equal([3], 3) and not lcb_equal(((0, 1),), [[0, 1]])
    assert values_equal(((0, 1),), [[0, 1]]) and not lcb_equal({1: 2}, {"1": 2}) and lcb_equal(True, 1)


@pytest.mark.slow  # the harnesses run in processes of their own
def test_taco_comparisons_are_taco_testing_utils(tmp_path):
    """Each (printed, expected) pair and each (returned, expected) pair: TACO's own execute_std_code (running the
    program that prints it) and execute_cb_code agree with the ports."""
    theirs = _harness(TACO_RUN, TACO_BUNDLE, {"kind": "std", "pairs": TACO_OUTPUTS}, tmp_path)
    ours = [taco_output_matches(p, e) for p, e in TACO_OUTPUTS]
    assert [x for x in zip(TACO_OUTPUTS, ours, theirs) if x[1] != x[2]] == []
    assert sum(ours) >= 10 and sum(not x for x in ours) >= 10  # both verdicts well exercised
    theirs = _harness(TACO_RUN, TACO_BUNDLE, {"kind": "call", "pairs": TACO_CALLS}, tmp_path)
    # the expected values as TACO rows hold them (JSON), int keys restored as the importer does (apps_int_keys)
    ours = [taco_equal(eval(v), apps_int_keys([], e)[1]) for v, e in TACO_CALLS]  # noqa: S307 - the test's own
    assert [x for x in zip(TACO_CALLS, ours, theirs) if x[1] != x[2]] == []


@pytest.mark.slow
def test_livecodebench_comparisons_are_lcb_runners(tmp_path):
    theirs = _harness(LCB_RUN, LCB_BUNDLE, {"kind": "std", "pairs": LCB_OUTPUTS}, tmp_path)
    ours = [stdio_matches(p, e, "numeric-lines") for p, e in LCB_OUTPUTS]
    assert [x for x in zip(LCB_OUTPUTS, ours, theirs) if x[1] != x[2]] == []
    theirs = _harness(LCB_RUN, LCB_BUNDLE, {"kind": "call", "pairs": LCB_CALLS}, tmp_path)
    ours = [lcb_equal(eval(v), json.loads(e)) for v, e in LCB_CALLS]  # noqa: S307 - the test's own literals
    assert [x for x in zip(LCB_CALLS, ours, theirs) if x[1] != x[2]] == []


ADD = "class Solution:\n    def add(self, a, b):\n        return a + b\n"
PAIRS = "def pairs(n):\n    return {}\n"
ALWAYS_EQUAL = (
    "class E:\n    def __eq__(self, other):\n        return True\n\n"
    "class Solution:\n    def {}(self, *a):\n        return E()\n"
)


def _taco_row(io):
    return {"question": "q", "input_output": json.dumps(io)}


TACO_SUM = {"inputs": ["2 3\n"], "outputs": ["5\n"]}
TACO_LINES = {"inputs": [""], "outputs": ["1\n2\n3\n"]}
TACO_FLOAT = {"inputs": [""], "outputs": ["0.3\n"]}
TACO_ADD = {"fn_name": "add", "inputs": [[1, 2]], "outputs": [[3]]}
TACO_PAIRS = {"fn_name": "pairs", "inputs": [[2]], "outputs": [[[[0, 1], [1, 2]]]]}
TACO_DICT = {"fn_name": "f", "inputs": [[1]], "outputs": [[{"1": 2}]]}
# (name, input_output, reply): TACO's harness gets the program grpo_wb's extraction takes from the reply
TACO_CASES = [(n, TACO_SUM, r) for n, r in REPLIES.items()] + [
    ("prose then raw code", TACO_SUM, f"Here it is:\n{SUM}"),
    ("blank lines before code", TACO_SUM, f"\n\n{SUM}"),
    ("leading spaces in output", TACO_SUM, "print('   5')\n"),
    (
        "main guard",
        TACO_SUM,
        "def main():\n    a, b = map(int, input().split())\n    print(a + b)\n\n"
        "if __name__ == '__main__':\n    main()\n",
    ),
    ("lines", TACO_LINES, "for i in range(1, 4):\n    print(i)\n"),
    ("digits without newlines", TACO_LINES, "import sys\nsys.stdout.write('123')\n"),
    ("lines reversed", TACO_LINES, "print(3)\nprint(2)\nprint(1)\n"),
    ("one line", TACO_LINES, "print(1, 2, 3)\n"),
    ("lines as floats", TACO_LINES, "print(1.0)\nprint(2.0)\nprint(3.0)\n"),
    ("float sum", TACO_FLOAT, "print(0.1 + 0.2)\n"),
    ("float exact", TACO_FLOAT, "print(0.3)\n"),
    ("float padded", TACO_FLOAT, "print('0.300')\n"),
    ("uses np from the header", TACO_FLOAT, "print(np.float64(0.3))\n"),
    ("Solution method", TACO_ADD, ADD),
    ("plain function", TACO_ADD, "def add(a, b):\n    return a + b\n"),
    ("tuple of one", TACO_ADD, "def add(a, b):\n    return (a + b,)\n"),
    ("wrong call", TACO_ADD, "def add(a, b):\n    return a - b\n"),
    ("fenced call", TACO_ADD, f"```python\n{ADD}```"),
    ("lists", TACO_PAIRS, PAIRS.format("[[0, 1], [1, 2]]")),
    ("tuples", TACO_PAIRS, PAIRS.format("((0, 1), (1, 2))")),
    ("second tuple", TACO_PAIRS, PAIRS.format("[[0, 1], (1, 2)]")),
    ("int-keyed dict", TACO_DICT, "def f(x):\n    return {1: 2}\n"),
    ("str-keyed dict", TACO_DICT, "def f(x):\n    return {'1': 2}\n"),
    ("AlwaysEqual", TACO_ADD, ALWAYS_EQUAL.format("add")),
    ("exit 1 after printing", TACO_SUM, SUM + "import sys\nsys.exit(1)\n"),
]
# the harness pays these and grpo_wb must not: the comparison runs in the harness's process, on the object the
# program returned, so its __eq__ decides; grpo_wb receives only builtin values (the object is refused)
TACO_FORGERIES = {"AlwaysEqual"}
# they differ here, and rules.py says so: TACO has numpy in its header, grpo_wb's sandbox imports it only where
# it is installed (its Python starts without site-packages), so a program using np fails here; TACO fails a
# program that exits non-zero whatever it printed, grpo_wb judges what it printed (as for open-r1)
TACO_NOT_COVERED = {"uses np from the header", "exit 1 after printing"}


@pytest.mark.sandbox
@pytest.mark.slow
def test_taco_rows_are_judged_as_tacos_testing_util_judges_them(tmp_path):
    tasks = {}
    for _name, io, _ in TACO_CASES:
        key = json.dumps(io, sort_keys=True)
        if key not in tasks:
            tasks[key] = task_from_parsed(parse_row("taco", _taco_row(io)), f"taco/{len(tasks)}", {})
    assert {trainer_rule(t, "trainer").name for t in tasks.values()} == {"taco"}
    judged = [tasks[json.dumps(io, sort_keys=True)] for _, io, _ in TACO_CASES]
    reqs = [ScoreRequest(t, reply, i) for i, (t, (_, _, reply)) in enumerate(zip(judged, TACO_CASES))]
    with Scorer(SandboxLimits(timeout=10.0), workers=1, cache=False) as sc:
        ours = list(sc.score(reqs))
    assert {r.judge for r in ours} == {"taco"}
    codes = [RULES["taco"].extract(reply, t).program for t, (_, _, reply) in zip(judged, TACO_CASES)]
    assert codes[list(REPLIES).index("prose")] is None  # no code: grpo_wb runs nothing (TACO would get nothing)
    theirs = [
        _harness(TACO_RUN, TACO_BUNDLE, {"kind": "run", "io": io, "code": code}, tmp_path) if code else False
        for (_, io, _), code in zip(TACO_CASES, codes)
    ]
    differ = {name: (r.status, t) for (name, _, _), r, t in zip(TACO_CASES, ours, theirs) if r.passed != t}
    assert set(differ) == TACO_FORGERIES | TACO_NOT_COVERED, differ
    assert all(theirs[i] and not ours[i].passed for i, c in enumerate(TACO_CASES) if c[0] in TACO_FORGERIES)
    paid = {c[0] for c, r in zip(TACO_CASES, ours) if r.passed}
    assert {
        "raw code",
        "fenced",
        "untagged fence",
        "extra blank lines in output",
        "digits without newlines",
        "lines reversed",
        "one line",
        "float exact",
        "tuples",
        "int-keyed dict",
    } <= paid
    # TACO's float steps never reach printed floats: no tolerance at all, where prime_code has 1e-5
    assert not {"float within tolerance", "float sum", "lines as floats", "second tuple", "str-keyed dict"} & paid


def _lcb_row(tests, starter="", fn=None):
    row = {"question_content": "q", "public_test_cases": tests, "starter_code": starter}
    if fn:
        row["metadata"] = {"func_name": fn}
    return row


def _std(i, o):
    return [{"input": i, "output": o, "testtype": "stdin"}]


def _fn(i, o):
    return [{"input": i, "output": o, "testtype": "functional"}]


LCB_SUM, LCB_FLOAT = _std("2 3\n", "5\n"), _std("", "0.3\n")
LCB_ADD, LCB_PAIRS, LCB_DICT = (
    ("add", _fn("1\n2", "3")),
    ("pairs", _fn("2", "[[0, 1], [1, 2]]")),
    ("f", _fn("1", '{"1": 2}')),
)
GRADER_PATCH = (
    "import sys\nfor m in list(sys.modules.values()):\n    if hasattr(m, 'get_stripped_lines'):\n"
    "        m.get_stripped_lines = lambda v: ['']\n"
)
# (name, tests, reply): LiveCodeBench takes the lines between the last two lines holding ```
LCB_CASES = [(n, LCB_SUM, r) for n, r in REPLIES.items()] + [
    (
        "main guard",
        LCB_SUM,
        "```python\ndef main():\n    a, b = map(int, input().split())\n    print(a + b)\n\n"
        "if __name__ == '__main__':\n    main()\n```",
    ),
    (
        "global",
        LCB_SUM,
        "```python\nn = 0\ndef go():\n    global n\n    a, b = map(int, input().split())\n"
        "    n = a + b\ngo()\nprint(n)\n```",
    ),
    ("grader patch", LCB_SUM, f"```python\n{GRADER_PATCH}```"),
    ("float sum", LCB_FLOAT, "```python\nprint(0.1 + 0.2)\n```"),
    ("float padded", LCB_FLOAT, "```python\nprint('0.30')\n```"),
    ("blank line inside output", LCB_SUM, "```python\nprint(5)\nprint()\nprint()\n```"),
    ("Solution method", LCB_ADD, f"```python\n{ADD}```"),
    ("raw Solution", LCB_ADD, ADD),
    ("plain function", LCB_ADD, "```python\ndef add(a, b):\n    return a + b\n```"),
    ("tuple of one", LCB_ADD, "```python\ndef add(a, b):\n    return (a + b,)\n```"),
    ("lists", LCB_PAIRS, f"```python\n{PAIRS.format('[[0, 1], [1, 2]]')}```"),
    ("tuples", LCB_PAIRS, f"```python\n{PAIRS.format('((0, 1), (1, 2))')}```"),
    ("str-keyed dict", LCB_DICT, "```python\ndef f(x):\n    return {'1': 2}\n```"),
    ("int-keyed dict", LCB_DICT, "```python\ndef f(x):\n    return {1: 2}\n```"),
    ("AlwaysEqual", LCB_ADD, f"```python\n{ALWAYS_EQUAL.format('add')}```"),
    ("exit 1 after printing", LCB_SUM, f"```python\n{SUM}import sys\nsys.exit(1)\n```"),
]
# the harness pays these and grpo_wb must not: LiveCodeBench runs the program in its own process, so the program
# can rewrite the grader (grader patch) or return an object whose __eq__ decides (AlwaysEqual); and a reply
# without a fenced block gives it no code at all, yet its import_string's `from operator import *` binds `add`,
# so the empty program "solves" a task whose function is called add (raw Solution); grpo_wb runs no empty program
LCB_FORGERIES = {"grader patch", "AlwaysEqual", "raw Solution"}
# grpo_wb pays these and LiveCodeBench does not: it wraps a stdin program's statements in a function, so a
# `global` name the program assigned at top level is no longer a global
LCB_NOT_COVERED = {"global"}


@pytest.mark.sandbox
@pytest.mark.slow
def test_livecodebench_rows_are_judged_as_lcb_runner_judges_them(tmp_path):
    tasks, ios = {}, {}
    for _name, tests, _ in LCB_CASES:
        fn, tests = tests if isinstance(tests, tuple) else (None, tests)
        key = json.dumps(tests)
        if key not in tasks:
            tasks[key] = task_from_parsed(parse_row("livecodebench", _lcb_row(tests, fn=fn)), f"lcb/{len(tasks)}", {})
            ios[key] = {
                "inputs": [t["input"] for t in tests],
                "outputs": [t["output"] for t in tests],
                **({"fn_name": fn} if fn else {}),
            }
    assert {trainer_rule(t, "trainer").name for t in tasks.values()} == {"livecodebench"}
    keys = [json.dumps(t[1] if isinstance(t, tuple) else t) for _, t, _ in LCB_CASES]
    reqs = [ScoreRequest(tasks[k], reply, i) for i, (k, (_, _, reply)) in enumerate(zip(keys, LCB_CASES))]
    with Scorer(SandboxLimits(timeout=10.0), workers=1, cache=False) as sc:
        ours = list(sc.score(reqs))
    assert {r.judge for r in ours} == {"livecodebench"}
    theirs = [
        _harness(LCB_RUN, LCB_BUNDLE, {"kind": "run", "io": ios[k], "reply": reply}, tmp_path)
        for k, (_, _, reply) in zip(keys, LCB_CASES)
    ]
    differ = {name: (r.status, t) for (name, _, _), r, t in zip(LCB_CASES, ours, theirs) if r.passed != t}
    assert set(differ) == LCB_FORGERIES | LCB_NOT_COVERED, differ
    assert all(theirs[i] and not ours[i].passed for i, c in enumerate(LCB_CASES) if c[0] in LCB_FORGERIES)
    paid = {c[0] for c, r in zip(LCB_CASES, ours) if r.passed}
    assert {"untagged fence", "think draft then answer", "float padded", "main guard", "lists"} <= paid
    assert (
        not {
            "raw code",
            "trailing output block",
            "float sum",
            "tuples",
            "tuple of one",
            "int-keyed dict",
            "raw Solution",
        }
        & paid
    )
