"""Rollouts from any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama, TGI).

Why through the official ``openai`` client: these servers are tested against
it, so request shapes, error classes and timeouts behave as their users expect.
The client's own retries are off; this module retries itself so that the
number of attempts is bounded, visible in ``last_stats`` and in each
completion's ``extra["attempts"]``.

A group of G is asked for in one request (``n = G``). A server that rejects
``n > 1`` (HTTP 400) or returns fewer choices gets the missing samples as
single requests, each with its own seed (:func:`grpo_wb.rollouts.sampling.request_seed`),
and is sent only single requests for the rest of the backend's life. Requests
of different groups run in parallel, at most ``max_concurrency`` in flight for the
backend as a whole, however many ``generate`` calls run at once.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from grpo_wb.config import check_at_least_one
from grpo_wb.errors import UserError, one_line, require
from grpo_wb.rollouts.models import has_chat_template
from grpo_wb.rollouts.sampling import Prompt, SamplingConfig, request_seed, rollout_stats
from grpo_wb.rollouts.types import Completion, RequestRejected, RolloutRequest
from grpo_wb.tasks.records import Task

DUMMY_API_KEY = "EMPTY"
"""Sent when the key variable is unset: local servers want some bearer token, not a real one."""
RETRY_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses retried besides 5xx (the openai client's own choice)."""
N_REJECTED_STATUSES = frozenset({400, 422})
"""Answers to an ``n > 1`` request that mean "send single requests" (422: TGI-style validation)."""
_T = TypeVar("_T")

REJECTED_STATUSES = frozenset({400, 413, 422})
"""Answers that refuse one request for its content (its prompt too long, say), not the server as a whole."""


@dataclass(kw_only=True)
class OpenAIConfig(SamplingConfig):
    """Where the server is and how hard to push it; sampling fields come from SamplingConfig."""

    base_url: str
    """API root, e.g. ``http://localhost:8000/v1`` (vLLM) or ``http://localhost:11434/v1`` (Ollama)."""
    model: str
    """Model name the server serves (``GET {base_url}/models`` lists them)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key; when unset a dummy key is sent (local servers)."""
    n_per_request: bool = True
    """Ask for the G samples in one request (``n = G``); False always sends G single requests."""
    max_concurrency: int = 16
    """Most requests in flight at once."""
    timeout_s: float = 300.0
    """Per-request timeout (connect + generate), seconds."""
    max_attempts: int = 4
    """Attempts per request on 429/5xx/connection errors/timeouts (1 = no retry)."""
    backoff_s: float = 1.0
    """First retry waits about this long; each further one doubles it (with jitter)."""
    max_backoff_s: float = 30.0
    """Cap on one wait, also on a server's Retry-After."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Server-specific request fields sent as-is, e.g. vLLM's ``{"top_k": 20, "min_p": 0.05}``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.base_url = self.base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise UserError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise UserError("model must be set (the name the server serves)")
        check_at_least_one(self, "max_concurrency", "max_attempts", flags=False)
        if not self.timeout_s > 0:
            raise UserError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.backoff_s < 0 or self.max_backoff_s < 0:
            raise UserError("backoff_s and max_backoff_s must be >= 0")


@dataclass
class _Reply:
    """The choices of one successful request, with what it cost."""

    texts: list[str]
    finish_reasons: list[str]
    seed: int | None
    n: int
    latency_s: float
    attempts: int
    prompt_tokens: int | None
    completion_tokens: int | None
    response_id: str | None


def _import_openai():
    """Imported on first use: the client costs ~0.5 s, which CLI commands without it should not pay."""
    return require("openai", "the openai backend needs the openai package: pip install openai")


def _root_cause(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = cast(BaseException, exc.__cause__ or exc.__context__)  # one of them is set (the loop's condition)
    return exc


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body:
        return body
    return getattr(exc, "message", str(exc))


class OpenAIBackend:
    """G completions per task from an OpenAI-compatible ``/completions`` or ``/chat/completions``."""

    name = "openai"

    def __init__(self, config: OpenAIConfig):
        self.config = config
        self._openai = _import_openai()
        key = os.environ.get(config.api_key_env)
        self._key_set = bool(key)
        self._client = self._openai.OpenAI(
            api_key=key or DUMMY_API_KEY, base_url=config.base_url, timeout=config.timeout_s, max_retries=0
        )
        self._n_supported: bool | None = None if config.n_per_request else False
        self._jitter = random.Random()
        # one bound for the backend, however many generate() calls run at once (a streaming caller makes one
        # call per group, each with its own pool): max_concurrency is requests in flight, not per call
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self.mode = "chat" if config.mode == "auto" and _local_chat_model(config.model) else config.mode
        """The mode in use: ``auto`` is ``chat`` for a model served by its local folder that has a chat template."""
        self.last_stats: dict[str, Any] = {}
        """Summary of the latest generate() call (``completions/clipped_ratio``, tokens, retries, ...)."""

    def describe(self) -> dict[str, Any]:
        c = self.config
        return {
            "backend": self.name,
            "model": c.model,
            "base_url": c.base_url,
            **c.prompt_json(self.mode),
            "api_key_env": c.api_key_env,
            "api_key_set": self._key_set,
            "seed": c.seed,
            "sampling": {**c.sampling_json(), **c.extra_body},
            "n_per_request": self._n_supported is not False,
            "max_concurrency": c.max_concurrency,
            "timeout_s": c.timeout_s,
            "max_attempts": c.max_attempts,
        }

    def prompt(self, task: Task) -> Prompt:
        """What a request for ``task`` sends (see :meth:`SamplingConfig.prompt`)."""
        return self.config.prompt(task, self.mode)

    # ------------------------------------------------------------------ generate

    def generate(self, requests: Sequence[RolloutRequest]) -> list[list[Completion]]:
        t0 = time.monotonic()
        replies: list[list[_Reply]] = [[] for _ in requests]

        def call(r: RolloutRequest, n: int, sample: int | None = None) -> Callable[[], _Reply]:
            return lambda: self._request(r, n, request_seed(self.config.seed, r, sample))

        with ThreadPoolExecutor(max_workers=self.config.max_concurrency, thread_name_prefix="grpo-wb-openai") as pool:
            if self._n_supported is not False:
                grouped = _run_all(pool, [call(r, r.group_size) for r in requests])
                for i, reply in enumerate(grouped):
                    replies[i].append(reply)
            calls: list[Callable[[], _Reply]] = []
            owners: list[int] = []
            for i, r in enumerate(requests):
                have = sum(len(x.texts) for x in replies[i])
                for s in range(have, r.group_size):
                    calls.append(call(r, 1, s))
                    owners.append(i)
            for i, reply in zip(owners, _run_all(pool, calls)):
                replies[i].append(reply)
        out = [self._completions(r, group) for r, group in zip(requests, replies)]
        flat = [x for group in replies for x in group]
        attempts = sum(x.attempts for x in flat)
        self.last_stats = rollout_stats(
            out,
            requests=attempts,
            retries=attempts - len(flat),
            wall_s=time.monotonic() - t0,
            prompt_tokens=_total(x.prompt_tokens for x in flat),
            completion_tokens=_total(x.completion_tokens for x in flat),
        )
        self.last_stats["n_per_request"] = self._n_supported is not False
        return out

    def _completions(self, req: RolloutRequest, replies: list[_Reply]) -> list[Completion]:
        sampling = self.config.sampling_json()
        prompt = self.prompt(req.task)
        out: list[Completion] = []
        for reply in replies:
            for text, finish in zip(reply.texts, reply.finish_reasons):
                if len(out) == req.group_size:
                    break
                out.append(
                    Completion(
                        task_id=req.task.task_id,
                        sample_index=len(out),
                        text=text,
                        backend=self.name,
                        model=self.config.model,
                        seed=reply.seed,
                        sampling=sampling,
                        finish_reason=finish,
                        extra={
                            "prompt_tokens": reply.prompt_tokens,
                            "completion_tokens": reply.completion_tokens if len(reply.texts) == 1 else None,
                            "request_completion_tokens": reply.completion_tokens,
                            "request_choices": len(reply.texts),
                            "request_n": reply.n,
                            "latency_s": round(reply.latency_s, 4),
                            "attempts": reply.attempts,
                            "response_id": reply.response_id,
                            "mode": prompt.endpoint,
                            "prompt_source": prompt.source,
                            "prompt_sha256": prompt.sha256(),
                        },
                    )
                )
        return out

    # ------------------------------------------------------------------ one request

    def _request(self, req: RolloutRequest, n: int, seed: int | None) -> _Reply:
        """One request with retries; no choices when the server rejected ``n > 1`` (the caller falls back)."""
        c = self.config
        kwargs: dict[str, Any] = {
            "model": c.model,
            "n": n,
            "temperature": c.temperature,
            "top_p": c.top_p,
            "max_tokens": c.max_tokens,
        }
        if seed is not None:
            kwargs["seed"] = seed
        if c.stop:
            kwargs["stop"] = list(c.stop)
        if c.extra_body:
            kwargs["extra_body"] = dict(c.extra_body)
        prompt = self.prompt(req.task)
        if prompt.endpoint == "chat":
            create: Callable[..., Any] = self._client.chat.completions.create
            kwargs["messages"] = prompt.payload()
        else:
            create = self._client.completions.create
            kwargs["prompt"] = prompt.payload()
        try:
            with self._slots:
                resp, attempts, latency = self._with_retries(create, kwargs)
        except self._openai.APIStatusError as e:
            if n > 1 and e.status_code in N_REJECTED_STATUSES:
                self._n_supported = False
                return _Reply(
                    texts=[],
                    finish_reasons=[],
                    seed=seed,
                    n=n,
                    latency_s=0.0,
                    attempts=1,
                    prompt_tokens=0,
                    completion_tokens=0,
                    response_id=None,
                )
            raise self._user_error(e, 1, prompt.endpoint, req.task.task_id) from None
        choices = getattr(resp, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise UserError(
                f"{c.base_url} did not answer like an OpenAI-compatible server "
                f"(no choices in the response to /{prompt.endpoint.replace('chat', 'chat/completions')})"
            )
        choices = sorted(choices, key=lambda ch: ch.index if isinstance(ch.index, int) else 0)
        if len(choices) < n:
            self._n_supported = False
        if prompt.endpoint == "chat":
            texts = [(ch.message.content if ch.message is not None else None) or "" for ch in choices]
        else:
            texts = [ch.text or "" for ch in choices]
        usage = getattr(resp, "usage", None)
        return _Reply(
            texts=texts,
            finish_reasons=[ch.finish_reason or "unknown" for ch in choices],
            seed=seed,
            n=n,
            latency_s=latency,
            attempts=attempts,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            response_id=getattr(resp, "id", None),
        )

    def _with_retries(self, create: Callable[..., Any], kwargs: dict[str, Any]) -> tuple[Any, int, float]:
        """Call with bounded, jittered exponential backoff.

        Transient failures past the bound become UserError; other HTTP errors
        are raised as they are, for the caller to judge (n rejected or not).
        """
        oa, c = self._openai, self.config
        for attempt in range(1, c.max_attempts + 1):
            started = time.monotonic()
            try:
                return create(**kwargs), attempt, time.monotonic() - started
            except oa.APIStatusError as e:
                if not (e.status_code in RETRY_STATUSES or e.status_code >= 500):
                    raise
                if attempt == c.max_attempts:
                    raise self._user_error(e, attempt) from None
                wait_s = _retry_after(e)
            except oa.APIConnectionError as e:
                if attempt == c.max_attempts:
                    raise self._user_error(e, attempt) from None
                wait_s = None
            if wait_s is None:
                wait_s = c.backoff_s * 2 ** (attempt - 1) * self._jitter.uniform(0.5, 1.0)
            time.sleep(min(wait_s, c.max_backoff_s))
        raise AssertionError("unreachable")

    def _user_error(
        self, exc: Exception, attempts: int, endpoint: str = "completions", task_id: str | None = None
    ) -> UserError:
        """One line that says what went wrong and what to check; never the key. A refusal of one request's content
        (HTTP 400, 413, 422: a prompt past the context length, say) is a :class:`RequestRejected` naming the task:
        the run records it for that task and goes on."""
        oa, c, url = self._openai, self.config, self.config.base_url
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        if isinstance(exc, oa.APITimeoutError):
            return UserError(
                f"no answer from {url} within the {c.timeout_s:g}s request timeout ({tries}); "
                "raise timeout_s or lower max_concurrency"
            )
        if isinstance(exc, oa.APIConnectionError):
            return UserError(
                f"cannot connect to {url}: {one_line(_root_cause(exc), 160)} ({tries}); "
                "is the server running and is base_url right?"
            )
        status = getattr(exc, "status_code", None)
        msg = one_line(_server_message(exc), 200)
        if status == 401:
            hint = f"set ${c.api_key_env}" if not self._key_set else f"check ${c.api_key_env}"
            return UserError(f"{url} rejected the API key (HTTP 401: {msg}); {hint}")
        if status == 403:
            return UserError(f"{url} refused access (HTTP 403: {msg}); check ${c.api_key_env}")
        if status == 404:
            code = str(getattr(exc, "code", "") or "")
            if "model" in msg.lower() or "model" in code:
                return UserError(
                    f"model {c.model!r} not found at {url} (HTTP 404: {msg}); GET {url}/models lists the served names"
                )
            path = "/chat/completions" if endpoint == "chat" else "/completions"
            return UserError(
                f"{url}{path} not found (HTTP 404); base_url usually ends in /v1, "
                f"and mode {c.mode!r} needs a server with that endpoint"
            )
        if status == 429:
            return UserError(f"{url} is still rate-limiting (HTTP 429) after {tries}; lower max_concurrency")
        if status is not None and status >= 500:
            return UserError(f"server error at {url} (HTTP {status}) after {tries}: {msg}")
        if status in REJECTED_STATUSES and task_id is not None:
            return RequestRejected(
                f"{url} rejected the request for task {task_id} (HTTP {status}): {msg}", task_id=task_id
            )
        return UserError(f"{url} rejected the request (HTTP {status}): {msg}")


def _local_chat_model(model: str) -> bool:
    """Whether ``model`` names a local model folder whose tokenizer has a chat template: ``transformers serve`` and
    vLLM name a model served from a folder by its path, and an instruct model asked to continue a prompt with no
    template answers in prose."""
    try:
        return Path(model).is_dir() and has_chat_template(model)
    except OSError:
        return False


def _total(values: Any) -> int | None:
    """Sum of token counts; None when any response came without usage."""
    values = list(values)
    return None if None in values else sum(values)


def _retry_after(exc: Any) -> float | None:
    """The server's Retry-After in seconds, when it sent a number."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        value = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return value if value >= 0 else None


def _run_all(pool: ThreadPoolExecutor, calls: Sequence[Callable[[], _T]]) -> list[_T]:
    """Results in call order; the first failure cancels what has not started and is re-raised."""
    futures: list[Future[_T]] = [pool.submit(f) for f in calls]
    _, pending = wait(futures, return_when=FIRST_EXCEPTION)
    for f in pending:
        f.cancel()
    for f in futures:
        if f.done() and not f.cancelled():
            exc = f.exception()
            if exc is not None:
                raise exc
    return [f.result() for f in futures]
