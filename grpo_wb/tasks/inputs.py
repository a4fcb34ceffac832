"""Inputs that explore a function task's input space: where a surviving mutant is compared with the reference.

A mutant that survives the tests is either *equivalent* to the reference or a gap in the tests. Calling it
equivalent because it agrees on the tests' own inputs and their +-1 neighbours hides the gaps of the weakest
suites (one assert in the middle branch of a three-branch function: every mutant of the other branches agrees
there). :func:`explore_inputs` is EvalPlus's type-aware input generation (Liu et al. 2023, ``evalplus/gen/
type_mut.py``) without the LLM seeds:

- **seeds**: the tests' call arguments (:func:`~grpo_wb.tasks.probes.suite_inputs`) and the prompt's examples
  (doctest lines, quoted asserts: :func:`~grpo_wb.tasks.probes.prompt_examples`);
- **ingredients**: every int, float and short string in the seeds, the reference's own constants and the numbers
  the prompt names, each int with its neighbours (the boundaries of a branch are its constants, +-1);
- **spread values**, by type: ints 0, +-1, negated, doubled, halved, the ingredients, random ones of growing range
  and a few large ones; floats likewise, with fractions; strings empty, one character, upper/lower/swapped case,
  reversed, long, with whitespace, digits and non-ASCII letters, an ingredient inserted; lists and tuples empty
  (lists only: a tuple keeps its length, it is a record), one element, sorted, reversed, duplicated, long,
  an element dropped or changed (recursively: nested values too); dicts empty, a key dropped, a value changed;
- **candidates**: each seed with one argument replaced by each of its spread values, then seeds with several
  arguments changed at once and arguments crossed between seeds, then (EvalPlus's loop) inputs made so far
  changed again a little (:func:`~grpo_wb.tasks.probes.vary`) until the budget is met; deduplicated, literals
  only (a program carries them as ``repr``), drawn round-robin over the seeds' arguments up to ``budget`` and
  ordered smallest first, so that where the reference is slow on large inputs it is the tail that is cut.

Which candidates the task is defined on (the reference answers them, within its time, and the task's other
references answer the same) is decided by running them: ``grpo_wb.runs.task_audit``. Standard library only:
this is the ``tasks`` layer.
"""

from __future__ import annotations

import ast
import hashlib
import random
import re
from collections.abc import Iterable, Iterator
from typing import Any

from grpo_wb.tasks.probes import input_variants, prompt_examples, suite_inputs, vary
from grpo_wb.tasks.records import Task

MAX_REPR = 2000
"""Longest ``repr`` of one candidate's arguments (a program carries every candidate as a literal)."""

_LARGE_INTS = (10**3, 10**5, -(10**4), 10**6)
_TEXT = ("", " ", "a", "Z", "0", "123", "a b", "hello world", "é", "ÄÖü", "日本", "aA1 !", "\t\n")


def literal(value: Any) -> bool:
    """Its repr reads back as an equal literal (not ``inf``, ``nan``, ``set()`` or an object): a program or a
    test can carry it."""
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _walk(v: Any) -> Iterator[Any]:
    yield v
    if isinstance(v, (list, tuple, set)):
        for x in v:
            yield from _walk(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _walk(k)
            yield from _walk(x)


def seed_inputs(task: Task) -> list[tuple]:
    """The tests' call arguments, then the prompt's examples' arguments, each once (literals only)."""
    out: list[tuple] = []
    seen: set[str] = set()
    for args in [*suite_inputs(task), *(a for a, _ in prompt_examples(task))]:
        if repr(args) not in seen and literal(args):
            seen.add(repr(args))
            out.append(args)
    return out


class Ingredients:
    """The values a task's inputs are built from: what its seeds, its reference and its prompt hold."""

    def __init__(self, seeds: Iterable[tuple], reference: str | None = None, prompt: str = ""):
        ints: set[int] = {0, 1, -1, 2}
        floats: set[float] = {0.0, 0.5, -1.5}
        strs: set[str] = set()
        values = [x for args in seeds for x in _walk(args)]
        if reference:
            try:
                values += [n.value for n in ast.walk(ast.parse(reference)) if isinstance(n, ast.Constant)]
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
        values += [int(m) for m in re.findall(r"(?<![\w.])-?\d{1,6}(?![\w.])", prompt)]
        for v in values:
            if isinstance(v, bool):
                continue
            if isinstance(v, int) and abs(v) <= 10**12:
                ints.update((v - 1, v, v + 1))
            elif isinstance(v, float) and v == v and abs(v) < 1e12:
                floats.add(v)
            elif isinstance(v, str) and len(v) <= 40 and "\n" not in v[:-1]:
                strs.add(v)
                strs.update(v[i] for i in range(min(len(v), 8)))
        self.ints = sorted(ints)
        self.floats = sorted(floats)
        self.strs = sorted(strs)


def _size(v: Any) -> float:
    """How large an input is: the sum of its ints' magnitudes' digits and its containers' lengths."""
    if isinstance(v, bool) or v is None:
        return 0
    if isinstance(v, int):
        return len(str(abs(v)))
    if isinstance(v, float):
        return len(repr(abs(v))) / 4
    if isinstance(v, str):
        return len(v) / 4
    if isinstance(v, dict):
        return len(v) + sum(_size(k) + _size(x) for k, x in v.items())
    if isinstance(v, (list, tuple, set)):
        return len(v) + sum(_size(x) for x in v)
    return 1


def _sortable(v: list[Any]) -> bool:
    try:
        sorted(v)
        return True
    except TypeError:
        return False


def spread(v: Any, rng: random.Random, ing: Ingredients, depth: int = 0) -> list[Any]:
    """Values of ``v``'s type across its space: boundaries, extremes, empty and long, reordered, nested changes."""
    out: list[Any] = []
    if v is None:
        return out
    if isinstance(v, bool):
        return [not v]
    if isinstance(v, int):
        out = [0, 1, -1, 2, v - 1, v + 1, -v, 2 * v, v // 2, *ing.ints, *_LARGE_INTS]
        out += [rng.randint(-lim, lim) for lim in (10, 10, 10, 100, 100, 100, 10**4, 10**4, 10**6)]
        return out
    if isinstance(v, float):
        out = [0.0, 1.0, -1.0, -v, 2 * v, v / 2, v + rng.uniform(-1, 1), 0.1, 1e-9, 1e6, -2.5, round(v) + 0.5]
        out += ing.floats + [float(i) for i in ing.ints[:12]]
        return out
    if isinstance(v, str):
        out = ["", v[:1], v.upper(), v.lower(), v.swapcase(), v[::-1], v * 5, v + " " + v, " " + v + " ", *_TEXT]
        out += [v + "é", "".join(sorted(v)), v + v[-1:], v[1:], v[:-1]]
        if len(v) > 1:
            i, j = rng.randrange(len(v)), rng.randrange(len(v))
            chars = list(v)
            chars[i], chars[j] = chars[j], chars[i]
            out.append("".join(chars))
        for piece in rng.sample(ing.strs, min(6, len(ing.strs))):
            k = rng.randint(0, len(v))
            out += [v[:k] + piece + v[k:], piece]
        return out
    if isinstance(v, (list, tuple)):
        items = list(v)
        sub: list[list[Any]] = []
        if items and depth < 3:
            for _ in range(4):
                i = rng.randrange(len(items))
                vals = spread(items[i], rng, ing, depth + 1) or [items[i]]
                for x in rng.sample(vals, min(2, len(vals))):
                    sub.append([*items[:i], x, *items[i + 1 :]])
        if not items and depth < 3:  # no element to follow: the ingredients' ints (the likeliest), then strings
            for n in (1, 1, 2, 3, 5, 8, 20):
                out.append([rng.choice(ing.ints) for _ in range(n)])
            out += [sorted(out[-3]), sorted(out[-2], reverse=True)]
            if ing.strs:
                out += [[rng.choice(ing.strs) for _ in range(n)] for n in (1, 3)]
            return [[]] + out if isinstance(v, list) else []
        if isinstance(v, tuple):  # a record: its shape stays
            return [tuple(s) for s in sub] + ([tuple(reversed(items))] if len(items) > 1 else [])
        out = [[], items[:1], items[::-1], items + items, items[1:], items[:-1], *sub]
        if items and _sortable(items):
            out += [sorted(items), sorted(items, reverse=True), sorted(items + items[: len(items) // 2 + 1])]
        if items:
            pool = list(items)
            if depth < 3:
                for x in rng.sample(items, min(3, len(items))):
                    pool += spread(x, rng, ing, depth + 1)
            long = [rng.choice(pool) for _ in range(40)]
            out += [long, [items[0]] * 12]
            shuffled = items[:]
            rng.shuffle(shuffled)
            out.append(shuffled)
            i = rng.randrange(len(items))
            out.append([*items[:i], items[i], *items[i:]])
            for x in rng.sample(pool, min(4, len(pool))):  # a changed copy inserted (EvalPlus's insert)
                out.append([*items[:i], x, *items[i:]])
        return out
    if isinstance(v, dict):
        out = [{}]
        if v and depth < 3:
            keys = list(v)
            k = rng.choice(keys)
            out.append({a: b for a, b in v.items() if a != k})
            for x in (spread(v[k], rng, ing, depth + 1) or [])[:6]:
                out.append({**v, k: x})
            for nk in (spread(k, rng, ing, depth + 1) or [])[:4]:
                out.append({**v, nk: v[k]})
        return out
    return out


def explore_inputs(task: Task, reference: str | None = None, budget: int = 256, seed: int = 0) -> list[tuple]:
    """Up to ``budget`` argument tuples for ``task``'s entry point: its seeds first, then type-aware spread values
    (one argument changed, several changed, arguments crossed between seeds), drawn round-robin and ordered
    smallest first. Empty when the tests and the prompt call it with no literal arguments (no type to follow)."""
    seeds = seed_inputs(task)
    if not seeds or budget <= 0:
        return []
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}|{task.task_id}".encode()).digest()[:8], "big"))
    ing = Ingredients(seeds, reference, task.prompt)
    out, seen = [], set()

    def add(args: tuple) -> bool:
        r = repr(args)
        if r in seen or len(r) > MAX_REPR or not literal(args):
            return False
        seen.add(r)
        out.append(args)
        return True

    for s in seeds[:budget]:
        add(s)
    n_seeds = len(out)
    # one argument changed: the tests' neighbourhood (+-1, a character dropped: probes.input_variants), then one
    # queue per (seed, position), drawn round-robin so that every argument is explored
    pools = [[spread(a, rng, ing) or [a] for a in s] for s in seeds]
    queues: list[list[tuple]] = [input_variants(task, n=max(1, budget // 8), seed=seed)]
    for s, pool in zip(seeds, pools):
        for i, vals in enumerate(pool):
            order = vals[:]
            rng.shuffle(order)
            queues.append([(*s[:i], x, *s[i + 1 :]) for x in order])
    # several changed at once, and crossed between seeds (same arity)
    mixed: list[tuple] = []
    for _ in range(2 * budget):
        k = rng.randrange(len(seeds))
        made, pool = list(seeds[k]), pools[k]
        if not made:
            break
        other = rng.choice([t for t in seeds if len(t) == len(made)])
        for i in range(len(made)):
            r = rng.random()
            if r < 0.25:
                made[i] = other[i]
            elif r < 0.75:
                made[i] = rng.choice(pool[i])
        mixed.append(tuple(made))
    single_until = len(out) + (budget - len(out)) * 2 // 3  # a third of the budget is kept for the mixed ones
    for limit, qs in ((single_until, queues), (budget, [mixed]), (budget, queues)):
        while len(out) < limit and any(qs):
            for q in qs:
                while q and len(out) < limit and not add(q.pop(0)):
                    pass
    # then EvalPlus's loop: what was made is mutated again (one argument a little), until the budget is met
    for _ in range(4 * budget):
        if len(out) >= budget:
            break
        args = list(rng.choice(out))
        if args:
            i = rng.randrange(len(args))
            args[i] = vary(args[i], rng)
            add(tuple(args))
    return out[:n_seeds] + sorted(out[n_seeds:], key=_size)
