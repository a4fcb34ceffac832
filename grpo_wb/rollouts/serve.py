"""A real OpenAI-compatible server for a model folder, started and stopped by the workbench.

Why ``transformers serve``: it is the maintained server of a well-kept library, runs on a CPU, and serves the
folder ``grpo-wb models pull`` prepares as it is (the ``[live]`` extra: ``transformers[serving]`` and ``gguf``).
:func:`serve_model` starts it on 127.0.0.1 on a free port, in a session of its own, with its output in a log
file; waits until ``GET /v1/models`` lists the model (or the process dies, or ``serve_timeout`` passes: a
one-line error quoting the log's last line); yields a :class:`Server`; and always ends the whole process group
when the block ends -- on success, on an error, on Ctrl-C (SIGTERM, then SIGKILL after a grace period). The
server also gets SIGTERM from the kernel if the workbench itself dies (``PR_SET_PDEATHSIG``). Nothing is fetched
from a model hub: the server runs with ``HF_HUB_OFFLINE=1``.

Continuous batching (on by default: ``--continuous-batching --cb-num-blocks 128 --cb-block-size 32``) serves the
requests in flight together; its default KV cache took 13.7 GB on a CPU and was killed, 128 blocks of 32 tokens
need about 1.6 GB. The server reports its own generation rate in its log ("generation: X tokens/s");
:func:`server_rates` reads it back.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from grpo_wb.config import cli, positive_float, positive_int
from grpo_wb.errors import UserError, one_line
from grpo_wb.jsonio import read_json
from grpo_wb.rollouts.models import MISSING_EXTRA

_PR_SET_PDEATHSIG = 1


@dataclass(kw_only=True)
class ServeConfig:
    """How the workbench runs ``transformers serve`` for a model folder (each flag starts ``--serve-``)."""

    serve_port: int = 0
    """port on 127.0.0.1 (0: a free one)"""
    serve_device: str = "auto"
    """the server's device: auto (a GPU when there is one), cpu, cuda:0, ..."""
    serve_dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """the server's dtype (auto: the weights' own, float32 for a pulled model)"""
    serve_threads: int = field(default=1, metadata=cli(type=positive_int))
    """torch threads of the server (OMP_NUM_THREADS; one was 4-10x faster than two on a busy 2-core machine)"""
    serve_no_batching: bool = False
    """serve one request at a time (no --continuous-batching)"""
    serve_cb_blocks: int = field(default=128, metadata=cli(type=positive_int))
    """continuous batching: KV cache blocks (--cb-num-blocks)"""
    serve_cb_block_size: int = field(default=32, metadata=cli(type=positive_int))
    """continuous batching: tokens per KV cache block (--cb-block-size)"""
    serve_timeout: float = field(default=300.0, metadata=cli(type=positive_float))
    """seconds to wait for the server to answer GET /v1/models before giving up"""


@dataclass
class Server:
    """A running server: where to send requests, the name it serves the model under, its log."""

    base_url: str
    """``http://127.0.0.1:PORT/v1``."""
    model: str
    """The served model's name (``transformers serve`` names it by the folder's path)."""
    log_path: Path
    """The server's output."""
    process: subprocess.Popen
    """Its process (the leader of a session of its own)."""
    startup_s: float = 0.0
    """Seconds from start to the first healthy answer."""


def free_port() -> int:
    """A port on 127.0.0.1 free now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_argv(model_dir: Path, port: int, cfg: ServeConfig) -> list[str]:
    """The ``transformers serve`` command line for ``model_dir``."""
    exe = Path(sys.executable).with_name("transformers")
    prog = str(exe) if exe.is_file() else shutil.which("transformers")
    if prog is None:
        raise UserError(MISSING_EXTRA)
    argv = [prog, "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--device", cfg.serve_device, "--dtype", cfg.serve_dtype, "--log-level", "info"]
    if not cfg.serve_no_batching:
        argv += ["--continuous-batching", "--cb-num-blocks", str(cfg.serve_cb_blocks)]
        argv += ["--cb-block-size", str(cfg.serve_cb_block_size)]
    return argv


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _models(base_url: str) -> list[str] | None:
    """The ids ``GET /models`` lists; None when the server does not answer (yet)."""
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=2.0) as r:
            body = r.read()
        return [str(m.get("id")) for m in json.loads(body).get("data", []) if isinstance(m, dict)]
    except (OSError, ValueError, AttributeError, urllib.error.URLError):
        return None


def _last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return one_line(lines[-1], 200) if lines else ""


@contextlib.contextmanager
def run_server(
    argv: Sequence[str],
    base_url: str,
    model: str,
    log_path: str | os.PathLike,
    *,
    timeout_s: float = 300.0,
    env: dict[str, str] | None = None,
    grace_s: float = 10.0,
) -> Iterator[Server]:
    """Run ``argv`` as a server in a session of its own, its output appended to ``log_path``; yield once
    ``GET {base_url}/models`` lists ``model``; end the whole process group when the block ends, however it ends."""
    log = Path(log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(log, "ab") as out:
        out.write(f"--- grpo-wb: {' '.join(argv)}\n".encode())
        out.flush()
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            raise UserError(f"cannot start the server ({argv[0]}): {one_line(e, 160)}") from None
    try:
        server = Server(base_url=base_url, model=model, log_path=log, process=proc)
        while True:
            code = proc.poll()
            if code is not None:
                raise UserError(
                    f"the server exited (code {code}) before answering: {_last_line(log) or 'no output'} (log: {log})"
                )
            ids = _models(base_url)
            if ids is not None and model in ids:
                break
            if time.monotonic() - t0 > timeout_s:
                seen = f"it serves {', '.join(ids)}, not {model}" if ids else _last_line(log) or "no output"
                raise UserError(
                    f"the server did not answer GET {base_url}/models within {timeout_s:g}s ({seen}; log: {log})"
                )
            time.sleep(0.5)
        server.startup_s = time.monotonic() - t0
        yield server
    finally:
        stop(proc, grace_s)


def stop(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """End ``proc``'s process group: SIGTERM, then SIGKILL after ``grace_s``; reaped."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # children that outlived their leader
        return


@contextlib.contextmanager
def serve_model(model_dir: str | os.PathLike, log_path: str | os.PathLike, cfg: ServeConfig) -> Iterator[Server]:
    """``transformers serve`` of ``model_dir`` (module docstring)."""
    folder = Path(model_dir).resolve()
    if not (folder / "config.json").is_file():
        raise UserError(f"{folder} is not a model folder (no config.json)")
    try:
        read_json(folder / "config.json")
    except (OSError, ValueError) as e:
        raise UserError(f"{folder}/config.json: {one_line(e, 160)}") from None
    port = cfg.serve_port or free_port()
    env = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(cfg.serve_threads), "PYTHONUNBUFFERED": "1"}
    argv = serve_argv(folder, port, cfg)
    with run_server(
        argv, f"http://127.0.0.1:{port}/v1", str(folder), log_path, timeout_s=cfg.serve_timeout, env=env
    ) as server:
        yield server


_RATE = re.compile(r"generation: ([0-9.]+) tokens/s, requests: (\d+) running")


def server_rates(log_path: str | os.PathLike) -> dict[str, Any]:
    """The server's own generation rate, from the periodic lines of its log ("generation: X tokens/s, requests:
    N running"): the mean over the intervals with a request running (None when it logged none)."""
    try:
        text = Path(log_path).read_text(errors="replace")
    except OSError:
        return {"intervals": 0, "mean_tokens_per_s": None, "max_tokens_per_s": None}
    rates = [float(m.group(1)) for m in _RATE.finditer(text) if int(m.group(2)) > 0 or float(m.group(1)) > 0]
    return {
        "intervals": len(rates),
        "mean_tokens_per_s": round(sum(rates) / len(rates), 2) if rates else None,
        "max_tokens_per_s": max(rates) if rates else None,
    }
