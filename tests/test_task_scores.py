"""Which test-strength score ranks tasks by what their tests let through (``grpo-wb bench --set task-scores``).

The AUC function on hand-made examples (unit tier), and the measurement itself recomputed from the bundled
HumanEval+ labels and the bundled per-task scores of one ``tasks audit`` of HumanEval (data tier): the score
``weak`` uses must keep the AUC docs/task-audit.md reports.
"""

from __future__ import annotations

import collections
import itertools
import random

import pytest
from conftest import need

from grpo_wb.bench.task_scores import (
    CANDIDATES,
    CHOSEN,
    CHOSEN_MIN_AUC,
    LABELS,
    SCORES,
    WITHOUT_SAMPLES,
    auc,
    auc_table,
    candidate_scores,
    read_labels,
    read_scores,
)


def _pairs(weak, strong):
    return sum(1.0 if w < s else 0.5 if w == s else 0.0 for w, s in itertools.product(weak, strong)) / (
        len(weak) * len(strong)
    )


def test_auc_counts_pairs_ordered_and_ties_as_half():
    assert auc([0.1, 0.5, 0.5], [0.5, 0.9]) == pytest.approx(5 / 6)  # 4 pairs below, 2 ties
    assert auc([0.0, 0.2], [0.3, 1.0]) == 1.0  # every weak task below every strong one
    assert auc([0.3, 1.0], [0.0, 0.2]) == 0.0
    assert auc([0.7, 0.7], [0.7]) == 0.5  # all tied: chance
    with pytest.raises(ValueError):
        auc([], [1.0])
    rng = random.Random(3)
    for _ in range(50):  # the rank formula is the pair count, ties included
        w = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(rng.randint(1, 9))]
        s = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(rng.randint(1, 9))]
        assert auc(w, s) == pytest.approx(_pairs(w, s))


def test_candidate_scores_of_an_audit_record():
    rec = {
        "tests": {"tests": 1, "check_calls": 3, "distinct_inputs": 1},
        "mutation": {
            "run": 10,
            "killed": 4,
            "survived": 6,
            "likely_equivalent": 3,
            "score": 0.4,
            "score_without_equivalent": 4 / 7,
            "survivors": [
                {"operator": "compare", "witness": "differs on f(20)"},
                {"operator": "compare", "witness": "differs on f(9)"},
                {"operator": "delete"},  # not compared (no literal call)
            ],
            "equivalent": [{"operator": "arith"}] * 3,
        },
    }
    s = candidate_scores(rec, {"compare": 4, "arith": 3, "delete": 3})
    assert s["tests"] == 3
    assert s["killed / run"] == 0.4
    assert s["killed / (killed + witnessed)"] == pytest.approx(4 / 6)
    assert s["- witnessed survivors"] == -2
    assert s["compare: killed / run"] == pytest.approx(2 / 4)
    assert s["arith: killed / run"] == 0.0 and s["arith: killed / (killed + witnessed)"] is None
    assert s["bound: killed / run"] is None  # no mutant of that family
    assert set(s) <= set(CANDIDATES)


def test_the_samples_scores_come_from_an_audit_run_with_samples():
    """``tasks audit --samples`` records ``samples_differential``: the bench reads its two scores from it (the
    table reproduced from the audit alone), and leaves them out where no passing sample was compared."""
    rec = {
        "tests": {"tests": 1, "check_calls": 1, "distinct_inputs": 1},
        "samples_differential": {"passing": 8, "distinct": 5, "compared": 5, "wrong": 2, "inputs": 40},
    }
    s = candidate_scores(rec)
    assert s["samples: - wrong"] == -2.0 and s["samples: 1 - wrong / passing"] == pytest.approx(0.75)
    rec["samples_differential"]["compared"] = 0
    assert "samples: - wrong" not in candidate_scores(rec)
    assert "samples: - wrong" not in candidate_scores({"tests": {}})


def test_table_ranks_a_score_that_separates_the_labels_first():
    labels = {"a": "weak", "b": "weak", "c": "strong", "d": "strong"}
    scores = {
        "a": {"tests": 1.0, "killed / run": 0.9},
        "b": {"tests": 2.0, "killed / run": 0.2},
        "c": {"tests": 5.0, "killed / run": 0.8},
        "d": {"tests": 9.0, "killed / run": None},  # not defined: left out of that score's counts
    }
    rows = {r["score"]: r for r in auc_table(labels, scores, ["tests", "killed / run"], bootstrap=0)}
    assert rows["tests"]["auc"] == 1.0 and (rows["tests"]["weak"], rows["tests"]["strong"]) == (2, 2)
    assert rows["killed / run"]["auc"] == 0.5 and rows["killed / run"]["strong"] == 1


@pytest.mark.data
def test_the_chosen_score_ranks_humanevalplus_labels_as_documented():
    """docs/task-audit.md's table: the samples' differential ranks best and reaches the target; no score of the
    audit alone does, and killed / run ranks at least as well as the score ``weak`` used before."""
    labels = read_labels(need(LABELS))
    assert sorted(collections.Counter(labels.values()).items()) == [("strong", 55), ("weak", 66)]
    scores = read_scores(need(SCORES))
    assert len(scores) == 164
    rows = {r["score"]: r for r in auc_table(labels, scores, bootstrap=0)}
    assert set(rows) == set(CANDIDATES)
    best = max(rows.values(), key=lambda r: r["auc"])
    assert best["score"] == CHOSEN and rows[CHOSEN]["auc"] >= CHOSEN_MIN_AUC, rows[CHOSEN]
    alone = [r for c, r in rows.items() if not c.startswith("samples:")]
    assert max(r["auc"] for r in alone) < CHOSEN_MIN_AUC
    before = rows["killed / (run - likely equivalent)"]
    assert rows[WITHOUT_SAMPLES]["auc"] >= before["auc"]
    assert (rows[WITHOUT_SAMPLES]["weak"], rows[WITHOUT_SAMPLES]["strong"]) == (66, 55)
