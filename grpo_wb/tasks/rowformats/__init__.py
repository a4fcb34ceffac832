"""The row schemas code-RL datasets are trained from, read into canonical tasks: one module per dataset family.

Each format reads one row into a :class:`ParsedRow`: the prompt and the tests in a harness-neutral form
(stdin/stdout cases, call cases with argument lists, assert statements, or a pytest module).
:func:`task_from_parsed` makes it a :class:`~grpo_wb.tasks.records.Task`; the exporters
(:mod:`grpo_wb.tasks.rowexport`) write a ``ParsedRow`` back in another trainer's schema. Each family's module names
its sources (see also ``docs/datasets.md``), its writer and its trainer's reward:

* :mod:`.verl` (``verl``), :mod:`.open_r1` (``open-r1``: verifiable-coding-problems and open-r1/codeforces),
  :mod:`.taco` (``taco`` and ``apps-rows``), :mod:`.code_contests` (``code-contests``),
  :mod:`.code_contests_plus` (``code-contests-plus``), :mod:`.hardtests` (``hardtests``), :mod:`.klear`
  (``klear``), :mod:`.livecodebench` (``livecodebench``), :mod:`.kodcode` (``kodcode``; its pytest modules run
  through :mod:`.kodcode_pytest`), :mod:`.deepcoder` (``deepcoder``), :mod:`.acecode` (``acecode``),
  :mod:`.nemo_gym` (``nemo-gym``), :mod:`.mapped` (``rows``: any row file, with ``--map`` naming the columns);
* :mod:`.common`: :class:`RowError`, :class:`Cases`, :class:`ParsedRow` and the helpers the formats share;
  :mod:`.limits`: time and memory limits as the datasets write them;
* :mod:`.dispatch`: the formats by name (:data:`FORMATS`, :func:`parse_row`), :func:`task_from_parsed` and the
  import (:func:`iter_row_tasks`, :func:`import_rows`, :class:`RowImportSummary`);
* ``programs/``: what the KodCode pytest emulation sends to the sandbox, kept as ``.py`` files
  (:mod:`grpo_wb.tasks.sandbox_programs`).

Rows that ship several programs keep them all (distinct, in order, at most ``MAX_SOLUTIONS`` per list; rows over
the cap are noted and the programs left out counted in :attr:`RowImportSummary.solutions_dropped`).

Pickled test cases are decoded by an unpickler that refuses every global, so a hostile file cannot run code here
(LiveCodeBench's own loader would).
"""

from __future__ import annotations

from grpo_wb.tasks.rowformats.acecode import parse_acecode
from grpo_wb.tasks.rowformats.code_contests import parse_code_contests
from grpo_wb.tasks.rowformats.code_contests_plus import parse_code_contests_plus
from grpo_wb.tasks.rowformats.common import (
    CAPPED_NOTE,
    TEST_SETS,
    Cases,
    ParsedRow,
    RowError,
    decode_compressed_json,
    io_cases,
    select_test_set,
)
from grpo_wb.tasks.rowformats.deepcoder import (
    RECIPES,
    RLLM_CAPPED,
    RLLM_MAX_TESTS,
    deepcoder_subset,
    parse_deepcoder,
    rllm_selection,
)
from grpo_wb.tasks.rowformats.dispatch import (
    FORMATS,
    LANGUAGE_FORMATS,
    PARSERS,
    SCHEMA_FORMATS,
    RowImportSummary,
    import_rows,
    iter_row_tasks,
    parse_row,
    source_metadata,
    task_from_parsed,
)
from grpo_wb.tasks.rowformats.hardtests import parse_hardtests
from grpo_wb.tasks.rowformats.klear import parse_klear, program_language
from grpo_wb.tasks.rowformats.kodcode import parse_kodcode
from grpo_wb.tasks.rowformats.limits import parse_limit
from grpo_wb.tasks.rowformats.livecodebench import lcb_cases, lcb_prompt, parse_livecodebench
from grpo_wb.tasks.rowformats.mapped import MAP_FIELDS, parse_mapped, parse_mapping
from grpo_wb.tasks.rowformats.nemo_gym import parse_nemo_gym
from grpo_wb.tasks.rowformats.open_r1 import parse_open_r1, primeintellect_cases, row_language
from grpo_wb.tasks.rowformats.taco import parse_taco
from grpo_wb.tasks.rowformats.verl import VERL_CODE_SOURCES, parse_verl

__all__ = [
    "CAPPED_NOTE",
    "FORMATS",
    "LANGUAGE_FORMATS",
    "MAP_FIELDS",
    "PARSERS",
    "RECIPES",
    "RLLM_CAPPED",
    "RLLM_MAX_TESTS",
    "SCHEMA_FORMATS",
    "TEST_SETS",
    "VERL_CODE_SOURCES",
    "Cases",
    "ParsedRow",
    "RowError",
    "RowImportSummary",
    "decode_compressed_json",
    "deepcoder_subset",
    "import_rows",
    "io_cases",
    "iter_row_tasks",
    "lcb_cases",
    "lcb_prompt",
    "parse_acecode",
    "parse_code_contests",
    "parse_code_contests_plus",
    "parse_deepcoder",
    "parse_hardtests",
    "parse_klear",
    "parse_kodcode",
    "parse_limit",
    "parse_livecodebench",
    "parse_mapped",
    "parse_mapping",
    "parse_nemo_gym",
    "parse_open_r1",
    "parse_row",
    "parse_taco",
    "parse_verl",
    "primeintellect_cases",
    "program_language",
    "rllm_selection",
    "row_language",
    "select_test_set",
    "source_metadata",
    "task_from_parsed",
]
