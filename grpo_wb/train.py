"""``grpo-wb train --trainer trl``: real GRPO fine-tuning (LoRA) with TRL on the workbench's contracts.

The same task file, extraction, sandbox and reward as ``grpo-wb smoke``, now driving
``trl.GRPOTrainer`` with a ``peft`` LoRA adapter. The run directory is both TRL's
``output_dir`` (``checkpoint-N/adapter_model.safetensors``, ``completions/*.parquet``)
and a grpo_wb run (metrics.jsonl, groups.jsonl, last_rollouts.jsonl, summary.json,
checkpoint_manifest.json with ``"trained_weights": true``), so ``grpo_wb.load_run``
and the notebooks read it like a smoke run. It runs on the CPU when no GPU is there
(slow; for tiny models and checks), else on the GPU in bf16 when supported.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UserError

EXTRA_HINT = "pip install 'grpo_wb[trl]'"
MODES = ("auto", "completions", "chat")


@dataclass
class TrlTrainConfig:
    """Everything that determines a ``grpo-wb train --trainer trl`` run (stored in the manifest)."""

    model: str
    """Local model directory (or a hub id, when the machine may download)."""
    tasks: str
    """Canonical task file, or the frontier export's ``.trl.jsonl`` (prompt + task columns)."""
    out: str
    """Run directory: TRL's output_dir and the grpo_wb artifacts."""
    group_size: int = 8
    """G: completions per prompt (TRL's num_generations)."""
    max_steps: int = 100
    """Optimizer steps."""
    batch_size: int = 2
    """Prompts per step; TRL's per_device_train_batch_size is batch_size x group_size completions."""
    max_completion_length: int = 256
    """Tokens per completion."""
    learning_rate: float = 1e-5
    """AdamW learning rate of the LoRA parameters."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    lora_r: int = 8
    """LoRA rank."""
    lora_alpha: int = 16
    """LoRA scaling alpha."""
    lora_dropout: float = 0.05
    """LoRA dropout."""
    lora_target_modules: str = "all-linear"
    """Comma-separated module names, or ``all-linear``."""
    seed: int = 0
    """Seed of TRL's sampler, the LoRA init and the sampling."""
    reward: str = "binary"
    """``binary`` or ``partial`` (fraction of tests passed)."""
    scale_rewards: str = "group"
    """TRL's scale_rewards: ``group``, ``batch`` or ``none``."""
    beta: float = 0.0
    """KL coefficient (TRL default 0: no reference model)."""
    save_steps: int | None = None
    """Save an adapter checkpoint every this many steps (default: only at max_steps)."""
    mode: str = "auto"
    """``completions`` (continue task.prompt), ``chat`` (smoke's system + user messages), ``auto``: chat if the tokenizer has a template."""
    timeout: float = 3.0
    """Wall-clock seconds per completion in the sandbox (a task's own timeout wins)."""
    memory_mb: int = 2048
    """Address-space limit per completion, MiB."""
    workers: int | None = None
    """Parallel sandboxes; None = one per core."""

    def __post_init__(self) -> None:
        for name in ("group_size", "max_steps", "batch_size", "max_completion_length", "lora_r", "lora_alpha"):
            if getattr(self, name) < 1:
                raise UserError(f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.group_size < 2:
            raise UserError("group-size must be at least 2: GRPO learns from differences within a group")
        if self.save_steps is not None and self.save_steps < 1:
            raise UserError("save-steps must be at least 1")
        if self.scale_rewards not in ("group", "batch", "none"):
            raise UserError(f"unknown scale-rewards {self.scale_rewards!r}")
        if not self.learning_rate > 0:
            raise UserError("learning-rate must be positive")
        if self.mode not in MODES:
            raise UserError(f"unknown mode {self.mode!r} (choose {', '.join(MODES)})")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise UserError("lora-dropout must be in [0, 1)")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def require_extra() -> None:
    """The trl extra, or one line saying how to get it."""
    for name in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
        try:
            __import__(name)
        except ImportError as e:
            raise UserError(f"grpo-wb train --trainer trl needs {name}, which is not installed "
                            f"({e.__class__.__name__}: {e}); install the extra: {EXTRA_HINT}") from None


def _prepare_out(out: Path, overwrite: bool) -> None:
    """Refuse to mix two runs in one directory; with ``overwrite`` remove what a previous run wrote."""
    from .trl import RUN_ARTIFACTS, list_checkpoints

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

    Chat prompts are the ones the smoke trainer's model backends send (:mod:`grpo_wb.sampling`),
    so training sees what the smoke run measured.
    """
    from datasets import Dataset

    from .sampling import SamplingConfig

    chat = SamplingConfig(mode="chat")
    rows = [{"prompt": chat.messages(t) if mode == "chat" else t.prompt, "task_id": t.task_id} for t in tasks]
    return Dataset.from_list(rows)


def run_training(cfg: TrlTrainConfig, *, overwrite: bool = False) -> dict[str, Any]:
    """Train; return summary.json's content."""
    require_extra()
    import json

    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from .tasks import load_tasks
    from .trl import ExecutionReward, GrpoWbMetricsCallback

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
        raise UserError(f"{cfg.model}: cannot load the model or tokenizer ({str(e).splitlines()[0]})") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if cfg.mode == "chat" and not has_template:
        raise UserError(f"{cfg.model}: --mode chat needs a tokenizer with a chat template; it has none")
    mode = cfg.mode if cfg.mode != "auto" else ("chat" if has_template else "completions")

    targets = "all-linear" if cfg.lora_target_modules == "all-linear" else \
        [m.strip() for m in cfg.lora_target_modules.split(",") if m.strip()]
    peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                             target_modules=targets, task_type="CAUSAL_LM")
    args = GRPOConfig(
        output_dir=str(out), use_cpu=not cuda, bf16=bf16, fp16=False,
        num_generations=cfg.group_size, per_device_train_batch_size=cfg.batch_size * cfg.group_size,
        gradient_accumulation_steps=1, max_completion_length=cfg.max_completion_length,
        max_steps=cfg.max_steps, learning_rate=cfg.learning_rate, temperature=cfg.temperature,
        scale_rewards=cfg.scale_rewards, beta=cfg.beta, seed=cfg.seed,
        save_strategy="steps", save_steps=cfg.save_steps or cfg.max_steps, logging_steps=1,
        log_completions=True, num_completions_to_print=0, report_to="none",
        gradient_checkpointing=cuda, dataloader_num_workers=0)
    reward = ExecutionReward(tasks, tasks_path=cfg.tasks, reward=cfg.reward, timeout=cfg.timeout,
                             memory_mb=cfg.memory_mb, workers=cfg.workers)
    callback = GrpoWbMetricsCallback(out, reward, config={**cfg.to_json(), "trainer": "trl", "device":
                                     "cuda" if cuda else "cpu", "prompt_mode": mode})
    try:
        try:
            trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args,
                                  train_dataset=build_dataset(tasks, mode),
                                  processing_class=tokenizer, peft_config=peft_config, callbacks=[callback])
        except ValueError as e:  # e.g. LoRA target modules that the model does not have
            raise UserError(f"cannot set up GRPOTrainer: {str(e).splitlines()[0]}") from None
        trainer.train()
    finally:
        reward.close()
    return json.loads((out / "summary.json").read_text())


def cmd_train(args) -> int:
    """The ``train`` subcommand."""
    if args.trainer != "trl":
        raise UserError(f"unknown trainer {args.trainer!r} (only trl)")
    require_extra()
    cfg = TrlTrainConfig(
        model=args.model, tasks=args.tasks, out=args.out, group_size=args.group_size, max_steps=args.max_steps,
        batch_size=args.batch_size, max_completion_length=args.max_completion_length,
        learning_rate=args.learning_rate, temperature=args.temperature, lora_r=args.lora_r,
        lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout, lora_target_modules=args.lora_target_modules,
        seed=args.seed, reward=args.reward, scale_rewards=args.scale_rewards, beta=args.beta,
        save_steps=args.save_steps, mode=args.mode, timeout=args.timeout,
        memory_mb=args.memory_mb, workers=args.workers)
    summary = run_training(cfg, overwrite=args.overwrite)
    from .cli import _print_smoke_table

    _print_smoke_table(args.out)
    print()
    out = Path(args.out).resolve()
    ck = summary.get("final_checkpoint")
    print(f"{summary['global_step']}/{cfg.max_steps} steps trained; adapter: "
          f"{out / ck if ck else 'NONE (no checkpoint saved)'}")
    mi = summary["mean_informative_fraction"]
    print(f"mean informative-prompt fraction {mi if mi is None else round(mi, 3)}, "
          f"mean pass rate {summary['mean_pass_rate']:.3f}")
    chk = summary.get("trl_advantage_check")
    if chk:
        print(f"TRL's logged advantages vs grpo_wb's: {chk['steps_compared']} step(s), max |diff| "
              f"{chk['max_abs_advantage_diff']:.2e} ({'match' if chk['match'] else 'MISMATCH'})")
    print(f"results: {out}/ (metrics.jsonl, groups.jsonl, last_rollouts.jsonl, checkpoint_manifest.json, "
          "summary.json, checkpoint-*/)")
    return 0


def add_parser(sub) -> None:
    """The ``train`` subcommand's arguments (called from :func:`grpo_wb.cli.build_parser`)."""
    from .cli import _add_sandbox_args, _positive_int

    p = sub.add_parser("train", help="real GRPO fine-tuning (LoRA) with TRL, same reward and diagnostics as smoke")
    p.add_argument("--trainer", choices=["trl"], default="trl", help="training backend (trl's GRPOTrainer)")
    p.add_argument("--model", required=True, help="model directory (or hub id)")
    p.add_argument("--tasks", required=True, help="canonical task file or a frontier .trl.jsonl export")
    p.add_argument("--out", required=True, help="run directory (TRL output_dir + grpo_wb artifacts)")
    p.add_argument("--group-size", type=_positive_int, default=8, help="G, completions per prompt")
    p.add_argument("--max-steps", type=_positive_int, default=100, help="optimizer steps")
    p.add_argument("--batch-size", type=_positive_int, default=2, help="prompts per step (x G completions)")
    p.add_argument("--max-completion-length", type=_positive_int, default=256, help="tokens per completion")
    p.add_argument("--learning-rate", type=float, default=1e-5)
    p.add_argument("--temperature", type=float, default=1.0, help="rollout sampling temperature")
    p.add_argument("--lora-r", type=_positive_int, default=8)
    p.add_argument("--lora-alpha", type=_positive_int, default=16)
    p.add_argument("--lora-dropout", type=float, default=0.05)
    p.add_argument("--lora-target-modules", default="all-linear",
                   help="comma-separated module names (e.g. q_proj,v_proj) or all-linear")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reward", choices=["binary", "partial"], default="binary")
    p.add_argument("--scale-rewards", choices=["group", "batch", "none"], default="group")
    p.add_argument("--beta", type=float, default=0.0, help="KL coefficient (TRL default 0)")
    p.add_argument("--save-steps", type=_positive_int, default=None, help="checkpoint every N steps (default: at the end)")
    p.add_argument("--mode", choices=list(MODES), default="auto",
                   help="continue the prompt, or ask in chat as smoke's model backends do (auto: chat if the "
                        "tokenizer has a chat template)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run in --out")
    _add_sandbox_args(p)


if __name__ == "__main__":  # pragma: no cover
    from .cli import main

    sys.exit(main(["train", *sys.argv[1:]]))
