"""What C++ compiling leaves for later runs, kept by the scorer and by no job (:func:`sandbox.cache_root`):

* ``pch/<key>/bits/stdc++.h.gch``: ``bits/stdc++.h`` precompiled once per compiler identity and flags, built in a
  one-off sandbox (:func:`sandbox.build_pch`) that prints it on its stdout; the scorer writes it here atomically,
  and every worker sees this directory read-only. It is offered only to a source whose first line of code includes
  that header (:func:`pch_eligible`: nothing before it could change what the header means), and g++ uses it only
  when valid (``-Winvalid-pch``), else reads the header itself.
* ``cxx/<k>/<key>``: the compile cache on disk (:class:`CompileStore`): each compiled program (or compile error) by a
  key over the source, the flags, the headers, the precompiled header used and the compiler's identity; bounded in
  bytes, least recently used out first. An entry is served only to its own key, whole: the key, length and SHA-256
  it records must match, else it is ignored (and removed) and the source compiled again.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from grpo_wb.scoring.sandbox import PCH_HEADER, cache_root, pch_root
from grpo_wb.scoring.worker import wb_protocol as protocol

DISK_CACHE_BYTES = 1 << 30
"""The compile cache's bound on disk (1 GiB: some 20,000 programs of 50 KiB)."""
PCH_RECIPE = 1
"""Bumped when how the header is built changes: a header of an older recipe is never used."""
_MAGIC = b"GRPOWB-CXX-1\n"


@functools.lru_cache(maxsize=8)
def compiler_identity(compiler: str) -> str:
    """Who compiles: the compiler's path (resolved), its ``--version``, ``-dumpfullversion`` and ``-dumpmachine``
    (the target), and its file's size and time: a compiler upgraded in place is another identity."""
    real = os.path.realpath(compiler)
    parts = [real]
    try:
        st = os.stat(real)
        parts.append(f"{st.st_size}:{st.st_mtime_ns}")
    except OSError:
        parts.append("?")
    for flag in ("--version", "-dumpfullversion", "-dumpmachine"):
        try:
            parts.append(subprocess.run([compiler, flag], capture_output=True, text=True, timeout=30).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            parts.append("?")
    return "\n".join(parts)


def pch_key(compiler: str) -> str:
    """The precompiled header's key: the compiler's identity, the flags, the header and the recipe."""
    what = [compiler_identity(compiler), list(protocol.CXX_FLAGS), PCH_HEADER, PCH_RECIPE]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]


_LEADING = re.compile(r"(?:\s+|//[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_PCH_INCLUDE = re.compile(r'#[ \t]*include[ \t]*(?:<bits/stdc\+\+\.h>|"bits/stdc\+\+\.h")[ \t]*(?://[^\n]*)?(?:\n|$)')


def pch_eligible(source: str) -> bool:
    """Whether ``source``'s first line of code (after blank lines and comments) includes ``bits/stdc++.h``: then
    nothing before the include (a ``#define``, a ``#pragma``, another header) can make the precompiled header mean
    anything else than the header would, and the compile is the plain one's (g++'s own check is the second guard)."""
    m = _LEADING.match(source)
    rest = source[m.end() if m else 0 :]
    return bool(_PCH_INCLUDE.match(rest))


def _atomic_write(path: str, data: bytes | None, fill: Callable[[IO[bytes]], None] | None = None) -> None:
    """``data`` (or what ``fill`` writes) at ``path``, whole or not at all: a temporary file beside it, flushed to
    disk, then renamed over it."""
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "w+b") as f:
            if fill is not None:
                fill(f)
            else:
                f.write(data or b"")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@dataclass(frozen=True)
class Precompiled:
    """A precompiled header ready to offer: the directory to search first (holding ``bits/stdc++.h.gch``)."""

    key: str
    include_dir: str


def ensure_pch(compiler: str, build: Callable[[IO[bytes]], str | None]) -> tuple[Precompiled | None, str]:
    """The precompiled header for ``compiler``, built (by ``build``, writing into a file of ours) when there is
    none yet; one process builds it at a time (a lock beside it). Returns it, or None and why not."""
    key = pch_key(compiler)
    root = pch_root()
    include_dir = os.path.join(root, key)
    gch = os.path.join(include_dir, PCH_HEADER + ".gch")
    if os.path.isfile(gch):
        return Precompiled(key, include_dir), "cached"
    os.makedirs(root, mode=0o755, exist_ok=True)
    with open(os.path.join(root, f".{key}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(gch):  # another process built it while we waited
            return Precompiled(key, include_dir), "cached"
        os.makedirs(os.path.dirname(gch), mode=0o755, exist_ok=True)
        why: list[str | None] = [None]

        def fill(f: IO[bytes]) -> None:
            why[0] = build(f)
            if why[0] is None:
                f.flush()
                f.seek(0)
                if f.read(4) != b"gpch":  # GCC's precompiled-header magic
                    why[0] = "the build printed something that is not a precompiled header"
            if why[0] is not None:
                raise _BuildFailed(why[0])

        try:
            _atomic_write(gch, None, fill)
        except _BuildFailed as e:
            return None, str(e)
        return Precompiled(key, include_dir), "built"


class _BuildFailed(Exception):
    pass


@dataclass(frozen=True)
class Entry:
    """One compile cache entry: the program (None after a compile error), its status and message, the seconds the
    compile took."""

    binary: bytes | None
    status: str
    error: str
    seconds: float


class CompileStore:
    """The compile cache on disk, under ``cache_root()/cxx`` (or ``root``): written only by this process (atomic
    renames: another scorer on the machine sees an entry whole or not at all), bounded by ``max_bytes``, the least
    recently used entries (by file time, touched on every hit) removed first."""

    def __init__(self, root: str | None = None, max_bytes: int = DISK_CACHE_BYTES):
        self.root = root or os.path.join(cache_root(), "cxx")
        self.max_bytes = max_bytes
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        self._lock = threading.Lock()
        self._bytes = sum(size for _, size, _ in self._entries())
        self.hits = self.misses = self.ignored = 0

    def _path(self, key: str) -> str:
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            raise ValueError(f"not a compile cache key: {key!r}")
        return os.path.join(self.root, key[:2], key)

    def _entries(self) -> list[tuple[str, int, int]]:
        """``(path, size, mtime_ns)`` of every entry."""
        out: list[tuple[str, int, int]] = []
        try:
            subdirs = list(os.scandir(self.root))
        except OSError:
            return out
        for d in subdirs:
            if not d.is_dir(follow_symlinks=False):
                continue
            try:
                for e in os.scandir(d.path):
                    if e.is_file(follow_symlinks=False) and not e.name.startswith(".tmp-"):
                        st = e.stat(follow_symlinks=False)
                        out.append((e.path, st.st_size, st.st_mtime_ns))
            except OSError:
                continue
        return out

    def get(self, key: str) -> Entry | None:
        """The entry of ``key`` when one is whole and was written for ``key``; else None (a damaged one removed)."""
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            with self._lock:
                self.misses += 1
            return None
        entry = _decode(key, data)
        if entry is None:
            with self._lock:
                self.ignored += 1
                self.misses += 1
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        try:
            os.utime(path)  # least recently used goes first
        except OSError:
            pass
        with self._lock:
            self.hits += 1
        return entry

    def put(self, key: str, entry: Entry) -> None:
        body = entry.binary or b""
        head = {
            "key": key,
            "status": entry.status,
            "error": entry.error,
            "seconds": entry.seconds,
            "has_binary": entry.binary is not None,
            "size": len(body),
            "sha256": hashlib.sha256(body).hexdigest(),
        }
        data = _MAGIC + json.dumps(head).encode() + b"\n" + body
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            _atomic_write(path, data)
        except OSError:
            return  # a full disk costs a compile next time, never the run
        with self._lock:
            self._bytes += len(data)
            over = self._bytes > self.max_bytes
        if over:
            self.evict()

    def evict(self) -> None:
        """Remove the least recently used entries until the cache holds at most 90 % of its bound."""
        with self._lock:
            entries = sorted(self._entries(), key=lambda e: e[2])
            total = sum(size for _, size, _ in entries)
            for path, size, _ in entries:
                if total <= 0.9 * self.max_bytes:
                    break
                try:
                    os.unlink(path)
                    total -= size
                except OSError:
                    pass
            self._bytes = total

    def size(self) -> int:
        return sum(size for _, size, _ in self._entries())


def _decode(key: str, data: bytes) -> Entry | None:
    if not data.startswith(_MAGIC):
        return None
    nl = data.find(b"\n", len(_MAGIC))
    if nl < 0:
        return None
    try:
        head = json.loads(data[len(_MAGIC) : nl])
    except ValueError:
        return None
    body = data[nl + 1 :]
    if (
        not isinstance(head, dict)
        or head.get("key") != key
        or head.get("size") != len(body)
        or head.get("sha256") != hashlib.sha256(body).hexdigest()
        or not isinstance(head.get("status"), str)
    ):
        return None
    return Entry(
        body if head.get("has_binary") else None,
        head["status"],
        str(head.get("error") or ""),
        float(head.get("seconds") or 0.0),
    )
