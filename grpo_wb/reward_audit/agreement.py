"""``grpo-wb reward-audit --completions SCORED``: the real reward function on real completions, beside grpo_wb's
verdicts.

Why: grpo_wb judges each row by its trainer's rule, ported (:mod:`grpo_wb.scoring.rules`); this is the check that
the port is the trainer's reward on the completions that matter, and the audit of that reward on them. Each
completion of a ``grpo-wb score`` / ``grpo-wb sample --score`` file is handed, exactly as the model wrote it, to
the function under test (a builtin such as ``builtin:verl-prime-code``, or the user's own) inside the audit's
sandbox, one sandbox child per completion (the function runs the completion: nothing it starts touches the host).
Its reward is held against the verdict in the file:

* ``agree``: both pass or both do not (the function pays 1.0 exactly when grpo_wb passed it);
* ``theirs_only``: the function pays in full what grpo_wb failed (a forgery the real reward pays, or a rule
  grpo_wb has wrong);
* ``ours_only``: grpo_wb passed what the function does not pay in full;
* ``not_judged``: the function could not be asked (the row's task cannot be put in its signature), crashed or hung.

``OUT/agreement.jsonl`` holds one line per completion (appended and flushed as each ends, so an interrupted run
keeps what it measured), ``OUT/agreement.json`` the counts, per judge of the file, and the tasks whose category
(too easy / too hard / frontier) the two verdicts put differently. A verl row is asked with its own
``data_source`` (the task's ``metadata.data_source``) where it has one.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from grpo_wb.errors import UserError
from grpo_wb.jsonio import JsonlAppender, atomic_write_json
from grpo_wb.layout import RewardAuditFiles
from grpo_wb.reward_audit.run import (
    AuditCase,
    AuditConfig,
    CaseResult,
    _HostRunner,
    _SandboxRunner,
    resolve,
    style_inputs,
)
from grpo_wb.runs.scored import read_scored_file
from grpo_wb.scoring.sandbox import SandboxUnavailable, WorkerDied, describe_isolation
from grpo_wb.tasks.records import Task, load_tasks

KINDS = ("agree", "theirs_only", "ours_only", "not_judged")


def _inputs(cfg: AuditConfig, task: Task) -> dict[str, Any] | str:
    """The function's inputs for ``task``: a verl row keeps its own data_source."""
    source = task.metadata.get("data_source")
    if cfg.style == "verl" and isinstance(source, str) and source:
        cfg = dataclasses.replace(cfg, data_source=source)
    return style_inputs(cfg, task)


def _category(passes: list[bool]) -> str:
    return "too_easy" if all(passes) else "too_hard" if not any(passes) else "frontier"


def _row(i: int, scored: dict[str, Any], res: CaseResult | None, why: str) -> dict[str, Any]:
    call = res.calls[0] if res is not None else None
    reward = call.reward if call is not None and call.ran and not call.crashed else None
    if reward is None:
        kind = "not_judged"
        if res is not None:
            why = (
                res.load_error
                or res.sandbox_error
                or (call.why() if call is not None and call.ran else "")
                or "the function returned no reward"
            )
    else:
        theirs = float(reward) == 1.0
        kind = "agree" if theirs == scored["passed"] else "theirs_only" if theirs else "ours_only"
    return {
        "index": i,
        "task_id": scored["task_id"],
        "completion_id": scored.get("completion_id"),
        "judge": scored.get("judge", "grpo_wb"),
        "passed": scored["passed"],
        "status": scored.get("status"),
        "their_reward": reward,
        "kind": kind,
        "why": why or None,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per judge of the file, and the tasks the two verdicts put in different categories."""
    out: dict[str, Any] = {}
    for judge in sorted({r["judge"] for r in rows}):
        mine = [r for r in rows if r["judge"] == judge]
        counts = {k: sum(r["kind"] == k for r in mine) for k in KINDS}
        judged = [r for r in mine if r["kind"] != "not_judged"]
        by_task: dict[str, list[dict[str, Any]]] = {}
        for r in judged:
            by_task.setdefault(r["task_id"], []).append(r)
        moved = {
            t: [_category([r["passed"] for r in rs]), _category([r["their_reward"] == 1.0 for r in rs])]
            for t, rs in by_task.items()
        }
        moved = {t: c for t, c in moved.items() if c[0] != c[1]}
        out[judge] = {
            "completions": len(mine),
            **counts,
            "judged": len(judged),
            "agreement": counts["agree"] / len(judged) if judged else None,
            "tasks": len(by_task),
            "tasks_changing_category": moved,
        }
    return out


def run_agreement(cfg: AuditConfig, *, log: Callable[[str], None] = print, progress: bool = True) -> dict[str, Any]:
    """Judge every completion of ``cfg.completions`` with the function; write OUT/agreement.{jsonl,json}."""
    if not cfg.tasks:
        raise UserError("--completions needs --tasks (the task file the completions were scored against)")
    out = Path(cfg.out)
    jsonl, summary_path = out / RewardAuditFiles.AGREEMENT_ROWS, out / RewardAuditFiles.AGREEMENT
    for p in (jsonl, summary_path):
        if p.exists() and not cfg.force:
            raise UserError(f"{p} exists; pass --force to replace it")
    tasks = {t.task_id: t for t in load_tasks(cfg.tasks)}
    scored = read_scored_file(cast(str, cfg.completions))  # set: grpo-wb reward-audit calls this for --completions only
    for n, r in enumerate(scored, 1):
        if r["task_id"] not in tasks:
            raise UserError(f"scored row {n}: task {r['task_id']!r} is not in {cfg.tasks}", path=cfg.completions)
        if not isinstance(r.get("completion"), str):
            raise UserError(f"scored row {n}: no completion text", path=cfg.completions)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--out {out}: cannot create it ({e.strerror or e})") from None
    jobs, why_not = [], {}
    for i, r in enumerate(scored):
        inputs = _inputs(cfg, tasks[r["task_id"]])
        if isinstance(inputs, str):
            why_not[i] = inputs
        else:
            jobs.append(
                AuditCase(
                    i,
                    tasks[r["task_id"]],
                    "completion",
                    None,
                    [{"completion": r["completion"], "inputs": inputs}],
                    ["completion"],
                )
            )
    reference = cfg.reference
    spec, binds = resolve(cfg.reward, reference)
    try:
        # spec is None for a reference driven from this process (builtin:grpo_wb) and only then
        runner = _HostRunner(cfg) if spec is None else _SandboxRunner(cfg, spec, binds)
    except (SandboxUnavailable, WorkerDied) as e:
        raise UserError(str(e)) from None
    rows: dict[int, dict[str, Any]] = {}
    lock = threading.Lock()
    progress = progress and sys.stderr.isatty()
    with JsonlAppender(jsonl, "w", sync_every=1.0) as sink:

        def record(i: int, res: CaseResult | None, why: str = "") -> None:
            with lock:  # the runner's threads report here
                rows[i] = _row(i, scored[i], res, why)
                sink.write(rows[i])
                if progress:
                    print(f"\raudit: {len(rows)}/{len(scored)} completions", end="", file=sys.stderr, flush=True)

        for i, why in why_not.items():
            record(i, None, why)
        try:
            isolation = runner.isolation()
            cfg.check_isolation(isolation)
            log(
                f"function: {cfg.reward} ({cfg.style}); runs in: "
                f"{describe_isolation(isolation) if 'mode' in isolation else isolation}"
            )
            runner.run(jobs, lambda res: record(res.job.id, res))
        finally:
            runner.close()
            if progress:
                print(file=sys.stderr)
    ordered = [rows[i] for i in range(len(scored))]
    result = {
        "reward": cfg.reward,
        "style": cfg.style,
        "completions": cfg.completions,
        "tasks": cfg.tasks,
        "reference_about": reference.about if reference else None,
        "isolation": isolation,
        "by_judge": summarize(ordered),
    }
    atomic_write_json(summary_path, result)
    return result


def print_agreement(result: dict[str, Any], out: Callable[[str], None] = print) -> None:
    """One line per judge of the file, then the tasks that change category."""
    head = (
        f"{'judge':<12} {'judged':>6} {'agree':>6} {'theirs only':>11} {'ours only':>9} {'not judged':>10} "
        f"{'agreement':>9}"
    )
    out(head)
    out("-" * len(head))
    for judge, s in result["by_judge"].items():
        share = "-" if s["agreement"] is None else f"{s['agreement']:.3f}"
        out(
            f"{judge:<12} {s['judged']:>6} {s['agree']:>6} {s['theirs_only']:>11} {s['ours_only']:>9} "
            f"{s['not_judged']:>10} {share:>9}"
        )
    for judge, s in result["by_judge"].items():
        for t, (ours, theirs) in s["tasks_changing_category"].items():
            out(f"  {judge}: {t} is {ours} by grpo_wb's verdicts, {theirs} by {result['reward']}")
