"""Advantages against hand-computed values (TRL GRPOTrainer conventions)."""

import math

import pytest

from grpo_wb.signal.advantages import AdvantageConfig, compute_advantages, group_has_variance, nanstd
from grpo_wb.signal.diagnostics import build_groups, step_metrics

A = [1.0, 0.0, 0.0, 1.0]  # mean 0.5, sample std sqrt(1/3) = 0.57735
B = [1.0, 1.0, 1.0, 1.0]  # all pass
C = [1.0, 0.0, 0.0, 0.0]  # mean 0.25, sample std 0.5


def close(xs, ys, tol=1e-9):
    assert len(xs) == len(ys)
    for x, y in zip(xs, ys):
        assert math.isclose(x, y, rel_tol=tol, abs_tol=tol), (xs, ys)


def test_grpo_group_scaling_uses_sample_std_plus_1e4():
    (a,) = compute_advantages([A])
    close(a, [0.8658754297607016, -0.8658754297607016, -0.8658754297607016, 0.8658754297607016])
    (c,) = compute_advantages([C])
    close(c, [1.4997000599880024, -0.4999000199960008, -0.4999000199960008, -0.4999000199960008])


def test_population_std_would_give_different_numbers():
    # The check above can fail: ddof=0 would give 0.5/(0.5+1e-4) = 0.9998 instead of 0.8659.
    (a,) = compute_advantages([A])
    assert not math.isclose(a[0], 0.5 / (0.5 + 1e-4), rel_tol=1e-3)


def test_epsilon_is_configurable():
    (a,) = compute_advantages([C], AdvantageConfig(epsilon=1e-6))
    close(a, [0.75 / (0.5 + 1e-6), -0.25 / (0.5 + 1e-6), -0.25 / (0.5 + 1e-6), -0.25 / (0.5 + 1e-6)])


def test_batch_scaling_keeps_group_mean_divides_by_batch_std():
    a, b, c = compute_advantages([A, B, C], AdvantageConfig(scale_rewards="batch"))
    # batch std over all 12 rewards [A, B, C]: mean 7/12
    allr = A + B + C
    m = sum(allr) / 12
    s = math.sqrt(sum((r - m) ** 2 for r in allr) / 11)
    close(a, [0.5 / (s + 1e-4), -0.5 / (s + 1e-4), -0.5 / (s + 1e-4), 0.5 / (s + 1e-4)])
    close(c, [0.75 / (s + 1e-4)] + [-0.25 / (s + 1e-4)] * 3)
    assert b == [0.0, 0.0, 0.0, 0.0]


def test_batch_scaling_two_groups_literal():
    a, c = compute_advantages([A, C], AdvantageConfig(scale_rewards="batch"))
    close(a, [0.9659051524730883, -0.9659051524730883, -0.9659051524730883, 0.9659051524730883])
    close(c[:1], [1.4488577287096325])


def test_none_scaling_is_dr_grpo():
    (a,) = compute_advantages([A], AdvantageConfig(scale_rewards="none"))
    close(a, [0.5, -0.5, -0.5, 0.5])


def test_rloo_leave_one_out_baseline():
    (c,) = compute_advantages([C], AdvantageConfig(mode="rloo", scale_rewards="none"))
    close(c, [1.0, -1 / 3, -1 / 3, -1 / 3])
    (a,) = compute_advantages([A], AdvantageConfig(mode="rloo", scale_rewards="none"))
    # r=1: baseline (1)/3; r=0: baseline 2/3
    close(a, [2 / 3, -2 / 3, -2 / 3, 2 / 3])


@pytest.mark.parametrize(
    "cfg",
    [
        AdvantageConfig(),
        AdvantageConfig(scale_rewards="batch"),
        AdvantageConfig(scale_rewards="none"),
        AdvantageConfig(mode="rloo"),
        AdvantageConfig(mode="rloo", scale_rewards="none"),
    ],
)
def test_zero_variance_group_gets_zero_advantages_in_every_mode(cfg):
    noisy = [0.1 + 0.2, 0.3, 0.3, 0.3]  # std ~1e-17: float noise, not signal
    out = compute_advantages([B, [0.0] * 4, noisy, A], cfg)
    assert out[0] == [0.0] * 4
    assert out[1] == [0.0] * 4
    assert out[2] == [0.0] * 4
    assert any(x != 0 for x in out[3])


def test_unscored_rewards_are_excluded_and_get_zero():
    (g,) = compute_advantages([[1.0, None, 0.0]])
    s = math.sqrt(0.5)
    close(g, [0.5 / (s + 1e-4), 0.0, -0.5 / (s + 1e-4)])
    assert compute_advantages([[None, None]]) == [[0.0, 0.0]]


def test_variance_tolerance_and_nanstd():
    assert not group_has_variance([0.3, 0.1 + 0.2])
    assert group_has_variance([0.0, 1e-3])
    assert math.isnan(nanstd(__import__("numpy").array([1.0])))
    with pytest.raises(ValueError):
        AdvantageConfig(mode="ppo")
    with pytest.raises(ValueError):
        AdvantageConfig(scale_rewards="token")


def test_group_stats_and_step_metrics_counts():
    statuses = [["pass", "fail", "fail", "pass"], ["pass"] * 4, ["pass", "parse_failure", "timeout", "error"]]
    groups = build_groups(["a", "b", "c"], [A, B, C], statuses)
    assert [g.informative for g in groups] == [True, False, True]
    assert [g.has_variance for g in groups] == [True, False, True]
    assert groups[0].n_correct == 2 and groups[0].n_total == 4
    assert math.isclose(groups[0].std, math.sqrt(1 / 3))
    assert groups[2].n_parse_failure == 1 and groups[2].n_timeout == 1 and groups[2].n_error == 1
    m = step_metrics(0, groups, [s for g in statuses for s in g], score_seconds=2.0)
    assert math.isclose(m.informative_fraction, 2 / 3)
    assert math.isclose(m.reward_variance_fraction, 2 / 3)
    assert math.isclose(m.all_pass_fraction, 1 / 3)
    assert m.all_fail_fraction == 0.0
    assert math.isclose(m.pass_rate, 7 / 12)
    assert math.isclose(m.parse_failure_rate, 1 / 12)
    assert math.isclose(m.timeout_rate, 1 / 12)
    assert math.isclose(m.mean_reward, 7 / 12)
    assert m.completions_per_second == 6.0


def test_partial_credit_variance_without_informative():
    groups = build_groups(["t"], [[0.25, 0.5, 0.75]], [["fail", "fail", "fail"]])
    assert groups[0].has_variance and not groups[0].informative
