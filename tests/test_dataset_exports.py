"""Exports a ``datasets`` user can load: JSON lines, Parquet, Arrow and ``save_to_disk`` folders, each loaded back
with the real ``datasets`` library, rows and features compared with the source's."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from conftest import binary_scored, export_frontier_argv, import_argv, read_jsonl

from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.tasks.records import load_tasks
from grpo_wb.tasks.rowexport import export_rows
from grpo_wb.tasks.rowformats import RowImportSummary, iter_row_tasks
from grpo_wb.tasks.rows import RowSource, id_prefix, output_kind, resolve_source, write_rows

FIX = Path(__file__).parent / "fixtures" / "rows"
VERL_ROWS = [r for r in read_jsonl(FIX / "verl.jsonl") if "reward_model" in r][:5]  # extra_info.index 0..4


def _features():
    import datasets

    return datasets.Features(
        {
            "data_source": datasets.Value("string"),
            "prompt": [{"content": datasets.Value("string"), "role": datasets.Value("string")}],
            "ability": datasets.Value("string"),
            "reward_model": {"ground_truth": datasets.Value("string"), "style": datasets.Value("string")},
            "extra_info": {"index": datasets.Value("int32"), "split": datasets.Value("string")},
            "difficulty": datasets.ClassLabel(names=["easy", "medium", "hard"]),
            "tags": datasets.Sequence(datasets.Value("string")),
            "rating": datasets.Value("int16"),
        }
    )


def _typed_rows(rows):
    return [{**r, "difficulty": i % 3, "tags": ["dp"] * (i % 2), "rating": 800 + 100 * i} for i, r in enumerate(rows)]


def _dataset_dict(path: Path, splits: dict[str, list[dict]]) -> Path:
    """A ``DatasetDict`` written by ``save_to_disk``, with features JSON could not say (ClassLabel, int16, int32)."""
    import datasets

    datasets.DatasetDict(
        {name: datasets.Dataset.from_list(_typed_rows(rows), features=_features()) for name, rows in splits.items()}
    ).save_to_disk(str(path))
    return path


def _id(row, split=None) -> str:
    """A verl row's task id: the format, the split of a DatasetDict, the row's data_source and index."""
    return "/".join(["verl", *([split] if split else []), row["data_source"], str(row["extra_info"]["index"])])


def _import(fmt, src: RowSource):
    return list(iter_row_tasks(fmt, src, RowImportSummary()))


def _without_ours(rows):
    return [{k: v for k, v in r.items() if not k.startswith("grpo_wb_")} for r in rows]


def test_the_output_path_says_the_container(tmp_path):
    assert [output_kind(p) for p in ("a.jsonl", "a.JSONL.gz", "a.json", "a.ndjson", "a.parquet", "a.arrow")] == [
        "jsonl",
        "jsonl",
        "jsonl",
        "jsonl",
        "parquet",
        "arrow",
    ]
    assert output_kind(f"{tmp_path}/new_folder/") == "save_to_disk"  # a trailing slash asks for a folder
    assert output_kind(tmp_path) == "save_to_disk"  # so does an existing folder
    for bad in ("frontier", "frontier.csv", "rows.txt"):  # no suffix is not guessed to be a folder
        with pytest.raises(
            UserError,
            match=rf"{bad}: unknown output type: end it with .jsonl.*or / for a "
            "save_to_disk folder",
        ):
            output_kind(tmp_path / bad)
    with pytest.raises(UserError) as e:
        write_rows(tmp_path / "frontier", [{"a": 1}])
    assert "\n" not in str(e.value) and not list(tmp_path.iterdir())
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UserError, match="afile/: is a file, not a folder"):
        write_rows(f"{tmp_path}/afile/", [{"a": 1}])


def test_split_ids_name_the_split(tmp_path):
    assert id_prefix("verl", RowSource("rows.parquet")) == "verl"
    assert id_prefix("verl", RowSource(str(tmp_path), "test")) == "verl/test"


def test_jsonl_gz_export_is_gzipped_json_lines(tmp_path):
    tasks = list(iter_row_tasks("verl", RowSource(str(FIX / "verl.jsonl")), RowImportSummary(), limit=2))
    assert export_rows(tasks, "jsonl", tmp_path / "out.jsonl.gz") == "jsonl"
    with gzip.open(tmp_path / "out.jsonl.gz", "rt", encoding="utf-8") as f:
        assert [json.loads(line) for line in f] == VERL_ROWS[:2]


@pytest.mark.datasets
def test_every_container_loads_back_with_the_source_rows_and_features(tmp_path):
    """Rows imported from one split of a save_to_disk DatasetDict and exported as they came (--format jsonl) to
    Parquet, Arrow and a save_to_disk folder load back in ``datasets`` with the source's rows and features
    (ClassLabel, Sequence, int16, int32 in a struct), plus the grpo_wb_* columns; JSON lines load too."""
    import datasets

    src = _dataset_dict(tmp_path / "dd", {"train": VERL_ROWS[:2], "test": VERL_ROWS[2:]})
    tasks = _import("verl", resolve_source(str(src), "test"))
    assert [t.metadata["source_split"] for t in tasks] == ["test"] * 3
    expected = datasets.load_from_disk(str(src))["test"]
    cols = {t.task_id: {"grpo_wb_pass_rate": 0.25 * i, "grpo_wb_category": "frontier"} for i, t in enumerate(tasks)}
    outs = {
        "parquet": tmp_path / "out.parquet",
        "arrow": tmp_path / "out.arrow",
        "save_to_disk": f"{tmp_path}/out_folder/",
        "jsonl": tmp_path / "out.jsonl",
    }
    for kind, out in outs.items():
        assert export_rows(tasks, "jsonl", out, cols) == kind
    loaded = {
        "parquet": datasets.load_dataset("parquet", data_files=str(outs["parquet"]), split="train"),
        "arrow": datasets.Dataset.from_file(str(outs["arrow"])),
        "save_to_disk": datasets.load_from_disk(outs["save_to_disk"]),
        "jsonl": datasets.load_dataset("json", data_files=str(outs["jsonl"]), split="train"),
    }
    for kind, ds in loaded.items():
        assert isinstance(ds, datasets.Dataset), kind
        assert _without_ours(ds.to_list()) == expected.to_list(), kind
        assert ds["grpo_wb_pass_rate"] == [0.0, 0.25, 0.5] and ds["grpo_wb_category"] == ["frontier"] * 3, kind
        if kind == "jsonl":  # JSON has no ClassLabel: the label comes back as its integer
            assert ds.features["difficulty"] == datasets.Value("int64")
            continue
        assert {k: v for k, v in ds.features.items() if not k.startswith("grpo_wb_")} == expected.features, kind
        assert ds.features["grpo_wb_pass_rate"] == datasets.Value("float64"), kind
    assert loaded["save_to_disk"].features["difficulty"].int2str(1) == "medium"
    # nothing left beside the outputs (temporary siblings renamed or removed) and ordinary permissions
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dd", "out.arrow", "out.jsonl", "out.parquet", "out_folder"]
    assert (tmp_path / "out_folder").stat().st_mode & 0o777 == 0o777 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.datasets
def test_same_schema_export_keeps_the_features_and_a_trainer_schema_export_loads(tmp_path):
    import datasets

    src = tmp_path / "single"
    datasets.Dataset.from_list(_typed_rows(VERL_ROWS), features=_features()).save_to_disk(str(src))
    tasks = _import("verl", resolve_source(str(src), None))
    assert [t.task_id for t in tasks] == [_id(r) for r in VERL_ROWS]  # a single Dataset: no split in the id
    export_rows(tasks, "verl", tmp_path / "verl.arrow")  # the source rows, as they came
    back = datasets.Dataset.from_file(str(tmp_path / "verl.arrow"))
    assert back.features == _features() and back.to_list() == datasets.load_from_disk(str(src)).to_list()
    # rows built in another schema get inferred types, and load
    export_rows(tasks, "open-r1", f"{tmp_path}/open_r1/")
    r1 = datasets.load_from_disk(str(tmp_path / "open_r1"))
    assert len(r1) == 5 and r1[0]["verification_info"]["test_cases"][0]["type"] in ("stdin_stdout", "function_call")


@pytest.mark.datasets
def test_cli_writes_folders_and_follows_the_force_rules(tmp_path, capsys):
    import datasets

    src = tmp_path / "train.parquet"
    datasets.Dataset.from_list(_typed_rows(VERL_ROWS[:5]), features=_features()).to_parquet(str(src))
    tasks_file = tmp_path / "tasks.jsonl"
    assert main(import_argv("verl", src, tasks_file)) == 0
    scored = binary_scored(tmp_path, load_tasks(tasks_file), [8, 4, 2, 0, 3])
    out = tmp_path / "frontier"
    assert main(export_frontier_argv(scored, tasks_file, f"{out}/", "jsonl")) == 0
    assert f"3 jsonl rows to {out}/ (save_to_disk;" in capsys.readouterr().out
    ds = datasets.load_from_disk(str(out))
    source = datasets.Dataset.from_parquet(str(src))
    assert _without_ours(ds.to_list()) == [source[i] for i in (1, 2, 4)]
    assert {k: v for k, v in ds.features.items() if not k.startswith("grpo_wb_")} == source.features

    kept = tmp_path / "kept"
    argv = ["filter", str(scored), "--band", "0.1", "0.9", "--tasks", str(tasks_file), "--format", "verl", "--out"]
    assert main([*argv, f"{kept}/"]) == 0
    assert len(datasets.load_from_disk(str(kept))) == 3
    capsys.readouterr()
    # an existing folder: refused without --force (named, one line); replaced with it (no trailing / needed)
    assert main([*argv, str(kept)]) == 1
    err = capsys.readouterr().err
    assert f"{kept} exists; pass --force to replace it" in err and err.count("\n") == 1
    assert (
        main(
            [
                "filter",
                str(scored),
                "--band",
                "0.3",
                "0.9",
                "--tasks",
                str(tasks_file),
                "--format",
                "verl",
                "--out",
                str(kept),
                "--force",
            ]
        )
        == 0
    )
    assert len(datasets.load_from_disk(str(kept))) == 2
    # a folder that is not a dataset is never replaced, --force or not
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    capsys.readouterr()
    assert main([*argv, str(other), "--force"]) == 1
    err = capsys.readouterr().err
    assert f"{other}: is a folder that is not a save_to_disk dataset; refusing to replace it" in err
    assert err.count("\n") == 1 and (other / "keep.txt").read_text() == "mine"
    # an unknown suffix is one line naming the path, found before anything is written
    assert main([*argv, str(tmp_path / "kept.csv")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'kept.csv'}: unknown output type" in err and err.count("\n") == 1
    assert not (tmp_path / "kept.csv").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary sibling left


@pytest.mark.datasets
def test_a_failed_folder_write_leaves_the_old_dataset(tmp_path):
    import datasets

    old = tmp_path / "ds"
    write_rows(f"{old}/", [{"a": 1}, {"a": 2}])
    with pytest.raises(UserError, match="do not make one dataset table"):
        write_rows(old, [{"a": 1}, {"a": "text"}])
    assert datasets.load_from_disk(str(old))["a"] == [1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


@pytest.mark.datasets
def test_an_export_whose_source_folder_is_gone_names_it(tmp_path):
    import shutil

    src = _dataset_dict(tmp_path / "dd", {"train": VERL_ROWS[:2]})
    tasks = _import("verl", resolve_source(str(src), None))
    shutil.rmtree(src)
    with pytest.raises(UserError, match="out.csv: unknown output type"):  # the path is checked first
        export_rows(tasks, "jsonl", tmp_path / "out.csv")
    with pytest.raises(UserError, match=f"{src}: the rows these tasks came from are gone"):
        export_rows(tasks, "jsonl", f"{tmp_path}/out/")
    assert not (tmp_path / "out").exists()


@pytest.mark.datasets
def test_splits_of_a_dataset_dict_import_with_ids_that_name_the_split(tmp_path):
    src = _dataset_dict(tmp_path / "dd", {"train": VERL_ROWS, "test": VERL_ROWS})  # the same indexes in both
    train = _import("verl", resolve_source(str(src), "train"))
    test = _import("verl", resolve_source(str(src), "test"))
    assert [t.task_id for t in test] == [_id(r, "test") for r in VERL_ROWS]
    assert not {t.task_id for t in train} & {t.task_id for t in test}
