"""``grpo-wb train``'s settings, declared once (:class:`TrlTrainConfig`), and the check that the extra is there.

Light on purpose: importing it imports no TRL, torch or transformers (the CLI builds its flags from it)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from grpo_wb.config import check_at_least_one, check_choices, cli, positive_int
from grpo_wb.errors import UserError, exception_line
from grpo_wb.scoring.executors import SandboxConfig
from grpo_wb.scoring.rewards import RewardKind
from grpo_wb.signal.advantages import ScaleRewards

EXTRA_HINT = "pip install 'grpo_wb[trl]'"


@dataclass(kw_only=True)
class TrlTrainConfig(SandboxConfig):
    """Everything that determines a ``grpo-wb train --trainer trl`` run (stored in the manifest)."""

    trainer: Literal["trl"] = "trl"
    """training backend (trl's GRPOTrainer)"""
    model: str
    """model directory (or hub id, when the machine may download)"""
    tasks: str
    """canonical task file or a frontier .trl.jsonl export"""
    out: str
    """run directory (TRL output_dir + grpo_wb artifacts)"""
    group_size: int = field(default=8, metadata=cli(type=positive_int))
    """G, completions per prompt (TRL's num_generations)"""
    max_steps: int = field(default=100, metadata=cli(type=positive_int))
    """optimizer steps"""
    batch_size: int = field(default=2, metadata=cli(type=positive_int))
    """prompts per step (x G completions: TRL's per_device_train_batch_size)"""
    max_completion_length: int = field(default=256, metadata=cli(type=positive_int))
    """tokens per completion"""
    learning_rate: float = 1e-5
    """AdamW learning rate of the LoRA parameters"""
    temperature: float = 1.0
    """rollout sampling temperature"""
    lora_r: int = field(default=8, metadata=cli(type=positive_int))
    """LoRA rank"""
    lora_alpha: int = field(default=16, metadata=cli(type=positive_int))
    """LoRA scaling alpha"""
    lora_dropout: float = 0.05
    """LoRA dropout"""
    lora_target_modules: str = "all-linear"
    """comma-separated module names (e.g. q_proj,v_proj) or all-linear"""
    seed: int = 0
    """seed of TRL's sampler, the LoRA init and the sampling"""
    reward: RewardKind = "binary"
    """binary or partial (fraction of tests passed)"""
    scale_rewards: ScaleRewards = "group"
    """TRL's scale_rewards"""
    beta: float = 0.0
    """KL coefficient (TRL default 0: no reference model)"""
    save_steps: int | None = field(default=None, metadata=cli(type=positive_int))
    """checkpoint every N steps (default: at the end)"""
    mode: Literal["auto", "completions", "chat"] = "auto"
    """continue the prompt, or ask in chat as smoke's model backends do (auto: chat if the tokenizer has a chat
    template)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choices(self)
        check_at_least_one(
            self, "group_size", "max_steps", "batch_size", "max_completion_length", "lora_r", "lora_alpha"
        )
        if self.group_size < 2:
            raise UserError("group-size must be at least 2: GRPO learns from differences within a group")
        if self.save_steps is not None:
            check_at_least_one(self, "save_steps")
        if not self.learning_rate > 0:
            raise UserError("learning-rate must be positive")
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
            raise UserError(
                f"grpo-wb train --trainer trl needs {name}, which is not installed "
                f"({exception_line(e)}); install the extra: {EXTRA_HINT}"
            ) from None
