"""The trainer's reward rule, run safely: grpo_wb judges a row as its trainer's reward function does.

Parity is checked against the trainers' own code: verl's ``prime_code`` (bundled, unchanged, in
data/external/reward_harnesses/verl-0.9.1) and the open-r1 ``code_reward`` transcription the audit ships
(grpo_wb/audit/refs/openr1_style.py). Each is run here on trusted programs only.
"""
from __future__ import annotations

import json
import shutil
import sys

import pytest

from grpo_wb.audit.refs import openr1_style
from grpo_wb.cli.main import main
from grpo_wb.audit.refs.verl_prime_code import prime_code
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.rules import RULES, trainer_rule
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.scoring.verdicts import open_r1_output_matches, prime_code_output_matches
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowformats import parse_row, task_from_parsed

# (what the program prints, the expected output): the cases where the rules differ from an exact comparison
OUTPUTS = [
    ("3\n", "3\n"), ("3.000001\n", "3\n"), ("3.01\n", "3\n"), ("0 3\n", "3 0\n"), ("a  \n\nb\n", "a\nb\n"),
    ("  5\n", "5"), ("", ""), ("nan\n", "nan\n"), ("1e-7\n", "0\n"), ("1.0\n2.0\n", "1\n2\n"),
    ("-3\n", "-3.0000001\n"), ("Yes\n", "YES\n"), ("x\n", "x\n\n\n"), ("12\n", "012\n"), ("1 2\n", "1  2\n"),
    ("1\n2\n", "1\n"), ("1\n", "1\n2\n"), ("inf\n", "inf\n"), ("3\n4\n", "3\n4.00001\n"), ("\n\n7\n", "7\n"),
    ("1\r\n2\r\n", "1\n2\n"), ("5 \n", " 5\n"), ("2.5\n", "2.50000001\n"), ("abc\n", "abc \n"),
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
        theirs = _prime_code_passes(f"```python\n{_printer(printed)}```",
                                    json.dumps({"inputs": [""], "outputs": [expected]}))
        assert prime_code_output_matches(printed, expected) == theirs, (printed, expected, theirs)


@pytest.mark.slow  # python3 -c per case
def test_open_r1s_output_comparison_is_its_code_rewards():
    python = shutil.which("python3") or sys.executable
    for printed, expected in OUTPUTS:
        theirs = openr1_style._case_passes(_printer(printed), {"input": "", "output": expected}, python)
        assert open_r1_output_matches(printed, expected) == theirs, (printed, expected, theirs)


def _verl(data_source="taco", gt=None, prompt="Read a and b; print a+b."):
    row = {"data_source": data_source, "prompt": [{"role": "user", "content": prompt}],
           "reward_model": {"style": "rule", "ground_truth": json.dumps(gt or {"inputs": ["2 3\n"], "outputs":
                                                                               ["5\n"]})}}
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
    assert differ == {"untagged fence", "trailing output block", "float within tolerance",
                      "extra blank lines in output"}, differ


@pytest.mark.sandbox
def test_open_r1_rows_are_judged_as_code_reward_judges_them():
    row = {"problem_id": "p1", "prompt": "Read a and b; print a+b.",
           "verification_info": {"language": "python", "test_cases": [
               {"input": "2 3\n", "output": "5\n7\n", "type": "stdin_stdout"}]}}
    task = task_from_parsed(parse_row("open-r1", row), "open-r1/p1", {})
    assert task.metadata["trainer_reward"] == "open-r1"
    replies = [f"```python\n{SUM}```", SUM, "```python\nprint(5)\nprint(8)\n```"]
    with Scorer(SandboxLimits(timeout=10.0), workers=1, cache=False) as sc:
        got = [(r.judge, r.status) for r in sc.score([ScoreRequest(task, c, i) for i, c in enumerate(replies)])]
    python = shutil.which("python3") or sys.executable
    theirs = [openr1_style._case_passes(openr1_style._BLOCK.findall(c)[-1] if "```python\n" in c else "",
                                        row["verification_info"]["test_cases"][0], python) for c in replies]
    # zip cuts the comparison to stdout's one line: "5" passes against "5\n7"; raw code is not taken at all
    assert theirs == [True, False, False]
    assert got == [("open-r1", "pass"), ("open-r1", "parse_failure"), ("open-r1", "fail")]


@pytest.mark.parametrize("row, why", [
    ({"data_source": "my_code_set"}, "not routed to a code scorer"),
    ({"gt": {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]}}, "list inputs"),
])
def test_rows_the_trainer_cannot_reward_are_named(row, why):
    _, task = _verl(data_source=row.get("data_source", "apps"), gt=row.get("gt"))
    assert why in task.metadata["trainer_unrewardable"]
    assert trainer_rule(task, "trainer") is None  # judged by grpo_wb's rule, and said so in the task
    fn_call = {"problem_id": "p", "prompt": "f", "verification_info": {"language": "python", "test_cases": [
        {"input": "1", "output": "2", "type": "function_call", "fn_name": "f"}]}}
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
    samples.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t in ids
                               for c in [f"```python\n{SUM}```", "```python\nprint(4)\n```"] * 2))
    scored = tmp_path / "r.jsonl"
    assert main(["score", "--tasks", str(tasks_file), "--completions", str(samples), "--out", str(scored),
                 "--no-progress"]) == 0
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
    assert main(["filter", str(scored), "--band", "0.1", "0.9", "--tasks", str(tasks_file), "--out", str(kept),
                 "--format", "jsonl"]) == 0
    out = capsys.readouterr().out
    assert "the trainer cannot reward it" in out
    (row,) = [json.loads(x) for x in kept.read_text().splitlines()]
    assert row["grpo_wb_trainer_reward"] == "supported"
