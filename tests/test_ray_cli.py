"""The README's Ray recipe, as written: `ray start` on 127.0.0.1, then `grpo-wb score --executor ray --ray-address`.

Each cluster runs inside a network and PID namespace of its own (`unshare`), so only loopback exists there,
the README's port 6379 is free, and `ray stop` stops this test's Ray processes and nobody else's.
``HOME`` is a temporary folder: whether a token file exists there decides whether `ray start --head` turns
Ray's token authentication on (Ray 2.60 does whenever it finds a token, as a local ``ray.init`` leaves one).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import read_jsonl, score_argv, write_jsonl

from grpo_wb.bundled import CODEGEN_SAMPLES
from grpo_wb.cli.main import main
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.records import write_tasks

# alone: `ray start` waits a fixed 30 s (no setting changes it) for its node to register, and beside another test on
# the 2-core machine it ran out, even at nice -10, so make test runs these after the parallel run
pytestmark = [pytest.mark.ray, pytest.mark.sandbox, pytest.mark.data, pytest.mark.slow, pytest.mark.alone]

BIN = Path(sys.executable).parent
TOKEN = "5f" * 32
HEAD = "ray start --head --port 6379 --include-dashboard false --node-ip-address 127.0.0.1 --num-cpus 1"
# a second node on the same machine needs its own agent port (on separate machines the README's line is enough)
NODE = "ray start --address 127.0.0.1:6379 --node-ip-address 127.0.0.1 --num-cpus 1 --dashboard-agent-listen-port 52366"


def _isolated(script: str, tmp: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run ``script`` (bash) in a network + PID namespace of its own, with the venv's tools on PATH."""
    prefix = ["unshare", "--net", "--pid", "--fork", "--mount-proc"]
    if os.getuid() != 0:
        prefix.insert(1, "--map-root-user")
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp / "home"), "RAY_USAGE_STATS_ENABLED": "0", "LANG": "C.UTF-8"}
    return subprocess.run(
        [*prefix, "bash", "-c", "ip link set lo up\n" + script],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raycli")
    assert shutil.which("unshare") and shutil.which("ip")
    tasks = tmp / "he.jsonl"
    write_tasks(tasks, import_humaneval()[0])
    samples = tmp / "samples.jsonl"
    write_jsonl(samples, read_jsonl(CODEGEN_SAMPLES, limit=60))
    assert main(score_argv(tasks, samples, tmp / "local.jsonl", "--no-progress", "--workers", "2")) == 0
    return tmp, tasks, samples


def _verdicts(path: Path):
    return [
        {k: r[k] for k in ("completion_id", "status", "passed", "reward", "tests_passed", "error")}
        for r in read_jsonl(path)
    ]


def _score(tasks: Path, samples: Path, out: str, env: str = "") -> str:
    return (
        f"{env} /usr/bin/time -f %e -o {out}.secs grpo-wb score --executor ray --ray-address 127.0.0.1:6379 "
        f"--tasks {tasks} --completions {samples} --out {out} --no-progress > {out}.out 2> {out}.err; "
        f"echo $? > {out}.rc\n"
    )


def _result(tmp: Path, out: str) -> tuple[int, str, float]:
    return (
        int((tmp / f"{out}.rc").read_text()),
        (tmp / f"{out}.err").read_text(),
        float((tmp / f"{out}.secs").read_text().split()[-1]),
    )


def test_token_auth_cluster_from_the_readme_recipe(inputs):
    """Token auth on: the driver finds the token file as Ray's own tools do; a wrong or missing token is one line."""
    tmp, tasks, samples = inputs
    (tmp / "home" / ".ray").mkdir(parents=True)
    (tmp / "home" / ".ray" / "auth_token").write_text(TOKEN)
    (tmp / "empty").mkdir()
    script = (
        f"{HEAD} > head.log 2>&1 || exit 10\n"
        f"RAY_AUTH_MODE=token {NODE} > node.log 2>&1 || exit 11\n"
        + _score(tasks, samples, "ray.jsonl")
        + _score(tasks, samples, "wrong.jsonl", env=f"RAY_AUTH_TOKEN={'0' * 64}")
        + _score(tasks, samples, "none.jsonl", env=f"HOME={tmp / 'empty'}")
        + "ray stop > stop.log 2>&1\n"
    )
    proc = _isolated(script, tmp)
    assert proc.returncode == 0, (
        proc.returncode,
        (tmp / "head.log").read_text()[-800:] if (tmp / "head.log").exists() else proc.stderr[-800:],
    )
    assert "Token authentication is enabled" in (tmp / "head.log").read_text()  # the default this test is about
    rc, err, _ = _result(tmp, "ray.jsonl")
    assert rc == 0, err[-1500:]
    assert "executor: ray at 127.0.0.1:6379, 2 nodes" in (tmp / "ray.jsonl.out").read_text()
    assert _verdicts(tmp / "ray.jsonl") == _verdicts(tmp / "local.jsonl")
    for out, says in (
        ("wrong.jsonl", "rejected the auth token from RAY_AUTH_TOKEN"),
        ("none.jsonl", "requires token authentication and no token was found"),
    ):
        rc, err, secs = _result(tmp, out)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 1 and len(lines) == 1 and lines[0].startswith("grpo-wb: error: --ray-address 127.0.0.1:6379: ")
        assert says in lines[0] and "RAY_AUTH_TOKEN_PATH" in lines[0] and "ray get-auth-token" in lines[0]
        assert secs < 10, f"{out}: {secs} s to say so"
        assert not (tmp / out).exists()
    assert "Stopped" in (tmp / "stop.log").read_text()


def test_cluster_with_auth_disabled_needs_no_token(inputs):
    tmp, tasks, samples = inputs
    home = tmp / "home2"
    home.mkdir()
    script = (
        f"export HOME={home}\n"
        f"RAY_AUTH_MODE=disabled {HEAD} > head2.log 2>&1 || exit 10\n"
        + _score(tasks, samples, "off.jsonl")
        + "ray stop > stop2.log 2>&1\n"
    )
    proc = _isolated(script, tmp)
    assert proc.returncode == 0, proc.stderr[-800:]
    rc, err, _ = _result(tmp, "off.jsonl")
    assert rc == 0, err[-1500:]
    assert _verdicts(tmp / "off.jsonl") == _verdicts(tmp / "local.jsonl")
    assert not (home / ".ray" / "auth_token").exists()  # nothing made a token for the driver
