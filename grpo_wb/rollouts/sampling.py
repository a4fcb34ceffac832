"""Sampling settings shared by the model-backed rollout backends (``openai``, ``transformers``).

Why a module of its own: a served model and a local one must draw seeds, build
chat prompts and summarise truncation the same way, so that a run's numbers
mean the same thing whichever backend produced the completions.

Seed scheme (:func:`request_seed`): every request's seed is a pure function of
``(seed, task_id, step, occurrence[, sample])`` -- the first 31 bits of
``sha256("seed|task_id|step|occurrence|sample")``. A group asked for in one
request (``n = G``) has no sample part; a group sent as G single requests gives
sample ``i`` its own seed (the same seed would make a seed-honouring server
return G identical completions). 31 bits fit every server's seed type.

Prompt scheme (:meth:`SamplingConfig.prompt`): a task imported from a chat row (verl, TRL conversational,
open-r1) carries the row's own messages (``metadata["messages"]``); in chat they are sent as they are, so the
server applies the model's chat template to exactly what the trainer's rollout renders. Other tasks are asked
with ``system_prompt`` + ``user_template`` (a code prompt: "complete this function"; a statement: the text
itself). ``auto`` sends code prompts to be continued and everything else in chat.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from grpo_wb.errors import UserError
from grpo_wb.rollouts.types import Completion, RolloutRequest
from grpo_wb.tasks.records import Task

CLIPPED_RATIO = "completions/clipped_ratio"
"""Fraction of completions cut at max_tokens (TRL logs the same name)."""
MEAN_LENGTH = "completions/mean_length"
"""Mean completion length in tokens (TRL's name)."""

DEFAULT_SYSTEM_PROMPT = "You are an expert Python programmer."
DEFAULT_USER_TEMPLATE = (
    "Complete the Python function `{entry_point}` below. Reply with the whole function, "
    "including its signature, in a single ```python code block.\n\n```python\n{prompt}\n```"
)
"""The user message for a code prompt (HumanEval-style: a signature and a docstring) that has no messages."""
TEXT_USER_TEMPLATE = "{prompt}"
"""The user message for a statement (a stdin problem, a row with only text): the text itself, as trainers send it."""
PROMPT_SOURCES = ("row", "template", "text")
"""Where a request's prompt came from: the row's own messages, the templates, or the task's text continued."""


def is_code_prompt(task: Task) -> bool:
    """A prompt that is Python to continue (a signature and docstring), not prose: it parses."""
    try:
        ast.parse(task.prompt)
    except (SyntaxError, ValueError):
        return False
    return bool(task.prompt.strip())


def row_messages(task: Task) -> list[dict[str, str]] | None:
    """The chat messages the task's row was trained with (``metadata["messages"]``), checked; None when it had none."""
    msgs = task.metadata.get("messages")
    if msgs is None:
        return None
    if not (
        isinstance(msgs, list)
        and msgs
        and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in msgs
        )
    ):
        raise UserError(
            f"task {task.task_id}: metadata.messages must be a non-empty list of "
            "{role, content} messages with text content"
        )
    return [{"role": m["role"], "content": m["content"]} for m in msgs]


@dataclass(frozen=True)
class Prompt:
    """What one request sends, and where it came from (recorded with every completion and in the request log)."""

    endpoint: str
    """``chat`` (messages, the server applies the chat template) or ``completions`` (text continued)."""
    source: str
    """One of :data:`PROMPT_SOURCES`."""
    messages: tuple[dict[str, str], ...] = ()
    """chat: the messages."""
    text: str = ""
    """completions: the text the model continues."""

    def payload(self) -> list[dict[str, str]] | str:
        return [dict(m) for m in self.messages] if self.endpoint == "chat" else self.text

    def sha256(self) -> str:
        """Names the exact prompt (what the request log and each completion share)."""
        blob = json.dumps({"endpoint": self.endpoint, "payload": self.payload()}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8", "backslashreplace")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        key = "messages" if self.endpoint == "chat" else "prompt"
        return {
            "endpoint": self.endpoint,
            "prompt_source": self.source,
            key: self.payload(),
            "prompt_sha256": self.sha256(),
        }


def request_seed(seed: int | None, req: RolloutRequest, sample: int | None = None) -> int | None:
    """The seed sent with one request (module docstring); None when the run is unseeded."""
    if seed is None:
        return None
    key = f"{seed}|{req.task.task_id}|{req.step}|{req.occurrence}|{'' if sample is None else sample}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") >> 1


@dataclass(kw_only=True)
class SamplingConfig:
    """What the model backends sample with; each backend's config extends it."""

    MODES: ClassVar[tuple[str, ...]] = ("completions", "chat", "auto")

    mode: str = "completions"
    """``completions``: continue ``task.prompt``; ``chat``: the row's messages, else the templates; ``auto``: per
    task."""
    temperature: float = 1.0
    """Softmax temperature; 0 means greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    max_tokens: int = 512
    """Most new tokens per completion; hitting it is finish_reason ``length``."""
    seed: int | None = 0
    """Base of the per-request seeds (see :func:`request_seed`); None sends none."""
    stop: tuple[str, ...] = ()
    """Stop strings; the completion ends before the first one."""
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    """Chat, tasks without row messages: the system message (None: no system message)."""
    user_template: str | None = None
    """Chat, tasks without row messages: the user message, ``{prompt}``/``{entry_point}`` filled (None: by prompt
    kind)."""

    def __post_init__(self) -> None:
        self.stop = tuple(self.stop)
        if self.mode not in self.MODES:
            raise UserError(f"unknown mode {self.mode!r} (choose {', '.join(self.MODES)})")
        if not self.temperature >= 0:
            raise UserError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise UserError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise UserError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise UserError("stop strings must be non-empty strings")
        if self.user_template is not None and "{prompt}" not in self.user_template:
            raise UserError("user_template must contain {prompt}")

    def sampling_json(self) -> dict[str, Any]:
        """The parameters every completion records as ``sampling``."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
        }

    def prompt_json(self, mode: str | None = None) -> dict[str, Any]:
        """How prompts are built (``mode``: the one in use, when resolved), for describe()."""
        mode = mode or self.mode
        if mode == "completions":
            return {"mode": mode}
        return {"mode": mode, "system_prompt": self.system_prompt, "user_template": self.user_template}

    def prompt(self, task: Task, mode: str | None = None) -> Prompt:
        """What a request for ``task`` sends (module docstring); ``mode``: the resolved one, when not ``self.mode``."""
        mode = mode or self.mode
        row = row_messages(task)
        code = is_code_prompt(task)
        if mode == "auto":
            mode = "completions" if row is None and code else "chat"
        if mode == "completions":
            return Prompt("completions", "text", text=task.prompt)
        if row is not None:
            return Prompt("chat", "row", messages=tuple(row))
        template = self.user_template or (DEFAULT_USER_TEMPLATE if code and task.entry_point else TEXT_USER_TEMPLATE)
        user = template.replace("{entry_point}", task.entry_point).replace("{prompt}", task.prompt.rstrip("\n"))
        head = () if self.system_prompt is None else ({"role": "system", "content": self.system_prompt},)
        return Prompt("chat", "template", messages=head + ({"role": "user", "content": user},))

    def messages(self, task: Task) -> list[dict[str, str]]:
        """The chat messages for a task (plain replacement: braces in the prompt need no escaping)."""
        return self.prompt(task, "chat").payload()  # type: ignore[return-value]


def rollout_stats(
    groups: Sequence[Sequence[Completion]],
    *,
    requests: int,
    retries: int,
    wall_s: float,
    prompt_tokens: int | None,
    completion_tokens: int | None,
) -> dict[str, Any]:
    """Summary of one generate() call, exposed as the backend's ``last_stats``.

    Token totals are None when the server did not report usage; the mean
    length comes from totals because a request with n > 1 reports only the
    sum over its choices.
    """
    flat = [c for g in groups for c in g]
    n = len(flat)
    reasons = Counter(c.finish_reason for c in flat)
    return {
        CLIPPED_RATIO: reasons.get("length", 0) / n if n else 0.0,
        MEAN_LENGTH: completion_tokens / n if n and completion_tokens is not None else None,
        "num_completions": n,
        "finish_reasons": dict(reasons),
        "requests": requests,
        "retries": retries,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "wall_s": round(wall_s, 4),
    }
