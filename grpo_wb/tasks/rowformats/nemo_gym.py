"""``nemo-gym``: nvidia/Nemotron-RL-coding-competitive_coding (card; NVIDIA-NeMo/Gym 07d6b0d
``resources_servers/code_gen/app.py``): ``responses_create_params.input``, ``verifier_metadata.unit_tests``.

Writer: :func:`grpo_wb.tasks.rowexport.build_row` (``--format nemo-gym``). Trainer's reward: LiveCodeBench's rule,
which its verifier runs (``grpo_wb.scoring.rules.RULES["livecodebench"]``).
"""

from __future__ import annotations

from typing import Any

from grpo_wb.tasks.rowformats.common import ParsedRow, RowError, _chat_prompt, _json_field, _need, io_cases


def parse_nemo_gym(row: dict[str, Any]) -> ParsedRow:
    """nvidia/Nemotron-RL-coding-competitive_coding (NeMo Gym's ``code_gen`` resources server): the chat prompt in
    ``responses_create_params.input``, the tests in ``verifier_metadata.unit_tests`` {inputs, outputs, fn_name?}
    (LiveCodeBench's format: stdin/stdout, or calls with one JSON value per input line); ``hash_id``,
    ``dataset``, ``source``. Judged by LiveCodeBench's rule, which the verifier runs (NVIDIA-NeMo/Gym 07d6b0d
    resources_servers/code_gen/app.py, lcb_integration/)."""
    _need(row, "responses_create_params", "verifier_metadata")
    params = _json_field(row["responses_create_params"], "responses_create_params")
    if not isinstance(params, dict) or params.get("input") in (None, "", []):
        raise RowError("responses_create_params needs input (the chat messages)")
    msgs = params["input"]
    if isinstance(msgs, list) and any(isinstance(m, dict) and not isinstance(m.get("content"), str) for m in msgs):
        raise RowError("responses_create_params.input: a message whose content is not text")
    text, messages = _chat_prompt(msgs)
    vm = _json_field(row["verifier_metadata"], "verifier_metadata")
    ut = vm.get("unit_tests") if isinstance(vm, dict) else None
    if not isinstance(ut, dict):
        raise RowError("verifier_metadata has no unit_tests {inputs, outputs}")
    cases = io_cases(ut, name="unit_tests", args_as="json-lines")
    if cases.kind == "call" and not all(isinstance(x, str) for x in ut["inputs"]):
        raise RowError("unit_tests with fn_name need inputs as text, one JSON value per line")
    rid = row.get("hash_id")
    return ParsedRow(
        prompt=text,
        messages=messages,
        cases=cases,
        row_id=None if rid is None else str(rid),
        output_match="numeric-lines",
        call_compare="values_equal",
        extra={"dataset": row.get("dataset"), "origin": row.get("source"), "trainer_reward": "livecodebench"},
    )
