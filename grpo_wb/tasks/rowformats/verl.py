"""``verl``: volcengine/verl ``docs/preparation/prepare_data.rst`` and ``verl/utils/reward_score/prime_code`` /
``sandbox_fusion``: ``data_source``, ``prompt`` (chat messages), ``ability``, ``reward_model.ground_truth`` (a JSON
string ``{inputs, outputs, fn_name?}`` or ``{assert_case}``; LiveCodeBench's base64/zlib/pickle encoding too),
``extra_info``.

Writer: :func:`grpo_wb.tasks.rowexport.build_row` (``--format verl``). Trainer's reward: verl's ``prime_code``
(``grpo_wb.scoring.rules.RULES["prime_code"]``).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.importers import APPS_PRELUDE, mbpp_entry_point
from grpo_wb.tasks.rowformats.common import (
    Cases,
    ParsedRow,
    RowError,
    _chat_prompt,
    _need,
    decode_compressed_json,
    io_cases,
)

#: the data_source values verl's default_compute_score sends to a code scorer (verl/utils/reward_score/__init__.py)
VERL_CODE_SOURCES = ("codecontests", "apps", "codeforces", "taco")


def parse_verl(row: dict[str, Any]) -> ParsedRow:
    _need(row, "data_source", "prompt", "reward_model")
    rm = row["reward_model"]
    if not isinstance(rm, dict) or "ground_truth" not in rm:
        raise RowError("reward_model must be {style, ground_truth}")
    gt = rm["ground_truth"]
    gt = decode_compressed_json(gt, "ground_truth") if isinstance(gt, str) else gt
    prompt, messages = _chat_prompt(row["prompt"])
    notes: list[str] = []
    unrewardable = None
    if isinstance(gt, dict) and gt.get("assert_case"):
        code = [c for c in gt["assert_case"] if isinstance(c, str)]
        cases = Cases("assert", code=code, fn_name=mbpp_entry_point(code, None))
    else:
        # prime_code reads call inputs as one JSON value per line; list inputs (APPS style) crash it
        json_lines = isinstance(gt, dict) and all(isinstance(x, str) for x in gt.get("inputs") or [])
        cases = io_cases(gt, name="ground_truth", args_as="json-lines")
        if cases.kind == "call" and not json_lines:
            unrewardable = "call-based with list inputs, which verl's prime_code cannot run (it scores them 0)"
    if row["data_source"] not in VERL_CODE_SOURCES:
        unrewardable = (
            f"data_source {row['data_source']!r} is not routed to a code scorer by verl's default_compute_score"
        )
    if isinstance(gt, dict) and gt.get("assert_case") and not unrewardable:
        unrewardable = "assert_case ground truth, which only verl's sandbox_fusion reads (prime_code scores it 0)"
    if unrewardable:
        notes.append(unrewardable)
    extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else {}
    rid = extra.get("index") if extra else None
    return ParsedRow(
        prompt=prompt,
        messages=messages,
        cases=cases,
        prelude=APPS_PRELUDE,
        row_id=None if rid is None else f"{row['data_source']}/{rid}",
        extra={
            "data_source": row["data_source"],
            "ability": row.get("ability"),
            "trainer_reward": "prime_code",
            "trainer_unrewardable": unrewardable,
        },
        notes=tuple(notes),
    )
