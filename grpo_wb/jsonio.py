"""Crash-safe JSON and JSONL I/O.

JSONL artifacts are appended one line at a time and flushed (and fsynced) so a
crash loses at most the line being written; JSON artifacts are written to a
temporary file in the same directory and renamed over the target, so a reader
sees either the old file or the new one, never half of one.
"""

from __future__ import annotations

import datetime
import decimal
import gzip
import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from grpo_wb.errors import UserError


def _default(obj: Any) -> Any:
    # numpy scalars and arrays sneak in from diagnostics, dates and decimals from Parquet rows; keep the JSON plain.
    if isinstance(obj, (datetime.date, datetime.time)):
        return obj.isoformat()
    if isinstance(obj, decimal.Decimal):
        return str(obj)
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", "backslashreplace")
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "shape", None) == ():
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "to_json") and callable(obj.to_json):
        return obj.to_json()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _clean(obj: Any) -> Any:
    """Replace NaN/inf by None: strict JSON readers reject them (TRL does the same)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


_SURROGATES = re.compile("[\ud800-\udfff]+")
"""Code points UTF-8 cannot encode: a child's ``raise ValueError("\\ud800")``, a ``\\ud800`` escape in a reply."""


def _readable_surrogates(m: re.Match) -> str:
    s = m.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")  # join valid pairs
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def encodable(obj: Any) -> Any:
    """``obj`` with every string (keys too, nested) encodable as UTF-8: what a child or a model wrote passes
    through this before any writer, report or notebook sees it. A lone surrogate becomes the text of its
    escape (``\\ud800``, as Python prints it to stderr and as it reads in a string literal), a valid pair
    its character."""
    if isinstance(obj, str):
        return obj if obj.isascii() or not _SURROGATES.search(obj) else _SURROGATES.sub(_readable_surrogates, obj)
    if isinstance(obj, dict):
        return {encodable(k): encodable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [encodable(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(encodable(v) for v in obj)
    return obj


def _json_escape_surrogates(text: str) -> str:
    """JSON text UTF-8 can encode: surrogates (only ever inside string literals) written as ``\\uXXXX``, as
    ``ensure_ascii`` would, so a reader gets back the very string (nothing lost, the rest stays readable)."""
    if text.isascii() or not _SURROGATES.search(text):
        return text
    return _SURROGATES.sub(lambda m: "".join(f"\\u{ord(c):04x}" for c in m.group()), text)


def _json(obj: Any, **kw: Any) -> str:
    return _json_escape_surrogates(
        json.dumps(_clean(obj), default=lambda o: _clean(_default(o)), allow_nan=False, ensure_ascii=False, **kw)
    )


def dumps(obj: Any) -> str:
    """One-line strict JSON (NaN becomes null), encodable whatever the strings hold."""
    return _json(obj)


_UMASK = os.umask(0o022)
os.umask(_UMASK)


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[IO[Any]]:
    """A file that appears at ``path`` whole (fsynced, then renamed) when the block ends, or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # what open() would give, not mkstemp's 0600
        # text a model or a child wrote (a report quoting an error) must not fail the write: see encodable()
        binary = "b" in mode
        encoding, errors = (None, None) if binary else ("utf-8", "backslashreplace")  # None: open()'s own defaults
        with os.fdopen(fd, mode, encoding=encoding, errors=errors) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file and ``os.replace``."""
    with atomic_open(path) as f:
        f.write(text)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Pretty JSON, written atomically."""
    atomic_write_text(path, _json(obj, indent=2) + "\n")


def atomic_write_jsonl(path: str | os.PathLike, rows: Iterable[Any]) -> int:
    """A whole JSONL file, written atomically (streamed: ``rows`` may be a generator); return how many rows."""
    n = 0
    with atomic_open(path) as f:
        for r in rows:
            f.write(dumps(r) + "\n")
            n += 1
    return n


class JsonlAppender:
    """Append JSON lines, each flushed before ``write`` returns (a killed process loses none) and fsynced (an
    operating-system crash loses none); ``sync_every`` seconds > 0 fsyncs at most that often instead (and at
    close), for files whose last lines a resumed run can make again cheaply."""

    def __init__(self, path: str | os.PathLike, mode: str = "a", *, sync_every: float = 0.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, mode, encoding="utf-8")
        self.sync_every = sync_every
        self._synced = time.monotonic()

    def write(self, row: Any) -> None:
        self.write_many((row,))

    def write_many(self, rows: Iterable[Any]) -> None:
        """Several lines, flushed together and fsynced once (with ``sync_every``: when that much time has passed)."""
        self._f.write("".join(dumps(r) + "\n" for r in rows))
        self._f.flush()
        now = time.monotonic()
        if not self.sync_every or now - self._synced >= self.sync_every:
            os.fsync(self._f.fileno())
            self._synced = now

    def close(self) -> None:
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
        self._f.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_text(path: str | os.PathLike, *, binary: bool = False):
    """Open a text file, transparently gunzipping ``*.gz`` (``binary``: its bytes); a missing file is a UserError."""
    p = Path(path)
    if not p.exists():
        raise UserError("no such file", path=str(path))
    if p.is_dir():
        raise UserError("is a directory, expected a file", path=str(path))
    if p.suffix == ".gz":
        return gzip.open(p, "rb") if binary else gzip.open(p, "rt", encoding="utf-8")
    return open(p, "rb") if binary else open(p, encoding="utf-8")


def read_json(path: str | os.PathLike) -> Any:
    """A whole JSON file (``*.gz`` un-gzipped); bad JSON is a UserError naming the file and line."""
    with open_text(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise UserError(f"invalid JSON: {e.msg} (line {e.lineno})", path=str(path)) from None
        except UnicodeDecodeError as e:
            raise UserError(f"not UTF-8 text: {e.reason}", path=str(path)) from None
        except (OSError, EOFError) as e:
            raise UserError(f"cannot read: {e}", path=str(path)) from None


def fast_loads(line: bytes) -> Any:
    """orjson's parser (several times json's speed), json's where orjson refuses what json reads (NaN, Infinity,
    lone surrogates) or for its error message. orjson reads an integer past 64 bits as a float: for readers
    that use only strings, booleans and ordinary numbers."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def iter_jsonl(
    path: str | os.PathLike, *, on_bad: Callable[[str], Any] | None = None, fast: bool = False
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)``; skip blank lines; bad JSON is a UserError naming the line, or, with
    ``on_bad``, yields ``on_bad(why)`` in its place (for callers that count and skip bad lines). ``fast``: parsed
    by orjson (:func:`fast_loads`: integers past 64 bits become floats)."""
    _loads = fast_loads if fast else json.loads
    with open_text(path, binary=fast) as f:  # orjson reads UTF-8 bytes: no decoding to str and back
        try:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    yield lineno, _loads(line)
                except json.JSONDecodeError as e:
                    if on_bad is not None:
                        yield lineno, on_bad(f"invalid JSON: {e.msg} (column {e.colno})")
                        continue
                    raise UserError(f"invalid JSON: {e.msg} (column {e.colno})", path=str(path), line=lineno) from None
        except UnicodeDecodeError as e:
            raise UserError(f"not UTF-8 text: {e.reason}", path=str(path)) from None
        except (OSError, EOFError) as e:
            raise UserError(f"cannot read: {e}", path=str(path)) from None


def repair_jsonl_tail(path: str | os.PathLike) -> int:
    """Drop a trailing partial line left by a crash; return how many complete lines remain."""
    p = Path(path)
    if not p.exists():
        return 0
    data = p.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(p, "r+b") as f:
            f.truncate(cut)
        data = data[:cut]
    return sum(1 for line in data.splitlines() if line.strip())


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_hashes(folder: str | os.PathLike, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """SHA-256 and size of each of ``names`` that exists in ``folder`` (a run manifest's ``files``)."""
    out = {}
    for name in names:
        p = Path(folder) / name
        if p.exists():
            out[name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    return out
