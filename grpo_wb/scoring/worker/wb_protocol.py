"""What crosses between the scorer, a sandbox worker and a job's child (standard library only).

Scorer <-> worker, both directions on the worker's stdin/stdout: a 4-byte big-endian length, then that many bytes
of JSON (:func:`frame`); a job's stdio inputs follow its frame as raw UTF-8 (``blobs``: their byte lengths), not
inside the JSON. Messages:

* scorer -> worker: a job (``sandbox.build_job``), or ``{"stop": true}`` (the scorer has its verdict);
* worker -> scorer: ``{"hello": PROBE}`` once; then per job ``{"partial": LINES}`` (streamed event lines, for
  streaming jobs) and one final result (:data:`RESULT_KEYS`), or ``{"sandbox_error": WHY}``.

A job with exec tests or a ``check`` (:func:`needs_tester`) is sent in two parts (:func:`split_job`): its frame
without the tests (``tester``: the byte length of what follows), then the tests as a frame of their own, which the
worker never reads: the job's child (the tester) reads it from the worker's stdin, after it has forked the process
that will run the candidate. So no process that ever runs a candidate holds a test, or held one.

Child -> worker: newline-separated JSON objects on descriptor :data:`EVENT_FD`, each with an ``event`` kind
(:data:`EVENTS`). The child reports; only the scorer decides (``scoring.scorer._Tally``).
"""

import json
import os
import struct

HEADER = struct.Struct(">I")
"""The length prefix of every frame."""
EVENT_FD = 3
"""The descriptor a child reports its events on (the only one it keeps besides 0-2)."""
MAX_EVENT_BYTES = 4 << 20
"""A child that writes more events than this is a flood: its verdict is ``fail``, without waiting."""
STREAM_EVERY = 0.005
"""At most one streamed message per this many seconds: a chatty child cannot flood the scorer."""
RETIRED = 75
"""A worker's exit status when a job left something it could not remove: it exits between two jobs, before
reading the next one, and its private tmpfs goes with it; the unread job runs in a fresh worker."""

# what a job's child reports (kind: fields)
TEST = "test"  # index, ok, error?, seconds: an exec test ran in the child
VALUES = "values"  # index, values | error, seconds: what a value test's calls returned, encoded
STDOUT = "stdout"  # index, output | error, seconds: what a stdio test's run printed
LOAD_ERROR = "load_error"  # error: the program did not load (syntax, import-time exception, no entry point)
LOADED = "loaded"  # the program loaded
CHECK = "check"  # ok, error?: the task's check function ran in the child
TAMPER = "tamper"  # where, what: names the candidate changed in builtins or watched modules
DONE = "done"  # the child finished, after flushing its stderr
TESTS_READ = "tests_read"  # a split job's tester has read its tests (the worker may read its stdin again)
COMPILED = "compiled"  # ok, binary (base64) | error, seconds: a C++ compile job's result (wb_native)
CHECKED = "checked"  # index, ok, message, seconds: a task's checker judged one test's output (wb_native)
EVENTS = (TEST, VALUES, STDOUT, LOAD_ERROR, LOADED, CHECK, TAMPER, DONE, TESTS_READ, COMPILED, CHECKED)
# what the audit's driver (grpo_wb/reward_audit/_driver.py) reports from a child
AUDIT_START, AUDIT_ERROR, AUDIT_CALL, AUDIT_DONE = "audit_start", "audit_error", "audit_call", "audit_done"
AUDIT_EVENTS = (AUDIT_START, AUDIT_ERROR, AUDIT_CALL, AUDIT_DONE)
DONE_MARK = b'{"event": "done"'
"""How the worker spots :data:`DONE` in the raw stream without parsing it (:func:`event_line` writes it so)."""

CXX_FLAGS = ("-DONLINE_JUDGE", "-O2", "-std=c++17", "-pipe", "-s")
"""How a C++ program is compiled (``wb_native``): open-r1's Codeforces line (Piston's ``codeforces`` package runs
``g++ -DONLINE_JUDGE -O2 -std=c++17 -pipe -s``); the scorer's compile cache keys on it."""

RESULT_KEYS = (
    "events_raw",
    "timed_out",
    "returncode",
    "duration",
    "stderr_tail",
    "overflow",
    "stopped",
    "cpu_s",
    "max_rss_mb",
)
"""A job's final result from the worker: the event lines not streamed yet, and how the child ended."""


def frame(obj):
    """One message: the length prefix, then the JSON."""
    data = json.dumps(obj).encode()
    return HEADER.pack(len(data)) + data


def read_exact(fd, n):
    """n bytes from fd, or None at EOF; read into one buffer (linear: a job can carry 200 MB of stdin)."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if not k:
            return None
        got += k
    return buf


def write_all(fd, data):
    """All of ``data`` to fd (a pipe may take part of a write)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def event_line(ev):
    """One event as the child writes it (``json.dumps``' default separators: :data:`DONE_MARK` matches)."""
    return (json.dumps(ev) + "\n").encode()


TESTER_KEYS = ("tests", "test_setup", "check", "wanted", "entry_kind", "solution_module")
"""What a split job's tester reads itself and the worker never holds (the task's ``trusted`` text, its prelude and
the prompt's code, is no secret: the worker compiles it ahead with the program)."""


def needs_tester(job):
    """Whether a job is split in two processes: its exec tests and ``check`` must not run beside the candidate."""
    return (
        "program" in job
        and not job.get("script")
        and (bool(job.get("check")) or any(t["kind"] != "values" for t in job["tests"]))
    )


def split_job(job):
    """``(the frame the worker reads, the frame only the tester reads)``; the second is empty for a job whose
    tests are decided by the scorer (values, stdio)."""
    if not needs_tester(job):
        return job, b""
    tests = frame({k: job[k] for k in TESTER_KEYS if k in job})
    return {**{k: v for k, v in job.items() if k not in TESTER_KEYS}, "tester": len(tests)}, tests


def remove_by_coreutils(paths, timeout, ignore=()):
    """Remove ``paths`` (a job's directory, a worker's ``/tmp``) with coreutils, which walk trees of any depth
    (fts, by descriptor) where ``shutil.rmtree`` gives up: ``chmod -R u+rwx`` first (a job may have made its dirs
    000), then ``rm -rf``, never across a mount; each quiet and bounded by ``timeout`` seconds. An exception of a
    class in ``ignore`` from one command is passed over (the next still runs)."""
    import subprocess  # only where a tree resisted shutil: the worker does not load it otherwise

    for argv in (["chmod", "-R", "u+rwx", "--", *paths], ["rm", "-rf", "--one-file-system", "--", *paths]):
        try:
            subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except ignore:
            pass
