"""The candidate's process of a split job (a job with exec tests or a ``check``): it loads the program and answers
the tester's calls until the tester is done (:mod:`wb_remote`).

Exec'd by the job's child, the tester, after its set-up (uid, limits, seccomp and session are inherited), as
``python -s -P -S -B candidate.py`` (with the worker's hash seed): a fresh interpreter holds nothing of the worker's memory, so no test, expected
value or event channel of this job or of any other. Descriptor 3 brings requests, 4 takes answers.
"""
import builtins
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wb_harness  # noqa: E402
import wb_remote  # noqa: E402
del sys.path[0]


def main():
    server = wb_remote.Server(3, 4)
    try:
        init = server.recv()
    except wb_remote.Gone:
        return
    sys.path.extend(init.get("extra_sys_path", []))
    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        code = compile(init.pop("program"), "<candidate>", "exec")
        exec(code, ns)
        entry = wb_harness.find_entry(ns, init["entry_point"])
        hello = {"loaded": server.listing(ns), "entry": server.describe(entry),
                 "guard": wb_harness.guarded_entry(entry)}
    except BaseException as e:  # SystemExit included: leaving early passes nothing
        server.send({"load_error": wb_harness._short(e)})
        return
    server.send(hello)
    server.serve()


if __name__ == "__main__":
    main()
    os._exit(0)
