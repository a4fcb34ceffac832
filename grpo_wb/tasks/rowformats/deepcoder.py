"""``deepcoder``: agentica-org/DeepCoder-Preview-Dataset as agentica-project/rllm 874daa4 built it
(``rllm/data/preprocess/code/*.ipynb``): ``problem``, ``tests`` (TACO's dict, PrimeIntellect's or LiveCodeBench's
case list, or Codeforces' [{input, output}]), ``starter_code``/``metadata`` (lcbv5), ``solutions``; ``--recipe
rllm`` runs the tests rllm's ``code_reward.py`` runs (15 at most).

Writer: :func:`grpo_wb.tasks.rowexport._deepcoder_row`. Trainer's reward: rllm's, by subset: TACO's
(``grpo_wb.scoring.rules.RULES["taco"]``) or LiveCodeBench's (``RULES["livecodebench"]``).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE
from grpo_wb.tasks.rowformats.common import (
    Cases,
    ParsedRow,
    RowError,
    _json_field,
    _need,
    _references,
    _solution_list,
    _text,
    _with_cap_note,
    io_cases,
)
from grpo_wb.tasks.rowformats.livecodebench import lcb_cases, lcb_prompt
from grpo_wb.tasks.rowformats.open_r1 import primeintellect_cases

#: ``--recipe`` values: a trainer's own way with a format's rows, opt-in (``RECIPES[fmt]``)
RECIPES = {"deepcoder": ("rllm",)}

#: rllm's cap: ``check_correctness(..., max_tests=15)`` (agentica-project/rllm 874daa4 rllm/rewards/code_reward.py)
RLLM_MAX_TESTS = 15

#: the DeepCoder subsets rllm 874daa4 runs through ``check_correctness`` (lcbv5 rows go to its LiveCodeBench
#: grader, which runs every test)
RLLM_CAPPED = ("taco", "primeintellect", "codeforces")


def deepcoder_subset(tests: Any) -> str:
    """Which DeepCoder-Preview subset a decoded ``tests`` value comes from, by its shape (the rows do not say):
    a dict is ``taco``; a list whose cases carry ``testtype`` is ``lcbv5``, ``type`` ``primeintellect``, neither
    ``codeforces``."""
    if isinstance(tests, dict):
        return "taco"
    if any(isinstance(t, dict) and "testtype" in t for t in tests):
        return "lcbv5"
    if any(isinstance(t, dict) and "type" in t for t in tests):
        return "primeintellect"
    return "codeforces"


def rllm_selection(tests: Any) -> tuple[Any, int]:
    """rllm 874daa4 ``check_correctness``: over 15 tests, the 15 with the longest inputs (``len`` of the raw input,
    longest first, ties in order), and from a dict only ``inputs`` and ``outputs`` (it drops ``fn_name``). Returns
    the tests it runs and how many it left out."""
    if isinstance(tests, dict):
        ins, outs = tests.get("inputs") or [], tests.get("outputs") or []
        if len(ins) != len(outs):  # checked before choosing, or the choice would hide it
            raise RowError(f"tests has {len(ins)} inputs but {len(outs)} outputs")
        if len(ins) <= RLLM_MAX_TESTS:
            return tests, 0
        keep = sorted(range(len(ins)), key=lambda i: len(ins[i]), reverse=True)[:RLLM_MAX_TESTS]
        return {"inputs": [ins[i] for i in keep], "outputs": [outs[i] for i in keep]}, len(ins) - len(keep)
    if len(tests) <= RLLM_MAX_TESTS:
        return tests, 0
    keep = sorted(range(len(tests)), key=lambda i: len(tests[i]["input"]), reverse=True)[:RLLM_MAX_TESTS]
    return [tests[i] for i in keep], len(tests) - len(keep)


def parse_deepcoder(row: dict[str, Any], recipe: str | None = None) -> ParsedRow:
    """agentica-org/DeepCoder-Preview-Dataset (subsets primeintellect, taco, lcbv5, codeforces; built by
    agentica-project/rllm 874daa4 ``rllm/data/preprocess/code/*.ipynb``): ``problem``, ``tests`` (a JSON string or
    the decoded value), ``starter_code`` and ``metadata`` (lcbv5), ``solutions``. Each subset's tests are read as
    grpo_wb reads their source (TACO rows, PrimeIntellect's cases, LiveCodeBench rows) and judged by the same
    trainer rule; ``recipe="rllm"`` runs the tests rllm 874daa4 runs (:func:`rllm_selection`)."""
    if recipe not in (None, *RECIPES["deepcoder"]):
        raise ValueError(f"unknown deepcoder recipe {recipe!r}")
    _need(row, "problem", "tests")
    tests = _json_field(row["tests"], "tests")
    if isinstance(tests, list):
        if not tests:
            raise RowError("tests is an empty list")
        if not all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
            raise RowError("tests must be a list of {input, output} or a dict {inputs, outputs}")
    elif not isinstance(tests, dict):
        raise RowError(
            f"tests must be a list of {{input, output}} or a dict {{inputs, outputs}}, got {type(tests).__name__}"
        )
    subset = deepcoder_subset(tests)
    notes: list[str] = []
    unrewardable = None
    dropped = 0
    if recipe == "rllm" and subset in RLLM_CAPPED:
        fn_before = isinstance(tests, dict) and tests.get("fn_name")
        tests, dropped = rllm_selection(tests)
        if dropped:
            notes.append(
                f"over {RLLM_MAX_TESTS} tests: rllm's {RLLM_MAX_TESTS} with the longest inputs kept (--recipe rllm)"
            )
        if dropped and fn_before:
            tests = {**tests, "fn_name": fn_before}
            unrewardable = (
                f"call-based with over {RLLM_MAX_TESTS} tests: rllm's selection drops fn_name "
                "(874daa4 check_correctness), so its TACO runner runs them as stdin programs"
            )
    problem = str(row["problem"])
    starter = row.get("starter_code") or ""
    trainer: str | None  # None: no trainer runs these rows
    match, compare, prelude, trainer = "lines", "apps_equal", APPS_PRELUDE, "taco"
    if subset == "taco":
        cases = io_cases(tests, name="tests")
    elif subset == "primeintellect":
        cases = primeintellect_cases(tests)
        if cases.kind == "assert":
            trainer = None
            unrewardable = (
                "function_call cases, which rllm cannot run: 874daa4 hands the input text to its TACO "
                "runner, which spreads it into one argument per character"
            )
    elif subset == "lcbv5":
        meta = row.get("metadata")
        meta = _json_field(meta, "metadata") if meta not in (None, "") else {}
        cases, match, compare = lcb_cases(tests, meta)
        problem, prelude, trainer = lcb_prompt(problem, starter), "", "livecodebench"
    else:
        cases = Cases(
            "stdio",
            [_text(t["input"], "test input") for t in tests],
            [_text(t["output"], "test output") for t in tests],
        )
    if unrewardable:
        notes.append(unrewardable)
    refs = _references(_solution_list(row.get("solutions")))
    return ParsedRow(
        prompt=problem,
        cases=cases,
        starter_code=starter,
        **refs,
        output_match=match,
        call_compare=compare,
        prelude=prelude,
        extra={
            "subset": subset,
            "trainer_reward": trainer,
            "trainer_unrewardable": unrewardable,
            "import_recipe": recipe,
            "tests_dropped_by_recipe": dropped or None,
        },
        notes=_with_cap_note(tuple(notes), refs),
    )
