"""Programs a job's child starts (standard library only): compile a C++ source with g++, run a compiled program on
each stdio test, or run a task's checker on each test's output. All inside the sandbox, under the job's limits, as
the child's uid.

* A **compile job** (``job["compile"]``) writes the source to ``main.cpp`` in the job directory, runs
  :data:`wb_protocol.CXX_FLAGS` (open-r1's Codeforces flags) and reports :data:`wb_protocol.COMPILED`: the program,
  base64, or
  the compiler's message. The candidate's code does not run in it; g++ is bounded as a test is (the job's wall-clock
  deadline, address space, CPU seconds, file size, processes).
  With ``job["pch"]`` the directory holding the precompiled ``bits/stdc++.h`` (read-only, built by the scorer) is
  searched first.
* A **run job** (``job["binary"]``) writes the program the scorer sent back (never a file a job left: the scorer
  keeps the compile cache, keyed by the source) and runs it once per test, stdin from the test's input, stdout to a
  file read back up to the harness's cap; one :data:`wb_protocol.STDOUT` event per test, as a Python script's.

This process (the harness) makes itself non-dumpable before any program runs: the program, same uid, can then
neither trace it nor open its descriptors (``/proc/PID/fd``), so the event channel stays the harness's. The
program never sees the expected outputs (they stay with the scorer) nor the event descriptor (closed across exec).

``subprocess`` is imported by the functions that start programs, in a C++ job's child, never in the worker: with it
(and ``threading``, which it loads) the worker every job forks from is larger, and each fork and each child's exit
copies and tears down that much more (issue 45, point 4; a C++ job's compile or run dwarfs the import).
"""

import base64
import ctypes
import os
import resource
import signal
import sys
import time

import wb_protocol as protocol

MAX_BINARY = 2 << 20
"""The largest compiled program sent back (base64 it stays under the event channel's 4 MiB)."""
MAX_MESSAGE = 2000
"""How much of the compiler's message a compile error keeps (its start: the first error is the one that counts)."""
MAX_STDOUT = 1 << 20
"""A run's output past this is a failed test ("output too large"), as a Python script's."""


def _write(path, data, mode):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _read_fd(fd, limit):
    """Up to ``limit + 1`` bytes of an open file from its start (one more than the cap says it is too large)."""
    return os.pread(fd, limit + 1, 0)


def run_native(job, emit):
    """What ``wb_harness.run_harness`` hands over: a compile job, a run job or a checker job."""
    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    if job.get("compile"):
        compile_cpp(job, emit)
    elif job.get("checker") is not None:
        run_checker(job, emit)
    else:
        run_binary(job, emit)


_FUNCTION_RUNNER = (
    "import sys\n"
    "style, name = sys.argv[1], sys.argv[2]\n"
    "src = open('checker.py', encoding='utf-8').read()\n"
    "if style == 'klear' and '\\ndef main(' in '\\n' + src:\n"  # Klear cuts the checker at its main
    "    src = ('\\n' + src).split('\\ndef main(', 1)[0]\n"
    "newline = '' if style == 'hardtests' else None\n"  # HardTests passes raw text (JSON); Klear reads files
    "read = lambda p: open(p, encoding='utf-8', errors='replace', newline=newline).read()\n"
    "ns = {'__name__': 'checker'}\n"
    "exec(compile(src, 'checker.py', 'exec'), ns)\n"
    "got = ns[name](read(sys.argv[3]), read(sys.argv[4]), read(sys.argv[5]))\n"
    "print('Result:', str(got) if style == 'klear' else bool(got))\n"
)
CHECKER_STYLES = {
    # style: (the command before the three files, their order)
    "open-r1": (("checker.py",), ("input", "expected", "actual")),
    "klear": (("run_checker.py", "klear", "is_valid_output"), ("input", "actual", "expected")),
    "hardtests": (("run_checker.py", "hardtests", "output_judging_function"), ("input", "actual", "expected")),
    "testlib": (("./checker",), ("input", "actual", "expected")),
}
"""How each dataset calls its checker. open-r1's Piston package runs ``checker.py INPUT CORRECT_OUTPUT SOLUTION_OUTPUT``
and accepts stdout ``1`` or ``100``; Klear-CodeTest cuts the checker at its ``def main(`` and prints
``is_valid_output(input_str, output_str, reference_output_str)``, accepting exactly ``True`` (files read as text);
HardTests calls ``output_judging_function(input_str, candidate_output, reference_output)`` with the texts as they are
(no newline translation) and accepts a true value; a testlib checker (C++, compiled) runs as ``checker INPUT OUTPUT
ANSWER`` and accepts with exit code 0, while its FAIL (exit 3: the checker or the answer is wrong) or a death by a
signal is the checker's own failure (``broken``): the scorer then runs it on the test's expected output, and one that
accepts that has rejected the candidate's output. Any other non-zero exit is a rejection."""
TESTLIB_FAIL = 3
"""testlib's exit code for ``_fail`` without EJUDGE/CONTESTER/TESTSYS."""
MAX_CHECKER_OUTPUT = 4096


def accepted(style, code, stdout):
    """Whether a checker that exited with ``code`` and printed ``stdout`` accepts."""
    if style == "testlib":
        return code == 0
    if code != 0:
        return False
    text = stdout.decode("utf-8", "replace")
    if style == "open-r1":
        return "".join(text.split()) in ("1", "100")
    return text.strip() == "Result: True"


def run_checker(job, emit):
    """Run the task's checker once per test on (input, expected output, the candidate's output): a job of its own,
    never in the candidate's process (the expected output reaches only this one). A testlib checker comes compiled
    (``binary``, from the scorer's compile cache)."""
    import subprocess  # here, not at the top: see the module's docstring

    style = job["style"]
    command, order = CHECKER_STYLES[style]
    if style == "testlib":
        _write("checker", base64.b64decode(job["binary"]), 0o700)
    else:
        _write("checker.py", job["checker"].encode("utf-8", "surrogatepass"), 0o600)
        command = (sys.executable, "-I", "-S", "-B", *command)
        if "run_checker.py" in command:
            _write("run_checker.py", _FUNCTION_RUNNER.encode(), 0o600)
    for case in job["tests"]:
        t0 = time.perf_counter()
        ev = {"event": protocol.CHECKED, "index": case["index"], "ok": False}
        names = {}
        for part in ("input", "expected", "actual"):
            names[part] = f".{part}{case['index']}"
            _write(names[part], case[part].encode("utf-8", "surrogatepass"), 0o600)
        out = os.open(".checker_out", os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            proc = subprocess.run(
                [*command, *(names[p] for p in order)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out if style == "testlib" else 2,
                close_fds=True,
                timeout=job["check_timeout"],
            )
            said = _read_fd(out, MAX_CHECKER_OUTPUT)
            ev["ok"] = accepted(style, proc.returncode, said)
            ev["message"] = said[:300].decode("utf-8", "replace").strip()
            if style == "testlib" and (proc.returncode == TESTLIB_FAIL or proc.returncode < 0):
                ev["broken"] = True
            if not ev["ok"] and proc.returncode != 0 and not (style == "testlib" and ev["message"]):
                ev["message"] = f"the checker ended with {_ended(proc.returncode)}"
        except subprocess.TimeoutExpired:
            ev["message"] = f"the checker ran past {job['check_timeout']:g} s"
            ev["timed_out"] = True
        except OSError as e:
            ev["message"] = f"the checker could not start: {e}"
        finally:
            os.close(out)
            for name in (*names.values(), ".checker_out"):
                try:
                    os.unlink(name)
                except OSError:
                    pass
        ev["seconds"] = time.perf_counter() - t0
        emit(ev)


def _pch_flags(job):
    """Where the precompiled ``bits/stdc++.h`` is (``job["pch"]``: a directory mounted read-only, searched first, so
    g++ finds ``bits/stdc++.h.gch`` there and uses it only when it is valid for this compile, else goes on to the
    header itself); ``-H`` (``pch_probe``) lists what the compile included, ``!`` marking a precompiled header used."""
    if not job.get("pch"):
        return []
    return ["-Winvalid-pch", "-I", job["pch"], *(["-H"] if job.get("pch_probe") else [])]


def compile_cpp(job, emit):
    import subprocess  # here, not at the top: see the module's docstring

    t0 = time.perf_counter()
    _write("main.cpp", job["program"].encode("utf-8", "surrogatepass"), 0o600)
    headers = job.get("headers") or {}
    for name, text in headers.items():  # e.g. testlib.h for a checker, next to the source
        _write(os.path.basename(name), text.encode("utf-8", "surrogatepass"), 0o600)
    err = os.open(".cxx_messages", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        proc = subprocess.run(
            [job.get("cxx") or "g++", *protocol.CXX_FLAGS, *_pch_flags(job), *(["-I."] if headers else [])]
            + ["-o", "main", "main.cpp"],
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            close_fds=True,
        )
        code = proc.returncode
    except OSError as e:
        emit({"event": protocol.COMPILED, "ok": False, "error": f"cannot start the compiler: {e}", "missing": True})
        return
    message = os.pread(err, MAX_MESSAGE + 1, 0).decode("utf-8", "replace")
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + " ..."
    seconds = time.perf_counter() - t0
    if code != 0:
        how = (
            f"killed by {signal.Signals(-code).name}"
            if code < 0 and -code in signal.valid_signals()
            else f"exit code {code}"
        )
        emit(
            {
                "event": protocol.COMPILED,
                "ok": False,
                "error": message.strip() or f"the compiler failed ({how})",
                "seconds": seconds,
            }
        )
        return
    try:
        fd = os.open("main", os.O_RDONLY | os.O_NOFOLLOW)
        try:
            data = _read_fd(fd, MAX_BINARY)
        finally:
            os.close(fd)
    except OSError as e:
        emit({"event": protocol.COMPILED, "ok": False, "error": f"no program came out of the compiler ({e})"})
        return
    if len(data) > MAX_BINARY:
        emit(
            {
                "event": protocol.COMPILED,
                "ok": False,
                "error": f"the compiled program is larger than {MAX_BINARY >> 20} MiB",
            }
        )
        return
    emit(
        {
            "event": protocol.COMPILED,
            "ok": True,
            "binary": base64.b64encode(data).decode("ascii"),
            "warnings": message.strip(),
            "seconds": seconds,
        }
    )


def _ended(code):
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _unnamed(data=b""):
    """A file in the job directory with no name (``O_TMPFILE``): nothing the program does to the directory (a
    symlink, a FIFO, a file planted under a name the harness would use) reaches it."""
    fd = os.open(".", os.O_TMPFILE | os.O_RDWR, 0o600)
    if data:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    return fd


def run_binary(job, emit):
    """Each test: the program's own run, stdin and stdout unnamed files, the judge's time limit (``time_limit``),
    its memory as address space (``memory_bytes``) and the stack as large as that allows (Codeforces' stack is its
    memory limit; open-r1's Piston package runs ``ulimit -s unlimited``). A test whose run cannot be set up fails
    with the reason, and the next test runs."""
    import subprocess  # here, not at the top: see the module's docstring

    _write("main", base64.b64decode(job["binary"]), 0o700)
    memory = job.get("memory_bytes")

    def limit():  # in the program's process, before exec
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        _, hard = resource.getrlimit(resource.RLIMIT_STACK)
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))

    emit({"event": protocol.LOADED})
    for i, test in enumerate(job["tests"]):
        t0 = time.perf_counter()
        ev = {"event": protocol.STDOUT, "index": i}
        fds = []
        try:
            fds.append(_unnamed(test["input"].encode("utf-8", "surrogatepass")))
            fds.append(_unnamed())
            fin, fout = fds
            try:
                code = subprocess.run(
                    ["./main"],
                    stdin=fin,
                    stdout=fout,
                    stderr=2,
                    close_fds=True,
                    timeout=job.get("time_limit"),
                    preexec_fn=limit,
                ).returncode
            except subprocess.TimeoutExpired:  # run() killed it
                code = None
                ev["error"] = f"time limit exceeded ({job['time_limit']:g} s)"
            if code is not None:
                data = _read_fd(fout, MAX_STDOUT)
                if code != 0:  # open-r1 (Piston) and Codeforces: a non-zero exit is a runtime error
                    ev["error"] = f"runtime error ({_ended(code)})"
                elif len(data) > MAX_STDOUT:
                    ev["error"] = "output too large"
                else:
                    ev["output"] = data.decode("utf-8", "replace")
        except (OSError, subprocess.SubprocessError) as e:
            ev.pop("output", None)
            ev["error"] = f"the run could not be set up or read: {e}"
        finally:
            for fd in fds:
                os.close(fd)
        ev["seconds"] = time.perf_counter() - t0
        emit(ev)
