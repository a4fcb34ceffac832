"""Source snippets of hostile completions, the one-completion scoring call and the assert-test task, shared by the
sandbox, red-team, early-stop and exec-test tests."""

from __future__ import annotations

import contextlib
import socket
import textwrap
import threading
import time

from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import Task, TestCase


def assert_task(task_id: str, prompt: str, entry_point: str, tests, **fields) -> Task:
    """A task whose tests are the assert statements ``tests`` (named t0, t1, ...); ``fields``: the task's others."""
    return Task(
        task_id=task_id,
        prompt=prompt,
        entry_point=entry_point,
        tests=tuple(TestCase(name=f"t{i}", code=c) for i, c in enumerate(tests)),
        **fields,
    )


def score_one(scorer: Scorer, task: Task, completion: str, **kw):
    """The verdict of one completion (``kw``: the request's other fields)."""
    (r,) = list(scorer.score([ScoreRequest(task=task, completion=completion, **kw)]))
    return r


@contextlib.contextmanager
def loopback_listener(seconds: float = 4.0):
    """A listener on 127.0.0.1 for ``seconds``: yields ``(port, got)``, ``got`` filling with the first bytes of each
    connection it accepts (a sandboxed program must reach none)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    got: list[bytes] = []

    def accept() -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                c, _ = srv.accept()
                got.append(c.recv(100))
                c.close()
            except OSError:
                pass

    th = threading.Thread(target=accept)
    th.start()
    try:
        yield srv.getsockname()[1], got
    finally:
        th.join()
        srv.close()


def reachable_scan(hit: str, found: str, missed: str) -> str:
    """A function body that walks everything the child can reach -- the modules, the collector's
    objects and the frames above the call (``gc.get_objects`` alone misses untracked containers) --
    and returns ``found`` as soon as ``hit`` (an expression over ``o`` and its type name ``kind``)
    holds, else ``missed``. Build what ``hit`` looks for at run time, or the scan finds itself."""
    src = f"""
        import gc, sys
        todo = [sys.modules, gc.get_objects()]
        f = sys._getframe().f_back
        while f is not None:
            todo += [f.f_locals, f.f_globals, f.f_code]
            f = f.f_back
        seen = set()
        while todo:
            o = todo.pop()
            if id(o) in seen:
                continue
            seen.add(id(o))
            kind = type(o).__name__
            if {hit}:
                return {found}
            if kind == "dict":
                todo += [*o.keys(), *o.values()]
            elif kind in ("tuple", "list", "set", "frozenset"):
                todo += list(o)
            elif kind == "module":
                todo.append(o.__dict__)
            elif kind == "function":
                todo += [o.__code__, o.__defaults__, o.__closure__, o.__globals__]
            elif kind == "code":
                todo += list(o.co_consts)
            elif kind == "cell":
                try:
                    todo.append(o.cell_contents)
                except ValueError:
                    pass
        return {missed}
    """
    return textwrap.indent(textwrap.dedent(src).strip("\n"), "    ") + "\n"
