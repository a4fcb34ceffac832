"""Row files as RL datasets store them: JSONL, JSON, Parquet and ``datasets.save_to_disk`` folders.

Rows stream one at a time (Parquet and Arrow in record batches), so reading a
dataset costs the memory of one batch, not of the file. Every row is numbered
by its 0-based position in the dataset (``dataset[ROW]`` in Hugging Face
datasets, ``df.iloc[ROW]`` in pandas). Messages name a row where a person finds
it (:func:`iter_located_rows`): a JSON-lines row by its 1-based line,
``PATH:LINE: problem`` as an editor or ``sed -n LINEp`` counts, blank lines
included; any other row as ``PATH: row ROW (0-based): problem``.

A ``save_to_disk`` folder is read with pyarrow alone, as ``datasets`` lays it
out: ``state.json`` lists the Arrow IPC *stream* shards in order; a
``DatasetDict`` folder (``dataset_dict.json``) holds one such folder per split.
Parquet and Arrow need the ``[datasets]`` extra (pyarrow); JSON and JSONL need
nothing.

:func:`row_hash` fingerprints a row so an export can check that the source file
still holds the row a task was imported from. :func:`write_rows` writes rows back as
JSON lines, Parquet, an Arrow stream or a ``save_to_disk`` folder (:func:`output_kind`
says which a path asks for), keeping a Parquet/Arrow source's column types and
``datasets`` features.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError, one_line, require
from grpo_wb.jsonio import atomic_open, atomic_write_jsonl, dumps, iter_jsonl, read_json

PYARROW_HINT = "reading Parquet or Arrow needs pyarrow: pip install 'grpo_wb[datasets]'"
BATCH_ROWS = 1024


def _pyarrow():
    return require("pyarrow", PYARROW_HINT)


def _parquet():
    return require("pyarrow.parquet", PYARROW_HINT)


def _canonical(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"__bytes__": value.hex()}
    return str(value)


def row_hash(row: dict[str, Any]) -> str:
    """sha256 of the row as canonical JSON (sorted keys; bytes and dates made text)."""
    text = json.dumps(row, sort_keys=True, ensure_ascii=False, default=_canonical, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RowSource:
    """Where rows come from: a file, or one split of a ``save_to_disk`` folder."""

    path: str
    """The file or folder as given."""
    split: str | None = None
    """The split of a ``DatasetDict`` folder (None for files and single datasets)."""

    @property
    def label(self) -> str:
        return f"{self.path}[{self.split}]" if self.split else self.path


def _container(path: Path) -> str:
    if path.is_dir():
        return "save_to_disk"
    name = path.name.lower()
    for ext, kind in (
        (".jsonl", "jsonl"),
        (".jsonl.gz", "jsonl"),
        (".ndjson", "jsonl"),
        (".json", "json"),
        (".json.gz", "json"),
        (".parquet", "parquet"),
        (".arrow", "arrow"),
    ):
        if name.endswith(ext):
            return kind
    raise UserError(
        "unknown row file type (expected .jsonl[.gz], .json[.gz], .parquet, .arrow or a save_to_disk folder)",
        path=str(path),
    )


def _split_folder(root: Path, split: str | None) -> tuple[Path, str | None]:
    """The dataset folder to read: ``root`` itself, or one split of a DatasetDict folder."""
    if (root / "dataset_dict.json").exists():
        info = read_json(root / "dataset_dict.json")
        splits = info.get("splits") if isinstance(info, dict) else None
        if not isinstance(splits, list) or not all(isinstance(x, str) for x in splits) or not splits:
            raise UserError("dataset_dict.json has no list of split names", path=str(root))
        if split is None:
            if "train" in splits or len(splits) == 1:
                split = "train" if "train" in splits else splits[0]
            else:
                raise UserError(
                    f"a DatasetDict with splits {', '.join(splits)}: choose one with --split", path=str(root)
                )
        if split not in splits:
            raise UserError(f"no split {split!r} (splits: {', '.join(splits)})", path=str(root))
        return root / split, split
    if split is not None:
        raise UserError(f"--split {split} given, but this is a single dataset (no dataset_dict.json)", path=str(root))
    if not (root / "state.json").exists():
        raise UserError("not a save_to_disk folder (no state.json or dataset_dict.json)", path=str(root))
    return root, None


def _shards(folder: Path) -> list[Path]:
    state = read_json(folder / "state.json")
    files = state.get("_data_files") if isinstance(state, dict) else None
    listed = [f.get("filename") for f in files or [] if isinstance(f, dict)] if isinstance(files, list) else []
    names = [n for n in listed if isinstance(n, str) and n]
    if not listed or len(names) != len(listed):  # some entry is not a non-empty string
        raise UserError("state.json lists no data files", path=str(folder))
    missing = [n for n in names if not (folder / n).exists()]
    if missing:
        raise UserError(f"data file {missing[0]} listed in state.json is missing", path=str(folder))
    return [folder / n for n in names]


def _noting_lines(numbered: Iterator[tuple[int, Any]], lines: list[int]) -> Iterator[Any]:
    """The objects of ``(line, object)`` pairs, each line appended to ``lines`` as its object is read."""
    for n, obj in numbered:
        lines.append(n)
        yield obj


def count_rows(src: RowSource) -> int | None:
    """The number of rows, when the container says so without reading them (Parquet, Arrow), else None."""
    path = Path(src.path)
    kind = _container(path)
    if kind == "parquet":
        return _open_parquet(path).metadata.num_rows
    return None


def _open_parquet(path: Path):
    try:
        return _parquet().ParquetFile(str(path))
    except Exception as e:  # pyarrow raises several types for a file that is not Parquet
        raise UserError(f"not a Parquet file ({type(e).__name__}: {one_line(e, 120)})", path=str(path)) from None


def _guarded(rows: Iterator[Any], path: str) -> Iterator[Any]:
    """Rows, with a container that breaks while it is read (truncated, corrupt) as a one-line error."""
    try:
        yield from rows
    except UserError:
        raise
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read rows ({type(e).__name__}: {one_line(e, 160)})", path=path) from None


def _arrow_rows(files: list[Path]) -> Iterator[dict[str, Any]]:
    pa = _pyarrow()
    for f in files:
        try:
            reader = pa.ipc.open_stream(pa.memory_map(str(f)))
        except pa.ArrowInvalid:  # a file-format .arrow (not what save_to_disk writes) reads too
            try:
                reader = pa.ipc.open_file(pa.memory_map(str(f)))
            except pa.ArrowInvalid as e:
                raise UserError(f"not an Arrow file ({one_line(e, 120)})", path=str(f)) from None
            for i in range(reader.num_record_batches):
                yield from reader.get_batch(i).to_pylist()
            continue
        for batch in reader:
            yield from batch.to_pylist()


def _json_rows(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            text = f.read()
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read ({type(e).__name__}: {one_line(e, 120)})", path=str(path)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # Dataset.to_json writes JSON lines under a .json name
            for _, obj in iter_jsonl(path):
                yield obj
            return
        raise UserError(f"not JSON: {e.msg} (line {e.lineno})", path=str(path)) from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise UserError("expected a JSON list of rows (or an object with a 'data' list)", path=str(path))
    yield from data


@dataclass(frozen=True)
class UnreadableRow:
    """A line of a JSON-lines file that is not JSON, in its row's place: a bad row like any other (``--skip-bad``
    counts and skips it; without it, the import stops naming the row)."""

    reason: str


def iter_rows(src: RowSource, *, limit: int | None = None) -> Iterator[tuple[int, Any]]:
    """``(row, value)`` for each row, streamed; ``value`` is a dict for well-formed rows (callers check)."""
    for i, _, row in iter_located_rows(src, limit=limit):
        yield i, row


def iter_located_rows(src: RowSource, *, limit: int | None = None) -> Iterator[tuple[int, str, Any]]:
    """``(row, where, value)``: :func:`iter_rows` with where a message puts the row (``PATH:LINE`` for JSON
    lines, ``PATH: row ROW (0-based)`` otherwise)."""
    path = Path(src.path)
    if not path.exists():
        raise UserError("no such file or folder", path=src.path)
    kind = _container(path)
    if kind != "save_to_disk" and src.split is not None:
        raise UserError("--split goes with a save_to_disk DatasetDict folder", path=src.path)
    lines: list[int] = []  # JSON lines: the line of the row just read
    if kind == "jsonl":
        rows: Iterator[Any] = _noting_lines(iter_jsonl(path, on_bad=UnreadableRow), lines)
    elif kind == "json":
        rows = _json_rows(path)
    elif kind == "parquet":
        pf = _open_parquet(path)
        rows = (r for batch in pf.iter_batches(batch_size=BATCH_ROWS) for r in batch.to_pylist())
    elif kind == "arrow":
        rows = _arrow_rows([path])
    else:
        folder, _ = _split_folder(path, src.split)
        rows = _arrow_rows(_shards(folder))
    for i, row in enumerate(_guarded(rows, src.label)):
        if limit is not None and i >= limit:
            return
        yield i, (f"{src.label}:{lines.pop()}" if lines else f"{src.label}: row {i} (0-based)"), row


def resolve_source(path: str, split: str | None) -> RowSource:
    """A row source with a DatasetDict's split chosen (``train`` by default, or the only one)."""
    p = Path(path)
    if p.is_dir() and p.exists():
        _, split = _split_folder(p, split)
    return RowSource(path, split)


def rows_at(src: RowSource, wanted: set[int]) -> dict[int, Any]:
    """The rows at the given positions, in one streaming pass (memory: only the wanted rows)."""
    found: dict[int, Any] = {}
    last = max(wanted) if wanted else -1
    for i, row in iter_rows(src):
        if i in wanted:
            found[i] = row
        if i >= last:
            break
    return found


OUTPUT_TYPES = (
    (".jsonl", "jsonl"),
    (".jsonl.gz", "jsonl"),
    (".ndjson", "jsonl"),
    (".json", "jsonl"),
    (".parquet", "parquet"),
    (".arrow", "arrow"),
)
OUTPUT_HINT = "end it with .jsonl, .jsonl.gz, .json (JSON lines), .parquet, .arrow, or / for a save_to_disk folder"
DATASETS_HINT = "writing a save_to_disk folder needs datasets: pip install 'grpo_wb[datasets]'"


def output_kind(path: str | Path) -> str:
    """What ``write_rows`` writes at ``path``: ``jsonl``, ``parquet``, ``arrow`` or ``save_to_disk``.

    A folder is a path written with a trailing ``/``, or one that is a folder already (a ``save_to_disk``
    folder an export may replace); any other path needs one of the suffixes of :data:`OUTPUT_TYPES`. A path
    with no suffix is refused, not guessed.
    """
    text = str(path)
    if text.endswith(("/", os.sep)) or Path(text).is_dir():
        return "save_to_disk"
    name = Path(text).name.lower()
    for ext, kind in OUTPUT_TYPES:
        if name.endswith(ext):
            return kind
    raise UserError(f"unknown output type: {OUTPUT_HINT}", path=text)


def _is_dataset_folder(path: Path) -> bool:
    return (path / "state.json").is_file() or (path / "dataset_dict.json").is_file()


def check_output(path: str | Path) -> str:
    """:func:`output_kind`, and that ``write_rows`` may write there: a folder that is not a dataset (or a file where
    a folder was asked for) is refused, ``--force`` or not. Cheap: callers check before doing any work."""
    kind = output_kind(path)
    if kind == "save_to_disk":
        folder = Path(path)
        if folder.exists() and not folder.is_dir():
            raise UserError("is a file, not a folder (a trailing / asks for a save_to_disk folder)", path=str(path))
        if folder.is_dir() and any(folder.iterdir()) and not _is_dataset_folder(folder):
            raise UserError("is a folder that is not a save_to_disk dataset; refusing to replace it", path=str(path))
    return kind


def write_rows(path: str | Path, rows: list[dict[str, Any]], *, schema_from: RowSource | None = None) -> str:
    """Write rows as :func:`output_kind` says, atomically; return the container written.

    ``jsonl``: JSON lines (gzipped for ``.gz``), what ``load_dataset("json")`` reads; ``parquet``: what
    ``load_dataset("parquet")`` and verl's ``data.train_files`` read; ``arrow``: an Arrow IPC stream, what
    ``Dataset.from_file`` reads; ``save_to_disk``: a ``Dataset`` folder, what ``load_from_disk`` reads (needs
    ``datasets``). With ``schema_from`` a Parquet, Arrow or ``save_to_disk`` source, its column types are kept
    for the columns it has (structs, lists and nulls come back as they went in; new columns get inferred types),
    and so are its ``datasets`` features (the ``huggingface`` schema metadata: ``ClassLabel``, ``Sequence``,
    ``Value('int32')`` load back as they were) when every row fits the source's types.
    """
    kind = check_output(path)
    if kind == "jsonl":
        if str(path).lower().endswith(".gz"):
            with atomic_open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                for r in rows:
                    gz.write((dumps(r) + "\n").encode("utf-8", "backslashreplace"))
        else:
            atomic_write_jsonl(path, rows)
        return "jsonl"
    table = _table(rows, schema_from, str(path), {"parquet": "Parquet", "arrow": "Arrow"}.get(kind, "dataset"))
    if kind == "parquet":
        with atomic_open(path, "wb") as f:
            _parquet().write_table(table, f)
    elif kind == "arrow":
        pa = _pyarrow()
        with atomic_open(path, "wb") as f:
            with pa.ipc.new_stream(f, table.schema) as w:
                w.write_table(table)
    else:
        _write_folder(Path(path), table)
    return kind


def _table(rows: list[dict[str, Any]], schema_from: RowSource | None, path: str, what: str):
    """One Arrow table of every row's columns, typed (and described) as the source was where the rows fit."""
    pa = _pyarrow()
    columns: dict[str, None] = {}
    for r in rows:  # every row's columns, in order of first appearance (Arrow would take the first row's)
        columns.update(dict.fromkeys(r))
    rows = [{k: r.get(k) for k in columns} for r in rows]
    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
        raise UserError(
            f"these rows do not make one {what} table ({one_line(e, 160)}); write JSON lines (a .jsonl path) instead",
            path=path,
        ) from None
    if schema_from is not None and _container(Path(schema_from.path)) in ("parquet", "arrow", "save_to_disk"):
        source = _source_schema(schema_from)
        fields = [source.field(n) if n in source.names else table.schema.field(n) for n in table.column_names]
        try:  # the source's column types, where every row fits them
            typed = pa.Table.from_pylist(rows, schema=pa.schema(fields))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            return table
        meta = _features_metadata(source)
        return typed.replace_schema_metadata(meta) if meta else typed
    return table


def _features_metadata(schema) -> dict[bytes, bytes] | None:
    """The ``huggingface`` schema metadata's features, without the source's fingerprint (these are other rows)."""
    raw = (schema.metadata or {}).get(b"huggingface")
    try:
        features = json.loads(raw)["info"]["features"] if raw else None
    except (ValueError, KeyError, TypeError):
        return None
    return {b"huggingface": json.dumps({"info": {"features": features}}).encode()} if features else None


def _write_folder(path: Path, table) -> None:
    """``Dataset.save_to_disk`` into a temporary sibling, renamed into place (an old dataset folder is replaced
    only once the new one is whole)."""
    datasets = require("datasets", DATASETS_HINT)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    old = None
    try:
        bars = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()
        try:
            datasets.Dataset(table).save_to_disk(str(tmp / "dataset"))
        finally:
            if bars:
                datasets.enable_progress_bars()
        new = tmp / "dataset"
        made = (new / "state.json").stat().st_mode & 0o666  # what the umask gave a file datasets wrote
        os.chmod(new, made | (made & 0o444) >> 2)  # the folder: mkdtemp's 0700 made what mkdir would give
        if path.exists():
            old = tmp / "old"
            os.replace(path, old)
        os.replace(new, path)
    except BaseException:
        if old is not None and not path.exists():
            os.replace(old, path)
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def id_prefix(fmt: str, src: RowSource) -> str:
    """The start of an imported task's id: ``FORMAT``, or ``FORMAT/SPLIT`` for a split of a ``DatasetDict`` folder
    (so rows of different splits never share an id: ``verl/train/12``, ``verl/test/12``)."""
    return f"{fmt}/{src.split}" if src.split else fmt


def _source_schema(src: RowSource):
    pa = _pyarrow()
    path = Path(src.path)
    kind = _container(path)
    if kind == "parquet":
        return _parquet().ParquetFile(str(path)).schema_arrow
    files = [path] if kind == "arrow" else _shards(_split_folder(path, src.split)[0])
    try:
        return pa.ipc.open_stream(pa.memory_map(str(files[0]))).schema
    except pa.ArrowInvalid:
        return pa.ipc.open_file(pa.memory_map(str(files[0]))).schema
