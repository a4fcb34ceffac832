"""``grpo-wb train --trainer trl``: real GRPO fine-tuning (LoRA) with TRL on the workbench's contracts.

The same task file, extraction, sandbox and reward as ``grpo-wb smoke``, now driving
``trl.GRPOTrainer`` with a ``peft`` LoRA adapter. The run directory is both TRL's
``output_dir`` (``checkpoint-N/adapter_model.safetensors``, ``completions/*.parquet``)
and a grpo_wb run (metrics.jsonl, groups.jsonl, rollouts.jsonl, last_rollouts.jsonl, summary.json,
checkpoint_manifest.json with ``"trained_weights": true``), so ``grpo_wb.load_run``
and the notebooks read it like a smoke run. It runs on the CPU when no GPU is there
(slow; for tiny models and checks), else on the GPU in bf16 when supported.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError, exception_line, one_line
from grpo_wb.jsonio import read_json
from grpo_wb.layout import RunFiles
from grpo_wb.rollouts.sampling import SamplingConfig
from grpo_wb.tasks.records import load_tasks
from grpo_wb.training.bridge import RUN_ARTIFACTS, ExecutionReward, GrpoWbMetricsCallback, list_checkpoints
from grpo_wb.training.config import TrlTrainConfig, require_extra


def _prepare_out(out: Path, overwrite: bool) -> None:
    """Refuse to mix two runs in one directory; with ``overwrite`` remove what a previous run wrote."""
    existing = [a for a in RUN_ARTIFACTS if (out / a).exists()] + [p.name for p in list_checkpoints(out)]
    if existing and not overwrite:
        raise UserError(f"{out} already holds a run ({existing[0]}); use --overwrite to replace it")
    for a in RUN_ARTIFACTS:
        (out / a).unlink(missing_ok=True)
    for p in list_checkpoints(out) + [out / "completions"]:
        if p.is_dir():
            shutil.rmtree(p)


def build_dataset(tasks: list, mode: str):
    """The TRL dataset: ``prompt`` and ``task_id`` (the reward looks the rest up in the task file).

    Chat prompts are the ones the smoke trainer's model backends send (:mod:`grpo_wb.rollouts.sampling`),
    so training sees what the smoke run measured.
    """
    from datasets import Dataset  # the trl extra

    chat = SamplingConfig(mode="chat")
    rows = [{"prompt": chat.messages(t) if mode == "chat" else t.prompt, "task_id": t.task_id} for t in tasks]
    return Dataset.from_list(rows)


def run_training(cfg: TrlTrainConfig, *, overwrite: bool = False) -> dict[str, Any]:
    """Train; return summary.json's content."""
    require_extra()
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tasks = load_tasks(cfg.tasks)
    if cfg.batch_size > len(tasks):
        raise UserError(f"batch-size {cfg.batch_size} exceeds the number of tasks in {cfg.tasks} ({len(tasks)})")
    model_path = Path(cfg.model)
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    if not model_path.exists() and offline:
        raise UserError(f"{cfg.model}: no such model directory (and HF_HUB_OFFLINE is set, so no hub download)")
    if model_path.exists() and not (model_path / "config.json").is_file():
        raise UserError(f"{cfg.model}: not a model directory (no config.json)")
    out = Path(cfg.out)
    _prepare_out(out, overwrite)
    out.mkdir(parents=True, exist_ok=True)

    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    try:
        tokenizer = AutoTokenizer.from_pretrained(cfg.model)
        model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.bfloat16 if bf16 else torch.float32)
    except (OSError, ValueError) as e:
        raise UserError(f"{cfg.model}: cannot load the model or tokenizer ({exception_line(e)})") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if cfg.mode == "chat" and not has_template:
        raise UserError(f"{cfg.model}: --mode chat needs a tokenizer with a chat template; it has none")
    mode = cfg.mode if cfg.mode != "auto" else ("chat" if has_template else "completions")

    targets = (
        "all-linear"
        if cfg.lora_target_modules == "all-linear"
        else [m.strip() for m in cfg.lora_target_modules.split(",") if m.strip()]
    )
    peft_config = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
    args = GRPOConfig(
        output_dir=str(out),
        use_cpu=not cuda,
        bf16=bf16,
        fp16=False,
        num_generations=cfg.group_size,
        per_device_train_batch_size=cfg.batch_size * cfg.group_size,
        gradient_accumulation_steps=1,
        max_completion_length=cfg.max_completion_length,
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        temperature=cfg.temperature,
        scale_rewards=cfg.scale_rewards,
        beta=cfg.beta,
        seed=cfg.seed,
        save_strategy="steps",
        save_steps=cfg.save_steps or cfg.max_steps,
        logging_steps=1,
        log_completions=True,
        num_completions_to_print=0,
        report_to="none",
        gradient_checkpointing=cuda,
        dataloader_num_workers=0,
    )
    reward = ExecutionReward(tasks, tasks_path=cfg.tasks, reward=cfg.reward, limits=cfg.limits(), workers=cfg.workers)
    callback = GrpoWbMetricsCallback(
        out, reward, config={**cfg.to_json(), "device": "cuda" if cuda else "cpu", "prompt_mode": mode}
    )
    try:
        try:
            trainer = GRPOTrainer(
                model=model,
                reward_funcs=[reward],
                args=args,
                train_dataset=build_dataset(tasks, mode),
                processing_class=tokenizer,
                peft_config=peft_config,
                callbacks=[callback],
            )
        except ValueError as e:  # e.g. LoRA target modules that the model does not have
            raise UserError(f"cannot set up GRPOTrainer: {one_line(e, first_line=True)}") from None
        trainer.train()
    finally:
        reward.close()
    return read_json(out / RunFiles.SUMMARY)
