"""What a job's child runs: the candidate, then its tests, reporting raw events (no verdicts here).

Value tests report the values the candidate's calls returned (:mod:`wb_values`); stdio tests what a run printed.
A job with exec tests or a ``check`` is split (``wb_protocol.needs_tester``): this child is then the *tester*, which
runs
the tests and reports whether they passed, and the candidate runs in a process of its own that answers the tests'
calls by value (:mod:`wb_remote`): it never holds the tests, their expected values or the event channel.
"""

import builtins
import sys
import time
import types
import warnings

import wb_native
import wb_protocol as protocol
from wb_remote import _Function as _RemoteFunction
from wb_values import NotBuiltin, encode


def _short(exc):
    try:
        msg = f"{type(exc).__name__}: {exc}"
    except BaseException:
        msg = type(exc).__name__
    return msg if len(msg) <= 300 else msg[:297] + "..."


# ----------------------------------------------------------------------------- compiling ahead

# (source, filename, mode) -> code object: this job's, compiled by the worker before it forks
_CODE: dict[tuple[str, str, str], types.CodeType] = {}
COMPILE_AHEAD_MAX = 64 << 10  # larger sources are compiled in the child, under its limits


def _compile(src, filename, mode):
    """The code object the worker compiled ahead, else compiled here."""
    code = _CODE.get((src, filename, mode))
    return code if code is not None else compile(src, filename, mode)


def _ahead(src, filename, mode):
    key = (src, filename, mode)
    if key in _CODE or len(src) > COMPILE_AHEAD_MAX:
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = compile(src, filename, mode)
        except Exception:  # the child compiles it again and reports the error as always
            return
    if not caught:  # a warning is the child's to print (its stderr tail), so it compiles that itself
        _CODE[key] = code


def compile_ahead(job):
    """Compile the job's sources in the worker: a fresh fork's first ``compile`` pays for
    copy-on-write faults, the warm worker's does not. Only a clean compile is kept;
    the child compiles anything else under its own limits, with the same outcome as before.

    The worker empties ``_CODE`` as soon as the child is forked: nothing of one job may reach another job's
    child. A split job's tests, ``test_setup`` and ``check`` never reach the worker: only its program is here."""
    if job.get("language", "python") != "python":
        return
    if job.get("test_setup"):
        _ahead(job["test_setup"], "<test_setup>", "exec")
    for i, test in enumerate(job.get("tests", ())):
        for src in test.get("exprs", ()):  # value tests' calls
            _ahead(src, f"<test {i}>", "eval")
    _ahead(job["program"], "<candidate>", "exec")


_BASELINE = None  # the worker modules' globals, taken once in the worker and inherited by every fork
WORKER_MODULES = ("wb_protocol", "wb_values", "wb_remote", "wb_harness", "wb_child")


def take_baseline():
    """Snapshot the harness's modules once, before any job (cheap forks)."""
    global _BASELINE
    _BASELINE = {m: dict(vars(sys.modules[m])) for m in WORKER_MODULES if m in sys.modules}


def run_harness(job, emit, tester=None):
    """Execute the program and its tests, emitting raw events (no verdicts here); with ``tester`` (a split job),
    the program runs in the candidate's process at its other end (:func:`serve_candidate`)."""
    if tester is not None:
        run_split(job, emit, tester)
        return
    if job.get("language", "python") != "python":
        wb_native.run_native(job, emit)
        return
    if _BASELINE is None:
        take_baseline()
    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        code = _compile(job["program"], "<candidate>", "exec")
    except (SyntaxError, ValueError, MemoryError) as e:
        emit({"event": protocol.LOAD_ERROR, "error": _short(e)})
        return
    if job.get("script"):
        emit({"event": protocol.LOADED})
        run_script_tests(job, code, emit)
        return
    try:
        exec(code, ns)
    except BaseException as e:  # SystemExit included: leaving early passes nothing
        emit({"event": protocol.LOAD_ERROR, "error": _short(e)})
        return
    # No test is decided in this process (exec tests are split off), so patched builtins gain nothing here; the
    # harness's own names (encode, ...) and its siblings' are still checked: they report the values.
    found = []
    for name, saved in _BASELINE.items():
        current = vars(sys.modules[name])
        if any(current.get(k) is not v for k, v in saved.items() if k not in ("__builtins__", "_BASELINE")):
            found.append("harness globals" if name == "wb_harness" else f"{name} globals")
            current.update({k: v for k, v in saved.items() if k != "_BASELINE"})
    if found:
        emit({"event": protocol.TAMPER, "where": "module level", "what": found[:20]})
    try:
        entry = find_entry(ns, job["entry_point"])
    except BaseException as e:
        emit({"event": protocol.LOAD_ERROR, "error": _short(e)})
        return
    emit({"event": protocol.LOADED})
    run_tests(job, emit, ns, entry, entry)  # value tests only: the scorer judges what the calls returned


def find_entry(ns, name):
    """The function the tests call. LeetCode style: a class Solution with the entry point as a method is what is
    called, as APPS's, TACO's, prime_code's and LiveCodeBench's harnesses call Solution().fn, before any
    module-level name of that name (the APPS prelude's star imports bind merge, sqrt, product ...)."""
    entry = None
    cls = ns.get("Solution")
    if isinstance(cls, type) and callable(getattr(cls, name, None)):
        entry = getattr(cls(), name)
    if entry is None:
        entry = ns.get(name)
    if not callable(entry):
        raise NameError(f"entry point {name!r} is not defined")
    return entry


def serve_candidate(job, server):
    """The candidate's process of a split job: load the program, then answer the tester's calls until it is done."""
    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        exec(_compile(job["program"], "<candidate>", "exec"), ns)
        entry = find_entry(ns, job["entry_point"])
        # a function must answer plain values; a class entry point (KodCode's ``from solution import Stack``)
        # makes instances the tests inspect themselves: there is no plain value to insist on
        hello = {"loaded": server.listing(ns), "entry": server.describe(entry), "guard": not isinstance(entry, type)}
    except BaseException as e:  # SystemExit included: leaving early passes nothing
        server.send({"load_error": _short(e)})
        return
    server.send(hello)
    server.serve()


def run_split(job, emit, tester):
    """The tester's side of a split job: the candidate's process loads the program; the tests run here, on
    proxies of its objects (:mod:`wb_remote`)."""
    try:
        hello = tester.recv()
        if "load_error" in hello:
            emit({"event": protocol.LOAD_ERROR, "error": str(hello["load_error"])[:300]})
            return
        names = {str(k): tester.decode(v) for k, v in dict(hello["loaded"]).items()}
        entry = tester.decode(hello["entry"])
    except BaseException as e:
        emit({"event": protocol.LOAD_ERROR, "error": f"the candidate's process: {_short(e)}"})
        return
    emit({"event": protocol.LOADED})
    guarded = entry
    if hello.get("guard") and isinstance(entry, _RemoteFunction):
        guarded = _RemoteFunction(tester, entry.h, entry.__name__, value=True)
    ns = {**names, "__name__": "__candidate__", "__builtins__": builtins}
    run_tests(job, emit, ns, entry, guarded)


def run_tests(job, emit, ns, entry, guarded):
    """Run the job's tests against ``entry`` (``guarded``: the same, answering plain values only) in copies of the
    program's namespace ``ns``."""
    setup = _compile(job["test_setup"], "<test_setup>", "exec") if job.get("test_setup") else None
    guard = guarded is not entry

    def fresh_ns(exec_test=False):
        tns = dict(ns)
        tns["candidate"] = guarded if exec_test and guard else entry
        if exec_test and guard:
            tns[job["entry_point"]] = guarded
        if setup is not None:
            exec(setup, tns)
        return tns

    for i, test in enumerate(job["tests"]):
        t0 = time.perf_counter()
        if test["kind"] == "values":
            values = []
            try:
                tns = fresh_ns()
                for src in test["exprs"]:
                    values.append(encode(eval(_compile(src, f"<test {i}>", "eval"), tns)))
                ev = {"event": protocol.VALUES, "index": i, "values": values}
            except NotBuiltin as e:
                ev = {"event": protocol.VALUES, "index": i, "error": f"NotBuiltin: {e}"}
            except BaseException as e:
                ev = {"event": protocol.VALUES, "index": i, "error": _short(e)}
        else:
            try:
                tns = fresh_ns(exec_test=True)
                exec(_compile(test["code"], f"<test {i}>", "exec"), tns)
                ev = {"event": protocol.TEST, "index": i, "ok": True}
            except BaseException as e:
                ev = {
                    "event": protocol.TEST,
                    "index": i,
                    "ok": False,
                    "error": "AssertionError" if isinstance(e, AssertionError) and not str(e) else _short(e),
                }
        ev["seconds"] = time.perf_counter() - t0
        emit(ev)
    if job.get("check"):
        try:
            tns = fresh_ns(exec_test=True)
            exec(_compile(job["check"], "<check>", "exec"), tns)
            tns["check"](guarded)
            ev = {"event": protocol.CHECK, "ok": True}
        except BaseException as e:
            ev = {"event": protocol.CHECK, "ok": False, "error": _short(e)}
        emit(ev)


MAX_STDOUT = 1 << 20


def run_script_tests(job, code, emit):
    """stdin/stdout tests: run the whole program once per test on that test's input."""
    import io

    real_stdin, real_stdout = sys.stdin, sys.stdout
    for i, test in enumerate(job["tests"]):
        t0 = time.perf_counter()
        sys.stdin = io.TextIOWrapper(io.BytesIO(test["input"].encode()), encoding="utf-8")
        buf = io.BytesIO()
        out = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
        sys.stdout = out
        ev = {"event": protocol.STDOUT, "index": i}
        try:
            exec(code, {"__name__": "__main__", "__builtins__": builtins})
        except SystemExit:
            pass  # a script may end with exit(); what it printed stands
        except BaseException as e:
            ev["error"] = _short(e)
        sys.stdin, sys.stdout = real_stdin, real_stdout
        try:
            out.flush()
            out.detach()  # keep buf open when the wrapper is collected
        except BaseException:
            pass
        try:
            data = buf.getvalue()
        except ValueError:  # the program closed its stdout
            data = b""
        if "error" not in ev:
            if len(data) > MAX_STDOUT:
                ev["error"] = "output too large"
            else:
                ev["output"] = data.decode("utf-8", "replace")
        ev["seconds"] = time.perf_counter() - t0
        emit(ev)
