"""The process that runs one untrusted completion (standard library only).

Started by :mod:`grpo_wb.sandbox` as ``python -I -S -B _sandbox_child.py``, in its
own session, in a fresh temporary directory, with a scrubbed environment. It
reads one job (JSON) from stdin, applies resource limits, executes the program,
runs each test and reports one JSON event per line on the result descriptor.

The parent never trusts the exit code; it reads the events. What this process
does NOT protect against (a completion running in it can forge events or walk
the stack) is hardened separately; see the sandbox module's docstring.
"""
import json
import os
import resource
import signal
import sys
import time


def _limit(name, value):
    if value is None:
        return
    try:
        resource.setrlimit(getattr(resource, name), (value, value))
    except (ValueError, OSError, AttributeError):
        pass


def main():
    job = json.loads(sys.stdin.read())
    out = os.fdopen(job["result_fd"], "w", buffering=1)
    sys.stdin = open(os.devnull)
    sys.path.extend(job.get("extra_sys_path", []))

    def report(**event):
        out.write(json.dumps(event) + "\n")
        out.flush()

    lim = job["limits"]
    _limit("RLIMIT_AS", lim.get("memory_bytes"))
    _limit("RLIMIT_CPU", lim.get("cpu_seconds"))
    _limit("RLIMIT_FSIZE", lim.get("max_file_bytes"))
    _limit("RLIMIT_NOFILE", lim.get("max_open_files"))
    _limit("RLIMIT_NPROC", lim.get("max_processes"))
    _limit("RLIMIT_CORE", 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversize writes fail with EFBIG instead

    def short(exc):
        msg = f"{type(exc).__name__}: {exc}"
        return msg if len(msg) <= 300 else msg[:297] + "..."

    report(event="start")
    ns = {"__name__": "__candidate__"}
    try:
        code = compile(job["program"], "<candidate>", "exec")
    except (SyntaxError, ValueError) as e:
        report(event="load_error", error=short(e))
        return
    try:
        exec(code, ns)
    except BaseException as e:  # SystemExit included: leaving early passes nothing
        report(event="load_error", error=short(e))
        return
    entry = ns.get(job["entry_point"])
    if not callable(entry):
        report(event="load_error", error=f"NameError: entry point {job['entry_point']!r} is not defined")
        return
    report(event="loaded")
    setup = compile(job["test_setup"], "<test_setup>", "exec") if job.get("test_setup") else None
    for i, test in enumerate(job["tests"]):
        t0 = time.perf_counter()
        tns = dict(ns)
        tns["candidate"] = entry
        try:
            if setup is not None:
                exec(setup, tns)
            exec(compile(test["code"], f"<test {test['name']}>", "exec"), tns)
            report(event="test", index=i, ok=True, seconds=time.perf_counter() - t0)
        except BaseException as e:
            err = "AssertionError" if isinstance(e, AssertionError) and not str(e) else short(e)
            report(event="test", index=i, ok=False, error=err, seconds=time.perf_counter() - t0)
    if job.get("check"):
        tns = dict(ns)
        try:
            exec(compile(job["check"], "<check>", "exec"), tns)
            tns["check"](entry)
            report(event="check", ok=True)
        except BaseException as e:
            report(event="check", ok=False, error=short(e))
    report(event="done")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # skip the candidate's atexit handlers; the verdict is already reported
