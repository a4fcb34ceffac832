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
import wb_remote
from wb_values import NotBuiltin, encode, plain_of


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
    for i, src in enumerate(job.get("trusted") or ()):  # a split job's prelude and prompt, run in its tester
        _ahead(src, f"<task {i}>", "exec")
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


ITERATED_MAX = 100_000
"""Most items of an iterator a value test's call returned that are read (the scorer compares what they were)."""


def _as_value(obj):
    """A value test's answer that is not a builtin value: an iterator as the items it yields (read here, in the
    candidate's process: the scorer gets them as an iterator over those items), an instance of a subclass of a
    builtin type as the value it is (``wb_values.plain_of``); anything else is not a value."""
    if wb_remote._is_iterator(obj):
        items = []
        for x in obj:
            if len(items) == ITERATED_MAX:
                raise NotBuiltin(f"an iterator of more than {ITERATED_MAX} items")
            items.append(encode(x, hook=_as_value))
        return {"$": "iterated", "v": items}
    return plain_of(obj)


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
        described = server.describe(entry)
        if described.get("$") == "builtin":  # ``sort_list = sorted``: still the candidate's to call, not ours
            described = {"$": "function", "v": [server.export(entry), described["v"]]}
        hello = {"loaded": server.listing(ns), "entry": described}
    except BaseException as e:  # SystemExit included: leaving early passes nothing
        server.send({"load_error": _short(e)})
        return
    server.send(hello)
    server.serve()


def trusted_namespace(job):
    """The namespace the tests start from: the tester's own builtins and the task's trusted text (its prelude, the
    prompt's helpers: ``tester_scope.trusted_text``), each statement run on its own."""
    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    for i, src in enumerate(job.get("trusted") or ()):
        try:
            exec(_compile(src, f"<task {i}>", "exec"), ns)
        except BaseException:  # the task's text, not the candidate's: a statement that cannot run defines nothing
            pass
    return ns


class _SolutionModule(types.ModuleType):
    """``import solution`` in a test module: the candidate's module-level names, each read when a test asks for it
    and crossing as a name the tests read (:data:`wb_remote.NAMED`)."""

    def __init__(self, tester, listing):
        super().__init__("solution")
        self.__dict__["_grpo_wb"] = (tester, listing)

    def __getattr__(self, name):
        tester, listing = self.__dict__["_grpo_wb"]
        if name.startswith("__") or name not in listing:
            raise AttributeError(f"module 'solution' has no attribute {name!r}")
        value = tester.decode(listing[name], wb_remote.NAMED)
        self.__dict__[name] = value
        return value


def run_split(job, emit, tester):
    """The tester's side of a split job: the candidate's process loads the program; the tests run here, on
    proxies of its objects (:mod:`wb_remote`), in a namespace of the task's names (:func:`trusted_namespace`) with,
    from the candidate, only its entry point (:meth:`wb_remote.Tester.entry`) and the names the tests read that
    nothing else defines (``job["wanted"]``)."""
    try:
        hello = tester.recv()
        if "load_error" in hello:
            emit({"event": protocol.LOAD_ERROR, "error": str(hello["load_error"])[:300]})
            return
        listing = hello.get("loaded")
        if type(listing) is not dict:
            raise wb_remote.DecodeError("an unreadable listing")
        entry = tester.entry(hello.get("entry"), job.get("entry_kind"))
    except BaseException as e:
        emit({"event": protocol.LOAD_ERROR, "error": f"the candidate's process: {_short(e)}"})
        return
    emit({"event": protocol.LOADED})
    ns = trusted_namespace(job)
    for name in job.get("wanted") or ():
        if name not in ns and name in listing:
            try:
                ns[name] = tester.decode(listing[name], wb_remote.NAMED)
            except Exception:  # a name that cannot cross is not there: the test that reads it fails
                pass
    if job.get("solution_module"):
        sys.modules["solution"] = _SolutionModule(tester, listing)
    ns[job["entry_point"]] = entry
    run_tests(job, emit, ns, entry, entry)


def run_tests(job, emit, ns, entry, guarded):
    """Run the job's tests against ``entry`` (``guarded``: the same, answering plain values only) in copies of the
    program's namespace ``ns``."""
    setup = _compile(job["test_setup"], "<test_setup>", "exec") if job.get("test_setup") else None
    guard = guarded is not entry

    def fresh_ns(exec_test=False):
        tns = dict(ns)
        tns["candidate"] = tns[job["entry_point"]] = guarded if exec_test and guard else entry
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
                    values.append(encode(eval(_compile(src, f"<test {i}>", "eval"), tns), hook=_as_value))
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
