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
  ``taco`` (``verl/utils/reward_score/prime_code``, bundled in grpo_wb/data/reward_harnesses/verl-0.9.1): the
  code is the text after the last ```` ```python ```` (the whole completion without one), run after its own
  imports; stdout is compared by its cascade (:func:`~grpo_wb.scoring.verdicts.prime_code_output_matches`).
  Not covered: its per-case second pass for partial credit (it re-runs call-based rows as stdin programs and
  counts only the first 10 cases); the binary verdict is the same.
* ``open-r1`` -- huggingface/open-r1 ``code_reward`` (``src/open_r1/rewards.py``): the code is the last
  ```` ```python\\n ```` block (nothing without one), stdout compared line by line after ``strip`` and cut to the
  shorter of the two (``zip``): a first line alone passes. Not covered: its non-zero-exit rule for a program that
  calls ``sys.exit(1)`` after printing (grpo_wb judges what it printed).
* ``open-r1-codeforces`` -- open-r1's ``cf_code_reward`` (``src/open_r1/utils/competitive_programming/
  cf_scoring.py`` at 1416fa0, guipenedo/piston ``packages/codeforces/1.0.0/run`` at 7a38da2), for open-r1/codeforces
  rows: the last ```` ```python ```` block (```` ```cpp ```` for a C++ task: ``extract_code(completion, language)``),
  no prelude (Piston runs the program as it is), the problem's checker when it has one (``checker.py INPUT
  CORRECT_OUTPUT SOLUTION_OUTPUT``, stdout ``1`` or ``100``), else blank lines dropped, whole-word yes/no
  upper-cased, whitespace collapsed (:func:`~grpo_wb.scoring.verdicts.codeforces_output_matches`); the problem's
  time and memory limits per test. Not covered: its ``weighted_sum`` (pass-all plus a tenth of the passed fraction;
  the binary verdict is its pass-all), the −0.1 of a compile error (here ``error``, reward 0), tests beyond the
  official ones unless imported, and ``INPUT_MODE=file`` problems (noted at import).
* ``taco`` -- FlagOpen/TACO ``metrics/testing_util.py`` at 2ba6235 (``run_test``; bundled in
  grpo_wb/data/reward_harnesses/taco-2ba6235), for ``taco`` and ``apps-rows`` rows. Its harness takes code, not
  replies: TACO's eval (``generation.py``) prompts base models with ``ANSWER:`` and hands over the generation cut
  at ``\nQUESTION``, ``\n---``, ``\nANSWER`` or ``<|endoftext|>``, markers of that prompt, so a fenced chat reply
  would be a syntax error. The code is therefore what grpo_wb's own extraction takes (the same as
  ``judge="strict"``), and the rule is TACO's from there on. Prelude: its ``normal_import_lines`` plus
  ``stdin``/``stdout`` (:data:`TACO_PRELUDE`). Stdout: its ``compare_std_results`` cascade as it runs on real
  stdout, a string (:func:`~grpo_wb.scoring.verdicts.taco_output_matches`): trimmed equality, then a float step
  that reads stdout character by character and set steps on the characters of stdout tokens -- so
  ``0.30000000000000004`` fails against ``0.3`` (no tolerance reaches a printed float) while ``123`` passes
  against the lines ``1 2 3`` and single-digit lines pass in any order. Calls: ``result == out`` or ``== out[0]``,
  a tuple result a list, a first-element tuple making every element a list
  (:func:`~grpo_wb.scoring.verdicts.taco_equal`; stricter than ``apps_equal`` on deeper tuples; int keys as
  ``process_input_output`` restores them, done at import). Not covered: ``import numpy as np`` of its header
  runs only where numpy is importable (the sandbox's Python has no site-packages: a program that uses ``np``
  without importing it fails here, passes there); the header goes before the program here, after the program's
  leading import lines there (different only for ``from __future__`` lines or names the header rebinds); a
  program that exits non-zero fails there whatever it printed, here it is judged on what it printed; its
  fall-backs for a failing program (stdin from a file, ``input.txt``/``output.txt``, the program re-run wrapped
  in ``def code()``). TACO pays what grpo_wb does not (checked): a call result whose ``__eq__`` says yes (it
  compares in its own process).
* ``livecodebench`` -- LiveCodeBench ``lcb_runner`` at 28fef95 (``evaluation/testing_util.py``,
  ``utils/extraction_utils.py``; bundled in reward_harnesses/livecodebench-28fef95), for ``livecodebench`` rows.
  The code: ``extract_code`` for chat model styles, the lines between the last two lines holding a fence (```)
  (nothing with fewer than two: raw code is not taken; a trailing output block is what it takes). Prelude: its
  ``import_string`` (:data:`LIVECODEBENCH_PRELUDE`). Stdout: stripped, split into lines, stripped, same count,
  each line equal as text or its tokens equal as ``Decimal`` (``numeric-lines``). Calls: a tuple result a list,
  then ``==`` with the JSON-decoded output (:func:`~grpo_wb.scoring.verdicts.lcb_equal`; inner tuples stay
  tuples, int keys are not JSON's string keys). Not covered: it runs a stdin program inside a function
  (``make_function``), so top-level names a ``global`` statement assigns fail there, pass here, and a
  ``__name__ == '__main__'`` guard that is not the last statement never runs there; ``exit()`` inside it ends
  the program quietly in both; the LeetCode prompt styles (``CodeLLaMaInstruct``'s ``[PYTHON]`` tags,
  ``GenericBase``'s whole output); its first-failure stop (the binary verdict is the same). The harness pays what
  grpo_wb does not (checked): a program that rewrites its grader in the same process, an object whose ``__eq__``
  says yes, and -- its prelude's ``from operator import *`` binding ``add`` -- a reply without code for a task
  whose function is ``add``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from grpo_wb.scoring.extraction import Extraction, extract_answer
from grpo_wb.scoring.rewards import Judge
from grpo_wb.tasks.records import Task, TestCase

PRIME_CODE_PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\nfrom heapq import *\n"
    "from bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\nfrom statistics import *\n"
    "from itertools import *\nfrom functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\nimport datetime\n"
    "import collections\nimport heapq\nimport bisect\nimport copy\nimport math\nimport random\nimport statistics\n"
    "import itertools\nimport functools\nimport operator\nimport io\nimport sys\nimport json\n"
    "sys.setrecursionlimit(6*10**5)\n"
)
"""What prime_code's ``run_test`` puts before every program (``sol``), verbatim."""

TACO_PRELUDE = (
    "import sys\nimport time\nimport itertools\nfrom itertools import accumulate, product, permutations, combinations\n"
    "import collections\nfrom collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\nimport math\nfrom math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, "
    "log, log2\nimport fractions\nfrom typing import List, Tuple\n"
    "try:\n    import numpy as np\nexcept ImportError:\n    pass\n"
    "import random\nimport heapq\nfrom heapq import *\n"
    "\nstdin = sys.stdin\nstdout = sys.stdout\n"
)
"""What TACO's ``synthesize_std_code`` puts before a stdin program (its ``normal_import_lines``, then ``stdin`` and
``stdout``), verbatim but for ``import numpy as np``, which runs only where numpy is importable (grpo_wb's
sandbox starts Python without site-packages). Its call-based header is the same without the last two names."""

LIVECODEBENCH_PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\nfrom heapq import *\n"
    "from bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\nfrom statistics import *\n"
    "from itertools import *\nfrom functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\nimport datetime\n"
    "import collections\nimport heapq\nimport bisect\nimport copy\nimport math\nimport random\nimport statistics\n"
    "import itertools\nimport functools\nimport operator\nimport io\nimport sys\nimport json\n"
    "sys.setrecursionlimit(50000)\n"
)
"""LiveCodeBench's ``import_string`` (``lcb_runner/evaluation/testing_util.py``), verbatim: put before every
program, stdin and call-based alike."""

_OPEN_R1_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_OPEN_R1_CPP_BLOCK = re.compile(r"```cpp\n(.*?)```", re.DOTALL)


def _livecodebench(completion: str) -> str:
    """LiveCodeBench's ``extract_code`` for chat styles: the lines between the last two lines holding a fence."""
    lines = completion.split("\n")
    fences = [i for i, line in enumerate(lines) if "```" in line]
    if len(fences) < 2:
        return ""
    return "\n".join(lines[fences[-2] + 1 : fences[-1]])


def _prime_code(completion: str) -> str:
    return completion.split("```python")[-1].split("```")[0]


def _open_r1(completion: str) -> str:
    blocks = _OPEN_R1_BLOCK.findall(completion)
    return blocks[-1] if blocks else ""


def _open_r1_cpp(completion: str) -> str:
    """open-r1's ``extract_code(completion, "cpp")``: the last ```` ```cpp ```` block."""
    blocks = _OPEN_R1_CPP_BLOCK.findall(completion)
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
    code: Callable[[str], str] | None
    """The code it takes, exactly (None: the trainer's harness gets code, not replies; grpo_wb's own extraction,
    :func:`~grpo_wb.scoring.extraction.extract_program`, takes it)."""
    prelude: str | None
    """What runs before the code (None: the task's own)."""
    output_match: str
    """How stdout is compared (:data:`grpo_wb.formats.schema.OutputMatch`)."""
    call_compare: str | None = None
    """How a call-based result is compared (a function of :mod:`grpo_wb.scoring.verdicts`; None: the task's own)."""
    cpp_code: Callable[[str], str] | None = None
    """The code it takes from a reply to a C++ task (None: it judges Python only, and C++ tasks get grpo_wb's)."""

    def extract(self, completion: str, task: Task | None = None) -> Extraction:
        """The program this rule runs, taken from the reply exactly as the trainer's function gets it (reasoning
        traces included: neither strips them), or a parse failure when it takes no code at all. A rule without
        ``code`` takes what grpo_wb's own extraction takes for ``task``."""
        if self.code is None:
            if task is None:
                raise ValueError(f"the {self.name} rule extracts with grpo_wb's rule, which needs the task")
            ext = extract_answer(task.prompt, task.entry_point, completion, task.language)
            return dataclasses.replace(ext, rule=f"{self.name}: {ext.rule}")
        text = completion if isinstance(completion, str) else ""
        cpp = task is not None and task.language == "cpp"
        code = (self.cpp_code if cpp and self.cpp_code else self.code)(text)
        fence = "```cpp" if cpp else "```python"
        takes = self.takes.replace("```python", fence)
        rule = f"{self.name}: {takes}"
        if not code.strip():
            return Extraction(None, "none", f"{self.name} takes no code from this reply ({takes})", rule=rule)
        return Extraction(code, "full_function", rule=rule, n_blocks=text.count(fence))


RULES: dict[str, TrainerRule] = {
    r.name: r
    for r in (
        TrainerRule(
            "prime_code",
            "verl (default_compute_score: codecontests, apps, codeforces, taco)",
            "the text after the last ```python, the whole reply without one",
            _prime_code,
            PRIME_CODE_PRELUDE,
            "prime_code",
        ),
        TrainerRule(
            "open-r1",
            "TRL with open-r1's code_reward",
            "the last ```python block, nothing without one",
            _open_r1,
            None,
            "open-r1",
            cpp_code=_open_r1_cpp,
        ),
        TrainerRule(
            "open-r1-codeforces",
            "TRL with open-r1's cf_code_reward (Piston's codeforces package)",
            "the last ```python block, nothing without one",
            _open_r1,
            "",
            "codeforces",
            cpp_code=_open_r1_cpp,
        ),
        TrainerRule(
            "taco",
            "FlagOpen/TACO metrics/testing_util.py (2ba6235)",
            "TACO's harness takes code, not replies: grpo_wb's extraction",
            None,
            TACO_PRELUDE,
            "taco",
            "taco_equal",
        ),
        TrainerRule(
            "livecodebench",
            "LiveCodeBench lcb_runner (testing_util.py, extract_code)",
            "the lines between the last two lines holding ```, nothing with fewer than two",
            _livecodebench,
            LIVECODEBENCH_PRELUDE,
            "numeric-lines",
            "lcb_equal",
        ),
    )
}

_CALL_COMPARES = ("apps_equal", "values_equal")


def trainer_rule(task: Task, judge: Judge) -> TrainerRule | None:
    """The rule that judges ``task``: the trainer's, when ``judge`` asks for it and the task names a known one."""
    if judge != "trainer" or task.metadata.get("trainer_unrewardable"):
        return None
    rule = RULES.get(str(task.metadata.get("trainer_reward")))
    if rule is not None and task.language == "cpp" and rule.cpp_code is None:
        return None  # a trainer whose rule runs Python only: grpo_wb's C++ judgement
    return rule


def judged_task(task: Task, rule: TrainerRule | None) -> Task:
    """The task as ``rule`` judges it: its prelude and its output comparison (the task itself without a rule)."""
    if rule is None:
        return task
    tests = task.tests
    if rule.call_compare:
        tests = tuple(_compared_by(t, rule.call_compare) for t in tests)
    return dataclasses.replace(
        task,
        prelude=task.prelude if rule.prelude is None else rule.prelude,
        output_match=rule.output_match,
        tests=tests,
    )


def _compared_by(test: TestCase, compare: str) -> TestCase:
    """A call-based test (``assert apps_equal(candidate(...), EXPECTED)``, as importers write them) compared by
    ``compare`` instead; any other test as it is."""
    for name in _CALL_COMPARES:
        head = f"assert {name}(candidate("
        if test.code.startswith(head):
            return dataclasses.replace(test, code=f"assert {compare}(candidate(" + test.code[len(head) :])
    return test


def unrewardable(task: Task, judge: Judge) -> str:
    """Why the task's trainer cannot reward it at all (its reward is 0 whatever the answer), when judging for the
    trainer; empty otherwise. Such a task teaches nothing under that trainer: reports give it a category of its
    own instead of calling it easy or hard."""
    return str(task.metadata.get("trainer_unrewardable") or "") if judge == "trainer" else ""
