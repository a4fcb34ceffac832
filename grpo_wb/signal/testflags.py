"""A test audit's verdicts carried into headroom, filter and exports: arithmetic on its per-task records.

``grpo-wb tasks audit`` writes one record per task (``flags``, ``mutation``, ``wrong`` ...; see
:mod:`grpo_wb.runs.task_audit`). A "too hard" task whose reference fails is a broken task, not a hard one; a
"frontier" or "too easy" one whose tests pass wrong code pays the policy for it. This module says so beside the
pass rates, drops flagged tasks in a filter, and gives the exported rows their ``grpo_wb_test_*`` columns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from grpo_wb.errors import UserError

FLAGS = (
    "no_reference",
    "bad_reference",
    "broken",
    "rejects_reference",
    "flaky",
    "hackable",
    "weak",
    "false_positive",
    "few_tests",
    "only_examples",
    "duplicate",
    "contaminated",
)
"""What the audit can say about a task (a clean task has none), in the order reports list them."""
NOT_AUDITED = "not in the test audit"

Audit = Mapping[str, Mapping[str, Any]]
"""Per-task audit records by task id."""


def check_flags(names: Iterable[str]) -> list[str]:
    """``--drop`` names: each one of :data:`FLAGS`."""
    names = list(names)
    bad = [n for n in names if n not in FLAGS]
    if bad:
        raise UserError(f"unknown test-audit flag {bad[0]!r} (choose from {', '.join(FLAGS)})")
    return names


def mutation_score(rec: Mapping[str, Any]) -> float | None:
    """The task's mutation score without its likely equivalent mutants (None: not measured)."""
    m = rec.get("mutation") or {}
    return m.get("score_without_equivalent")


def audit_columns(rec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``grpo_wb_test_*`` columns of an exported row (None values for a task the audit did not see)."""
    if rec is None:
        return {
            "grpo_wb_test_flags": None,
            "grpo_wb_test_mutation_score": None,
            "grpo_wb_test_references_passed": None,
            "grpo_wb_test_false_positive_rate": None,
        }
    refs = rec.get("references") or {}
    return {
        "grpo_wb_test_flags": ",".join(rec["flags"]),
        "grpo_wb_test_mutation_score": mutation_score(rec),
        "grpo_wb_test_references_passed": refs.get("passed"),
        "grpo_wb_test_false_positive_rate": (rec.get("wrong") or {}).get("false_positive_rate"),
    }


def drop_step(
    audit: Audit, drop: Iterable[str], min_mutation_score: float | None
) -> tuple[str, Callable[[Any], str | None]]:
    """A filter part: drop tasks that carry a ``drop`` flag, score under the floor, or are not in the audit."""
    drop = check_flags(drop)
    parts = ([f"drop {','.join(drop)}"] if drop else []) + (
        [f"mutation score >= {min_mutation_score:g}"] if min_mutation_score is not None else []
    )

    def why(s: Any) -> str | None:
        rec = audit.get(s.task_id)
        if rec is None:
            return NOT_AUDITED
        hit = [f for f in drop if f in rec["flags"]]
        if hit:
            return f"test audit: {hit[0]}"
        if min_mutation_score is not None:
            score = mutation_score(rec)
            if score is None:
                return "no mutation score"
            if score < min_mutation_score:
                return "mutation score below the floor"
        return None

    return "test audit: " + "; ".join(parts), why


def flags_by_category(categories: Mapping[str, str], audit: Audit) -> dict[str, dict[str, int]]:
    """For each headroom category (task id -> category), how many of its tasks carry each flag, how many are
    clean and how many the audit did not see."""
    out: dict[str, Counter] = {}
    for tid, cat in categories.items():
        c = out.setdefault(cat, Counter())
        c["tasks"] += 1
        rec = audit.get(tid)
        if rec is None:
            c[NOT_AUDITED] += 1
        elif not rec["flags"]:
            c["clean"] += 1
        else:
            c.update(rec["flags"])
    return {cat: dict(c) for cat, c in out.items()}


def audit_lines(categories: Mapping[str, str], audit: Audit) -> list[str]:
    """What headroom prints: per category, the flags that say its pass rates may not be the model's."""
    by = flags_by_category(categories, audit)
    lines = []
    for cat in ("too_hard", "frontier", "too_easy"):
        c = by.get(cat)
        if not c:
            continue
        parts = [f"{c[f]} {f}" for f in FLAGS if c.get(f)]
        if c.get(NOT_AUDITED):
            parts.append(f"{c[NOT_AUDITED]} {NOT_AUDITED}")
        name = cat.replace("_", " ")
        lines.append(f"{name} {c['tasks']}: " + (", ".join(parts) if parts else "all clean"))
    return lines
