"""``grpo-wb bench --set adaptive``: sampling until decided against the full sample, on recorded real samples.

The bundled CodeGen-16B HumanEval samples (100 per task) and chat-model replies (MapCoder's, 4 to 24 per task)
are scored here (binary reward, the sandbox), then each task's recorded outcomes are replayed through the rule
of :mod:`grpo_wb.signal.sequential` with n_max = the task's recorded n: in recorded order, and in
``SHUFFLES`` orderings drawn from seed ``SEED`` (same seed, same figures). Printed per data set and rule: tasks,
generations drawn (per ordering: the mean over the shuffles) against the full sample's, the share of task
replays whose decision equals the full recorded sample's, the tasks decided before their last sample (per ordering),
and, for the category rule, the same two figures exact over every ordering (hypergeometric, no
shuffling) and the agreement with an independent full sample at the recorded rates beside the full sample's own
(a rerun of the full sample against another).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from grpo_wb.bundled import CHAT_REPLIES, CODEGEN_SAMPLES, bundled
from grpo_wb.jsonio import atomic_write_jsonl, iter_jsonl
from grpo_wb.scoring.executors import open_scorer
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import sample_requests
from grpo_wb.signal.headroom import TaskSamples, samples_from_scored_rows
from grpo_wb.signal.sequential import AdaptiveConfig, agreement_independent, expected_over_orders, replay
from grpo_wb.tasks.importers import import_humaneval, import_mapcoder

SHUFFLES = 20
SEED = 0
RULES: tuple[AdaptiveConfig, ...] = (
    AdaptiveConfig(round_size=8),
    AdaptiveConfig(round_size=1),
    AdaptiveConfig(round_size=8, max_error=0.1),
    AdaptiveConfig(round_size=8, decide="band", band=(0.1, 0.9)),
)
"""The rules the bench compares with the full sample."""


def rule_name(cfg: AdaptiveConfig) -> str:
    band = f" [{cfg.band[0]:g}, {cfg.band[1]:g}]" if cfg.decide == "band" else ""
    return f"{cfg.decide}{band} R={cfg.round_size} e={cfg.max_error:g}"


def compare(
    name: str,
    samples: Sequence[TaskSamples],
    rules: Iterable[AdaptiveConfig] = RULES,
    *,
    shuffles: int = SHUFFLES,
    seed: int = SEED,
) -> list[dict[str, Any]]:
    """One row per rule and ordering (recorded order, then the shuffles), after the full sample's row (pure)."""
    full = sum(s.n for s in samples)
    rows: list[dict[str, Any]] = [
        {
            "dataset": name,
            "rule": "full sample",
            "orders": "-",
            "tasks": len(samples),
            "generations": full,
            "full_generations": full,
            "share": 1.0,
            "agreement": 1.0,
            "early": 0,
        }
    ]
    for cfg in rules:
        for k in (0, shuffles):
            r = replay(samples, cfg, shuffles=k, seed=seed)
            rows.append(
                {
                    "dataset": name,
                    "rule": rule_name(cfg),
                    "orders": r.orders,
                    "tasks": len(samples),
                    "generations": r.generations / max(1, k),
                    "full_generations": full,
                    "share": r.generations_share,
                    "agreement": r.agreement,
                    "early": r.early / max(1, k),
                }
            )
        if cfg.decide == "category":
            exact = [expected_over_orders(s, cfg) for s in samples]
            ind = [agreement_independent(s.n_correct / s.n, s.n, cfg) for s in samples]
            n = len(samples)
            rows.append(
                {
                    "dataset": name,
                    "rule": rule_name(cfg),
                    "orders": "exact, all orderings",
                    "tasks": n,
                    "generations": sum(e[1] for e in exact),
                    "full_generations": full,
                    "share": sum(e[1] for e in exact) / full,
                    "agreement": sum(e[0] for e in exact) / n,
                    "early": None,
                    "independent": sum(a for a, _ in ind) / n,
                    "rerun": sum(b for _, b in ind) / n,
                }
            )
    return rows


def print_rows(rows: Sequence[dict[str, Any]], out: Callable[[str], None] = print) -> None:
    head = (
        f"{'dataset':<22} {'rule':<30} {'orders':<22} {'tasks':>5} {'generations':>11} {'of full':>7} "
        f"{'agreement':>9} {'early':>6}"
    )
    out(head)
    out("-" * len(head))
    for r in rows:
        early = "" if r["early"] is None else f"{r['early']:>6.0f}"
        out(
            f"{r['dataset']:<22} {r['rule']:<30} {r['orders']:<22} {r['tasks']:>5} {r['generations']:>11.0f} "
            f"{r['share']:>7.3f} {r['agreement']:>9.4f} {early:>6}"
        )
    for r in rows:
        if "independent" in r:
            out(
                f"{r['dataset']}, {r['rule']}: against an independent full sample at the recorded rates, agreement "
                f"{r['independent']:.4f} (adaptive) vs {r['rerun']:.4f} (the full sample against a rerun of itself)"
            )


def _scored(tasks: dict, samples_path: Path, workers: int | None, timeout: float) -> list[TaskSamples]:
    """Score a samples file (binary reward) and group it by task, each task's samples in sample order."""
    with open_scorer(SandboxLimits(timeout=timeout), RewardConfig(), workers=workers) as scorer:
        rows = [r.to_json() for r in scorer.score(sample_requests(samples_path, tasks))]
    first: dict[str, int] = {}
    for r in rows:
        first.setdefault(r["task_id"], len(first))
    rows.sort(key=lambda r: (first[r["task_id"]], r["sample_index"]))
    return samples_from_scored_rows(rows)


def bench_adaptive(
    *,
    workers: int | None = None,
    timeout: float = 3.0,
    codegen: str | None = None,
    limit: int | None = None,
    out: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Score the bundled samples, replay them through each rule, print and return the rows."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="grpo_wb_adaptive_") as d:
        he = {t.task_id: t for t in import_humaneval()[0]}
        src = Path(codegen) if codegen else bundled(CODEGEN_SAMPLES)
        if limit:  # the first N samples
            atomic_write_jsonl(Path(d) / "codegen.jsonl", itertools.islice((r for _, r in iter_jsonl(src)), limit))
            src = Path(d) / "codegen.jsonl"
        rows += compare("codegen16b-humaneval", _scored(he, src, workers, timeout))
        mc = import_mapcoder(bundled(CHAT_REPLIES))
        chat = Path(d) / "chat.jsonl"
        atomic_write_jsonl(chat, mc.samples)
        rows += compare("chat-replies-mapcoder", _scored({t.task_id: t for t in mc.tasks}, chat, workers, timeout))
    print_rows(rows, out)
    return rows
