"""Kept tasks out in the trainers' formats, and the APPS round trip through verl, TACO and open-r1 rows."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import TOY, binary_scored, export_frontier_argv, filter_argv, import_argv, need, read_jsonl, write_jsonl

from grpo_wb.bundled import APPS_TRAIN
from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.importers import import_apps
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowexport import export_rows, parsed_from_task
from grpo_wb.tasks.rowformats import RowImportSummary, iter_row_tasks
from grpo_wb.tasks.rows import RowSource

FIX = Path(__file__).parent / "fixtures" / "rows"


def _import(fmt, path):
    return list(iter_row_tasks(fmt, RowSource(str(path)), RowImportSummary(), skip_bad=True))


def test_jsonl_export_writes_the_source_rows_untouched(tmp_path):
    tasks = _import("taco", FIX / "taco.jsonl")
    rows = read_jsonl(FIX / "taco.jsonl")
    cols = {t.task_id: {"grpo_wb_pass_rate": 0.5, "grpo_wb_category": "frontier"} for t in tasks}
    assert export_rows(tasks, "jsonl", tmp_path / "out.jsonl", cols) == "jsonl"
    out = read_jsonl(tmp_path / "out.jsonl")
    for t, got in zip(tasks, out):
        orig = rows[t.metadata["source_row"]]
        assert {k: v for k, v in got.items() if not k.startswith("grpo_wb_")} == orig
        assert got["grpo_wb_pass_rate"] == 0.5


def test_export_refuses_a_row_that_changed_since_the_import(tmp_path):
    src = write_jsonl(tmp_path / "rows.jsonl", read_jsonl(FIX / "taco.jsonl"))
    tasks = _import("taco", src)
    rows = read_jsonl(src)
    rows[0]["question"] = "edited"
    write_jsonl(src, rows)
    with pytest.raises(UserError, match="row 0 is not the row task 'taco/0' was imported from"):
        export_rows(tasks, "jsonl", tmp_path / "out.jsonl")


def test_tasks_with_assert_tests_do_not_pretend_to_be_stdin_rows(tmp_path):
    tasks = load_tasks(TOY)
    with pytest.raises(UserError, match="assert statements, which open-r1 rows cannot hold"):
        export_rows(tasks, "open-r1", tmp_path / "x.jsonl")
    # verl's sandbox_fusion reads assert_case; the canonical record is the jsonl row of a task with no source
    export_rows(tasks, "verl", tmp_path / "v.jsonl")
    gt = json.loads(read_jsonl(tmp_path / "v.jsonl")[0]["reward_model"]["ground_truth"])
    # sandbox_fusion runs each assert after the code, where grpo_wb's `candidate` is the entry point
    assert gt["assert_case"] == [f"candidate = {tasks[0].entry_point}\n{t.code}" for t in tasks[0].tests]
    export_rows(tasks, "jsonl", tmp_path / "c.jsonl")
    assert read_jsonl(tmp_path / "c.jsonl")[0] == tasks[0].to_json()


def test_call_tests_read_back_as_cases():
    (t,) = [t for t in _import("taco", FIX / "taco.jsonl") if t.entry_point == "doubled"]
    p = parsed_from_task(t)
    assert p.cases.kind == "call" and p.cases.inputs == [[[1, 2]], [[]]] and p.cases.outputs == [[[2, 4]], [[]]]


@pytest.mark.datasets
def test_verl_parquet_in_verl_parquet_out_keeps_the_schema_and_loads(tmp_path, capsys):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [r for r in read_jsonl(FIX / "verl.jsonl") if "reward_model" in r][:5]
    src = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    tasks_file = tmp_path / "tasks.jsonl"
    assert main(import_argv("verl", src, tasks_file)) == 0
    tasks = load_tasks(tasks_file)
    scored = binary_scored(tmp_path, tasks, [8, 4, 2, 0, 3])
    out = tmp_path / "frontier.parquet"
    assert main(export_frontier_argv(scored, tasks_file, out, "verl")) == 0
    assert "wrote 3 verl rows" in capsys.readouterr().out
    back = pq.read_table(out)
    original = pq.read_schema(src)
    for name in original.names:  # the source's columns keep their Arrow types
        assert back.schema.field(name).type == original.field(name).type, name
    got = back.to_pylist()
    assert [{k: v for k, v in r.items() if not k.startswith("grpo_wb_")} for r in got] == pq.read_table(
        src
    ).to_pylist()[1:3] + pq.read_table(src).to_pylist()[4:5]
    assert [r["grpo_wb_category"] for r in got] == ["frontier"] * 3 and [r["grpo_wb_n_samples"] for r in got] == [8] * 3
    assert got[0]["grpo_wb_p_informative_4"] == pytest.approx(1 - 2 * 1 / 70)  # C(4,4)+C(4,4) of C(8,4)
    assert got[0]["grpo_wb_pass_rate_low"] < 0.5 < got[0]["grpo_wb_pass_rate_high"]
    # what verl's RLHFDataset does with data.train_files: load_dataset("parquet")
    ds = datasets.load_dataset("parquet", data_files=str(out), split="train")
    assert ds[0]["prompt"][-1]["role"] == "user" and json.loads(ds[0]["reward_model"]["ground_truth"])["inputs"]


@pytest.mark.datasets
def test_trl_export_loads_as_a_dataset_with_a_prompt_column(tmp_path):
    import datasets

    tasks = _import("verl", FIX / "verl.jsonl")
    export_rows(tasks, "trl", tmp_path / "trl.parquet", {t.task_id: {"grpo_wb_pass_rate": 0.25} for t in tasks})
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "trl.parquet"), split="train")
    assert len(ds) == len(tasks) and ds[1]["prompt"][0] == {"role": "system", "content": "You write Python."}
    assert ds[0]["task_id"] == tasks[0].task_id and ds[0]["grpo_wb_pass_rate"] == 0.25


def test_filter_out_writes_the_kept_rows(tmp_path, capsys):
    src = FIX / "code-contests.jsonl"
    tasks_file = tmp_path / "cc.jsonl"
    assert main(import_argv("code-contests", src, tasks_file, "--skip-bad")) == 0
    tasks = load_tasks(tasks_file)
    scored = binary_scored(tmp_path, tasks, [3, 8])
    out = tmp_path / "kept.jsonl"
    assert main(filter_argv(scored, tasks_file, out, "jsonl")) == 0
    printed = capsys.readouterr().out
    assert "band [0.1, 0.9]: kept 1 of 2 tasks" in printed and "1 pass rate above the band" in printed
    (row,) = read_jsonl(out)
    assert row["name"] == "sum" and row["grpo_wb_pass_rate"] == 3 / 8 and row["grpo_wb_p_informative_8"] == 1.0


@pytest.mark.data
@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.datasets
def test_apps_round_trip_through_verl_taco_and_open_r1_rows(tmp_path):
    """The 5 bundled APPS problems, written as verl Parquet, TACO rows and open-r1 rows and imported again,
    give the 83 CodeRL programs the folder importer's verdicts: status and tests passed, 83/83."""
    folder, _ = import_apps(need(APPS_TRAIN))
    sets = {"folder": folder}
    for fmt, name in (("verl", "apps.parquet"), ("taco", "apps.taco.jsonl"), ("open-r1", "apps.open-r1.jsonl")):
        export_rows(folder, fmt, tmp_path / name)
        sets[fmt] = _import(fmt, tmp_path / name)
        assert len(sets[fmt]) == 5
    programs = [
        (i, g["code"])
        for i, t in enumerate(folder)
        for g in json.loads((APPS_TRAIN / t.metadata["folder"] / "gen_solutions.json").read_text())
    ]
    assert len(programs) == 83
    # the tests survive the round trip: judged by grpo_wb's own rule, the same verdicts
    with Scorer(SandboxLimits(timeout=4.0), RewardConfig(judge="strict"), workers=2, cache=False) as sc:
        verdicts = {
            k: [
                (r.status, r.tests_passed, r.tests_total)
                for r in sc.score([ScoreRequest(ts[i], code, j) for j, (i, code) in enumerate(programs)])
            ]
            for k, ts in sets.items()
        }
    for fmt in ("verl", "taco", "open-r1"):
        same = sum(a == b for a, b in zip(verdicts[fmt], verdicts["folder"]))
        assert same == 83, (fmt, same)
    assert sum(s == "pass" for s, _, _ in verdicts["folder"]) == 35  # CodeRL's published count
    # judged by the trainer's rule, open-r1's code_reward takes nothing from these raw (unfenced) programs
    with Scorer(SandboxLimits(timeout=4.0), workers=2, cache=False) as sc:
        trainer = [
            r for r in sc.score([ScoreRequest(sets["open-r1"][i], code, j) for j, (i, code) in enumerate(programs[:6])])
        ]
    assert {(r.judge, r.status) for r in trainer} == {("open-r1", "parse_failure")}


def test_open_r1_recipe_matches_the_rule_recomputed_from_the_scored_rows(tmp_path, capsys):
    """open-r1's compute_pass_rate.py: keep iff 0.1 < nanmean(rewards) < 0.9 (None as NaN), strict."""
    import numpy as np

    rng = random.Random(7)
    rows = []
    for t in range(200):
        for _ in range(8):
            r = rng.choice([0.0, 1.0, 0.5, None]) if t % 3 else rng.choice([0.0, 1.0])
            rows.append({"task_id": f"t{t}", "passed": r == 1.0, "reward": r})
    rows += [{"task_id": "edge", "passed": j < 1, "reward": float(j < 1)} for j in range(10)]  # mean exactly 0.1
    scored = write_jsonl(tmp_path / "scored.jsonl", rows)
    by: dict[str, list] = {}
    for r in rows:
        by.setdefault(r["task_id"], []).append(np.nan if r["reward"] is None else r["reward"])
    with np.errstate(all="ignore"):
        expected = [t for t, rs in by.items() if 0.1 < np.nanmean(np.array(rs, dtype=float)) < 0.9]
    out = tmp_path / "f.json"
    assert main(["filter", str(scored), "--recipe", "open-r1", "--json", str(out)]) == 0
    (res,) = json.loads(out.read_text())["results"]
    assert res["kept"] == expected and "edge" not in expected
    assert 0 < len(expected) < len(by)


def test_recipes_and_bands_side_by_side(tmp_path, capsys):
    counts = [0, 1, 2, 4, 8, 12, 14, 15, 16]
    rows = [{"task_id": f"c{c}", "passed": j < c, "reward": float(j < c)} for c in counts for j in range(16)]
    scored = write_jsonl(tmp_path / "scored.jsonl", rows)
    out = tmp_path / "f.json"
    assert (
        main(
            [
                "filter",
                str(scored),
                "--band",
                "0.2",
                "0.8",
                "--recipe",
                "skywork",
                "--recipe",
                "prime",
                "--recipe",
                "dapo",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    res = {r["name"]: r["kept"] for r in json.loads(out.read_text())["results"]}
    assert res["skywork"] == ["c1", "c2", "c4", "c8", "c12", "c14", "c15"]  # 1-15 of 16
    assert res["prime"] == ["c4", "c8", "c12"] == res["band [0.2, 0.8]"]  # 0.25, 0.5, 0.75 (inclusive)
    assert res["dapo"] == ["c1", "c2", "c4", "c8", "c12", "c14", "c15"]
    printed = capsys.readouterr().out
    assert "expected informative fraction at G=8" in printed
    # the interval version keeps less: 4/16 and 12/16 have Jeffreys intervals reaching out of [0.2, 0.8]
    assert main(["filter", str(scored), "--band", "0.2", "0.8", "--conservative", "--json", str(out), "--force"]) == 0
    (res,) = json.loads(out.read_text())["results"]
    assert res["kept"] == ["c8"]
    assert (
        main(["filter", str(scored), "--min-p-informative", "0.9", "--group-size", "8", "--json", str(out), "--force"])
        == 0
    )
    (res,) = json.loads(out.read_text())["results"]
    assert res["kept"] == ["c4", "c8", "c12"] and res["informative_after"] > res["informative_before"]


def test_filter_mistakes_are_one_line(tmp_path, capsys):
    scored = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "a", "passed": True, "reward": 1.0}] * 2)
    for argv, msg in (
        (["--band", "0.9", "0.1"], "--band needs 0 <= LOW <= HIGH <= 1"),
        ([], "nothing to filter on"),
        (["--band", "0", "1", "--recipe", "dapo", "--out", "x.jsonl"], "one rule or one --recipe"),
        (["--recipe", "dapo", "--out", str(tmp_path / "x.jsonl"), "--tasks", str(TOY)], "keeps no task"),
        (
            ["--recipe", "dapo", "--out", str(tmp_path / "x.jsonl"), "--json", str(tmp_path / "j.json")],
            "--out needs --tasks",
        ),
    ):
        assert main(["filter", str(scored), *argv]) == 1
        assert msg in capsys.readouterr().err
    assert not (tmp_path / "j.json").exists()  # a mistake is found before anything is written


@pytest.mark.data
def test_bundled_apps_rows_are_what_build_py_makes():
    import gzip
    import importlib.util

    from grpo_wb.bundled import DATA

    spec = importlib.util.spec_from_file_location("build_apps_rows", DATA / "apps_rows" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    rows, samples = build.rows_and_samples()
    for name, objs in (("apps_train5.jsonl.gz", rows), ("coderl_samples.jsonl.gz", samples)):
        with gzip.open(DATA / "apps_rows" / name, "rt", encoding="utf-8") as f:
            assert f.read() == build.text(objs), name
    assert len(rows) == 5 and len(samples) == 83


@pytest.mark.datasets
def test_parquet_export_keeps_every_rows_columns_and_refuses_rows_that_cannot_share_a_table(tmp_path):
    import pyarrow.parquet as pq

    tasks = _import("kodcode", FIX / "kodcode.jsonl")  # the second row keeps its tests in test_code, not test
    export_rows(tasks, "jsonl", tmp_path / "k.parquet")
    back = pq.read_table(tmp_path / "k.parquet").to_pylist()
    assert back[1]["test_code"] and back[1]["test"] is None and back[0]["test"]
    mixed = _import("verl", FIX / "verl.jsonl") + _import("taco", FIX / "taco.jsonl")
    with pytest.raises(UserError, match="do not make one Parquet table.*write JSON lines"):
        export_rows(mixed, "trl", tmp_path / "m.parquet")  # chat-message prompts next to text ones


def test_rows_imported_through_a_map_export_to_every_format(tmp_path):
    from grpo_wb.tasks.rowformats import parse_mapping

    tasks = list(
        iter_row_tasks(
            "rows",
            RowSource(str(FIX / "mapped.jsonl")),
            RowImportSummary(),
            mapping=parse_mapping("prompt=problem,tests=cases,task_id=id"),
        )
    )
    for fmt in ("jsonl", "verl", "open-r1", "taco", "trl"):
        export_rows(tasks, fmt, tmp_path / f"{fmt}.jsonl")
        assert len(read_jsonl(tmp_path / f"{fmt}.jsonl")) == 2, fmt
    trl = read_jsonl(tmp_path / "trl.jsonl")[0]
    assert trl["prelude"] and trl["output_match"] == "lines"  # what the TRL reward needs to judge like here


def test_exported_files_get_ordinary_permissions(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        export_rows(_import("taco", FIX / "taco.jsonl"), "jsonl", tmp_path / "t.jsonl")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "t.jsonl").stat().st_mode) == 0o644


def test_dapo_keeps_a_task_with_one_sample(tmp_path):
    from grpo_wb.signal.filters import run_recipe
    from grpo_wb.signal.headroom import TaskSamples

    res = run_recipe([TaskSamples("one", 1, 1, (1.0,)), TaskSamples("all", 4, 4, (1.0,) * 4)], "dapo", 8)
    assert res.kept == ["one"]  # verl's filter_groups keeps a group of one member
