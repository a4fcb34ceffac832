"""Sampling until decided (grpo_wb.signal.sequential): the rule against exact path enumeration, the replay, the
bench set, and ``grpo-wb sample --adaptive`` end to end."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import pytest
from conftest import TOY, read_jsonl

from grpo_wb.bench.adaptive import compare
from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.signal.headroom import TaskSamples
from grpo_wb.signal.sequential import (
    AdaptiveConfig,
    agreement_independent,
    alpha_at,
    clopper_pearson,
    curtail_bound,
    decide,
    decide_after,
    error_probability,
    expected_over_orders,
    full_decision,
    is_look,
    next_round,
    replay,
    run_stopping_rule,
)

PS = [i / 200 for i in range(201)]


def _paths(n_max: int):
    """Every outcome sequence of length n_max with its number of passes."""
    for seq in itertools.product((False, True), repeat=n_max):
        yield list(seq), sum(seq)


@pytest.mark.parametrize("n_max,r,e", [(10, 3, 0.05), (12, 1, 0.1), (9, 4, 0.2), (14, 5, 0.05)])
def test_category_error_by_enumerating_every_path_is_the_closed_form_and_below_the_bound(n_max, r, e):
    cfg = AdaptiveConfig(round_size=r, max_error=e)
    wrong = []  # (passes, n_max) of the paths whose adaptive decision differs from the full path's
    for seq, c in _paths(n_max):
        taken, d = run_stopping_rule(seq, n_max, cfg)
        assert taken <= n_max and d.label is not None
        if d.label != full_decision(n_max, c, cfg):
            wrong.append(c)
    for p in PS:
        exact = sum(p**c * (1 - p) ** (n_max - c) for c in wrong)
        assert exact == pytest.approx(error_probability(p, n_max, cfg), abs=1e-12)
        assert exact <= curtail_bound(decide_after(n_max, e), n_max) + 1e-12 <= e + 1e-12


@pytest.mark.parametrize("n_max", [2, 5, 16, 64, 100, 1000])
def test_the_bound_holds_for_every_p_and_m_is_the_smallest_that_meets_it(n_max):
    for e in (0.01, 0.05, 0.1, 0.3):
        m = decide_after(n_max, e)
        worst = max(error_probability(p, n_max, AdaptiveConfig(max_error=e)) for p in PS)
        assert worst <= curtail_bound(m, n_max) <= e
        assert m == 1 or curtail_bound(m - 1, n_max) > e
    assert (
        decide_after(100, 0.05) == 88 and decide_after(8, 0.05) == 8
    )  # (1 - e max_error) N for large N; all of a small N


def test_frontier_is_decided_at_the_first_mixed_round_and_the_maximum_is_respected():
    one = AdaptiveConfig(round_size=1)
    assert run_stopping_rule([False, False, True] + [False] * 97, 100, one) == (
        3,
        run_stopping_rule([True, False] * 50, 100, one)[1],
    )
    assert run_stopping_rule([False, False, True] + [False] * 97, 100, one)[1].label == "frontier"
    assert run_stopping_rule([False, False, True] + [False] * 97, 100, AdaptiveConfig(round_size=4))[0] == 4
    taken, d = run_stopping_rule([False] * 100, 100, AdaptiveConfig(round_size=8))
    assert (taken, d.label, d.forced) == (88, "too_hard", False)  # rounds cut at m = 88: 11 rounds of 8
    taken, d = run_stopping_rule([True] * 16, 16, AdaptiveConfig(round_size=5, max_error=0.001))
    assert (taken, d.label, d.forced) == (16, "too_easy", True)
    assert decide_after(20, 0.05) == 18  # rounds end at 8, 16, then 18 (m), 20 (n_max)
    assert [next_round(n, 20, AdaptiveConfig(round_size=8)) for n in (0, 3, 8, 16, 18, 19, 20)] == [8, 5, 8, 2, 2, 1, 0]


def test_decide_between_looks_waits_except_for_a_mixed_sample():
    cfg = AdaptiveConfig(round_size=8, decide="band", band=(0.2, 0.8))
    assert decide(5, 5, 100, cfg).label is None  # not a look: an interrupted round is completed first
    assert decide(3, 1, 100, AdaptiveConfig(round_size=8)).label == "frontier"
    with pytest.raises(ValueError):
        decide(5, 6, 100, cfg)


def test_clopper_pearson_and_the_spending():
    assert sum(alpha_at(t, 0.05) for t in range(1, 200_000)) == pytest.approx(0.05, rel=1e-4)
    lo, hi = clopper_pearson(10, 0, 0.05)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))  # the closed form at c = 0
    lo, hi = clopper_pearson(10, 10, 0.05)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10))


@pytest.mark.parametrize("p", [0.1, 0.15, 0.5, 0.85, 0.95])
def test_band_intervals_miss_p_with_probability_at_most_max_error_exactly(p):
    """P(some look's interval misses p) by dynamic programming over (n, c), all looks to n_max = 40."""
    cfg, n_max = AdaptiveConfig(round_size=4, decide="band", band=(0.2, 0.8), max_error=0.1), 40
    alive = {0: 1.0}  # c -> P(no miss so far, c passes)
    miss = 0.0
    for n in range(4, n_max + 1, 4):
        nxt: dict[int, float] = {}
        for c, w in alive.items():
            for k in range(5):
                nxt[c + k] = nxt.get(c + k, 0.0) + w * math.comb(4, k) * p**k * (1 - p) ** (4 - k)
        alive = {}
        for c, w in nxt.items():
            lo, hi = clopper_pearson(n, c, alpha_at(n // 4, cfg.max_error))
            if lo <= p <= hi:
                alive[c] = w
            else:
                miss += w
    assert miss <= cfg.max_error


def test_band_decisions():
    cfg = AdaptiveConfig(round_size=8, decide="band", band=(0.2, 0.8))
    taken, d = run_stopping_rule([True] * 100, 100, cfg)
    assert d.label == "outside" and not d.forced and taken < 100
    taken, d = run_stopping_rule([True, False] * 50, 100, cfg)
    assert d.label == "inside" and not d.forced and taken < 100
    taken, d = run_stopping_rule([True, False, False, False, False] * 20, 100, cfg)  # 0.2: on the edge
    assert (taken, d.label, d.forced) == (100, "inside", True)  # the full sample's decision, said to be forced
    with pytest.raises(UserError, match="band needs 0 <= LOW <= HIGH <= 1"):
        AdaptiveConfig(decide="band", band=(0.9, 0.1))
    with pytest.raises(UserError, match="max-error"):
        AdaptiveConfig(max_error=0.0)


def _tasks(seed: int = 0, k: int = 40, n: int = 24) -> list[TaskSamples]:
    import random

    rng = random.Random(seed)
    out = []
    for i in range(k):
        p = rng.choice([0.0, 0.0, 1.0, 0.03, 0.3, 0.7, 0.97])
        passes = tuple(rng.random() < p for _ in range(n))
        out.append(TaskSamples(f"t{i}", n, sum(passes), passes=passes))
    return out


def test_replay_is_deterministic_for_a_seed_and_matches_the_exact_expectation():
    tasks, cfg = _tasks(), AdaptiveConfig(round_size=4)
    a, b = replay(tasks, cfg, shuffles=5, seed=3), replay(tasks, cfg, shuffles=5, seed=3)
    assert a == b and a.orders == "5 shuffles (seed 3)" and len(a.tasks) == 5 * len(tasks)
    assert replay(tasks, cfg, shuffles=5, seed=4).tasks != a.tasks
    filed = replay(tasks, cfg)
    assert [r.task_id for r in filed.tasks] == [t.task_id for t in tasks]
    assert filed.full_generations == sum(t.n for t in tasks) and filed.generations < filed.full_generations
    many = replay(tasks, cfg, shuffles=400, seed=0)
    exact = [expected_over_orders(t, cfg) for t in tasks]
    assert many.agreement == pytest.approx(sum(e[0] for e in exact) / len(tasks), abs=0.01)
    assert many.generations / 400 == pytest.approx(sum(e[1] for e in exact), rel=0.02)


def test_expected_over_orders_equals_enumerating_every_ordering():
    cfg = AdaptiveConfig(round_size=2, max_error=0.3)
    for c in range(7):
        base = [True] * c + [False] * (7 - c)
        s = TaskSamples("t", 7, c, passes=tuple(base))
        runs = [run_stopping_rule(list(o), 7, cfg) for o in itertools.permutations(base)]
        agree = sum(d.label == full_decision(7, c, cfg) for _, d in runs) / len(runs)
        taken = sum(t for t, _ in runs) / len(runs)
        assert expected_over_orders(s, cfg) == pytest.approx((agree, taken))


def test_independent_agreement_at_the_extremes_and_against_the_rerun():
    cfg = AdaptiveConfig()
    assert agreement_independent(0.0, 100, cfg) == (1.0, 1.0)
    adaptive, rerun = agreement_independent(0.01, 100, cfg)
    assert adaptive < rerun < 1.0  # stopping at 88 draws makes the category a little less reproducible


def test_bench_rows_are_seeded_and_compare_with_the_full_sample():
    tasks = _tasks(1)
    rows = compare("synthetic", tasks, shuffles=3, seed=0)
    assert rows == compare("synthetic", tasks, shuffles=3, seed=0)
    assert rows[0]["rule"] == "full sample" and rows[0]["generations"] == sum(t.n for t in tasks)
    assert {r["orders"] for r in rows[1:]} == {"file", "3 shuffles (seed 0)", "exact, all orderings"}
    assert all(0 < r["share"] <= 1 and 0 <= r["agreement"] <= 1 for r in rows)


def test_bench_set_adaptive_is_dispatched(monkeypatch):
    import grpo_wb.cli.bench as bench_cli

    calls = []
    monkeypatch.setattr(bench_cli, "bench_adaptive", lambda **kw: calls.append(kw))
    monkeypatch.setattr(bench_cli, "main_bench", lambda *a, **kw: pytest.fail("the scorer bench ran"))
    assert main(["bench", "--set", "adaptive", "--limit", "50"]) == 0
    assert calls and calls[0]["limit"] == 50


ADAPTIVE = ["sample", "--tasks", str(TOY), "--backend", "mock", "--adaptive", "--no-progress"]


def test_adaptive_needs_score(tmp_path, capsys):
    assert main([*ADAPTIVE, "--n", "4", "--out", str(tmp_path / "s.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "--adaptive decides on the scores: add --score" in err and len(err.strip().splitlines()) == 1


def _per_task(scored):
    out: dict[str, list[bool]] = {}
    for r in read_jsonl(scored):
        out.setdefault(r["task_id"], []).append(r["passed"])
    return out


ARGV = [*ADAPTIVE, "--n", "32", "--score", "--round-size", "8", "--timeout", "2"]


@pytest.mark.sandbox
def test_sample_adaptive_stops_each_task_where_the_rule_decides_and_resumes(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main([*ARGV, "--headroom", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    cfg = AdaptiveConfig(round_size=8)
    per_task = _per_task(tmp_path / "s.scored.jsonl")
    assert len(per_task) == 10
    total = 0
    for tid, passes in per_task.items():
        n, c = len(passes), sum(passes)
        total += n
        assert decide(n, c, 32, cfg).label is not None, tid  # decided where it stopped
        prev = n - 8 if n != decide_after(32, 0.05) else 24  # the look before (rounds are cut at m = 28)
        assert prev <= 0 or decide(prev, sum(passes[:prev]), 32, cfg).label is None, tid  # and not a round earlier
    rows = read_jsonl(out)
    assert Counter(r["task_id"] for r in rows) == Counter({t: len(p) for t, p in per_task.items()})
    assert total < 320 and f"{total} of 320 generations" in printed and "samples per task" in printed
    assert "per task: min" in printed  # the headroom report says the counts differ

    # interrupted: the samples file cut mid-line after 13 rows, the scored file after 5; the same command resumes
    whole, whole_scored = out.read_text(), (tmp_path / "s.scored.jsonl").read_text()
    cut = tmp_path / "c.jsonl"
    lines = whole.splitlines(keepends=True)
    cut.write_text("".join(lines[:13]) + lines[13][:30])
    (tmp_path / "c.scored.jsonl").write_text("".join(whole_scored.splitlines(keepends=True)[:5]))
    capsys.readouterr()
    assert main([*ARGV, "--out", str(cut)]) == 0
    printed = capsys.readouterr().out
    assert "13 were there already" in printed
    key = lambda r: (r["task_id"], r["sample_index"], r["completion"])  # noqa: E731
    assert sorted(map(key, read_jsonl(cut))) == sorted(map(key, rows))
    assert sorted(r["completion_id"] for r in read_jsonl(tmp_path / "c.scored.jsonl")) == sorted(
        json.loads(x)["completion_id"] for x in whole_scored.splitlines()
    )
    # resumed again when complete: nothing is asked for
    assert main([*ARGV, "--out", str(cut)]) == 0
    assert "wrote 0 completions" in capsys.readouterr().out


def _band_error_exactly(p: float, n_max: int, cfg: AdaptiveConfig) -> float:
    """P(an early band decision is wrong about p), by dynamic programming over decide() at every look."""
    looks = [n for n in range(1, n_max + 1) if is_look(n, n_max, cfg)]
    alive, n, wrong = {0: 1.0}, 0, 0.0
    for look in looks:
        k = look - n
        nxt: dict[int, float] = {}
        for c, w in alive.items():
            for j in range(k + 1):
                nxt[c + j] = nxt.get(c + j, 0.0) + w * math.comb(k, j) * p**j * (1 - p) ** (k - j)
        alive, n = nxt, look
        for c in list(alive):
            d = decide(n, c, n_max, cfg)
            if d.label is not None:
                if not d.forced and (d.label == "inside") != (cfg.band[0] <= p <= cfg.band[1]):
                    wrong += alive[c]
                del alive[c]
    return wrong


@pytest.mark.parametrize(
    "n_max,r,e,band",
    [(32, 8, 0.05, (0.1, 0.9)), (64, 4, 0.2, (0.2, 0.8)), (40, 1, 0.5, (0.0, 0.5)), (100, 8, 0.05, (0.3, 0.6))],
)
def test_the_band_rule_itself_is_wrong_about_p_at_most_max_error(n_max, r, e, band):
    """decide() as run, not the intervals alone: a rule that decided on wider error would fail here."""
    cfg = AdaptiveConfig(round_size=r, max_error=e, decide="band", band=band)
    worst = max(_band_error_exactly(p, n_max, cfg) for p in [i / 100 for i in range(101)])
    assert worst <= e
    assert worst > 0 or band == (0.0, 0.5)  # the rule does decide early, and can be wrong


class _Recorder:
    """A model backend (not free to ask again) that answers from the mock and records each request's seed; it
    returns ``short`` fewer completions than asked."""

    name = "recorder"

    def __init__(self, short: int = 0):
        from grpo_wb.rollouts.mock import MockBackend

        self.mock, self.short, self.seeds = MockBackend(seed=0), short, []

    def generate(self, reqs):
        from grpo_wb.rollouts.sampling import request_seed

        self.seeds += [(r.task.task_id, request_seed(0, r)) for r in reqs]
        return [g[: max(0, len(g) - self.short)] for g in self.mock.generate(reqs)]

    def describe(self):
        return {"backend": self.name}


def _adaptive_cfg(tmp_path, **kw):
    from grpo_wb.config import from_dict
    from grpo_wb.runs.sample import SampleConfig

    return from_dict(
        SampleConfig,
        {
            "tasks": str(TOY),
            "out": str(tmp_path / "s.jsonl"),
            "n": 16,
            "score": True,
            "adaptive": True,
            "round_size": 4,
            "timeout": 2.0,
            **kw,
        },
        source="test",
    )


@pytest.mark.sandbox
def test_each_round_asks_a_seeded_server_for_new_completions(tmp_path):
    from grpo_wb.runs.sample import run_sample

    backend = _Recorder()
    s = run_sample(_adaptive_cfg(tmp_path), progress=False, backend=backend, log=lambda m: None)
    assert s.rounds > 1
    per_task = Counter(t for t, _ in backend.seeds)
    assert max(per_task.values()) > 1  # some task was asked in several rounds
    assert len(set(backend.seeds)) == len(backend.seeds)  # and never with a seed it was sent before


@pytest.mark.sandbox
def test_a_backend_that_returns_fewer_stops_instead_of_looping(tmp_path):
    from grpo_wb.runs.sample import run_sample

    backend = _Recorder(short=4)  # rounds of 4: every request comes back empty
    s = run_sample(_adaptive_cfg(tmp_path), progress=False, backend=backend, log=lambda m: None)
    assert len(s.stalled) == len(read_jsonl(TOY)) and not s.decided and s.rounds == 1  # asked once, then stopped


@pytest.mark.sandbox
def test_a_scoring_error_is_raised_not_hung(tmp_path, monkeypatch):
    import contextlib

    import grpo_wb.runs.sample as sample

    real = sample.scorer_for

    @contextlib.contextmanager
    def failing(*a, **kw):
        with real(*a, **kw) as sc:

            class Broken:
                def score(self, reqs):
                    for i, r in enumerate(sc.score(reqs)):
                        if i == 3:
                            raise OSError("disk full")
                        yield r

            yield Broken()

    monkeypatch.setattr(sample, "scorer_for", failing)
    for adaptive in (True, False):
        with pytest.raises(OSError, match="disk full"):
            sample.run_sample(
                _adaptive_cfg(tmp_path / str(adaptive), adaptive=adaptive, backend="mock"),
                progress=False,
                log=lambda m: None,
            )
