"""Rollout backends: the mock writes real code deterministically; replay serves recorded groups."""

from collections import Counter

import pytest
from conftest import TOY, write_jsonl

from grpo_wb.errors import UserError
from grpo_wb.rollouts.mock import MockBackend
from grpo_wb.rollouts.replay import ReplayBackend
from grpo_wb.rollouts.types import RolloutRequest
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import load_tasks


def _texts(backend, tasks, step=0, g=8):
    return [[c.text for c in grp] for grp in backend.generate([RolloutRequest(t, g, step, 0) for t in tasks])]


def test_mock_is_deterministic_for_a_seed_and_varies_across_seeds():
    tasks = load_tasks(TOY)
    assert _texts(MockBackend(seed=3), tasks) == _texts(MockBackend(seed=3), tasks)
    assert _texts(MockBackend(seed=3), tasks) != _texts(MockBackend(seed=4), tasks)
    assert _texts(MockBackend(seed=3), tasks, step=0) != _texts(MockBackend(seed=3), tasks, step=1)


def test_mock_metadata_travels_with_each_completion():
    t = load_tasks(TOY)[0]
    (grp,) = MockBackend(seed=1).generate([RolloutRequest(t, 4, 0, 0)])
    assert [c.sample_index for c in grp] == [0, 1, 2, 3]
    for c in grp:
        assert c.backend == "mock" and c.model == "mock" and c.seed == 1 and c.finish_reason == "stop"
        assert "skill" in c.sampling and c.extra["mock_kind"]


@pytest.mark.sandbox
@pytest.mark.slow
def test_mock_produces_every_kind_and_they_execute_to_the_expected_statuses():
    tasks = load_tasks(TOY)
    mock = MockBackend(seed=0, default_skill=0.3, skills={t.task_id: 0.3 for t in tasks})
    groups = mock.generate([RolloutRequest(t, 16, s, 0) for s in range(3) for t in tasks])
    flat = [(t, c) for grp in groups for c in grp for t in tasks if t.task_id == c.task_id]
    kinds = Counter(c.extra["mock_kind"] for _, c in flat)
    assert set(kinds) == {"correct", "wrong", "syntax_error", "no_code", "runtime_error", "slow"}
    with Scorer(SandboxLimits(timeout=1.0), workers=2) as sc:
        res = list(sc.score(ScoreRequest(t, c.text, c.sample_index) for t, c in flat))
    pairs = Counter((c.extra["mock_kind"], r.status) for (_, c), r in zip(flat, res))
    assert pairs[("correct", "pass")] == kinds["correct"]  # canonical solutions always pass
    assert pairs[("no_code", "parse_failure")] == kinds["no_code"]
    assert pairs[("syntax_error", "error")] == kinds["syntax_error"]
    assert pairs[("slow", "timeout")] == kinds["slow"]
    # nothing is pre-labelled: wrong answers are executed and mostly fail
    assert pairs[("wrong", "fail")] + pairs[("wrong", "error")] > 0.8 * kinds["wrong"]


def test_mock_skill_extremes_and_task_metadata():
    tasks = load_tasks(TOY)
    by_id = {t.task_id: t for t in tasks}
    all_pass = MockBackend(seed=0, skills={"toy/fizzbuzz": 1.0}).generate(
        [RolloutRequest(by_id["toy/fizzbuzz"], 12, 0, 0)]
    )
    assert all(c.extra["mock_kind"] == "correct" for c in all_pass[0])
    none = MockBackend(seed=0, skills={"toy/fizzbuzz": 0.0}).generate([RolloutRequest(by_id["toy/fizzbuzz"], 12, 0, 0)])
    assert all(c.extra["mock_kind"] != "correct" for c in none[0])
    # metadata mock_skill (toy/add has 1.0) is used when no explicit skill is given
    assert MockBackend(default_skill=0.0).skill_for(by_id["toy/add"]) == 1.0
    with pytest.raises(UserError):
        MockBackend(default_skill=1.5)


def test_replay_serves_groups_in_file_order(tmp_path):
    tasks = load_tasks(TOY)[:2]
    rows = [{"task_id": t.task_id, "completion": f"# {t.task_id} {i}\n"} for i in range(6) for t in tasks]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    rb = ReplayBackend(path)
    rb.check_tasks(tasks)
    g0 = rb.generate([RolloutRequest(tasks[0], 3, 0, 0)])[0]
    g1 = rb.generate([RolloutRequest(tasks[0], 3, 5, 1)])[0]
    assert [c.text for c in g0] == [f"# {tasks[0].task_id} {i}\n" for i in range(3)]
    assert [c.text for c in g1] == [f"# {tasks[0].task_id} {i}\n" for i in range(3, 6)]
    assert g0[0].extra["source_line"] == 1 and g0[1].extra["source_line"] == 3
    with pytest.raises(UserError, match="ran out of completions"):
        rb.generate([RolloutRequest(tasks[0], 3, 0, 2)])


def test_replay_bad_files(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"task_id": "toy/add", "completion": "x"}\n{"task_id": "toy/add"}\n')
    with pytest.raises(UserError, match=r"bad.jsonl:2: missing field 'completion'"):
        ReplayBackend(p)
    add = [t for t in load_tasks(TOY) if t.task_id == "toy/add"]
    p.write_text('{"task_id": "toy/add", "completion": "x"}\n{"task_id": "nope", "completion": "x"}\n')
    with pytest.raises(UserError, match=r"bad.jsonl:2: task_id 'nope' is not in the task file"):
        ReplayBackend(p).check_tasks(add)
    with pytest.raises(UserError, match=r"no completions for 9 task\(s\)"):
        ReplayBackend(p).check_tasks(load_tasks(TOY))
    p.write_text('{"task_id": "toy/add", "completion": "x"\n')
    with pytest.raises(UserError, match=r"bad.jsonl:1: invalid JSON"):
        ReplayBackend(p)
