"""``grpo-wb reward-audit --completions``: the trainer's real reward on real completions, beside grpo_wb's verdicts.

The sampled-verl check of issue 24: CodeRL's programs for the bundled APPS problems, as verl rows, answered in
chat markdown by a loopback server, sampled and scored by ``grpo-wb sample --score`` under both judges, then each
completion judged by verl's own ``prime_code`` (bundled, unchanged) inside the audit's sandbox.
"""

from __future__ import annotations

import gzip
import json
import os

import pytest
from conftest import import_argv, read_jsonl, replay_model, write_jsonl

from grpo_wb.bundled import APPS_ROWS, APPS_ROWS_SAMPLES
from grpo_wb.cli.main import main
from grpo_wb.reward_audit.agreement import summarize
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowexport import build_row, parsed_from_task
from grpo_wb.testing.loopback import ReplayServer

STYLES = [  # how a chat model wraps its program
    lambda c: f"Here is my solution:\n```python\n{c.rstrip()}\n```\nIt reads the input and prints the answer.",
    lambda c: f"```\n{c.rstrip()}\n```",  # an untagged fence: prime_code takes nothing from it
    lambda c: (
        f"<think>\nFirst try:\n```python\nprint(0)\n```\nNo, that ignores the input.\n</think>\n"
        f"```python\n{c.rstrip()}\n```\nFor the first example it prints:\n```\n42\n```"
    ),
]


def _verl_tasks(tmp_path):
    """The bundled APPS problems as verl rows (data_source apps), imported back: verl/0 ... verl/4."""
    assert main(import_argv("apps-rows", APPS_ROWS, tmp_path / "apps.jsonl")) == 0
    apps = load_tasks(tmp_path / "apps.jsonl")
    write_jsonl(tmp_path / "verl.jsonl", [build_row("verl", parsed_from_task(t), t, "apps") for t in apps])
    assert main(import_argv("verl", tmp_path / "verl.jsonl", tmp_path / "T.jsonl")) == 0
    tasks = load_tasks(tmp_path / "T.jsonl")
    return {a.task_id: t.task_id for a, t in zip(apps, tasks)}, tasks


def _agreement(completions, out, *extra: str) -> list[str]:
    """`grpo-wb reward-audit` of verl's prime_code against grpo_wb's verdicts on a scored file."""
    argv = ["reward-audit", "--reward", "builtin:verl-prime-code", "--completions", str(completions), "--out", str(out)]
    return [*argv, *extra]


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.data
def test_the_trainer_judge_agrees_with_verls_prime_code_on_sampled_chat_replies(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    ids, tasks = _verl_tasks(tmp_path)
    programs: dict[str, list[str]] = {}
    with gzip.open(APPS_ROWS_SAMPLES, "rt") as f:
        for line in f:
            r = json.loads(line)
            programs.setdefault(ids[r["task_id"]], []).append(r["completion"])
    replies = {t: [style(p) for style in STYLES for p in ps[:3]] for t, ps in programs.items()}
    n = min(len(v) for v in replies.values())
    scored = []
    for judge in ("strict", "trainer"):
        with ReplayServer(tasks, replies, model="M") as srv:
            argv = ["sample", "--tasks", str(tmp_path / "T.jsonl"), *replay_model(srv), "--n", str(n)]
            argv += ["--out", str(tmp_path / f"{judge}.jsonl"), "--score", "--judge", judge, "--timeout", "10"]
            assert main(argv) == 0
        scored += read_jsonl(tmp_path / f"{judge}.scored.jsonl")
    write_jsonl(tmp_path / "both.jsonl", scored)
    capsys.readouterr()
    assert main(_agreement(tmp_path / "both.jsonl", tmp_path / "a", "--tasks", str(tmp_path / "T.jsonl"))) == 0
    printed = capsys.readouterr().out
    result = json.loads((tmp_path / "a" / "agreement.json").read_text())
    lines = read_jsonl(tmp_path / "a" / "agreement.jsonl")
    assert len(lines) == len(scored) == 2 * n * len(tasks)
    trainer, strict = result["by_judge"]["prime_code"], result["by_judge"]["grpo_wb"]
    assert (
        trainer["judged"] == n * len(tasks) and trainer["agree"] == trainer["judged"]
    )  # every verdict is prime_code's
    assert strict["agree"] < strict["judged"]  # grpo_wb's own rule is not the trainer's: it differs on some
    assert strict["theirs_only"] > 0 and strict["ours_only"] > 0
    assert "prime_code" in printed and "1.000" in printed


def test_agreement_counts_and_category_changes():
    rows = [
        {"task_id": "a", "judge": "j", "passed": True, "their_reward": 1.0, "kind": "agree"},
        {"task_id": "a", "judge": "j", "passed": False, "their_reward": 1.0, "kind": "theirs_only"},
        {"task_id": "b", "judge": "j", "passed": True, "their_reward": 0.5, "kind": "ours_only"},
        {"task_id": "b", "judge": "j", "passed": False, "their_reward": None, "kind": "not_judged"},
    ]
    (s,) = summarize(rows).values()
    assert (s["judged"], s["agree"], s["theirs_only"], s["ours_only"], s["not_judged"]) == (3, 1, 1, 1, 1)
    assert s["agreement"] == pytest.approx(1 / 3)
    # a: frontier by grpo_wb (one pass, one fail), too easy by theirs (both paid); b: too easy -> too hard
    assert s["tasks_changing_category"] == {"a": ["frontier", "too_easy"], "b": ["too_easy", "too_hard"]}


def test_agreement_mistakes_are_one_line(tmp_path, capsys):
    scored = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "nope", "passed": True, "reward": 1.0, "completion": "x"}])
    tasks = os.path.join(os.path.dirname(__file__), "..", "data", "toy_tasks.jsonl")
    for argv, msg in (
        ([], "--completions needs --tasks"),
        (["--tasks", tasks, "--exploit", "exit_sys"], "--exploit and --kind are for the battery"),
        (["--tasks", tasks], "task 'nope' is not in"),
    ):
        assert main(_agreement(scored, tmp_path / "o", *argv)) == 1
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o" / "agreement.jsonl").exists()
