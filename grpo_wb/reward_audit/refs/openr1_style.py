"""A TRL reward function that judges the way huggingface/open-r1's ``code_reward`` does (src/open_r1/rewards.py
@1416fa0), run here on the local machine instead of an E2B sandbox.

For each completion: the code of its last ```python block (the whole text when there is none) is run once per
case of the row's ``verification_info["test_cases"]`` as ``python3 -c CODE`` with the case's input on stdin
(5 s each); a non-zero exit fails the case; otherwise stdout and the expected output are stripped, split on
newlines and compared *pairwise with zip*, each pair stripped. The reward is the fraction of cases passed. Like
open-r1's, it reads only stdin/stdout cases (a function-call case is run as a program and fails).
"""

import re
import shutil
import subprocess
import sys

_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _code(completion):
    text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
    blocks = _BLOCK.findall(text)
    return blocks[-1] if blocks else text


def _case_passes(code, case, python):
    try:
        proc = subprocess.run([python, "-c", code], input=case["input"], text=True, capture_output=True, timeout=5)
    except subprocess.TimeoutExpired:
        return False
    if proc.returncode != 0:
        return False
    got = proc.stdout.strip()
    return all(a.strip() == b.strip() for a, b in zip(got.split("\n"), str(case["output"]).split("\n")))


def code_reward(completions, verification_info, **kwargs):
    python = shutil.which("python3") or sys.executable
    rewards = []
    for completion, info in zip(completions, verification_info):
        cases = info["test_cases"]
        code = _code(completion)
        rewards.append(sum(_case_passes(code, c, python) for c in cases) / len(cases) if cases else 0.0)
    return rewards
