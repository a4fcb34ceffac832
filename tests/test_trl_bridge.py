"""The TRL bridge: grpo_wb's execution reward and run artifacts inside a real GRPOTrainer (no downloads)."""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, TOY, read_jsonl, write_jsonl  # noqa: E402

from grpo_wb import cli, load_run  # noqa: E402
from grpo_wb.errors import UserError  # noqa: E402
from grpo_wb.jsonio import sha256_file  # noqa: E402
from grpo_wb.runs.forecast_check import forecast_check  # noqa: E402
from grpo_wb.signal.advantages import AdvantageConfig, compute_advantages  # noqa: E402
from grpo_wb.signal.diagnostics import StepMetrics  # noqa: E402
from grpo_wb.tasks.records import load_tasks  # noqa: E402
from grpo_wb.tasks.rowexport import trl_record  # noqa: E402
from grpo_wb.training import bridge  # noqa: E402
from grpo_wb.training.bridge import ExecutionReward, completion_text, execution_reward  # noqa: E402

pytestmark = [pytest.mark.trl]


@pytest.fixture(scope="module", autouse=True)
def _the_trl_extra_is_installed():
    """The extra is part of `make test`: missing, every test here fails (never skips). Imported here, not at the
    top of the file, so that collecting it (the unit tier deselects it) does not pay peft's 7 s import."""
    importlib.import_module("peft")
    importlib.import_module("trl")


ADD_OK = "    return a + b\n"
ADD_BAD = "    return a - b\n"
FENCED_OK = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\n"


@pytest.fixture(scope="module")
def reward():
    with ExecutionReward(TOY, workers=2, timeout=3.0) as r:
        yield r


@pytest.mark.sandbox
def test_standard_format(reward):
    out = reward(
        prompts=["p"] * 4, completions=[ADD_OK, ADD_BAD, "I cannot do that.", FENCED_OK], task_id=["toy/add"] * 4
    )
    assert out == [1.0, 0.0, 0.0, 1.0]
    assert [s.status for s in reward.last_batch.scored] == ["pass", "fail", "parse_failure", "pass"]
    assert reward.__name__ == "execution_reward"


@pytest.mark.sandbox
def test_conversational_format_and_logging(reward):
    prompt = [{"role": "user", "content": "write add"}]
    comps = [
        [{"role": "assistant", "content": FENCED_OK}],
        [{"role": "assistant", "content": "```python\ndef add(a, b):\n    return a * b\n```"}],
    ]
    logged, extra = {}, {}
    out = reward(
        prompts=[prompt, prompt],
        completions=comps,
        task_id=["toy/add", "toy/add"],
        trainer_state=SimpleNamespace(global_step=7),
        log_metric=logged.__setitem__,
        log_extra=extra.__setitem__,
        completion_ids=[[1, 2], [3]],
    )
    assert out == [1.0, 0.0]
    assert logged["grpo_wb/pass_rate"] == 0.5 and extra["grpo_wb_status"] == ["pass", "fail"]
    assert reward.last_batch.step == 7
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "x"}]}]) == "x"


@pytest.mark.sandbox
def test_partial_reward_and_columns_from_frontier_export():
    task = {t.task_id: t for t in load_tasks(TOY)}["toy/max_of_list"]
    row = trl_record(task)
    cols = {k: [v, v] for k, v in row.items() if k != "prompt"}
    with ExecutionReward(None, reward="partial", workers=1) as r:  # no task file: tasks from the dataset columns
        out = r(prompts=[row["prompt"]] * 2, completions=["    return xs[0]\n", "    return max(xs)\n"], **cols)
    assert out[1] == 1.0 and 0.0 < out[0] < 1.0
    out = execution_reward(
        prompts=[row["prompt"]], completions=["    return max(xs)\n"], **{k: v[:1] for k, v in cols.items()}
    )
    assert out == [1.0]


@pytest.mark.sandbox
def test_unscorable_is_none(reward, monkeypatch):
    def broken(job):
        raise RuntimeError("worker pool down")

    monkeypatch.setattr(reward.scorer.sandbox, "run", broken)
    out = reward(prompts=["p", "p"], completions=[ADD_OK + "\n", "no code here"], task_id=["toy/add"] * 2)
    assert out == [None, 0.0]  # the sandbox failed on the first; the second never reached it
    assert reward.last_batch.scored[0].status == "sandbox_error"
    monkeypatch.undo()  # a sandbox failure is not cached: the same program is retried and passes
    assert reward(prompts=["p"], completions=[ADD_OK + "\n"], task_id=["toy/add"]) == [1.0]
    with pytest.raises(UserError, match="no task"):
        reward(prompts=["p"], completions=[ADD_OK], task_id=["nope/1"])
    with ExecutionReward(TOY, parse_failure_reward=None, workers=1) as r:
        assert r(prompts=["p"], completions=["prose only"], task_id=["toy/add"]) == [None]


@pytest.mark.sandbox
def test_callback_groups_like_trl(tmp_path, reward):
    """A batch with an unscorable completion: grouped by G, None left out, as TRL does."""
    cb = bridge.GrpoWbMetricsCallback(tmp_path, reward)  # made on first use (transformers is imported then)
    assert isinstance(cb, importlib.import_module("transformers").TrainerCallback)
    args = SimpleNamespace(num_generations=2, scale_rewards="group", output_dir=str(tmp_path))
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    cb.on_train_begin(args, state, None)
    reward(
        prompts=["p"] * 4, completions=[ADD_OK, ADD_BAD, ADD_OK, ADD_OK], task_id=["toy/add"] * 4, trainer_state=state
    )
    cb.on_step_end(args, state, None)
    state.global_step = 1
    cb.on_train_end(args, state, None)
    run = load_run(tmp_path)
    assert run.steps["informative_fraction"].tolist() == [0.5]
    assert run.groups["advantages"].tolist() == compute_advantages([[1.0, 0.0], [1.0, 1.0]])
    assert json.loads((tmp_path / "checkpoint_manifest.json").read_text())["trained_weights"] is False


def test_missing_extra_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "trl", None)  # import trl now raises ImportError
    rc = cli.main(
        ["train", "--trainer", "trl", "--model", str(tmp_path), "--tasks", str(TOY), "--out", str(tmp_path / "run")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "pip install 'grpo_wb[trl]'" in err[0]


# ----------------------------------------------------------------------------- end to end


def _tiny_policy(out: Path) -> None:
    """A random 2-layer Llama whose samples are a few whole-line tokens: right body, wrong body, or EOS.

    Residual dimension 0 is held constant (embedding column, nothing writes to it), so after the
    final norm it is a positive constant and ``lm_head[:, 0]`` pins every other token far below the
    three chosen ones: completions pass, fail or are empty with about equal odds, and groups have
    reward variance. The rest of the network stays random, so LoRA gradients are not zero.
    """
    from test_hf_backend import _bpe, _pin_dim0, _tiny_llama
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    tok = _bpe([t.prompt + (t.canonical_solution or "") for t in load_tasks(TOY)], 512, ["<pad>", "<eos>"])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    fast.add_tokens([AddedToken(ADD_OK, normalized=False), AddedToken(ADD_BAD, normalized=False)])
    fast.save_pretrained(out)
    chosen = fast.convert_tokens_to_ids([ADD_OK, ADD_BAD, "<eos>"])
    model = _tiny_llama(
        fast, num_key_value_heads=4, max_position_embeddings=256, bos_token_id=None, tie_word_embeddings=False
    )
    _pin_dim0(model, 10.0, -20.0, chosen, 0.0)
    model.generation_config.pad_token_id = fast.pad_token_id
    model.generation_config.eos_token_id = fast.eos_token_id
    model.save_pretrained(out)


@pytest.mark.slow
@pytest.mark.sandbox
def test_train_two_steps_on_cpu(tmp_path):
    model_dir = tmp_path / "model"
    _tiny_policy(model_dir)
    add = next(t for t in read_jsonl(TOY) if t["task_id"] == "toy/add")
    add2 = dict(add, task_id="toy/add2", entry_point="add2", prompt=add["prompt"].replace("def add(", "def add2("))
    tasks = write_jsonl(tmp_path / "tasks.jsonl", [add, add2])
    run_dir = tmp_path / "run"
    g, b = 4, 2
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    cmd = [
        sys.executable,
        "-m",
        "grpo_wb.cli",
        "train",
        "--trainer",
        "trl",
        "--model",
        str(model_dir),
        "--tasks",
        str(tasks),
        "--group-size",
        str(g),
        "--batch-size",
        str(b),
        "--max-steps",
        "2",
        "--max-completion-length",
        "8",
        "--learning-rate",
        "1e-3",
        "--lora-r",
        "4",
        "--lora-target-modules",
        "q_proj,v_proj",
        "--seed",
        "0",
        "--workers",
        "2",
        "--out",
        str(run_dir),
        "--site-packages",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "match" in proc.stdout

    # real adapter weights, hashed in the manifest
    manifest = json.loads((run_dir / "checkpoint_manifest.json").read_text())
    assert manifest["trained_weights"] is True and manifest["final_checkpoint"] == "checkpoint-2"
    assert manifest["sandbox"]["limits"]["site_packages"] is True  # the flag reached the reward's sandbox
    files = manifest["checkpoints"][-1]["files"]
    assert {"adapter_model.safetensors", "adapter_config.json"} <= set(files)
    for name, info in files.items():
        assert sha256_file(run_dir / "checkpoint-2" / name) == info["sha256"]
    from safetensors.torch import load_file

    weights = load_file(run_dir / "checkpoint-2" / "adapter_model.safetensors")
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in weights.items())  # LoRA B starts at 0: it trained

    # the workbench's artifacts, read like a smoke run
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [0, 1]
    assert set(StepMetrics.__dataclass_fields__) <= set(metrics[0])
    run = load_run(run_dir)
    assert len(run.steps) == 2 and len(run.groups) == 2 * b and len(run.rollouts) == b * g
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["trained_weights"] is True and summary["trl_advantage_check"]["match"] is True

    # TRL's logged advantages equal grpo_wb's compute_advantages on TRL's own logged rewards
    import pandas as pd

    nonzero = 0
    for step in (1, 2):
        df = pd.read_parquet(run_dir / "completions" / f"completions_{step:05d}.parquet")
        assert len(df) == b * g and {"advantage", "execution_reward"} <= set(df.columns)
        rewards = df["execution_reward"].tolist()
        groups = [rewards[i : i + g] for i in range(0, len(rewards), g)]
        ours = [a for grp in compute_advantages(groups, AdvantageConfig()) for a in grp]
        assert max(abs(x - y) for x, y in zip(ours, df["advantage"].tolist())) < 1e-5
        logged = [a for grp in run.groups[run.groups["step"] == step - 1]["advantages"] for a in grp]
        assert max(abs(x - y) for x, y in zip(logged, df["advantage"].tolist())) < 1e-5
        nonzero += sum(abs(a) > 0.1 for a in ours)
    assert nonzero > 0  # the comparison is not 0 == 0

    # TRL logs a step after its optimizer step (1-based); the forecast check pairs each logged frac_reward_zero_std
    # with the groups of the step it measured
    check = forecast_check(run_dir, run_dir, sims=100)
    assert check.source == "TRL's log" and [f.step for f in check.pre] == [0, 1]
    by_step = run.groups.groupby("step")["n_correct"].apply(lambda s: sum(c in (0, g) for c in s) / len(s))
    assert [f.realized for f in check.pre] == pytest.approx([by_step[0], by_step[1]])
