"""The Ray executor on a real Ray cluster started here: a head plus two worker nodes, all on 127.0.0.1.

Each node is its own raylet process with one CPU (Ray's ``cluster_utils.Cluster``,
the tool Ray's own tests use), so "one actor per node" means three actors with
one sandbox worker each. Results are compared field by field with the local
executor on the same completions, real CodeGen samples included.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import ray  # the [ray] extra is part of `make test`: a missing Ray fails here, it does not skip
import yaml
from conftest import TOY, read_jsonl, score_argv, write_jsonl  # noqa: E402

from grpo_wb.bundled import CODEGEN_SAMPLES  # noqa: E402
from grpo_wb.scoring.ray_executor import IncompleteScoring, RayScorer, connect  # noqa: E402
from grpo_wb.scoring.sandbox import SandboxLimits  # noqa: E402
from grpo_wb.scoring.scorer import RESULT_TIMING_FIELDS, Scorer, ScoreRequest  # noqa: E402
from grpo_wb.tasks.importers import import_humaneval  # noqa: E402
from grpo_wb.tasks.records import load_tasks  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.sandbox, pytest.mark.data, pytest.mark.slow]

CODET = CODEGEN_SAMPLES
LIMITS = SandboxLimits(timeout=3.0)
CLI = [sys.executable, "-m", "grpo_wb.cli"]


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False  # as grpo_wb's connect(): keep every address on 127.0.0.1
    for attempt in range(3):  # Ray gives a raylet a fixed 30 s to register: on a machine loaded far past its
        c = None  # cores it can miss that once; the tests decide behaviour, not start-up speed
        try:
            c = Cluster(
                initialize_head=True,
                head_node_args={"num_cpus": 1, "include_dashboard": False, "node_ip_address": "127.0.0.1"},
            )
            for _ in range(2):
                c.add_node(num_cpus=1, node_ip_address="127.0.0.1")
            c.wait_for_nodes()
            break
        except Exception:  # noqa: BLE001 - Ray's start-up timeout is a plain Exception
            if c is not None:
                c.shutdown()
            if attempt == 2:
                raise
    connect(c.address)
    yield c
    ray.shutdown()
    c.shutdown()


def _key(r):
    """Everything a verdict is (duration, cache hits and whether a stop was needed depend on timing)."""
    d = r.to_json() if hasattr(r, "to_json") else dict(r)
    return {k: v for k, v in d.items() if k not in RESULT_TIMING_FIELDS}


@pytest.fixture(scope="module")
def humaneval():
    return {t.task_id: t for t in import_humaneval()[0]}


@pytest.fixture(scope="module")
def real_requests(humaneval):
    samples = read_jsonl(CODET, limit=400)  # a missing data file fails here, it does not skip
    toy = load_tasks(TOY)
    reqs = [ScoreRequest(humaneval[s["task_id"]], s["completion"], i) for i, s in enumerate(samples)]
    reqs += [
        ScoreRequest(t, t.canonical_solution, k, completion_id=f"{t.task_id}@canon{k}") for k in range(2) for t in toy
    ]
    reqs += [ScoreRequest(t, "    return None\n", 0, completion_id=f"{t.task_id}@wrong") for t in toy]
    return reqs


@pytest.fixture(scope="module")
def local_results(real_requests):
    with Scorer(LIMITS, workers=2) as sc:
        return [_key(r) for r in sc.score(real_requests)]


def test_usage_stats_are_off_and_every_node_gets_an_actor(cluster, monkeypatch):
    from ray._common.usage import usage_lib

    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED")  # the fixture set it: connect() must set it by itself
    connect(cluster.address)
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0" and not usage_lib.usage_stats_enabled()
    with RayScorer(LIMITS, address=cluster.address) as rs:
        info = rs.executor_info()
    nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert info["executor"] == "ray" and info["nodes"] == 3 == len(nodes)
    assert {n["node_id"] for n in info["per_node"]} == nodes
    assert info["workers"] == 3  # one sandbox per node CPU
    with Scorer(LIMITS, workers=1) as sc:
        local_mode = sc.isolation()["mode"]
    assert all(n["isolation"]["mode"] == local_mode for n in info["per_node"])


def test_results_identical_to_the_local_executor_on_real_samples(cluster, real_requests, local_results):
    with RayScorer(LIMITS, address=cluster.address) as rs:
        got = [_key(r) for r in rs.score(real_requests)]
        assert rs.retried_chunks == 0
    assert len(got) == len(local_results) == len(real_requests)
    assert got == local_results
    statuses = {r["status"] for r in got}
    assert {"pass", "fail"} <= statuses  # a comparison over real mixed verdicts, not a trivial one


def _slow_first(reqs):
    """A correct completion that takes ~2 s: the first chunk is certainly in flight 0.7 s in."""
    t = next(t for t in load_tasks(TOY) if t.entry_point == "add")
    slow = ScoreRequest(t, "    import time\n    time.sleep(2.0)\n    return a + b\n", 0, completion_id="slow")
    return [slow] + list(reqs)


@pytest.fixture
def gate(tmp_path):
    """A folder the gated completion watches (bound read-only into every sandbox): it ends once ``open`` is there."""
    d = tmp_path / "gate"
    d.mkdir()
    d.chmod(0o755)  # read by the sandbox's own uid
    return d


def _gated_limits(gate):
    return SandboxLimits(timeout=30.0, ro_binds=(str(gate),))


def _open(gate, is_open=True):
    if is_open:
        (gate / "open").write_text("open\n")
        (gate / "open").chmod(0o644)
    else:
        (gate / "open").unlink(missing_ok=True)


def _gated_first(reqs, gate):
    """A correct completion that runs until the gate opens (at most 25 s): in flight until then, whatever the
    machine's speed, so a kill before the gate opens certainly hits work in flight."""
    t = next(t for t in load_tasks(TOY) if t.entry_point == "add")
    body = (
        f"    import os, time\n    _until = time.monotonic() + 25\n"
        f"    while not os.path.exists({str(gate / 'open')!r}) and time.monotonic() < _until:\n"
        f"        time.sleep(0.01)\n    return a + b\n"
    )
    return [ScoreRequest(t, body, 0, completion_id="slow")] + list(reqs)


def _once_dispatched(holder, then):
    """Run ``then`` (a thread) once ``holder()`` (an actor) has a chunk in flight: an event, not a delay."""

    def go():
        until = time.monotonic() + 120
        while not holder().inflight and time.monotonic() < until:
            time.sleep(0.005)
        then()

    th = threading.Thread(target=go, daemon=True)
    th.start()
    return th


@pytest.mark.sandbox_breaks  # kills actors mid-run: a killed actor's sandbox worker can die (signal 9) and be
# reported by that actor before it goes (seen once in a fresh-clone run); what is tested is the run's answer
def test_killing_an_actor_mid_run_still_yields_complete_identical_results(cluster, real_requests, gate):
    reqs = _gated_first(real_requests[:200], gate)
    limits = _gated_limits(gate)
    _open(gate)
    with Scorer(limits, workers=2) as sc:
        want = [_key(r) for r in sc.score(reqs)]
    _open(gate, False)
    with RayScorer(limits, address=cluster.address, chunk_size=16) as rs:

        def kill():  # the actor holding the gated chunk (the first dispatch goes to the first actor)
            ray.kill(rs.actors[0].handle, no_restart=True)
            _open(gate)

        th = _once_dispatched(lambda: rs.actors[0], kill)
        got = [_key(r) for r in rs.score(reqs)]
        th.join()
        assert rs.retried_chunks >= 1 and rs.replacements >= 1  # the kill hit work in flight
        assert rs.executor_info()["nodes"] == 3  # the replacement went back to the free node
    ids = [r["completion_id"] for r in got]
    assert len(ids) == len(set(ids)) == len(reqs)  # every completion exactly once
    assert got == want


@pytest.mark.sandbox_breaks  # kills actors mid-run: a killed actor's sandbox worker can die (signal 9) and be
# reported by that actor before it goes (seen once in a fresh-clone run); what is tested is the run's answer
def test_a_cluster_that_loses_every_actor_names_the_missing_completions(cluster, real_requests, gate):
    """The gate never opens: the first completion cannot be scored before the actors go, whenever they go."""
    reqs = _gated_first(real_requests[:120], gate)
    seen = []
    with RayScorer(_gated_limits(gate), address=cluster.address, chunk_size=16, max_replacements=0) as rs:

        def kill():
            for a in list(rs.actors):
                ray.kill(a.handle, no_restart=True)

        th = _once_dispatched(lambda: rs.actors[0], kill)
        with pytest.raises(IncompleteScoring) as ei:
            for r in rs.score(reqs):
                seen.append(r.completion_id)
        th.join()
    missing = ei.value.missing
    assert missing and missing[0] == "slow"
    assert seen + missing == [r.id for r in reqs]
    assert "were not scored" in str(ei.value) and "slow" in str(ei.value)


def test_back_pressure_keeps_the_driver_buffer_bounded(cluster):
    t = next(t for t in load_tasks(TOY) if t.entry_point == "add")
    pulled = yielded = 0
    worst = 0

    def reqs():
        # a slow first completion holds up the output: only the read-ahead bound stops the driver
        # from reading on while the chunks behind it finish
        nonlocal pulled
        for r in _slow_first(ScoreRequest(t, f"    return a + b  # {i % 50}\n", i) for i in range(3000)):
            pulled += 1
            yield r

    with RayScorer(LIMITS, address=cluster.address, chunk_size=8, inflight_per_actor=2) as rs:
        for r in rs.score(reqs()):
            yielded += 1
            worst = max(worst, pulled - yielded)
            assert r.passed or r.completion_id == "slow"  # it sleeps 2 s a call: it may run into the deadline
        bound = 2 * rs.inflight_per_actor * len(rs.actors) * rs.chunk_size + rs.read_ahead + 1
    assert yielded == 3001
    assert worst <= bound < 3000


def test_cli_score_on_the_cluster_equals_local(cluster, tmp_path, humaneval):
    src = tmp_path / "samples.jsonl"
    write_jsonl(src, read_jsonl(CODET, limit=150))
    tasks = tmp_path / "he.jsonl"
    from grpo_wb.tasks.records import write_tasks

    write_tasks(tasks, humaneval.values())
    outs = {}
    for ex in ("local", "ray"):
        extra = ["--executor", "ray", "--ray-address", cluster.address] if ex == "ray" else []
        p = subprocess.run(
            [*CLI, *score_argv(tasks, src, tmp_path / f"{ex}.jsonl", "--no-progress", *extra)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        outs[ex] = p.stdout
    assert "executor: ray at 127.0.0.1" in outs["ray"] and outs["ray"].count("isolation on ") == 3
    rows = {ex: [_key(r) for r in read_jsonl(tmp_path / f"{ex}.jsonl")] for ex in ("local", "ray")}
    assert rows["ray"] == rows["local"] and len(rows["ray"]) == 150
    pass_at = [ln for ln in outs["local"].splitlines() if ln.startswith("pass@")]
    assert pass_at and pass_at == [ln for ln in outs["ray"].splitlines() if ln.startswith("pass@")]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize(
    "address,words", [(None, "no Ray head answers there"), ("not-an-address", "expected HOST:PORT")]
)
def test_a_bad_ray_address_is_a_one_line_error(tmp_path, address, words):
    address = address or f"127.0.0.1:{_closed_port()}"
    write_jsonl(tmp_path / "c.jsonl", [{"task_id": "toy/add", "completion": "    return a + b\n"}])
    argv = score_argv(TOY, tmp_path / "c.jsonl", tmp_path / "o.jsonl", "--executor", "ray", "--ray-address", address)
    p = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grpo-wb: error: --ray-address") and words in lines[0], p.stderr
    assert "Traceback" not in p.stderr  # (no hang: the subprocess timeout above)
    assert not (tmp_path / "o.jsonl").exists()


def test_ray_address_without_the_ray_executor_is_an_error(tmp_path, capsys):
    from grpo_wb.cli.main import main

    write_jsonl(tmp_path / "c.jsonl", [{"task_id": "toy/add", "completion": "    return a + b\n"}])
    argv = score_argv(TOY, tmp_path / "c.jsonl", tmp_path / "o.jsonl", "--ray-address", "127.0.0.1:6379")
    assert main(argv) == 1
    assert "--ray-address needs --executor ray" in capsys.readouterr().err  # not some other error


def test_smoke_run_on_ray_matches_local_and_records_the_cluster(cluster, tmp_path, capsys):
    """The README's `grpo-wb smoke --executor ray --ray-address HEAD_IP:6379`, with the cluster's address."""
    from grpo_wb.cli.main import main

    runs = {}
    for ex in ("local", "ray"):
        argv = ["smoke", "--tasks", str(TOY), "--out", str(tmp_path / ex), "--group-size", "4", "--batch-size", "4"]
        argv += ["--steps", "2", "--seed", "1", "--timeout", "3.0", "--no-progress", "--executor", ex]
        assert main(argv + (["--ray-address", cluster.address] if ex == "ray" else [])) == 0
        runs[ex] = tmp_path / ex
    printed = capsys.readouterr()
    assert "executor: ray at 127.0.0.1" in printed.out + printed.err
    strip = (*RESULT_TIMING_FIELDS, "seconds", "completions_per_second", "updated_unix")

    def rows(p):
        out = []
        for r in read_jsonl(p):
            r = {k: v for k, v in r.items() if k not in strip}
            if "completions" in r:
                r["completions"] = [{k: v for k, v in c.items() if k not in strip} for c in r["completions"]]
            out.append(r)
        return out

    for name in ("groups.jsonl", "last_rollouts.jsonl"):
        assert rows(runs["ray"] / name) == rows(runs["local"] / name), name
    m = {ex: read_jsonl(runs[ex] / "metrics.jsonl") for ex in runs}
    assert [x["informative_fraction"] for x in m["ray"]] == [x["informative_fraction"] for x in m["local"]]
    manifest = json.loads((runs["ray"] / "checkpoint_manifest.json").read_text())
    ex = manifest["sandbox"]["executor"]
    assert ex["executor"] == "ray" and ex["nodes"] == 3 and len(ex["per_node"]) == 3
    assert all("mode" in n["isolation"] for n in ex["per_node"])
    assert (
        json.loads((runs["local"] / "checkpoint_manifest.json").read_text())["sandbox"]["executor"]["executor"]
        == "local"
    )


def test_batch_reports_run_on_the_cluster_with_the_same_index(cluster, tmp_path, capsys):
    from nbfixtures import make_notebook

    from grpo_wb.cli.main import main

    make_notebook(
        tmp_path / "nbs" / "ok.ipynb",
        'n: int = 1  # n\nout_dir: str = ""  # out\n',
        [
            "import json, pathlib\npathlib.Path(out_dir, 'headline.json').write_text("
            "json.dumps({'informative_fraction': n / 10}))"
        ],
    )
    make_notebook(tmp_path / "nbs" / "broken.ipynb", 'out_dir: str = ""  # out\n', ["1 / 0"])
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "out": str(tmp_path / "reports"),
                "workers": 3,
                "cell_timeout": 60,
                "timeout": 120,
                "reports": [
                    {"notebook": "nbs/ok.ipynb", "name": "ok-{n}", "grid": {"n": [2, 3]}},
                    {"notebook": "nbs/broken.ipynb", "name": "broken"},
                ],
            }
        )
    )
    rc = main(["batch", str(plan), "--no-progress", "--executor", "ray", "--ray-address", cluster.address])
    out = capsys.readouterr()
    assert rc == 1 and "FAILED broken: ZeroDivisionError: division by zero" in out.err
    assert out.out.strip().splitlines()[-1] == str(tmp_path / "reports" / "index.html")
    results = {r["name"]: r for r in json.loads((tmp_path / "reports" / "index.json").read_text())}
    assert [results[n]["status"] for n in ("ok-2", "ok-3", "broken")] == ["ok", "ok", "failed"]
    assert results["ok-3"]["headline"]["informative_fraction"] == pytest.approx(0.3)
    nodes = {n["NodeID"] for n in ray.nodes()}
    assert all(r["node"] in nodes for r in results.values())
    assert len({r["node"] for r in results.values()}) >= 2  # one CPU per node: three reports spread out
    assert "0.300" in (tmp_path / "reports" / "index.html").read_text()


def test_ray_without_an_address_starts_a_local_instance(cluster, tmp_path):
    """A new instance, even with a cluster already running on this machine."""
    write_jsonl(
        tmp_path / "c.jsonl", [{"task_id": t.task_id, "completion": t.canonical_solution} for t in load_tasks(TOY)]
    )
    argv = score_argv(TOY, tmp_path / "c.jsonl", tmp_path / "o.jsonl", "--executor", "ray", "--workers", "1")
    p = subprocess.run([*CLI, *argv, "--no-progress"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "executor: ray at local, 1 nodes, 1 workers" in p.stdout
    rows = read_jsonl(tmp_path / "o.jsonl")
    assert len(rows) == len(load_tasks(TOY)) and all(r["passed"] for r in rows)


@pytest.mark.sandbox_breaks  # kills actors mid-run: a killed actor's sandbox worker can die (signal 9) and be
# reported by that actor before it goes (seen once in a fresh-clone run); what is tested is the run's answer
def test_a_node_dying_mid_run_has_its_chunks_scored_elsewhere(cluster, real_requests, gate):
    """Last in this module: it takes a worker node out of the shared cluster."""
    gated = _gated_first([], gate)[0]
    reqs = list(real_requests[:160])
    for k in (0, 16, 32):  # the first chunk of every actor is gated, so each holds work when the node goes
        reqs.insert(k, ScoreRequest(gated.task, gated.completion, k, completion_id=f"slow{k}"))
    limits = _gated_limits(gate)
    _open(gate)
    with Scorer(limits, workers=2) as sc:
        want = [_key(r) for r in sc.score(reqs)]
    _open(gate, False)
    with RayScorer(limits, address=cluster.address, chunk_size=16) as rs:
        by_id = {n.node_id: n for n in cluster.worker_nodes}
        victim = next(a for a in rs.actors if a.node_id in by_id)

        def remove():
            cluster.remove_node(by_id[victim.node_id])
            _open(gate)

        th = _once_dispatched(lambda: victim, remove)
        got = [_key(r) for r in rs.score(reqs)]
        th.join()
        assert rs.retried_chunks >= 1
        info = rs.executor_info()
    assert info["nodes"] == 2 and victim.node_id not in {n["node_id"] for n in info["per_node"]}
    assert got == want
