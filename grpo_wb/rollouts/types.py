"""What every rollout backend speaks: where the G completions of a prompt come from.

A backend turns a :class:`RolloutRequest` (a task, a group size, the step and
how many times this task was requested before) into G :class:`Completion`
records. Everything about the sampling that a reader of the run needs --
backend, model, seed, sampling parameters, finish reason -- travels with each
completion. The backends: :mod:`~grpo_wb.rollouts.mock`, :mod:`~grpo_wb.rollouts.replay`,
:mod:`~grpo_wb.rollouts.openai_backend`, :mod:`~grpo_wb.rollouts.hf_backend`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from grpo_wb.errors import UserError
from grpo_wb.jsonio import encodable
from grpo_wb.tasks.records import Task


class RequestRejected(UserError):
    """The server refused one request for its content (a prompt past the context length, say): the task is named,
    and a run records the refusal for that task and goes on, where a failure of the server as a whole ends it."""

    def __init__(self, message: str, *, task_id: str):
        super().__init__(message)
        self.task_id = task_id


@dataclass(frozen=True)
class Completion:
    """One sampled completion and how it was produced."""

    task_id: str
    """The task it answers."""
    sample_index: int
    """Position within its group (0..G-1)."""
    text: str
    """The raw completion text."""
    backend: str
    """Backend name (``mock``, ``replay``, ...)."""
    model: str
    """Model name or identifier the backend used."""
    seed: int | None
    """Seed the sample was drawn with, when known."""
    sampling: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters (temperature, top_p, max_tokens, ...)."""
    finish_reason: str = "stop"
    """``stop``, ``length`` (truncated) or backend-specific."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Backend-specific details (mock: intended kind; replay: source line)."""

    def __post_init__(self) -> None:
        # a reply may hold lone surrogates (a server's JSON "\\ud800", a recorded file): every backend's text
        # is made encodable once, here, before it is scored, written or shown
        object.__setattr__(self, "text", encodable(self.text))

    def meta(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("task_id", "sample_index", "text"):
            d.pop(k)
        return d


@dataclass(frozen=True)
class RolloutRequest:
    """Ask for one group of completions."""

    task: Task
    """The prompt's task."""
    group_size: int
    """G: how many completions."""
    step: int
    """Training step the group belongs to."""
    occurrence: int
    """How many groups for this task were requested before this one (replay's cursor)."""


class Backend(Protocol):
    """What the smoke loop and the scorer need from a rollout source."""

    name: str

    def describe(self) -> dict[str, Any]:
        """Backend, model and sampling settings, for the run manifest."""
        ...

    def generate(self, requests: Sequence[RolloutRequest]) -> list[list[Completion]]:
        """One list of G completions per request, in request order."""
        ...


def describe_source(backend: dict[str, Any]) -> str:
    """Where a run's completions came from, in a few words (a report index's column): a backend's ``describe()``."""
    kind = backend.get("backend")
    if kind == "mock":
        return "mock (generated from canonical solutions; no model)"
    if kind == "replay":
        return f"replay of {Path(str(backend.get('path', '?'))).name}"
    if kind == "openai":
        return f"model server: {backend.get('model')} at {backend.get('base_url')}"
    if kind == "transformers":
        return f"local model: {backend.get('model')}"
    return str(kind or "unknown")
