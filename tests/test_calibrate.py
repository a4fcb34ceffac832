"""Per-task time limits from the canonical solutions' runtimes."""

import pytest
from conftest import TOY, read_jsonl, write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.scoring.calibrate import CalibrationConfig, calibrate
from grpo_wb.tasks.records import load_tasks


@pytest.mark.sandbox
def test_limits_follow_the_canonical_runtime_within_floor_and_ceiling(tmp_path):
    rows = read_jsonl(TOY)
    slow = dict(rows[0], task_id="toy/slow_add",
                canonical_solution="    import time\n    time.sleep(0.3)\n    return a + b\n")
    broken = dict(rows[1], task_id="toy/broken", canonical_solution="    return None\n")
    path = write_jsonl(tmp_path / "t.jsonl", rows[:3] + [slow, broken])
    out, problems = calibrate(load_tasks(path), CalibrationConfig(factor=4.0, floor=0.5, ceiling=2.0, repeats=2))
    by = {t.task_id: t for t in out}
    assert by["toy/add"].timeout == 0.5                   # fast: the floor
    assert 4 * 0.3 <= by["toy/slow_add"].timeout <= 2.0   # 4 x >= 0.3 s, under the ceiling
    assert by["toy/broken"].timeout is None and any("toy/broken" in p for p in problems)


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
