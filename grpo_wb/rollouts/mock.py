"""The mock backend: deterministic for a seed, real code text from each task's canonical solution.

It writes correct answers, mutated wrong answers, syntax errors, prose with no code, runtime errors and
slow loops. Nothing is pre-labelled: every completion is executed like any other, so a mock run exercises
the whole pipeline -- and says nothing about any model."""

from __future__ import annotations

import ast
import hashlib
import random
import re
from collections.abc import Sequence
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.rollouts.types import Completion, RolloutRequest
from grpo_wb.tasks.mutants import mock_mutant
from grpo_wb.tasks.records import Task

_WRONG_WEIGHTS = {"wrong": 0.55, "syntax_error": 0.12, "no_code": 0.12, "runtime_error": 0.13, "slow": 0.08}


_PROSE = [
    "I'm not sure how to solve this one. Could you clarify what the function should return?",
    "Sure! The idea is to loop over the input and keep track of the answer as we go.",
    "This can be solved with a simple approach; let me know if you want an explanation.",
]


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


def _mutant(task: Task, rng: random.Random) -> str | None:
    """The entry point with one plausible bug (the shared mutator's mock set: recorded runs replay unchanged)."""
    src = _function_source(task)
    return None if src is None else mock_mutant(src, task.entry_point, rng)


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

    def __init__(
        self,
        seed: int = 0,
        default_skill: float = 0.5,
        skills: dict[str, float] | None = None,
        slow_seconds: float = 30.0,
    ):
        self.seed = seed
        self.default_skill = default_skill
        self.skills = dict(skills or {})
        self.slow_seconds = slow_seconds
        for k, v in {"default": default_skill, **self.skills}.items():
            if not 0.0 <= v <= 1.0:
                raise UserError(f"mock skill for {k} must be in [0, 1], got {v}")

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": "mock",
            "seed": self.seed,
            "default_skill": self.default_skill,
            "skills": self.skills,
            "sampling": {"kind_weights_when_wrong": _WRONG_WEIGHTS},
        }

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
                group.append(
                    Completion(
                        task_id=req.task.task_id,
                        sample_index=i,
                        text=self._render(req.task, kind, rng),
                        backend=self.name,
                        model="mock",
                        seed=self.seed,
                        sampling={"skill": skill},
                        finish_reason="stop",
                        extra={"mock_kind": kind},
                    )
                )
            out.append(group)
        return out
