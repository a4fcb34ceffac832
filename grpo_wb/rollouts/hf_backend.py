"""Rollouts from a local Hugging Face model directory (the ``[hf]`` extra: torch + transformers).

Why a local backend next to the served one: a small checkpoint on a laptop or
one GPU answers "is there any learning signal?" without standing up a server.
Nothing is downloaded: the model and tokenizer load with ``local_files_only``.

Each request is one ``generate`` call with ``num_return_sequences = G``, after
``torch.manual_seed(request_seed(seed, request))`` (see
:mod:`grpo_wb.rollouts.sampling`), so the same seed, request and hardware give the
same texts. Only the new tokens are decoded. ``finish_reason`` is ``stop``
when the model emitted EOS or a stop string ended it, ``length`` when
``max_tokens`` new tokens were generated without either.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from grpo_wb.errors import UserError, one_line, require
from grpo_wb.rollouts.sampling import Prompt, SamplingConfig, request_seed, rollout_stats
from grpo_wb.rollouts.types import Completion, RolloutRequest
from grpo_wb.tasks.records import Task

MISSING_EXTRA = "the transformers backend needs the [hf] extra: pip install 'grpo_wb[hf]'"


@dataclass(kw_only=True)
class TransformersConfig(SamplingConfig):
    """Which local model to load and where; sampling fields come from SamplingConfig (max_tokens = max_new_tokens)."""

    MODES: ClassVar[tuple[str, ...]] = ("auto", "completions", "chat")

    model_path: str
    """Local directory with the model and tokenizer files (``save_pretrained`` output)."""
    mode: str = "auto"
    """``auto``: chat when the tokenizer has a chat template, else completions."""
    device: str = "auto"
    """``auto`` (cuda, then mps, then cpu) or a torch device such as ``cpu`` or ``cuda:1``."""
    dtype: str = "auto"
    """``auto`` (bfloat16 on GPUs that have it, else float16; float32 on cpu), ``float32``, ``bfloat16``,
    ``float16``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise UserError(f"unknown dtype {self.dtype!r} (choose auto, float32, bfloat16, float16)")


def _import_hf():
    """torch and transformers are optional and heavy: imported only when this backend is built."""
    return require("torch", MISSING_EXTRA), require("transformers", MISSING_EXTRA)


class TransformersBackend:
    """G sampled completions per task from a local causal LM."""

    name = "transformers"

    def __init__(self, config: TransformersConfig):
        self.config = config
        torch, transformers = _import_hf()
        self._torch, self._transformers = torch, transformers
        path = Path(config.model_path)
        if not path.is_dir():
            raise UserError(f"model directory not found: {config.model_path}")
        self.device = self._pick_device(torch, config.device)
        self.dtype = self._pick_dtype(torch, config.dtype, self.device)
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            dtype_kw = "dtype" if _version(transformers.__version__) >= (4, 56) else "torch_dtype"
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                str(path), local_files_only=True, **{dtype_kw: self.dtype}
            )
        except (OSError, ValueError, KeyError) as e:
            raise UserError(f"cannot load a model from {config.model_path}: {one_line(e, 200)}") from None
        self.model.to(self.device).eval()
        self.mode = config.mode
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if self.mode == "auto":
            self.mode = "chat" if has_template else "completions"
        elif self.mode == "chat" and not has_template:
            raise UserError(
                f"mode chat needs a tokenizer with a chat template; {config.model_path} has none (use mode completions)"
            )
        self.eos_ids = self._eos_ids()
        self.pad_id = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else (min(self.eos_ids) if self.eos_ids else 0)
        )
        self.model_name = str(getattr(self.model.config, "_name_or_path", "") or path.name)
        self.last_stats: dict[str, Any] = {}
        """Summary of the latest generate() call (``completions/clipped_ratio``, tokens, ...)."""

    @staticmethod
    def _pick_device(torch: Any, device: str) -> str:
        if device != "auto":
            return device
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"

    @staticmethod
    def _pick_dtype(torch: Any, dtype: str, device: str) -> Any:
        if dtype != "auto":
            return getattr(torch, dtype)
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32

    def _eos_ids(self) -> set[int]:
        ids = getattr(self.model.generation_config, "eos_token_id", None)
        ids = set(ids if isinstance(ids, (list, tuple)) else [] if ids is None else [ids])
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return ids

    def describe(self) -> dict[str, Any]:
        c = self.config
        return {
            "backend": self.name,
            "model": self.model_name,
            "model_path": c.model_path,
            **c.prompt_json(self.mode),
            "device": str(self.device),
            "dtype": str(self.dtype),
            "seed": c.seed,
            "sampling": c.sampling_json(),
            "versions": {"torch": self._torch.__version__, "transformers": self._transformers.__version__},
        }

    def prompt(self, task: Task) -> Prompt:
        """What the model is asked for ``task`` (chat when the tokenizer has a template and the mode allows it)."""
        return self.config.prompt(task, self.mode)

    def prompt_ids(self, req: RolloutRequest) -> list[int]:
        """The token ids the model is conditioned on: the chat template's rendering, or the raw prompt."""
        p = self.prompt(req.task)
        if p.endpoint == "chat":
            text = self.tokenizer.apply_chat_template(p.payload(), add_generation_prompt=True, tokenize=False)
            return self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self.tokenizer(p.text)["input_ids"]

    def generate(self, requests: Sequence[RolloutRequest]) -> list[list[Completion]]:
        t0 = time.monotonic()
        out = [self._group(r) for r in requests]
        flat = [c for g in out for c in g]
        self.last_stats = rollout_stats(
            out,
            requests=len(requests),
            retries=0,
            wall_s=time.monotonic() - t0,
            prompt_tokens=sum(c.extra["prompt_tokens"] for g in out for c in g[:1]),
            completion_tokens=sum(c.extra["completion_tokens"] for c in flat),
        )
        return out

    def _group(self, req: RolloutRequest) -> list[Completion]:
        torch, c = self._torch, self.config
        prompt = self.prompt(req.task)
        ids = self.prompt_ids(req)
        input_ids = torch.tensor([ids], device=self.device)
        seed = request_seed(c.seed, req)
        if seed is not None:
            torch.manual_seed(seed)
        greedy = c.temperature == 0  # one greedy sequence, repeated: transformers refuses G greedy returns
        kwargs: dict[str, Any] = {
            "do_sample": not greedy,
            "max_new_tokens": c.max_tokens,
            "num_return_sequences": 1 if greedy else req.group_size,
            "pad_token_id": self.pad_id,
        }
        if not greedy:  # top_k off, as on OpenAI-compatible servers (transformers would default to 50)
            kwargs.update(temperature=c.temperature, top_p=c.top_p, top_k=0)
        if self.eos_ids:
            kwargs["eos_token_id"] = sorted(self.eos_ids)
        if c.stop:
            kwargs.update(stop_strings=list(c.stop), tokenizer=self.tokenizer)
        started = time.monotonic()
        with torch.inference_mode():
            seqs = self.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
        latency = time.monotonic() - started
        group = []
        rows = seqs[:, len(ids) :].tolist()
        for i, row in enumerate(rows * req.group_size if greedy else rows):
            text, n_tokens, finish = self._decode(row)
            group.append(
                Completion(
                    task_id=req.task.task_id,
                    sample_index=i,
                    text=text,
                    backend=self.name,
                    model=self.model_name,
                    seed=seed,
                    sampling=c.sampling_json(),
                    finish_reason=finish,
                    extra={
                        "prompt_tokens": len(ids),
                        "completion_tokens": n_tokens,
                        "latency_s": round(latency, 4),
                        "mode": prompt.endpoint,
                        "prompt_source": prompt.source,
                        "prompt_sha256": prompt.sha256(),
                        "device": str(self.device),
                    },
                )
            )
        return group

    def _decode(self, row: list[int]) -> tuple[str, int, str]:
        """(text, generated token count incl. EOS, finish reason) of one returned row."""
        eos_at = next((j for j, t in enumerate(row) if t in self.eos_ids), None)
        if eos_at is not None:
            tokens, n, finish = row[:eos_at], eos_at + 1, "stop"
        else:
            n = len(row)
            while n and row[n - 1] == self.pad_id:  # rows that a stop string ended early are padded
                n -= 1
            tokens, finish = row[:n], "length" if n >= self.config.max_tokens else "stop"
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cut = min((p for p in (text.find(s) for s in self.config.stop) if p >= 0), default=None)
        if cut is not None:
            text, finish = text[:cut], "stop"
        return text, n, finish


def _version(v: str) -> tuple[int, int]:
    parts = (v.split(".") + ["0"])[:2]
    return tuple(int("".join(ch for ch in p if ch.isdigit()) or 0) for p in parts)  # type: ignore[return-value]
