"""``grpo-wb bench --set task-scores``: which test-strength score ranks tasks by what their tests let through.

Ground truth no one here wrote (``data/external/humanevalplus/labels.jsonl``, built by ``build.py`` beside it):
a HumanEval task is ``weak`` when some CodeGen-16B sample that passes its original tests answers a HumanEval+ input
differently from the canonical solution, ``strong`` when samples pass and none does (tasks no sample passes have no
label). Each candidate score (:data:`CANDIDATES`, higher meaning stronger tests) is read from a ``grpo-wb tasks
audit`` of HumanEval (its ``tasks.jsonl``): the mutation score as run, without the likely equivalent survivors,
with only the survivors that have a witness input counted against the tests, per operator family, the number of
tests. Two more need the policy's own samples: how many of a task's passing samples answer one of grpo_wb's explored
inputs (:func:`~grpo_wb.tasks.inputs.explore_inputs`, the audit's equivalence search's inputs, those the reference
answers) differently from the reference, and their share; read from the audit's own ``samples_differential`` when it
was run with ``--samples`` (CodeGen-16B's samples scored), else from ``explored.jsonl`` there (``build.py
--explored``).
Each score's AUC says how well it ranks the two groups: the chance that a weak task scores below a strong one, ties
counted a half (Mann-Whitney U over n_weak x n_strong; 0.5 is chance).

Per-operator figures need each family's mutant count, which the record does not keep: the mutants are drawn again
from each task's reference (:func:`grpo_wb.tasks.mutants.mutants` with the audit's seed and count: deterministic).
Without ``--audit DIR`` the audit is run here first (HumanEval as ``tasks import humaneval`` makes it, ``--repeat
1``, the command's other defaults). An AUC measured on some 120 tasks is uncertain, and the best of many candidates
is optimistic (it was chosen on these labels): each row gives a bootstrap 95 % interval (each label's tasks
resampled, seed 0).
"""

from __future__ import annotations

import gzip
import json
import random
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from grpo_wb.bundled import HUMANEVALPLUS, bundled
from grpo_wb.jsonio import iter_jsonl, read_json
from grpo_wb.layout import TaskAuditFiles
from grpo_wb.runs.task_audit import TaskAuditConfig, run_task_audit
from grpo_wb.scoring.extraction import extract_answer
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.mutants import ALL
from grpo_wb.tasks.mutants import mutants as make_mutants
from grpo_wb.tasks.records import Task, write_tasks

CHOSEN = "samples: - wrong"
"""The best-ranking score (needs the policy's samples: ``weak`` when a passing sample answers an explored input
differently from the reference; docs/task-audit.md)."""
CHOSEN_MIN_AUC = 0.65
"""The AUC the chosen score must reach on the bundled labels (the issue's target; tests/test_task_scores.py)."""
WITHOUT_SAMPLES = "killed / run"
"""The best-ranking whole-task score of the audit alone (``weak`` without samples; no better than chance here)."""
BOOTSTRAP = 1000
LABELS = HUMANEVALPLUS / "labels.jsonl"
"""weak / strong per HumanEval task (data/external/humanevalplus/build.py)."""
SCORES = HUMANEVALPLUS / "audit_scores.jsonl.gz"
"""The candidate scores of one ``tasks audit`` of HumanEval (:func:`write_scores`)."""
EXPLORED = HUMANEVALPLUS / "explored.jsonl"
"""Per task, the passing CodeGen-16B samples that answer grpo_wb's explored inputs differently from the canonical
solution (``build.py --explored``): a score that needs the policy's samples, beside the audit's."""


def auc(weak: Sequence[float], strong: Sequence[float]) -> float:
    """P(a weak task's score < a strong task's), ties a half: Mann-Whitney U / (len(weak) * len(strong))."""
    if not weak or not strong:
        raise ValueError("AUC needs at least one score in each group")
    pooled = sorted([(s, 0) for s in weak] + [(s, 1) for s in strong])
    ranks: list[float] = [0.0] * len(pooled)
    i = 0
    while i < len(pooled):  # mid-ranks for ties
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    n_w, n_s = len(weak), len(strong)
    rank_sum_strong = sum(r for r, (_, g) in zip(ranks, pooled) if g == 1)
    return (rank_sum_strong - n_s * (n_s + 1) / 2) / (n_w * n_s)


def operators_generated(task: Task, n: int, seed: int = 0) -> Counter:
    """How many mutants of each operator family the audit ran of ``task``'s canonical solution (drawn again)."""
    if task.canonical_solution is None:
        return Counter()
    ext = extract_answer(task.prompt, task.entry_point, task.canonical_solution, task.language)
    if ext.program is None:
        return Counter()
    try:
        return Counter(m.operator for m in make_mutants(ext.program, n, seed=seed))
    except ValueError:
        return Counter()


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def candidate_scores(rec: Mapping[str, Any], generated: Mapping[str, int] | None = None) -> dict[str, float | None]:
    """Every candidate score of one audit record, higher meaning stronger tests (None: not defined there).
    ``generated``: the mutants run per operator family (:func:`operators_generated`), for the per-operator ones."""
    m = rec.get("mutation") or {}
    tests = rec.get("tests") or {}
    out: dict[str, float | None] = {}
    n_tests = max(tests.get("tests", 0), tests.get("check_calls", 0))
    out["tests"] = float(n_tests)
    out["distinct test inputs"] = float(tests.get("distinct_inputs", 0))
    out.update(differential_scores(rec.get("samples_differential")))
    if not m or not m.get("run"):
        return out
    run, killed = m["run"], m["killed"]
    surv = m.get("survivors", [])
    witnessed = [s for s in surv if "witness" in s]
    out["killed / run"] = m["score"]
    out["killed / (run - likely equivalent)"] = m["score_without_equivalent"]
    out["killed / (killed + witnessed)"] = _ratio(killed, killed + len(witnessed))
    out["1 - witnessed / run"] = 1 - len(witnessed) / run
    out["- witnessed survivors"] = -float(len(witnessed))
    out["- survivors"] = -float(m["survived"])
    if generated is not None:
        by_op = Counter(s["operator"] for s in surv)
        eq_op = Counter(s["operator"] for s in m.get("equivalent", []))
        wit_op = Counter(s["operator"] for s in witnessed)
        for op in ALL:
            g = generated.get(op, 0)
            out[f"{op}: killed / run"] = _ratio(g - by_op[op] - eq_op[op], g)
            out[f"{op}: killed / (killed + witnessed)"] = _ratio(
                g - by_op[op] - eq_op[op], g - by_op[op] - eq_op[op] + wit_op[op]
            )
    return out


CANDIDATES: tuple[str, ...] = (
    "killed / run",
    "killed / (run - likely equivalent)",
    "killed / (killed + witnessed)",
    "1 - witnessed / run",
    "- witnessed survivors",
    "- survivors",
    "tests",
    "distinct test inputs",
    "samples: 1 - wrong / passing",
    "samples: - wrong",
    *(f"{op}: killed / run" for op in ALL),
    *(f"{op}: killed / (killed + witnessed)" for op in ALL),
)
"""The scores compared, in the table's order."""


def differential_scores(d: Mapping[str, Any] | None) -> dict[str, float | None]:
    """The two scores that need the policy's samples, from an audit record's ``samples_differential`` (``tasks
    audit --samples``): empty where the audit compared none of the task's passing samples."""
    if not d or not d.get("compared") or not d.get("inputs"):
        return {}
    return {"samples: 1 - wrong / passing": 1 - d["wrong"] / d["passing"], "samples: - wrong": -float(d["wrong"])}


def explored_scores(path: Path | None = None) -> dict[str, dict[str, float | None]]:
    """The two scores that need the policy's samples (:data:`EXPLORED`): the share of a task's passing samples that
    answer no explored input differently from the reference, and minus their number (None: no passing sample, or no
    explored input)."""
    out: dict[str, dict[str, float | None]] = {}
    for _, r in iter_jsonl(bundled(path or EXPLORED)):
        ok = r["inputs"] > 0 and r["samples_passing"] > 0
        out[r["task_id"]] = {
            "samples: 1 - wrong / passing": 1 - r["wrong"] / r["samples_passing"] if ok else None,
            "samples: - wrong": -float(r["wrong"]) if ok else None,
        }
    return out


def read_labels(path: Path | None = None) -> dict[str, str]:
    """task_id -> ``weak`` or ``strong`` (tasks with no label left out)."""
    return {r["task_id"]: r["label"] for _, r in iter_jsonl(bundled(path or LABELS)) if r["label"]}


def bootstrap_interval(
    weak: Sequence[float], strong: Sequence[float], n: int = BOOTSTRAP, seed: int = 0
) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of the AUC over ``n`` resamples of each group."""
    rng = random.Random(seed)
    aucs = sorted(auc(rng.choices(weak, k=len(weak)), rng.choices(strong, k=len(strong))) for _ in range(n))
    return aucs[int(0.025 * n)], aucs[int(0.975 * n) - 1]


def auc_table(
    labels: Mapping[str, str],
    scores: Mapping[str, Mapping[str, float | None]],
    candidates: Iterable[str] = CANDIDATES,
    bootstrap: int = BOOTSTRAP,
) -> list[dict[str, Any]]:
    """One row per candidate: its AUC over the labelled tasks that have it, their numbers, an interval."""
    rows = []
    for c in candidates:
        have = {t: v for t, s in scores.items() if (v := s.get(c)) is not None}
        w = [v for t, v in have.items() if labels.get(t) == "weak"]
        st = [v for t, v in have.items() if labels.get(t) == "strong"]
        if not w or not st:
            continue
        ci: tuple[float | None, float | None] = bootstrap_interval(w, st, bootstrap) if bootstrap else (None, None)
        rows.append({"score": c, "auc": auc(w, st), "weak": len(w), "strong": len(st), "low": ci[0], "high": ci[1]})
    return rows


def audit_scores(folder: Path, tasks: Mapping[str, Task] | None = None) -> dict[str, dict[str, float | None]]:
    """task_id -> candidate scores, from an audit folder's ``tasks.jsonl`` (per-operator ones when ``tasks`` are
    given: the audit's mutants drawn again with its settings)."""
    settings = read_json(folder / TaskAuditFiles.SETTINGS) if (folder / TaskAuditFiles.SETTINGS).exists() else {}
    n, seed = settings.get("mutants", 20), settings.get("seed", 0)
    out = {}
    for _, rec in iter_jsonl(folder / TaskAuditFiles.TASKS):
        t = tasks.get(rec["task_id"]) if tasks else None
        out[rec["task_id"]] = candidate_scores(rec, operators_generated(t, n, seed) if t is not None else None)
    return out


def write_scores(path: Path, scores: Mapping[str, Mapping[str, float | None]]) -> None:
    """One line per task: ``task_id`` and its candidate scores (rounded to 4 places); gzipped, reproducibly."""
    rows = (
        {"task_id": t, **{k: None if v is None else round(v, 4) for k, v in s.items()}}
        for t, s in sorted(scores.items(), key=lambda x: int(x[0].rsplit("/", 1)[-1]))
    )
    text = "".join(json.dumps(r) + "\n" for r in rows)
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(text.encode())


def read_scores(path: Path | None = None) -> dict[str, dict[str, float | None]]:
    """What :func:`write_scores` wrote (default: the bundled scores of one audit of HumanEval)."""
    return {r.pop("task_id"): r for _, r in iter_jsonl(bundled(path or SCORES))}


def print_table(rows: Sequence[Mapping[str, Any]], out: Callable[[str], None] = print) -> None:
    head = f"{'score (higher: stronger tests)':<48} {'AUC':>6} {'95% interval':>14} {'weak':>5} {'strong':>6}"
    out(head)
    out("-" * len(head))
    for r in sorted(rows, key=lambda r: -r["auc"]):
        ci = f"{r['low']:.2f}-{r['high']:.2f}" if r["low"] is not None else ""
        out(f"{r['score']:<48} {r['auc']:>6.3f} {ci:>14} {r['weak']:>5} {r['strong']:>6}")


def bench_task_scores(
    *,
    audit: str | None = None,
    workers: int | None = None,
    timeout: float = 3.0,
    labels: Path | None = None,
    scores_out: Path | None = None,
    out: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Read (or run) a tasks audit of HumanEval, score each task every way, print and return the AUC table."""
    lab = read_labels(labels)
    tasks = {t.task_id: t for t in import_humaneval()[0]}
    with tempfile.TemporaryDirectory(prefix="grpo_wb_task_scores_") as d:
        folder = Path(audit) if audit else Path(d) / "audit"
        if audit is None:
            he = Path(d) / "humaneval.jsonl"
            write_tasks(he, tasks.values())
            run_task_audit(TaskAuditConfig(tasks=str(he), out=str(folder), repeat=1, workers=workers, timeout=timeout))
        scores = audit_scores(folder, tasks)
    from_audit = sum("samples: - wrong" in s for s in scores.values())
    if not from_audit:  # an audit without --samples: the samples' scores of build.py --explored
        for t, e in explored_scores().items():
            if t in scores:  # the audited tasks only
                scores[t].update(e)
    if scores_out is not None:
        write_scores(scores_out, scores)
    rows = auc_table(lab, scores)
    n = Counter(lab.values())
    out(
        f"{len(scores)} tasks audited; labels (HumanEval+ on CodeGen-16B's samples): {n['weak']} weak, "
        f"{n['strong']} strong; AUC: P(weak task scores below strong), ties 1/2"
    )
    out(
        f"samples' scores: the audit's own samples_differential ({from_audit} tasks compared)"
        if from_audit
        else f"samples' scores: {EXPLORED.name} (build.py --explored; audit with --samples for the audit's own)"
    )
    print_table(rows, out)
    return rows
