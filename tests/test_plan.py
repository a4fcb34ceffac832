"""`grpo-wb plan`: the replay simulator of data strategies, its closed-form checks and its mechanics."""
from __future__ import annotations

import json
import math
import statistics

import pytest
from conftest import TOY, need, write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.signal.headroom import TaskSamples, informative_estimate
from grpo_wb.signal.plan import PlanConfig, _Greso, expected_dapo_batches, simulate


def _samples(counts, n=16):
    """Tasks whose first c of n ordered samples pass."""
    return [TaskSamples(f"t{i}", n, c, tuple(float(j < c) for j in range(n)), tuple(j < c for j in range(n)),
                        tuple(float(j < c) for j in range(n))) for i, c in enumerate(counts)]


MIXED = _samples([0, 0, 0, 1, 2, 4, 8, 12, 15, 16, 16, 3, 6, 0, 16, 9] * 4)


def test_deterministic_for_a_seed_and_different_across_seeds():
    a = simulate(MIXED, PlanConfig(batch_size=8, epochs=2, seed=3)).to_json()
    b = simulate(MIXED, PlanConfig(batch_size=8, epochs=2, seed=3)).to_json()
    c = simulate(MIXED, PlanConfig(batch_size=8, epochs=2, seed=4)).to_json()
    assert a == b and a != c
    assert a["note"].startswith("replay of recorded samples under today's policy")


def test_every_strategy_reaches_the_target_and_accounts_for_its_rollouts():
    plan = simulate(MIXED, PlanConfig(batch_size=8, epochs=3))
    n_frontier = sum(0 < s.n_correct < s.n for s in MIXED)
    assert plan.n_frontier == n_frontier and plan.target_informative_groups == 3 * n_frontier
    for name, r in plan.strategies.items():
        assert r.informative_groups >= plan.target_informative_groups and r.steps_to_target == r.steps, name
        assert r.curve[-1] == (r.rollouts, r.informative_groups)
        assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(r.curve, r.curve[1:]))
        assert r.rollouts % 8 == 0 or name == "static"
    none, static, dapo, greso = (plan.strategies[k] for k in ("none", "static", "dapo", "greso"))
    assert none.trained_groups == none.steps * 8 and none.rollouts == none.steps * 8 * 8
    assert none.wasted_rollouts == (none.trained_groups - none.informative_groups) * 8
    # dynamic sampling trains only on informative groups; every rollout is trained, wasted or surplus
    assert dapo.informative_fraction == 1.0 == greso.informative_fraction
    for r in (dapo, greso):
        assert r.rollouts == r.informative_groups * 8 + r.wasted_rollouts + r.surplus_rollouts
        assert r.generation_batches == sum(r.batch_counts)
    assert greso.skipped_prompts > 0
    # the static filter pays for its estimate: the first G samples of every task
    assert static.filter_rollouts == 8 * len(MIXED) and static.curve[0][0] > static.filter_rollouts


def test_static_reports_what_it_wrongly_dropped():
    # first 8 of 16 samples: c=4 -> all pass in its first 8 (p_hat 0.5), c=12 -> first 8 all pass (p_hat 1.0)
    samples = _samples([4, 12, 16, 0])
    plan = simulate(samples, PlanConfig(batch_size=2, epochs=1, strategies=["static"], band=(0.1, 0.9)))
    r = plan.strategies["static"]
    assert r.tasks_kept == 1  # only c=4 (first 8: 4 pass)
    assert r.wrongly_dropped == 1  # c=12: 0.75 over all samples is in the band; its first 8 all passed
    assert r.frontier_never_reached == 1 and r.tasks_covered == 1


def test_dapo_cap_is_counted_not_hidden():
    hard = _samples([1] + [0] * 30)  # one frontier task among 31: rarely B informative groups in 2 batches
    r = simulate(hard, PlanConfig(batch_size=4, epochs=1, strategies=["dapo"], max_num_gen_batches=2,
                                  max_steps=20)).strategies["dapo"]
    assert r.cap_hits > 0 and r.trained_groups < 4 * r.steps
    assert max(r.batch_counts) == 2


def test_greso_skip_rule():
    import random

    g = _Greso(random.Random(0), 0.25)
    assert g.keep("new")  # never seen: never skipped
    for _ in range(3):
        g.record("easy", [True] * 4)
    g.record("mixed", [True, False])
    g.record("hard", [False] * 4)
    g.p_easy = g.p_hard = 0.5
    trials = 4000
    kept_easy = sum(g.keep("easy") for _ in range(trials)) / trials
    assert kept_easy == pytest.approx(0.5 ** 3, abs=0.03)  # skip with 1 - p^3
    assert all(g.keep("mixed") for _ in range(100))  # the last record has variance: never skipped
    kept_hard = sum(g.keep("hard") for _ in range(trials)) / trials
    assert kept_hard == pytest.approx(0.5, abs=0.03)
    g.p_easy = 0.05
    for _ in range(20):
        g.record("easy", [True] * 4)
    kept = sum(g.keep("easy") for _ in range(20000)) / 20000
    assert kept == pytest.approx(0.01, abs=0.005)  # the exploration floor
    # adaptation: only from the second epoch on, by 0.01 per step, clipped
    g.p_easy = g.p_hard = 0.5
    g.adapt([[True] * 4] * 10, epoch=0)
    assert (g.p_easy, g.p_hard) == (0.5, 0.5)
    g.adapt([[True] * 4] * 10, epoch=1)  # all easy: above the easy target, no hard groups
    assert g.p_easy == pytest.approx(0.49) and g.p_hard == pytest.approx(0.51)


def test_expected_dapo_batches():
    assert expected_dapo_batches(1.0, 8) == pytest.approx(1.0)
    assert expected_dapo_batches(0.0, 8) is None
    # B = 1: the number of batches is geometric with mean 1/q
    assert expected_dapo_batches(0.25, 1) == pytest.approx(4.0, rel=1e-6)


def test_bad_settings_and_no_signal_are_one_line(tmp_path, capsys):
    with pytest.raises(UserError, match="no task has both a pass and a non-pass"):
        simulate(_samples([0, 16]), PlanConfig())
    scored = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "a", "passed": j < 2, "reward": float(j < 2)}
                                                for j in range(8)])
    for argv, msg in ((["--band", "0.9", "0.1"], "band needs 0 <= LOW <= HIGH <= 1"),
                      (["--group-size", "1"], "group size must be at least 2"),
                      (["--tasks", str(TOY)], "has no samples in")):
        assert main(["plan", str(scored), *argv]) == 1
        assert msg in capsys.readouterr().err


def test_cli_table_json_and_plot(tmp_path, capsys):
    rows = [{"task_id": s.task_id, "passed": p, "reward": float(p)} for s in MIXED for p in s.passes]
    scored = write_jsonl(tmp_path / "scored.jsonl", rows)
    out, png = tmp_path / "plan.json", tmp_path / "plan.png"
    assert main(["plan", str(scored), "--group-size", "4", "--batch-size", "8", "--epochs", "2", "--json", str(out),
                 "--plot", str(png)]) == 0
    printed = capsys.readouterr().out
    assert "no weights are updated" in printed and "greso:" in printed and "static: kept" in printed
    data = json.loads(out.read_text())
    for name in ("none", "static", "dapo", "greso"):
        s = data["strategies"][name]
        assert {"rollouts_per_informative_group", "informative_fraction", "tasks_covered", "rollouts"} <= set(s)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def codegen_samples():
    """CodeGen-16B's 16,400 HumanEval samples, scored here (binary reward)."""
    from grpo_wb.bundled import CODEGEN_SAMPLES
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, sample_requests
    from grpo_wb.signal.headroom import samples_from_scored_rows
    from grpo_wb.tasks.importers import import_humaneval

    tasks = {t.task_id: t for t in import_humaneval()[0]}
    with Scorer(SandboxLimits(timeout=3.0), workers=2) as sc:
        rows = [r.to_json() for r in sc.score(sample_requests(need(CODEGEN_SAMPLES), tasks))]
    assert len(rows) == 16400
    return samples_from_scored_rows(rows)


@pytest.mark.sandbox
@pytest.mark.data
@pytest.mark.slow
def test_closed_forms_on_codegen_samples(codegen_samples):
    """none: informative fraction -> q(G) and rollouts per informative group -> G / q(G); dapo (no cap): the mean
    generation batches per step -> sum_k P(Bin(kB, q) < B). Tolerances: 4 standard errors of the simulated means."""
    samples = codegen_samples
    assert {s.n for s in samples} == {100}
    g, b, steps = 8, 32, 1500
    plan = simulate(samples, PlanConfig(group_size=g, batch_size=b, epochs=10**6, strategies=["none", "dapo"],
                                        max_steps=steps, max_num_gen_batches=0))
    q = sum(informative_estimate(s.n, s.n_correct, g)[0] for s in samples) / len(samples)
    assert plan.q == pytest.approx(q)
    none, dapo = plan.strategies["none"], plan.strategies["dapo"]
    assert none.steps == dapo.steps == steps and none.replacement_draws == 0
    se = math.sqrt(q * (1 - q) / none.trained_groups)
    assert abs(none.informative_fraction - q) < 4 * se, (none.informative_fraction, q, se)
    se_cost = g / q ** 2 * se  # delta method for G / fraction
    assert abs(none.rollouts_per_informative_group - g / q) < 4 * se_cost
    k = dapo.batch_counts
    se_k = statistics.stdev(k) / math.sqrt(len(k))
    assert abs(statistics.mean(k) - expected_dapo_batches(q, b)) < 4 * se_k, (statistics.mean(k), se_k)


@pytest.mark.sandbox
@pytest.mark.data
@pytest.mark.slow
def test_the_four_strategies_on_codegen_samples_at_g8_b32_e5(codegen_samples):
    plan = simulate(codegen_samples, PlanConfig(group_size=8, batch_size=32, epochs=5))
    r = plan.strategies
    assert plan.n_frontier == 121 and plan.target_informative_groups == 605
    assert all(x.steps_to_target is not None for x in r.values())
    # what each is for: dynamic sampling trains only on informative groups, the static filter sees fewer tasks
    assert r["dapo"].informative_fraction == r["greso"].informative_fraction == 1.0
    assert r["static"].tasks_covered < r["none"].tasks_covered == 164
    assert r["greso"].rollouts_per_informative_group < r["dapo"].rollouts_per_informative_group
