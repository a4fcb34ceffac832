"""The reward rules trainers train with, applied the safe way: which code a completion yields and how its output
is compared follow the trainer's reward function; the code still runs in grpo_wb's sandbox and every comparison
still happens in the scoring process, so nothing a completion returns or prints can fake a pass.

Why: headroom is only useful if it is the trainer's headroom. A stdin answer judged by grpo_wb's whole-output
rule and by verl's ``prime_code`` (which compares single-number lines with a tolerance and ignores blank lines)
can disagree, and so can the block each takes from a chat reply. An importer names the rule its format is trained
with (``metadata["trainer_reward"]``); :class:`~grpo_wb.scoring.rewards.RewardConfig` ``judge="trainer"`` (the
default) judges by it, ``judge="strict"`` by grpo_wb's own rule (:mod:`grpo_wb.scoring.extraction`, exact
lines). A row its trainer cannot reward at all names why in ``metadata["trainer_unrewardable"]``.

What each rule covers (read from the sources; each comparison is a port of the trainer's own code, checked
against the bundled module or a transcription of it in ``tests/test_trainer_rules.py``):

* ``prime_code`` -- verl's ``default_compute_score`` for data sources ``codecontests``, ``apps``, ``codeforces``,
  ``taco`` (``verl/utils/reward_score/prime_code``, bundled in data/external/reward_harnesses/verl-0.9.1): the
  code is the text after the last ```` ```python ```` (the whole completion without one), run after its own
  imports; stdout is compared by its cascade (:func:`~grpo_wb.scoring.verdicts.prime_code_output_matches`).
  Not covered: its per-case second pass for partial credit (it re-runs call-based rows as stdin programs and
  counts only the first 10 cases); the binary verdict is the same.
* ``open-r1`` -- huggingface/open-r1 ``code_reward`` (``src/open_r1/rewards.py``): the code is the last
  ```` ```python\\n ```` block (nothing without one), stdout compared line by line after ``strip`` and cut to the
  shorter of the two (``zip``): a first line alone passes. Not covered: its non-zero-exit rule for a program that
  calls ``sys.exit(1)`` after printing (grpo_wb judges what it printed).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Callable

from grpo_wb.scoring.extraction import Extraction
from grpo_wb.scoring.rewards import Judge
from grpo_wb.tasks.records import Task

PRIME_CODE_PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\nfrom heapq import *\n"
    "from bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\nfrom statistics import *\n"
    "from itertools import *\nfrom functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\nimport datetime\n"
    "import collections\nimport heapq\nimport bisect\nimport copy\nimport math\nimport random\nimport statistics\n"
    "import itertools\nimport functools\nimport operator\nimport io\nimport sys\nimport json\n"
    "sys.setrecursionlimit(6*10**5)\n")
"""What prime_code's ``run_test`` puts before every program (``sol``), verbatim."""

_OPEN_R1_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _prime_code(completion: str) -> str:
    return completion.split("```python")[-1].split("```")[0]


def _open_r1(completion: str) -> str:
    blocks = _OPEN_R1_BLOCK.findall(completion)
    return blocks[-1] if blocks else ""


@dataclass(frozen=True)
class TrainerRule:
    """One trainer's reward rule: the code it takes from a completion, what it runs before it, how it compares."""

    name: str
    """The name importers write in ``metadata["trainer_reward"]``."""
    trainer: str
    """Who trains with it."""
    takes: str
    """Which code it takes from a completion, in words (recorded as the extraction's rule)."""
    code: Callable[[str], str]
    """The code it takes, exactly."""
    prelude: str | None
    """What runs before the code (None: the task's own)."""
    output_match: str
    """How stdout is compared (:data:`grpo_wb.tasks.records.OUTPUT_MATCHES`)."""

    def extract(self, completion: str) -> Extraction:
        """The program this rule runs, taken from the reply exactly as the trainer's function gets it (reasoning
        traces included: neither strips them), or a parse failure when it takes no code at all."""
        text = completion if isinstance(completion, str) else ""
        code = self.code(text)
        rule = f"{self.name}: {self.takes}"
        if not code.strip():
            return Extraction(None, "none", f"{self.name} takes no code from this reply ({self.takes})", rule=rule)
        return Extraction(code, "full_function", rule=rule, n_blocks=text.count("```python"))


RULES: dict[str, TrainerRule] = {r.name: r for r in (
    TrainerRule("prime_code", "verl (default_compute_score: codecontests, apps, codeforces, taco)",
                "the text after the last ```python, the whole reply without one", _prime_code,
                PRIME_CODE_PRELUDE, "prime_code"),
    TrainerRule("open-r1", "TRL with open-r1's code_reward", "the last ```python block, nothing without one",
                _open_r1, None, "open-r1"),
)}


def trainer_rule(task: Task, judge: Judge) -> TrainerRule | None:
    """The rule that judges ``task``: the trainer's, when ``judge`` asks for it and the task names a known one."""
    if judge != "trainer" or task.metadata.get("trainer_unrewardable"):
        return None
    return RULES.get(str(task.metadata.get("trainer_reward")))


def judged_task(task: Task, rule: TrainerRule | None) -> Task:
    """The task as ``rule`` judges it: its prelude and its output comparison (the task itself without a rule)."""
    if rule is None:
        return task
    return dataclasses.replace(task, prelude=task.prelude if rule.prelude is None else rule.prelude,
                               output_match=rule.output_match)


def unrewardable(task: Task, judge: Judge) -> str:
    """Why the task's trainer cannot reward it at all (its reward is 0 whatever the answer), when judging for the
    trainer; empty otherwise. Such a task teaches nothing under that trainer: reports give it a category of its
    own instead of calling it easy or hard."""
    return str(task.metadata.get("trainer_unrewardable") or "") if judge == "trainer" else ""
