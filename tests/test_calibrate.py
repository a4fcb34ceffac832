"""Per-task time limits from the canonical solutions' runtimes."""

import pytest
from conftest import TOY, read_jsonl, write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.scoring import calibrate as calibrate_module
from grpo_wb.scoring.calibrate import CalibrationConfig, calibrate
from grpo_wb.scoring.scorer import Scorer
from grpo_wb.tasks.records import load_tasks


@pytest.mark.sandbox
def test_limits_follow_the_canonical_runtime_within_floor_and_ceiling(tmp_path, monkeypatch):
    """Each limit from the run times calibrate itself measured (how long a run takes is the machine's business)."""
    rows = read_jsonl(TOY)
    slow = dict(
        rows[0], task_id="toy/slow_add", canonical_solution="    import time\n    time.sleep(0.3)\n    return a + b\n"
    )
    broken = dict(rows[1], task_id="toy/broken", canonical_solution="    return None\n")
    path = write_jsonl(tmp_path / "t.jsonl", rows[:3] + [slow, broken])
    runs: dict[str, list[float]] = {}

    class Recording(Scorer):
        def score(self, *args, **kwargs):
            for r in super().score(*args, **kwargs):
                if r.status == "pass":
                    runs.setdefault(r.task_id, []).append(r.duration_s)
                yield r

    monkeypatch.setattr(calibrate_module, "Scorer", Recording)
    out, problems = calibrate(load_tasks(path), CalibrationConfig(factor=4.0, floor=0.5, ceiling=2.0, repeats=2))
    by = {t.task_id: t for t in out}
    assert all(len(v) == 2 for v in runs.values()) and "toy/broken" not in runs
    for task_id, times in runs.items():  # 4 x the slower of two runs, within the floor and the ceiling
        assert by[task_id].timeout == round(min(2.0, max(0.5, 4 * max(times))), 3), (task_id, times)
    assert 4 * 0.3 <= by["toy/slow_add"].timeout <= 2.0  # 4 x >= 0.3 s, under the ceiling
    assert by["toy/broken"].timeout is None and any("toy/broken" in p for p in problems)
    fast, _ = calibrate(load_tasks(path), CalibrationConfig(factor=0.01, floor=0.5, ceiling=2.0, repeats=1))
    assert {t.task_id: t.timeout for t in fast}["toy/add"] == 0.5  # fast: the floor (a pass runs < 8 s)


@pytest.mark.sandbox
def test_cli_writes_a_valid_calibrated_file(tmp_path, capsys):
    out = tmp_path / "cal.jsonl"
    assert main(["tasks", "calibrate", str(TOY), "--out", str(out), "--repeats", "1"]) == 0
    assert "limits 0.5-" in capsys.readouterr().out
    tasks = load_tasks(out)
    assert len(tasks) == len(read_jsonl(TOY)) and all(t.timeout and 0.5 <= t.timeout <= 3.0 for t in tasks)
    assert main(["tasks", "calibrate", str(TOY), "--out", str(out)]) == 1  # refuses to overwrite
    assert main(["tasks", "calibrate", str(TOY), "--out", str(out), "--force", "--floor", "2", "--ceiling", "1"]) == 1
    assert "floor <= ceiling" in capsys.readouterr().err
