"""Headroom's forecast of each step's zero-spread fraction, and of DAPO's generation batches (issue 43, point 6).

The forecast is checked the way it will be used: against runs whose truth is known. A run whose policy does not
change must land inside the band about as often as its level says; a run whose policy drifts must leave it, and the
re-forecast from its own rollouts must follow; DAPO's closed form must agree with the sampler replayed.
"""

import json
import math

import numpy as np
import pytest

from grpo_wb.errors import UserError
from grpo_wb.runs.forecast_check import forecast_check, markdown
from grpo_wb.signal.forecast import StepForecast, coverage, dapo_forecast, forecast_frame, reforecast, zero_std_forecast
from grpo_wb.signal.headroom import TaskSamples
from grpo_wb.signal.plan import PlanConfig, simulate

G = 8


def pool(seed=1, n_tasks=40, n=32):
    rng = np.random.default_rng(seed)
    tasks = [f"t{i}" for i in range(n_tasks)]
    p = dict(zip(tasks, rng.uniform(0, 1, n_tasks) ** 2))
    counts = {t: (n, int(rng.binomial(n, p[t]))) for t in tasks}
    return rng, tasks, p, counts


def run(rng, tasks, p_at, steps=200, batch=8):
    """Steps drawing ``batch`` tasks each; each group's passes from the step's true rates ``p_at(step)``."""
    drawn, groups, realized = [], [], []
    for k in range(steps):
        s = list(rng.choice(tasks, batch, replace=False))
        p = p_at(k)
        passes = [int(rng.binomial(G, p[t])) for t in s]
        drawn.append(s)
        groups.append([(t, G, c) for t, c in zip(s, passes)])
        realized.append(sum(c in (0, G) for c in passes) / batch)
    return drawn, groups, realized


def test_the_point_forecast_is_the_unbiased_estimate():
    counts = {"a": (10, 3), "b": (10, 10), "c": (10, 0)}
    (f,) = zero_std_forecast(counts, [["a", "b", "c", "zzz"]], 4, sims=200)
    by_hand = [(math.comb(3, 4) + math.comb(7, 4)) / math.comb(10, 4), 1.0, 1.0]
    assert f.expected == pytest.approx(sum(by_hand) / 3)
    assert (f.groups, f.unknown) == (3, 1)  # a task without a measured rate is counted, not forecast
    assert 0.0 <= f.lo <= f.expected <= f.hi <= 1.0


def test_a_run_whose_policy_does_not_change_lands_inside_the_band():
    rng, tasks, p, counts = pool()
    drawn, _, realized = run(rng, tasks, lambda k: p)
    inside, judged = coverage(zero_std_forecast(counts, drawn, G, realized=realized, sims=2000))
    assert judged == 200 and inside / judged >= 0.9, inside
    # the run pooled: one band for its 200 steps' groups, far narrower, still holds the realized mean
    (whole,) = zero_std_forecast(counts, [[t for s in drawn for t in s]], G, realized=[float(np.mean(realized))])
    assert whole.inside and whole.hi - whole.lo < 0.1, whole


def test_a_policy_that_learns_leaves_the_band_and_the_reforecast_follows_it():
    rng, tasks, p, counts = pool(seed=2)
    # every task's pass rate climbs to near certainty over the run: groups go all-pass, the fraction rises
    drifted = lambda k: {t: min(1.0, v + k / 60) for t, v in p.items()}  # noqa: E731
    drawn, groups, realized = run(rng, tasks, drifted, steps=120)
    pre_inside, judged = coverage(zero_std_forecast(counts, drawn, G, realized=realized, sims=1000))
    re_inside, _ = coverage(reforecast(counts, groups, G, realized=realized, window=3, sims=1000))
    assert pre_inside / judged < 0.6, pre_inside
    assert re_inside / judged >= 0.85 and re_inside > pre_inside + 30, (pre_inside, re_inside)
    (whole,) = zero_std_forecast(counts, [[t for s in drawn for t in s]], G, realized=[float(np.mean(realized))])
    assert whole.inside is False and whole.realized > whole.hi  # the learning policy left more groups flat


def test_dapo_forecast_agrees_with_the_sampler_replayed_on_the_same_samples():
    rng = np.random.default_rng(3)
    # a hard pool: most groups all-fail, so steps need several batches and some hit the cap
    samples = []
    for i in range(200):
        p = 0.02 if i % 4 else 0.3
        passes = tuple(bool(x) for x in rng.random(64) < p)
        samples.append(TaskSamples(f"t{i}", 64, sum(passes), passes=passes))
    counts = {s.task_id: (s.n, s.n_correct) for s in samples}
    fc = dapo_forecast(counts, G, train_batch_size=16, max_num_gen_batches=3)
    sim = simulate(
        samples,
        PlanConfig(
            group_size=G, batch_size=16, strategies=["dapo"], max_num_gen_batches=0, epochs=10_000, max_steps=400
        ),
    ).strategies["dapo"]
    assert fc.expected_batches == pytest.approx(sim.generation_batches_per_step, rel=0.1)
    capped = simulate(
        samples,
        PlanConfig(
            group_size=G, batch_size=16, strategies=["dapo"], max_num_gen_batches=3, epochs=10_000, max_steps=400
        ),
    ).strategies["dapo"]
    assert 0.05 < fc.p_exceed < 0.95, fc
    assert capped.cap_hits / len(capped.batch_counts) == pytest.approx(fc.p_exceed, abs=0.08)
    assert dapo_forecast(counts, G, 16, max_num_gen_batches=0).p_exceed == 0.0  # no limit: verl never raises


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _run_dir(tmp_path, steps, trl=None, sizes=(4,)):
    d = tmp_path / "run"
    d.mkdir()
    groups, metrics = [], []
    for k, step in enumerate(steps):
        for j, (task, c) in enumerate(step):
            n = sizes[j % len(sizes)]
            groups.append(
                {"step": k, "task_id": task, "n_correct": c, "n_total": n, "rewards": [1.0] * c + [0.0] * (n - c)}
            )
        metrics.append({"step": k, "frac_reward_zero_std": sum(c in (0, 4) for _, c in step) / len(step)})
    _write(d / "groups.jsonl", groups)
    _write(d / "metrics.jsonl", metrics)
    if trl is not None:
        # as TRL logs it: after the optimizer step, under the step count that already includes it (1-based)
        _write(d / "trl_log.jsonl", [{"step": k, "frac_reward_zero_std": v} for k, v in enumerate(trl, start=1)])
    return d


def _scored(tmp_path, counts):
    rows = []
    for task, (n, c) in counts.items():
        rows += [
            {"task_id": task, "passed": i < c, "reward": float(i < c), "status": "pass" if i < c else "fail"}
            for i in range(n)
        ]
    p = tmp_path / "before.jsonl"
    _write(p, rows)
    return p


def test_forecast_check_reads_a_run_and_prefers_trls_own_log(tmp_path):
    before = _scored(tmp_path, {"a": (8, 4), "b": (8, 0), "c": (8, 8)})
    steps = [[("a", 2), ("b", 0)], [("c", 4), ("a", 0)], [("a", 1), ("b", 1)]]
    check = forecast_check(before, _run_dir(tmp_path, steps, trl=[0.5, 1.0, 0.0]), sims=500)
    assert check.source == "TRL's log" and [f.realized for f in check.pre] == [0.5, 1.0, 0.0]
    assert [f.step for f in check.pre] == [0, 1, 2] and check.group_size == 4
    h = check.headline()
    assert h["judged_steps"] == 3 and 0 <= h["inside_band"] <= 3 and h["dapo"]["expected_batches"] > 1
    whole = h["whole_run"]  # the run pooled: 6 groups, half of them flat
    assert whole["groups"] == 6 and whole["step"] == 3 and whole["realized"] == pytest.approx(0.5)
    assert whole["lo"] <= whole["expected"] <= whole["hi"]
    rates = h["pass_rates"]  # measured before: a 1/2, b 0, c 1; the run's groups passed 8 of 24
    assert rates["before"] == pytest.approx(2.5 / 6) and rates["run"] == pytest.approx(8 / 24)
    assert rates["first_half"] == pytest.approx(2 / 8) and rates["second_half"] == pytest.approx(6 / 16)
    assert rates["drift_logit"] < 0  # fewer passes than the rates predict: the shift is down
    md = markdown(check).splitlines()  # the table docs/forecast.md shows: a row a step, then the whole run
    assert len(md) == 2 + 3 + 1 and md[2].startswith("| 0 | 2 | 0.50 |") and md[-1].startswith("| all 3 | 6 | 0.50 |")
    frame = forecast_frame(check.pre, check.re)
    assert list(frame["step"]) == [0, 1, 2] and {"lo", "hi", "re_lo", "re_hi", "inside"} <= set(frame.columns)


def test_forecast_check_refuses_what_it_cannot_forecast(tmp_path):
    before = _scored(tmp_path, {"a": (8, 4)})
    with pytest.raises(UserError, match="several sizes"):
        forecast_check(before, _run_dir(tmp_path, [[("a", 1), ("a", 2)]], sizes=(4, 8)), sims=200)
    with pytest.raises(UserError, match="not a grpo_wb run directory"):
        forecast_check(before, tmp_path, sims=200)
    with pytest.raises(UserError, match="group size"):
        zero_std_forecast({"a": (8, 4)}, [["a"]], 1)


def test_dapo_is_forecast_on_the_runs_own_pool(tmp_path):
    """A run trained on a frontier export draws from it, not from every task the rates were measured on."""
    run_dir = _run_dir(tmp_path, [[("a", 2), ("b", 1)]] * 3)
    only = forecast_check(_scored(tmp_path, {"a": (8, 4), "b": (8, 3)}), run_dir, sims=200)
    hard = {f"z{i}": (8, 0) for i in range(20)}  # measured, never drawn: too hard, left out of the export
    wider = forecast_check(_scored(tmp_path, {"a": (8, 4), "b": (8, 3), **hard}), run_dir, sims=200)
    assert only.dapo is not None and wider.dapo is not None
    assert wider.dapo.q == pytest.approx(only.dapo.q) and wider.dapo_simulated == only.dapo_simulated


def test_a_fraction_trl_logged_as_float32_is_the_fraction_it_is():
    two_thirds = float(np.float32(2 / 3))  # TRL's log: 0.6666666865348816
    assert StepForecast(step=0, groups=3, expected=0.3, lo=0.0, hi=2 / 3, realized=two_thirds).inside is True
    assert StepForecast(step=0, groups=3, expected=0.3, lo=0.0, hi=1 / 3, realized=two_thirds).inside is False
