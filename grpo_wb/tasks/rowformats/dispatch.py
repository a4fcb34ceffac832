"""The row formats by name: :data:`FORMATS`, :func:`parse_row` (a row of any format, its errors as
:class:`RowError`), :func:`task_from_parsed` (a :class:`ParsedRow` as the canonical task), and the import:
:func:`iter_row_tasks` streams a row file's tasks, :func:`import_rows` writes them, :class:`RowImportSummary` counts
what was read, made and left out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from grpo_wb.errors import UserError, one_line
from grpo_wb.tasks.importers import apps_io_tests
from grpo_wb.tasks.records import Task, TestCase, parse_task, write_tasks
from grpo_wb.tasks.rowformats.acecode import parse_acecode
from grpo_wb.tasks.rowformats.code_contests import parse_code_contests
from grpo_wb.tasks.rowformats.code_contests_plus import parse_code_contests_plus
from grpo_wb.tasks.rowformats.common import TEST_SETS, ParsedRow, RowError, select_test_set
from grpo_wb.tasks.rowformats.deepcoder import RECIPES, parse_deepcoder
from grpo_wb.tasks.rowformats.hardtests import parse_hardtests
from grpo_wb.tasks.rowformats.klear import parse_klear
from grpo_wb.tasks.rowformats.kodcode import parse_kodcode
from grpo_wb.tasks.rowformats.kodcode_pytest import _pytest_tests
from grpo_wb.tasks.rowformats.livecodebench import parse_livecodebench
from grpo_wb.tasks.rowformats.mapped import parse_mapped, parse_mapping
from grpo_wb.tasks.rowformats.nemo_gym import parse_nemo_gym
from grpo_wb.tasks.rowformats.open_r1 import parse_open_r1
from grpo_wb.tasks.rowformats.taco import parse_taco
from grpo_wb.tasks.rowformats.verl import parse_verl
from grpo_wb.tasks.rows import (
    RowSource,
    UnreadableRow,
    count_rows,
    id_prefix,
    iter_located_rows,
    resolve_source,
    row_hash,
)

SCHEMA_FORMATS = ("deepcoder", "acecode", "nemo-gym", "code-contests-plus", "hardtests", "klear")
"""The formats read and exported back each in its dataset's own schema, besides verl, open-r1 and taco (which
come first in :data:`FORMATS` and in the export formats)."""

FORMATS = ("verl", "open-r1", "taco", "apps-rows", "code-contests", "livecodebench", "kodcode", *SCHEMA_FORMATS, "rows")

PARSERS: dict[str, Callable[[dict[str, Any]], ParsedRow]] = {
    "verl": parse_verl,
    "open-r1": parse_open_r1,
    "taco": parse_taco,
    "apps-rows": parse_taco,
    "code-contests": parse_code_contests,
    "livecodebench": parse_livecodebench,
    "kodcode": parse_kodcode,
    "deepcoder": parse_deepcoder,
    "acecode": parse_acecode,
    "nemo-gym": parse_nemo_gym,
    "code-contests-plus": parse_code_contests_plus,
    "hardtests": parse_hardtests,
    "klear": parse_klear,
}

LANGUAGE_FORMATS = ("code-contests", "code-contests-plus", "hardtests", "klear")
"""Formats whose problems are language-neutral and whose rows ship programs in several languages: ``tasks import
--language cpp`` makes C++ tasks of them, with the C++ programs as references."""


def parse_row(
    fmt: str, row: Any, mapping: dict[str, str] | None = None, recipe: str | None = None, language: str | None = None
) -> ParsedRow:
    """Read one row of ``fmt`` (``rows`` needs ``mapping``; ``recipe``: one of ``RECIPES[fmt]``; ``language``: the
    tasks' language, for :data:`LANGUAGE_FORMATS`); a RowError says why it cannot be a task."""
    if isinstance(row, UnreadableRow):
        raise RowError(row.reason)
    if not isinstance(row, dict):
        raise RowError(f"a row must be an object, got {type(row).__name__}")
    if fmt == "rows" and mapping is None:
        raise ValueError("the rows format needs a column mapping")
    if recipe is not None and recipe not in RECIPES.get(fmt, ()):
        raise ValueError(f"{fmt} rows take no recipe {recipe!r}")
    try:
        if fmt == "rows" and mapping is not None:  # rows without a mapping were refused above
            return parse_mapped(row, mapping)
        if language is not None and language != "python":
            if fmt not in LANGUAGE_FORMATS:
                raise ValueError(f"{fmt} rows take no language {language!r}")
            return PARSERS[fmt](row, language=language)  # type: ignore[call-arg]
        return PARSERS[fmt](row) if recipe is None else parse_deepcoder(row, recipe)
    except RowError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as e:  # a field of the wrong shape
        raise RowError(f"malformed {fmt} row ({type(e).__name__}: {one_line(e, 120)})") from None
    except RecursionError:
        raise RowError(f"malformed {fmt} row (nested too deeply to read)") from None


def task_from_parsed(p: ParsedRow, task_id: str, metadata: dict[str, Any]) -> Task:
    """The canonical task for a parsed row; checked like a task file line (a RowError says what fails)."""
    setup = ""
    c = p.cases
    if c.kind == "stdio":
        names = (
            [f"io_{i}" for i in range(len(c.inputs))]
            if not c.sets
            else [f"{name}_{c.sets[:i].count(name)}" for i, name in enumerate(c.sets)]
        )
        tests = [TestCase(name=n, type="stdio", input=x, output=y) for n, x, y in zip(names, c.inputs, c.outputs)]
        entry = ""
    elif c.kind == "call":
        tests, entry = apps_io_tests(
            {"inputs": c.inputs, "outputs": c.outputs, "fn_name": c.fn_name}, compare=p.call_compare
        )
    elif c.kind == "assert":
        if not c.code:
            raise RowError("no assert tests")
        tests = [TestCase(name=f"assert_{i}", code=code) for i, code in enumerate(c.code)]
        entry = c.fn_name or ""
    else:
        setup, tests = _pytest_tests(c.code[0])
        entry = c.fn_name or ""
    task = Task(
        task_id=task_id,
        prompt=p.prompt,
        entry_point=entry,
        tests=tuple(tests),
        test_setup=setup,
        canonical_solution=p.solution,
        solutions=p.solutions,
        wrong_solutions=p.wrong_solutions,
        prelude=p.prelude,
        language=p.language,
        checker=p.checker,
        checker_style=p.checker_style,
        time_limit=p.time_limit,
        memory_limit_mb=p.memory_limit_mb,
        output_match=p.output_match if c.kind == "stdio" else "lines",
        metadata={**{k: v for k, v in p.extra.items() if v is not None}, **metadata},
    )
    _, errs = parse_task(task.to_json())
    if errs:
        raise RowError(errs[0])
    return task


def source_metadata(fmt: str, path: str | Path, split: str | None, row: int, sha: str) -> dict[str, Any]:
    """Where a task came from (``path`` absolute), so an export can find and check its row."""
    meta: dict[str, Any] = {"source": fmt, "source_file": str(path), "source_row": row, "row_sha256": sha}
    if split:
        meta["source_split"] = split
    return meta


@dataclass
class RowImportSummary:
    """What an import read, made and left out; nothing is dropped without being counted here."""

    read: int = 0
    """Rows read."""
    imported: int = 0
    """Tasks written."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Rows left out (``--skip-bad``), by reason."""
    notes: dict[str, int] = field(default_factory=dict)
    """Imported rows worth a second look, by what was noticed."""
    solutions_dropped: int = 0
    """Programs (references and wrong ones) the cap of ``MAX_SOLUTIONS`` per list left out of the tasks."""
    examples: list[str] = field(default_factory=list)
    """The first skipped rows, as ``PATH:LINE: reason`` (JSON lines) or ``PATH: row ROW (0-based): reason``."""

    def skip(self, where: str, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1
        if len(self.examples) < 10:
            self.examples.append(f"{where}: {why}")

    def note(self, what: str) -> None:
        self.notes[what] = self.notes.get(what, 0) + 1


def iter_row_tasks(
    fmt: str,
    src: RowSource,
    summary: RowImportSummary,
    *,
    mapping: dict[str, str] | None = None,
    limit: int | None = None,
    skip_bad: bool = False,
    progress: bool = False,
    recipe: str | None = None,
    test_set: str | None = None,
    language: str | None = None,
) -> Iterator[Task]:
    """Tasks from the rows of ``src``, streamed; a bad row raises ``WHERE: why`` (:func:`iter_located_rows`) unless
    ``skip_bad``. ``recipe``: a trainer's own way with the rows (``RECIPES``; the export reads the rows back the
    same way). ``test_set``: only that set's tests (:data:`TEST_SETS`), so headroom can be asked on each."""
    if fmt not in FORMATS:
        raise UserError(f"unknown row format {fmt!r} (choose {', '.join(FORMATS)})")
    if language not in (None, "python") and fmt not in LANGUAGE_FORMATS:
        raise UserError(f"--language {language} goes with {', '.join(LANGUAGE_FORMATS)} rows, not {fmt}")
    if test_set is not None and test_set not in TEST_SETS.get(fmt, ()):
        raise UserError(
            f"--test-set {test_set} does not go with {fmt} rows"
            + "".join(f"; {f} rows have {', '.join(s)}" for f, s in TEST_SETS.items())
        )
    if recipe is not None and recipe not in RECIPES.get(fmt, ()):
        raise UserError(
            f"--recipe {recipe} does not go with {fmt} rows"
            + "".join(f"; {f} takes {', '.join(r)}" for f, r in RECIPES.items())
        )
    total = count_rows(src)
    bar = tqdm(
        total=min(total, limit) if total is not None and limit is not None else (total or limit),
        unit=" rows",
        desc=f"import {fmt}",
        disable=not progress,
        file=sys.stderr,
        mininterval=0.5,
    )
    seen: set[str] = set()
    resolved = str(Path(src.path).resolve())
    try:
        for row, where, obj in iter_located_rows(src, limit=limit):
            summary.read += 1
            bar.update(1)
            try:
                parsed = parse_row(fmt, obj, mapping, recipe, language)
                if test_set is not None:
                    parsed = select_test_set(parsed, test_set)
                prefix = id_prefix(fmt, src)  # a DatasetDict's split is in the id: splits never collide
                base = f"{prefix}/{parsed.row_id}" if parsed.row_id else f"{prefix}/{row}"
                task_id = base if base not in seen else f"{base}#row{row}"
                if task_id != base:
                    summary.note("duplicate ids, made unique with the row number")
                try:
                    meta = source_metadata(fmt, resolved, src.split, row, row_hash(obj))
                    if test_set is not None:
                        meta["test_set"] = test_set
                    if parsed.messages:  # what the trainer's rollout sends (grpo_wb.rollouts.sampling)
                        meta["messages"] = parsed.messages
                    task = task_from_parsed(parsed, task_id, meta)
                except RowError:
                    raise
                except (IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
                    raise RowError(f"cannot build the tests ({type(e).__name__}: {one_line(e, 120)})") from None
            except RowError as e:
                if not skip_bad:
                    raise UserError(f"{where}: {e} (--skip-bad leaves such rows out, counted)") from None
                summary.skip(where, str(e))
                continue
            seen.add(task_id)
            for n in parsed.notes:
                summary.note(n)
            summary.solutions_dropped += parsed.solutions_dropped
            summary.imported += 1
            yield task
        if not summary.imported:  # raised inside the writer, so nothing is written
            raise UserError(
                f"no row became a task ({summary.read} read"
                + "".join(f"; {n} skipped: {why}" for why, n in summary.skipped.items())
                + ")",
                path=src.label,
            )
    finally:
        bar.close()


def import_rows(
    fmt: str,
    src: str | Path,
    out: str | Path,
    *,
    split: str | None = None,
    column_map: str | None = None,
    limit: int | None = None,
    skip_bad: bool = False,
    progress: bool = False,
    recipe: str | None = None,
    test_set: str | None = None,
    language: str | None = None,
) -> tuple[RowSource, RowImportSummary]:
    """Import a row file into the canonical task file ``out`` (written whole, or not at all); return the source
    read and the summary. ``column_map``: the ``rows`` format's ``FIELD=COL,...``; ``recipe``: see ``RECIPES``."""
    try:
        mapping = parse_mapping(column_map) if column_map is not None else None
    except ValueError as e:
        raise UserError(str(e)) from None
    source = resolve_source(str(src), split)
    summary = RowImportSummary()
    write_tasks(
        out,
        iter_row_tasks(
            fmt,
            source,
            summary,
            mapping=mapping,
            limit=limit,
            skip_bad=skip_bad,
            progress=progress,
            recipe=recipe,
            test_set=test_set,
            language=language,
        ),
    )
    return source, summary
