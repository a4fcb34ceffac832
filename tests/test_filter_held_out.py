"""What a filter buys, measured on samples it did not choose with (issue 24 point 7): arithmetic on scored rows."""

from __future__ import annotations

import json
import random

from conftest import write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.signal.filters import FilterRule, run_recipe, run_rule
from grpo_wb.signal.headroom import TaskSamples


def _tasks(n_tasks: int, n: int, seed: int = 0) -> tuple[list[TaskSamples], dict[str, float]]:
    rng = random.Random(seed)
    out, truth = [], {}
    for i in range(n_tasks):
        p = rng.choice([0.0, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98, 1.0])
        passes = tuple(rng.random() < p for _ in range(n))
        rewards = tuple(float(x) for x in passes)
        out.append(TaskSamples(f"t{i}", n, sum(passes), rewards, passes, rewards))
        truth[f"t{i}"] = p
    return out, truth


def _q(p: float, g: int) -> float:
    return 1 - p**g - (1 - p) ** g


def _truth_of_the_cross_fit(samples, truth, rule_keeps, g):
    """The true informative fraction of the tasks each fold keeps (the rule run on that fold's half), averaged."""
    folds = []
    for k in (0, 1):
        kept = [s.task_id for s in samples if rule_keeps(s.passes[k::2])]
        folds.append(sum(_q(truth[t], g) for t in kept) / len(kept))
    return sum(folds) / 2


def test_dapo_held_out_finds_the_truth_where_in_sample_overstates_it():
    samples, truth = _tasks(3000, 16)  # seeded: the figures below are fixed
    res = run_recipe(samples, "dapo", 8)
    want = _truth_of_the_cross_fit(samples, truth, lambda ps: 0 < sum(ps) < len(ps), 8)
    assert abs(res.informative_after_held_out - want) < 0.01  # measured: 0.7940 against 0.7944
    assert res.informative_after > want + 0.02  # in-sample: 0.826
    assert "2-fold cross-fit" in res.held_out and "extrapolated" not in res.held_out


def test_a_band_held_out_is_below_in_sample_and_near_the_truth():
    samples, truth = _tasks(3000, 16, seed=1)
    res = run_rule(samples, FilterRule(band=(0.2, 0.8), group_size=8))
    want = _truth_of_the_cross_fit(samples, truth, lambda ps: 0.2 <= sum(ps) / len(ps) <= 0.8, 8)
    assert abs(res.informative_after_held_out - want) < 0.02
    assert res.informative_after > res.informative_after_held_out


def test_fewer_samples_than_g_in_a_half_is_said_to_be_extrapolated():
    samples, _ = _tasks(50, 8)
    res = run_recipe(samples, "dapo", 8)  # halves of 4 samples, G = 8
    assert res.informative_after_held_out is not None and "extrapolated" in res.held_out


def test_pooled_run_groups_have_no_held_out_figure_and_say_why():
    pooled = [TaskSamples("a", 8, 4, (1.0,) * 4 + (0.0,) * 4), TaskSamples("b", 8, 8, (1.0,) * 8)]
    res = run_recipe(pooled, "dapo", 8)
    assert res.informative_after_held_out is None and "per-sample order" in res.held_out


def test_a_rule_that_keeps_nothing_on_half_the_samples_says_so():
    samples, _ = _tasks(20, 16)
    res = run_recipe(samples, "skywork", 8)  # skywork counts 16 samples; a half has 8
    assert res.informative_after_held_out is None and "keeps no task on half" in res.held_out


def test_the_command_prints_and_writes_both_figures(tmp_path, capsys):
    # 8 samples a task and G = 8, as the issue saw it: in-sample, every dapo-kept task is "always informative"
    rows = [
        {"task_id": f"c{c}", "passed": j % 8 < c, "reward": float(j % 8 < c)}
        for c in (0, 1, 2, 5, 7, 8)
        for j in range(8)
    ]
    scored = write_jsonl(tmp_path / "scored.jsonl", rows)
    out = tmp_path / "f.json"
    assert main(["filter", str(scored), "--recipe", "dapo", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    (res,) = json.loads(out.read_text())["results"]
    assert res["informative_after"] == 1.0 and res["informative_after_held_out"] < 1.0
    assert f"{res['informative_after_held_out']:.3f} held-out, 1.000 in-sample" in printed
    assert "held-out: 2-fold cross-fit" in printed and "extrapolated" in printed  # halves of 4 samples, G = 8
