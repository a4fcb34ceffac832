"""What ``grpo-wb tasks audit`` sends to the sandbox to run a task's programs on explored inputs
(``grpo_wb.runs.task_audit``: ``domain_program``, ``agreement_program``). It loads each program with the task's
prelude, calls its entry point on each input (``call_s`` seconds a call at most, until ``seconds`` are spent) and
prints one line, which ``parse_domain`` / ``parse_agreement`` read back. The standard library only, nothing of
grpo_wb.

What is sent is what follows the marker line (``grpo_wb.tasks.sandbox_programs``), with a call of :func:`main` on
the task's values (literals) appended.
"""

# ---- sent to the sandbox from the next line on ----
import ast
import copy
import io
import json
import math
import signal
import sys
import time
from collections.abc import Callable

sys.setrecursionlimit(10000)
_OUT = sys.stdout

Program = Callable[..., object]
Called = tuple[str, object, float]


class _Slow(BaseException):  # not an Exception: a program's `except Exception` does not swallow it
    pass


def _alarm(*_: object) -> None:
    raise _Slow()


signal.signal(signal.SIGALRM, _alarm)


def load(src: str, prelude: str, entry: str) -> Program | None:
    ns: dict[str, object] = {"__name__": "_grpo_wb_program"}
    sys.stdout = io.StringIO()
    try:
        exec(compile(prelude + "\n" + src, "<program>", "exec"), ns)
    except BaseException:
        return None
    finally:
        sys.stdout = _OUT
    f = ns.get(entry)
    return f if callable(f) else None


def call(f: Program, args: tuple[object, ...], limit: float) -> Called:
    sys.stdout = io.StringIO()  # what the program prints is not this program's answer
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return ("value", f(*copy.deepcopy(args)), time.perf_counter() - t0)
    except _Slow:
        return ("slow", None, limit)
    except BaseException as e:
        return ("raises", type(e).__name__, time.perf_counter() - t0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout = _OUT


ATOL = 1e-6
"""Floats this close are the same answer (EvalPlus's default ``atol`` for a task whose answer is a float)."""


def same(a: object, b: object) -> bool:
    """Equal, the same repr, or numbers within :data:`ATOL` where one is a float (EvalPlus compares floats so;
    recursively in lists, tuples and dicts of the same type and shape)."""
    try:
        return bool(a == b) or repr(a) == repr(b) or close(a, b)
    except BaseException:
        return repr(a) == repr(b)


def close(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)):
            return False
        return isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=0.0, abs_tol=ATOL)
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return False


def literal(v: object) -> bool:
    try:
        return ast.literal_eval(repr(v)) == v
    except BaseException:
        return False


def domain(fs: list[Program | None], inputs: list[tuple[object, ...]], deadline: float, call_s: float) -> None:
    """``domain TRIED RAISES SLOW DISAGREE HEXMASK``: bit k of the mask is set where input k is one the task answers
    (the first program answers it within ``call_s``, the same twice, and the others agree)."""
    ref, others = fs[0], [f for f in fs[1:] if f is not None]
    if ref is None:
        print("not comparable")
        sys.exit()
    tried = raises = slow = disagree = 0
    bits = 0
    for k, args in enumerate(inputs):
        if time.perf_counter() > deadline:
            break
        tried += 1
        kind, want, _ = call(ref, args, call_s)
        if kind != "value":
            raises += kind == "raises"
            slow += kind == "slow"
            continue
        again = call(ref, args, call_s)  # twice, then the other references: one answer, or not the task's input
        if not (again[0] == "value" and same(want, again[1])) or not all(
            o[0] == "value" and same(want, o[1]) for o in (call(g, args, call_s) for g in others)
        ):
            disagree += 1
            continue
        bits |= 1 << k
    print("domain", tried, raises, slow, disagree, format(bits, "x"))


def agreement(fs: list[Program | None], inputs: list[tuple[object, ...]], deadline: float, call_s: float) -> None:
    """``same MET`` (the reference and the mutant agreed on MET inputs), or ``differs K MET LITERAL [REFERENCE'S,
    MUTANT'S]``: the input (by index) they answer differently, the shortest of the first few whose answer is a
    literal a test can hold."""
    ref, mut = fs[0], fs[1]
    if ref is None or mut is None:
        print("not comparable")
        sys.exit()
    met = 0
    found: list[tuple[int, bool, object, Called]] = []
    for k, args in enumerate(inputs):
        if time.perf_counter() > deadline:
            break
        kind, want, dt = call(ref, args, call_s)
        if kind != "value":
            continue
        got = call(mut, args, min(1.0, max(0.2, 10 * dt)))
        if not found:
            met += 1
        if not (got[0] == "value" and same(want, got[1])):
            lit = literal(want) and len(repr(want)) <= 250
            found.append((k, lit, want, got))
            if lit and len(repr(args)) + len(repr(want)) < 200 or len(found) >= 8:
                break
    if not found:
        print("same", met)
        sys.exit()
    k, lit, want, got = min(found, key=lambda f: (not f[1], len(repr(inputs[f[0]])) + len(repr(f[2]))))
    theirs = repr(got[1]) if got[0] == "value" else got[0] + " " + str(got[1])
    print("differs", k, met, int(lit), json.dumps([repr(want)[:250], theirs[:100]], ensure_ascii=False))


def main(
    mode: str,
    prelude: str,
    entry: str,
    programs: list[str],
    inputs: list[tuple[object, ...]],
    seconds: float,
    call_s: float,
) -> None:
    """Load ``programs`` (each with ``prelude``; its function ``entry``) and run ``mode`` (``domain`` or
    ``agreement``) on ``inputs`` until ``seconds`` are spent."""
    deadline = time.perf_counter() + seconds
    fs = [load(p, prelude, entry) for p in programs]
    (domain if mode == "domain" else agreement)(fs, inputs, deadline, call_s)
