"""``grpo-wb tasks audit``: are the tests right? Found before a run, per task, through the warm sandbox pool.

Every figure grpo_wb prints rests on a task's tests. A task whose tests reject its own reference looks "too hard"
and wastes rollouts; one whose tests pass wrong programs pays the policy for wrong code. Per task:

- **broken**: no reference passes (each one the dataset ships is run: ``canonical_solution`` and ``solutions``);
  the cause told apart: the environment (a module the sandbox cannot import), the time limit (it passes with
  ``time_factor`` times the limit), or the expected output (shown next to the reference's own output).
  ``rejects_reference``: some references pass and some do not.
- **flaky**: each reference runs ``repeat`` times, each run in workers of their own ``PYTHONHASHSEED``; a status,
  a first failing test or an output that changes between runs (set order, randomness, time).
- **weak**: mutation testing of the first passing reference (:mod:`grpo_wb.tasks.mutants`); the mutation score is
  killed / run. Some survivors are *equivalent* to the reference (undecidable in general). To tell most of them
  apart, each survivor of a function task is run beside the reference on inputs that explore the input space
  (:func:`~grpo_wb.tasks.inputs.explore_inputs`, up to ``equivalence_inputs``; only those the task answers: the
  reference returns in time, the same twice, and its other references agree): one that answers some input
  differently is a real gap, kept with that input as its ``witness`` and the reference's answer there (a test the
  task lacks: ``add_witness_tests`` writes the set back with them); one that agrees on all is reported apart as
  likely equivalent, with how many inputs it met. Script tasks' survivors are not compared (their inputs have no
  type to vary), so there they are an upper bound.
  With ``samples`` (a scored results file), each distinct passing completion of a task runs beside the reference
  on the same inputs, as a survivor does (``samples_differential``: how many passing samples answer some input
  differently, and the first witnesses, which ``add_witness_tests`` exports too). ``weak`` uses the score that
  ranks tasks best against HumanEval+'s labels (docs/task-audit.md: AUC 0.82): at least ``weak_samples`` passing
  samples answer an explored input differently. Without samples to compare, it falls back to killed / run below
  ``weak_below`` (AUC 0.54 there, no better than chance: the likely equivalent survivors left out, 0.49).
  A mutant gets 10 times the reference's time (at least a second, at most the task's limit), as mutation
  tools do, so mutants that loop cost little.
- **false_positive**: a labelled wrong program (the task's ``wrong_solutions``, ``--wrong FILE``) passes; the rate
  is AlphaCode's false-positive measure.
- **hackable**: a program that knows nothing passes (:mod:`grpo_wb.tasks.probes`: constants, echo, silence, a
  table of the prompt's own examples); **few_tests** (fewer than ``min_tests``: DeepCoder's rule) and
  **only_examples** (every test is an example the prompt shows).
- **duplicate** and **contaminated** prompts: :mod:`grpo_wb.tasks.overlap` (MinHash LSH over word 5-grams).

Every program is judged as a completion is (fenced, by ``--judge``'s rule), so a task is audited under the reward
its trainer will use. Written to ``OUT/``: ``tasks.jsonl`` (one record per task, appended and flushed as each
chunk of tasks is decided: a rerun with the same settings resumes), ``overlap.json`` and ``summary.json``.
A task that cannot be audited in part (no reference, an unparsable one) says so in one line of its record's
``notes`` and the audit goes on.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import json
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tqdm.std import tqdm

from grpo_wb.config import cli, fraction, from_dict, non_negative_int, positive_float, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import JsonlAppender, atomic_write_json, iter_jsonl, read_json, repair_jsonl_tail, sha256_file
from grpo_wb.layout import TaskAuditFiles
from grpo_wb.scoring.executors import ExecutorConfig, JudgeConfig, SandboxConfig, open_scorer
from grpo_wb.scoring.extraction import as_reply, extract_answer
from grpo_wb.scoring.rules import judged_task, trainer_rule
from grpo_wb.scoring.scorer import ScoredCompletion, ScoreRequest
from grpo_wb.signal.headroom import dataframe
from grpo_wb.signal.testflags import FLAGS
from grpo_wb.tasks.inputs import explore_inputs
from grpo_wb.tasks.mutants import mutants as make_mutants
from grpo_wb.tasks.overlap import EVAL_SETS, contamination, load_eval_set, near_duplicates
from grpo_wb.tasks.probes import suite_stats, trivial_programs
from grpo_wb.tasks.records import Task, TestCase, load_tasks, write_tasks
from grpo_wb.tasks.sandbox_programs import program_text
from grpo_wb.version import __version__

TASKS_FILE, OVERLAP_FILE, SUMMARY_FILE, SETTINGS_FILE = (
    TaskAuditFiles.TASKS,
    TaskAuditFiles.OVERLAP,
    TaskAuditFiles.SUMMARY,
    TaskAuditFiles.SETTINGS,
)
_IMPORT = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '?([\w.]+)'?")
_CHUNK = 24
MAX_EQUIVALENCE_INPUTS = 2048
"""The most inputs ``--equivalence-inputs`` explores (a domain program says which it answers in one line)."""


def eval_sets(s: str) -> list[str]:
    """``--against humaneval,mbpp``: the evaluation sets the package can import."""
    names = [x.strip() for x in s.split(",") if x.strip()]
    bad = [x for x in names if x not in EVAL_SETS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown evaluation set {bad[0]!r} (choose from {', '.join(EVAL_SETS)})")
    return names


@dataclass(kw_only=True)
class TaskAuditConfig(SandboxConfig, ExecutorConfig, JudgeConfig):
    """What ``grpo-wb tasks audit`` checks and where it writes."""

    tasks: str = field(metadata=cli(positional=True))
    """the canonical task file to audit"""
    out: str = field(metadata=cli(metavar="DIR"))
    """folder for tasks.jsonl, overlap.json and summary.json (an audit there with the same settings is resumed)"""
    samples: str | None = field(default=None, metadata=cli(metavar="SCORED"))
    """a scored results file (grpo-wb score / sample --score): each status split by the task's flags, and each task's
    distinct passing completions run beside the reference on the explored inputs (what weak uses, --weak-samples)"""
    wrong: str | None = field(default=None, metadata=cli(metavar="FILE"))
    """labelled wrong programs (task_id, completion per line): the share that pass is the false-positive rate"""
    mutants: int = field(default=20, metadata=cli(type=non_negative_int, metavar="N"))
    """mutants of each task's reference to run (0: no mutation testing)"""
    repeat: int = field(default=3, metadata=cli(type=positive_int, metavar="K"))
    """runs of each reference, each with its own hash seed (a verdict that changes marks the task flaky)"""
    against: list[str] = field(default_factory=list, metadata=cli(type=eval_sets, metavar="SET,..."))
    """evaluation sets to look for the prompts in (humaneval, mbpp, mbpp-sanitized, apps)"""
    weak_below: float = field(default=0.5, metadata=cli(type=fraction))
    """without --samples (or for a task whose passing samples could not be compared): the mutation score, killed /
    run, under which a task's tests are weak"""
    weak_samples: int = field(default=1, metadata=cli(type=positive_int, metavar="N"))
    """with --samples: a task's tests are weak when N of its passing samples answer an explored input differently
    from the reference"""
    min_tests: int = field(default=5, metadata=cli(type=positive_int))
    """fewer tests than this are few (DeepCoder drops problems with fewer than 5)"""
    time_factor: float = field(default=4.0, metadata=cli(type=positive_float))
    """a reference that times out is run again with this many times the limit"""
    equivalence_inputs: int = field(default=256, metadata=cli(type=non_negative_int, metavar="N"))
    """inputs a surviving mutant must answer as the reference does to be called likely equivalent (0: none)"""
    add_witness_tests: str | None = field(default=None, metadata=cli(metavar="OUT"))
    """write the task set to OUT with a test per witness input (the reference's answer there) added to its task"""
    seed: int = 0
    """which mutants are drawn"""
    limit: int | None = field(default=None, metadata=cli(type=positive_int, metavar="N"))
    """audit only the first N tasks"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.weak_below <= 1.0:
            raise UserError(f"--weak-below must be in [0, 1], got {self.weak_below}")
        if self.equivalence_inputs > MAX_EQUIVALENCE_INPUTS:
            raise UserError(f"--equivalence-inputs is at most {MAX_EQUIVALENCE_INPUTS}, got {self.equivalence_inputs}")
        for name in self.against:
            if name not in EVAL_SETS:
                raise UserError(f"unknown evaluation set {name!r} (choose from {', '.join(EVAL_SETS)})")

    def settings(self, tasks_sha: str, samples_sha: str | None = None) -> dict[str, Any]:
        """What must match for an audit folder to be resumed (with samples, which ones pass and ``weak_samples``:
        without, the keys are left out, so an audit made before they existed resumes)."""
        keep = (
            "mutants",
            "equivalence_inputs",
            "repeat",
            "against",
            "weak_below",
            "min_tests",
            "time_factor",
            "seed",
            "timeout",
            "memory_mb",
            "site_packages",
            "judge",
            "wrong",
        )
        out = {"tasks_sha256": tasks_sha, **{k: getattr(self, k) for k in keep}}
        if samples_sha is not None:
            out.update(passing_samples_sha256=samples_sha, weak_samples=self.weak_samples)
        return out


def references(task: Task) -> list[str]:
    """Every reference the task carries, the canonical one first."""
    refs = [task.canonical_solution] if task.canonical_solution is not None else []
    return refs + [s for s in task.solutions if s not in refs]


def _program(task: Task, ref: str) -> tuple[str | None, str]:
    """The program a reference is, as grpo_wb builds it (a continuation is appended to the prompt), or why none."""
    ext = extract_answer(task.prompt, task.entry_point, ref, task.language)
    if ext.program is None:
        return None, ext.reason
    if task.language != "python":  # compiled in the sandbox, where a compile error is the reference's error
        return ext.program, ""
    try:
        compile(task.prelude + "\n" + ext.program, "<reference>", "exec")
    except SyntaxError as e:
        return None, f"does not compile: {e.msg} (line {e.lineno})"
    except ValueError as e:
        return None, f"does not compile: {e}"
    except (RecursionError, MemoryError):
        return None, "does not compile: nested too deeply for the compiler"
    return ext.program, ""


def load_wrong(path: str, tasks: Mapping[str, Task], notes: list[str]) -> dict[str, list[str]]:
    """``--wrong FILE``: (task_id, completion) lines; an unknown task or an empty file is a note, not a stop."""
    out: dict[str, list[str]] = defaultdict(list)
    n = 0
    for lineno, obj in iter_jsonl(path):
        n += 1
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("task_id"), str)
            or not isinstance(obj.get("completion"), str)
        ):
            notes.append(f"{path}:{lineno}: expected an object with string task_id and completion; line skipped")
        elif obj["task_id"] not in tasks:
            notes.append(f"{path}:{lineno}: task_id {obj['task_id']!r} is not in the task file; line skipped")
        else:
            out[obj["task_id"]].append(obj["completion"])
    if n == 0:
        notes.append(f"{path}: no wrong programs in the file; no false-positive rates from it")
    return out


def _cause(res: ScoredCompletion, site_packages: bool) -> str:
    if res.status == "parse_failure":
        return "unparsable reference: " + res.error
    m = _IMPORT.search(res.error) or _IMPORT.search(res.stderr_tail)
    if m:
        return f"environment: module {m.group(1)!r} is not importable in the sandbox" + (
            "" if site_packages else " (try --site-packages)"
        )
    if res.status == "timeout":
        return "time limit"
    if res.status == "fail":
        return "expected output" if res.failure.get("actual") is not None else "test failed: " + res.error
    return f"{res.status}: {res.error}"


_EQUIVALENCE = program_text("grpo_wb.runs", "programs/equivalence.py")
"""The program that runs a task's references (and a mutant) on explored inputs in the sandbox (``main`` is called
on the task's values when it is sent)."""

CALL_SECONDS = 0.2
"""How long the reference may take on one explored input (past it, the input is outside what the task answers)."""


def _sandbox_program(task: Task, mode: str, programs: list[str], inputs: list[tuple], seconds: float) -> str:
    args = (mode, task.prelude, task.entry_point, programs, inputs, seconds, CALL_SECONDS)
    return f"{_EQUIVALENCE}\n\nmain(*{args!r})\n"


def domain_program(task: Task, refs: list[str], inputs: list[tuple], seconds: float) -> str:
    """A program that runs the references (``refs[0]`` first, twice) on ``inputs`` until ``seconds`` are spent and
    prints ``domain TRIED RAISES SLOW DISAGREE HEXMASK``: the mask's bit k is set where input k is one the task
    answers (the first reference answers it within :data:`CALL_SECONDS`, the same twice, and the others agree)."""
    return _sandbox_program(task, "domain", refs, inputs, seconds)


def agreement_program(task: Task, reference: str, mutant: str, inputs: list[tuple], seconds: float) -> str:
    """A program that runs the reference and a mutant on ``inputs`` and prints ``same MET`` (agreed on MET inputs),
    or ``differs K MET LITERAL [REFERENCE'S, MUTANT'S]``: the input (by index) they answer differently, the shortest
    of the first few whose answer is a literal a test can hold."""
    return _sandbox_program(task, "agreement", [reference, mutant], inputs, seconds)


_SENTINEL = "(read by the audit)\n"


def _probe_task(task: Task, timeout: float) -> Task:
    """A task whose one stdio test never passes: the program's output is read from the failure, not judged."""
    return Task(
        task_id=task.task_id,
        prompt="",
        entry_point="",
        tests=(TestCase(name="probe", type="stdio", input="", output=_SENTINEL),),
        timeout=timeout,
    )


def _printed(res: ScoredCompletion | None) -> str:
    """What a probe program printed ('' when it did not end normally)."""
    if res is None or res.status != "fail":
        return ""
    return str(res.failure.get("actual") or "").strip()


def parse_domain(res: ScoredCompletion | None) -> dict[str, Any] | None:
    """A domain program's counts and the indices of the inputs the task answers; None if it did not say."""
    m = re.fullmatch(r"domain (\d+) (\d+) (\d+) (\d+) ([0-9a-f]+)", _printed(res))
    if not m:
        return None
    bits = int(m.group(5), 16)
    tried = int(m.group(1))
    return {
        "tried": tried,
        "reference_raises": int(m.group(2)),
        "reference_slow": int(m.group(3)),
        "references_disagree": int(m.group(4)),
        "defined": [k for k in range(tried) if bits >> k & 1],
    }


def parse_agreement(res: ScoredCompletion | None) -> dict[str, Any] | None:
    """An agreement program's verdict: ``{"same": True, "met": n}`` or the witness; None if it did not say."""
    out = _printed(res)
    m = re.fullmatch(r"same (\d+)", out)
    if m:
        return {"same": int(m.group(1)) > 0, "met": int(m.group(1))}
    m = re.fullmatch(r"differs (\d+) (\d+) ([01]) (\[.*\])", out, re.S)
    if not m:
        return None
    try:
        want, theirs = json.loads(m.group(4))
    except (ValueError, TypeError):
        return None
    return {
        "same": False,
        "k": int(m.group(1)),
        "met": int(m.group(2)),
        "literal": m.group(3) == "1",
        "reference": want,
        "mutant": theirs,
    }


class _Run:
    """The scorers of one audit: one per hash seed; programs other than references run in the first."""

    def __init__(self, cfg: TaskAuditConfig):
        self.cfg = cfg
        limits = cfg.limits()
        reward = cfg.reward_config("binary")
        self.scorers = []
        try:
            for k in range(cfg.repeat):
                self.scorers.append(
                    open_scorer(
                        dataclasses.replace(limits, hash_seed=k),
                        reward,
                        workers=cfg.workers,
                        cache=k == 0,
                        executor=cfg.executor,
                        ray_address=cfg.ray_address,
                    )
                )
        except BaseException:
            self.close()
            raise
        self.limit = limits.timeout

    def close(self) -> None:
        for s in self.scorers:
            s.close()

    def score(self, k: int, reqs: list[ScoreRequest]) -> list[ScoredCompletion]:
        return list(self.scorers[k].score(reqs)) if reqs else []


def _as_judged(task: Task, judge: Any, programs: list[str]) -> tuple[Task, list[str]]:
    """The task and programs as the scorer runs them under ``judge``: the rule's prelude, and the code its extraction
    takes from each program sent as a reply (the prompt's imports put back, as for a completion)."""
    rule = trainer_rule(task, judge)
    out = []
    for p in programs:
        reply = as_reply(p, task.language)
        ext = rule.extract(reply, task) if rule else extract_answer(task.prompt, task.entry_point, reply, task.language)
        out.append(ext.program or p)
    return judged_task(task, rule), out


def _probe_seconds(task: Task, limit: float) -> float:
    """The wall-clock limit of a program that compares references and mutants on explored inputs (it stops
    exploring at half of it and says what it has)."""
    return max(3.0, task.timeout or limit)


def _req(task: Task, program: str, probe: str, i: int) -> ScoreRequest:
    return ScoreRequest(
        task=task,
        completion=as_reply(program, task.language),
        sample_index=i,
        completion_id=f"{task.task_id}#{probe}{i}",
        meta={"probe": probe, "i": i},
    )


def sample_programs(task: Task, completions: Iterable[str]) -> list[tuple[str, int]]:
    """The distinct programs of a task's passing completions (as grpo_wb extracts them), each with how many
    completions it is, in first-seen order; none for a task the sandbox programs cannot call (not Python)."""
    if task.language != "python" or task.is_script or not task.entry_point:
        return []
    counts: Counter[str] = Counter()
    for c in completions:
        ext = extract_answer(task.prompt, task.entry_point, c, task.language)
        if ext.program is not None:
            counts[ext.program] += 1
    return list(counts.items())


def audit_chunk(
    run: _Run, tasks: list[Task], wrong: Mapping[str, list[str]], samples: Mapping[str, list[str]] | None = None
) -> list[dict[str, Any]]:
    """Audit a few tasks at once (every program of theirs streamed through the pool together). ``samples``: each
    task's passing completions (``--samples``), compared with the reference on the explored inputs."""
    cfg = run.cfg
    recs: dict[str, dict[str, Any]] = {}
    progs: dict[str, list[str | None]] = {}
    first: list[ScoreRequest] = []
    trivial: dict[str, list[tuple[str, str]]] = {}
    sampled = {t.task_id: sample_programs(t, (samples or {}).get(t.task_id, ())) for t in tasks}
    for t in tasks:
        rec = recs[t.task_id] = {"task_id": t.task_id, "flags": [], "notes": [], "tests": suite_stats(t)}
        refs = references(t)
        built = [_program(t, r) for r in refs]
        progs[t.task_id] = [p for p, _ in built]
        if not refs:
            rec["notes"].append("no reference solution: broken, flaky and mutation score not measured")
        for i, (p, why) in enumerate(built):
            if p is None:
                rec["notes"].append(f"reference {i} is not a program: {why}")
            else:
                first.append(_req(t, p, "ref", i))
        trivial[t.task_id] = trivial_programs(t)
        first += [_req(t, p, "trivial", i) for i, (_, p) in enumerate(trivial[t.task_id])]
        labelled = list(t.wrong_solutions) + list(wrong.get(t.task_id, ()))
        first += [
            ScoreRequest(
                task=t,
                completion=w,
                sample_index=i,
                completion_id=f"{t.task_id}#wrong{i}",
                meta={"probe": "wrong", "i": i},
            )
            for i, w in enumerate(labelled)
        ]
    by_task: dict[str, dict[str, dict[int, ScoredCompletion]]] = defaultdict(lambda: defaultdict(dict))
    for res in run.score(0, first):
        by_task[res.task_id][res.meta["probe"]][res.meta["i"]] = res
    task_of = {t.task_id: t for t in tasks}

    # second pass: references again (other hash seeds), slow references with more time, mutants of a passing one
    again: list[list[ScoreRequest]] = [[] for _ in range(cfg.repeat)]
    mutant_src: dict[str, list[Any]] = {}
    explored: dict[str, list[tuple]] = {}
    for t in tasks:
        got = by_task[t.task_id]
        for i, p in enumerate(progs[t.task_id]):
            if p is None:
                continue
            for k in range(1, cfg.repeat):
                again[k].append(_req(t, p, "ref", i))
            if got["ref"][i].status == "timeout":
                slow = dataclasses.replace(t, timeout=(t.timeout or run.limit) * cfg.time_factor)
                again[0].append(_req(slow, p, "slow", i))
        passing = [i for i, r in sorted(got["ref"].items()) if r.status == "pass"]
        if passing and cfg.mutants and t.language != "python":
            recs[t.task_id]["notes"].append(
                f"a {t.language} task: mutants are made of Python references only (mutation score not measured)"
            )
        elif passing and (cfg.mutants or sampled[t.task_id]):
            i = passing[0]
            ref_src = cast(str, progs[t.task_id][i])  # only programs were scored, so a passing one is no None
            ms = []
            if cfg.mutants:
                try:
                    ms = make_mutants(ref_src, cfg.mutants, seed=cfg.seed)
                except ValueError as e:
                    recs[t.task_id]["notes"].append(f"reference {i} cannot be mutated: {e}")
                mutant_src[t.task_id] = ms
                budget = min(t.timeout or run.limit, max(1.0, 10 * got["ref"][i].duration_s))
                mt = dataclasses.replace(t, timeout=budget)
                again[0] += [_req(mt, m.source, "mutant", j) for j, m in enumerate(ms)]
            # the inputs a survivor and a passing sample will be compared on: explored, then run on the references
            # (in this pass)
            if (ms or sampled[t.task_id]) and not t.is_script and t.entry_point and cfg.equivalence_inputs:
                cands = explore_inputs(t, ref_src, cfg.equivalence_inputs, seed=cfg.seed)
                if cands:
                    explored[t.task_id] = cands
                    jt, refs = _as_judged(t, cfg.judge, [cast(str, progs[t.task_id][k]) for k in passing[:5]])
                    pt = _probe_task(t, _probe_seconds(t, run.limit))
                    prog = domain_program(jt, refs, cands, 0.5 * _probe_seconds(t, run.limit))
                    again[0].append(_req(pt, prog, "domain", 0))
                else:
                    recs[t.task_id]["notes"].append(
                        "no literal call of the entry point in the tests or the prompt: surviving mutants "
                        + ("and passing samples " if sampled[t.task_id] else "")
                        + "are not compared with the reference (an upper bound on the gaps)"
                    )
    for k in range(cfg.repeat):
        for res in run.score(k, again[k]):
            probe = res.meta["probe"] if k == 0 else f"ref@{k}"
            by_task[res.task_id][probe][res.meta["i"]] = res

    # third pass: each surviving mutant, and each distinct passing sample, against the reference on the explored
    # inputs the task answers
    third: list[ScoreRequest] = []
    defined: dict[str, list[tuple]] = {}
    for t in tasks:
        task_mutants, cands = mutant_src.get(t.task_id), explored.get(t.task_id, [])
        if not (task_mutants or sampled[t.task_id]) or not cands:
            continue
        dom = parse_domain(by_task[t.task_id]["domain"].get(0))
        recs[t.task_id]["explored"] = {"budget": cfg.equivalence_inputs, "generated": len(cands)}
        if dom is None:
            d = by_task[t.task_id]["domain"].get(0)
            recs[t.task_id]["notes"].append(
                "the references could not be run on the explored inputs"
                + (f" ({d.status}: {_short(d.error, 120)})" if d is not None else "")
                + ": no survivor is called equivalent"
                + (", no passing sample is compared" if sampled[t.task_id] else "")
            )
            continue
        inputs = defined[t.task_id] = [cands[k] for k in dom.pop("defined")]
        recs[t.task_id]["explored"].update(dom, answered=len(inputs))
        if not inputs:
            continue
        # only programs were scored, so a passing reference is no None
        ref = cast(str, progs[t.task_id][min(i for i, r in by_task[t.task_id]["ref"].items() if r.status == "pass")])
        secs = _probe_seconds(t, run.limit)
        at = _probe_task(t, secs)
        for j, r in sorted(by_task[t.task_id]["mutant"].items()):
            if r.passed and task_mutants:
                jt, (jref, jmut) = _as_judged(t, cfg.judge, [ref, task_mutants[j].source])
                third.append(_req(at, agreement_program(jt, jref, jmut, inputs, 0.5 * secs), "agree", j))
        for j, (src, _) in enumerate(sampled[t.task_id]):  # the same program and budget: a sample is a "mutant"
            jt, (jref, jsam) = _as_judged(t, cfg.judge, [ref, src])
            third.append(_req(at, agreement_program(jt, jref, jsam, inputs, 0.5 * secs), "sample", j))
    for res in run.score(0, third):
        by_task[res.task_id][res.meta["probe"]][res.meta["i"]] = res

    for tid, rec in recs.items():
        _decide(
            task_of[tid], rec, by_task[tid], trivial[tid], mutant_src.get(tid), cfg, defined.get(tid, []), sampled[tid]
        )
    return [recs[t.task_id] for t in tasks]


def _decide(
    task: Task,
    rec: dict[str, Any],
    got: Mapping[str, Mapping[int, ScoredCompletion]],
    trivial: list[tuple[str, str]],
    mutants: list[Any] | None,
    cfg: TaskAuditConfig,
    inputs: list[tuple] | None = None,
    samples: list[tuple[str, int]] | None = None,
) -> None:
    flags: list[str] = rec["flags"]
    explored = rec.pop("explored", None)
    refs = got.get("ref", {})
    n_refs = len(references(task))
    if not n_refs:
        flags.append("no_reference")
    elif len(refs) < n_refs:
        flags.append("bad_reference")
    ref_rows = []
    for i, r in sorted(refs.items()):
        row: dict[str, Any] = {"i": i, "status": r.status, "duration_s": r.duration_s}
        if r.status != "pass":
            cause = _cause(r, cfg.site_packages)
            slow = got.get("slow", {}).get(i)
            if slow is not None:
                cause = (
                    f"time limit: passes with {cfg.time_factor:g}x the limit"
                    if slow.status == "pass"
                    else f"times out even with {cfg.time_factor:g}x the limit"
                )
            row.update(cause=cause, error=r.error, failure=r.failure)
        ref_rows.append(row)
    passed = [r for r in ref_rows if r["status"] == "pass"]
    rec["references"] = {"n": n_refs, "run": len(ref_rows), "passed": len(passed), "results": ref_rows}
    if ref_rows and not passed:
        flags.append("broken")
        rec["broken"] = ref_rows[0]["cause"]
    elif passed and len(passed) < len(ref_rows):
        flags.append("rejects_reference")
    # flaky: the same reference, another hash seed, another verdict or output
    changed = []
    for i, r in sorted(refs.items()):
        runs = [r] + [got[f"ref@{k}"][i] for k in range(1, cfg.repeat) if i in got.get(f"ref@{k}", {})]
        seen = {(x.status, x.failure.get("test"), x.failure.get("actual")) for x in runs}
        if len(seen) > 1:
            changed.append(
                {
                    "reference": i,
                    "statuses": [x.status for x in runs],
                    "tests": sorted({x.failure["test"] for x in runs if x.failure.get("test")}),
                }
            )
    rec["flaky"] = changed
    if changed:
        flags.append("flaky")
    # programs that know nothing
    triv = got.get("trivial", {})
    hacks = [{"program": trivial[i][0], "code": trivial[i][1]} for i, r in sorted(triv.items()) if r.passed]
    rec["hackable"] = hacks
    if hacks:
        flags.append("hackable")
    # labelled wrong programs
    wr = got.get("wrong", {})
    if wr:
        n_pass = sum(r.passed for r in wr.values())
        rec["wrong"] = {
            "n": len(wr),
            "passed": n_pass,
            "false_positive_rate": round(n_pass / len(wr), 4),
            "passing": [i for i, r in sorted(wr.items()) if r.passed],
        }
        if n_pass:
            flags.append("false_positive")
    # the policy's passing samples beside the reference on the explored inputs: what ``weak`` uses where they are
    differential = _samples_differential(task, got.get("sample", {}), samples or [], inputs or [])
    if differential is not None:
        differential["inputs"] = len(inputs or [])
        rec["samples_differential"] = differential
    # mutation testing
    score: float | None = None
    stillborn: list[int] = []
    if mutants is not None:
        mres = got.get("mutant", {})
        # a mutant that never loaded was not killed by the tests: none of them ran (a reference that checks its own
        # code at load makes every mutant so, and its tests would look strong)
        stillborn = sorted(j for j, r in mres.items() if _stillborn(r))
        killed = [j for j, r in mres.items() if not r.passed and r.status != "sandbox_error" and j not in stillborn]
        survived = sorted(j for j, r in mres.items() if r.passed)
        verdicts = {j: parse_agreement(r) for j, r in got.get("agree", {}).items()}
        equivalent = [j for j in survived if (verdicts.get(j) or {}).get("same")]
        run_n = len(killed) + len(survived)
        score = round(len(killed) / run_n, 4) if run_n else None
        judged = run_n - len(equivalent)
        adjusted = round(len(killed) / judged, 4) if judged else None

        def survivor(j: int) -> dict[str, Any]:
            d = {"operator": mutants[j].operator, "description": mutants[j].description, "diff": mutants[j].diff}
            v = verdicts.get(j)
            if v is not None:
                d["inputs_met"] = v["met"]
            if v is not None and not v["same"] and inputs and v["k"] < len(inputs):
                args = inputs[v["k"]]
                call = f"{task.entry_point}({', '.join(repr(a) for a in args)})"
                d["witness"] = f"differs on {_short(call, 300)} reference: {v['reference']} mutant: {v['mutant']}"
                d["witness_input"] = repr(args)
                if v["literal"]:
                    d["witness_output"] = v["reference"]  # the reference's answer there: a test the task lacks
            return d

        rec["mutation"] = {
            "generated": len(mutants),
            "run": run_n,
            "killed": len(killed),
            "survived": len(survived),
            "likely_equivalent": len(equivalent),
            "score": score,
            "score_without_equivalent": adjusted,
            "killed_by": dict(Counter(mres[j].status for j in killed)),
            "stillborn": len(stillborn),
            "inputs": explored,
            "survivors": [survivor(j) for j in survived if j not in equivalent],
            "equivalent": [survivor(j) for j in equivalent],
        }
        if len(stillborn) * 2 > len(mres):
            rec["notes"].append(
                f"{len(stillborn)} of {len(mres)} mutants did not load: the mutation score rests on the others "
                "(a reference that checks its own code at load does this)"
            )
        if not mutants:
            rec["notes"].append("no mutation site in the reference")
    # weak: the score that ranks tasks best where there is one (docs/task-audit.md, "which score ranks tasks")
    if differential is not None and differential["compared"]:
        rec["weak_rule"] = "samples"
        if differential["wrong"] >= cfg.weak_samples:
            flags.append("weak")
    elif mutants is not None:
        rec["weak_rule"] = "killed / run"
        if score is not None and score < cfg.weak_below or score is None and stillborn:
            flags.append("weak")  # no mutant the tests could judge: their strength is not shown
    stats = rec["tests"]
    if stats["tests"] < cfg.min_tests and stats["check_calls"] < cfg.min_tests:
        flags.append("few_tests")
    if stats["only_prompt_examples"]:
        flags.append("only_examples")


WITNESSES_KEPT = 3
"""How many passing samples' witnesses a task's ``samples_differential`` keeps (the first, in sample order)."""


def _samples_differential(
    task: Task, got: Mapping[int, ScoredCompletion], samples: list[tuple[str, int]], inputs: list[tuple]
) -> dict[str, Any] | None:
    """How many of the task's passing samples answer an explored input differently from the reference: ``passing``
    samples, their ``distinct`` programs, how many were ``compared`` (their program said same or differs), ``wrong``
    (samples, duplicates counted) and ``distinct_wrong``, and the first witnesses (input, the reference's answer,
    the sample's). None when the task has no passing sample."""
    if not samples:
        return None
    verdicts = {j: parse_agreement(r) for j, r in got.items()}
    compared = [j for j, v in verdicts.items() if v is not None and (v["same"] or "k" in v)]
    wrong = sorted(j for j in compared if "k" in cast(dict, verdicts[j]))
    witnesses = []
    for j in wrong[:WITNESSES_KEPT]:
        v = cast(dict, verdicts[j])
        if v["k"] < len(inputs):
            args = inputs[v["k"]]
            witnesses.append(
                {
                    "input": repr(args),
                    "call": _short(f"{task.entry_point}({', '.join(repr(a) for a in args)})", 300),
                    "reference": v["reference"],
                    "sample": v["mutant"],
                    "literal": v["literal"],  # the reference's answer is a literal a test can hold
                }
            )
    return {
        "passing": sum(n for _, n in samples),
        "distinct": len(samples),
        "compared": len(compared),
        "wrong": sum(samples[j][1] for j in wrong),
        "distinct_wrong": len(wrong),
        "witnesses": witnesses,
    }


def _stillborn(r: ScoredCompletion) -> bool:
    """A mutant that failed before any test ran: an exception or an exit while its program loaded."""
    return r.status == "error" and r.tests_passed == 0 and not r.failure and "during the tests" not in r.error


def find_overlap(tasks: list[Task], against: Iterable[str], threshold: float = 0.7) -> dict[str, Any]:
    """Near-duplicate prompts inside the set, and prompts found in the evaluation sets."""
    texts = {t.task_id: t.prompt for t in tasks}
    pairs = near_duplicates(texts, threshold=threshold)
    sets = {name: load_eval_set(name) for name in against}
    matches = contamination(texts, sets) if sets else []
    return {
        "method": "MinHash LSH over lower-cased word 5-grams (datasketch); pairs confirmed by exact Jaccard",
        "duplicate_threshold": threshold,
        "against": list(against),
        "duplicates": [p.to_json() for p in pairs],
        "contamination": [m.to_json() for m in matches],
    }


def _overlap_by_task(overlap: Mapping[str, Any]) -> tuple[dict[str, list[str]], dict[str, list[dict[str, Any]]]]:
    dups: dict[str, list[str]] = defaultdict(list)
    for p in overlap["duplicates"]:
        dups[p["a"]].append(p["b"])
        dups[p["b"]].append(p["a"])
    cont: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in overlap["contamination"]:
        cont[m["task_id"]].append(m)
    return dups, cont


def _sample_groups(path: str) -> dict[str, Counter]:
    """Status counts per task of a scored results file."""
    out: dict[str, Counter] = defaultdict(Counter)
    for lineno, obj in iter_jsonl(path):
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("task_id"), str)
            or not isinstance(obj.get("status"), str)
        ):
            raise UserError("expected a scored result (task_id, status)", path=path, line=lineno)
        out[obj["task_id"]][obj["status"]] += 1
    if not out:
        raise UserError("no scored results in the file", path=path)
    return out


def _passing_samples(path: str) -> dict[str, list[str]]:
    """Each task's passing completions in a scored results file (rows without a completion count in the
    statuses only); the file is checked as :func:`_sample_groups` checks it."""
    _sample_groups(path)
    out: dict[str, list[str]] = defaultdict(list)
    for _, obj in iter_jsonl(path):
        if obj["status"] == "pass" and isinstance(obj.get("completion"), str):
            out[obj["task_id"]].append(obj["completion"])
    return dict(out)


def _samples_digest(passing: Mapping[str, list[str]]) -> str:
    """What a resumed audit's samples must be: the passing completions of each task (not the file, whose timings
    change each time it is scored)."""
    text = json.dumps(sorted((t, sorted(cs)) for t, cs in passing.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def _group_kind(c: Counter) -> str:
    n, p = sum(c.values()), c.get("pass", 0)
    return "all pass" if p == n else "none pass" if p == 0 else "mixed"


def _spread(scores: list[float]) -> dict[str, Any]:
    """Mean, quantiles and a histogram of mutation scores."""
    if not scores:
        return {"mean": None, "quantiles": {}, "histogram": {}}
    srt = sorted(scores)
    bins = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    return {
        "mean": round(sum(srt) / len(srt), 4),
        "quantiles": {str(q): srt[min(len(srt) - 1, int(q * len(srt)))] for q in (0.1, 0.25, 0.5, 0.75, 0.9)},
        "histogram": {
            f"{lo:.1f}-{hi:.1f}": sum(lo <= x < hi or (hi == 1.0 and x == 1.0) for x in srt)
            for lo, hi in zip(bins, bins[1:])
        },
    }


def _search_summary(muts: list[dict[str, Any]], budget: Any) -> dict[str, Any]:
    """How far the equivalence search went: inputs explored and answered per task, inputs each equivalent met."""
    ins = [m["inputs"] for m in muts if m.get("inputs")]
    answered = sorted(x.get("answered", 0) for x in ins)
    met = sorted(e["inputs_met"] for m in muts for e in m["equivalent"] if "inputs_met" in e)
    return {
        "budget": budget,
        "tasks_explored": len(ins),
        "inputs_answered": {
            "mean": round(sum(answered) / len(answered), 1) if answered else None,
            "median": answered[len(answered) // 2] if answered else None,
            "min": answered[0] if answered else None,
        },
        "equivalent_inputs_met": {"median": met[len(met) // 2] if met else None, "min": met[0] if met else None},
    }


def summarize(
    records: list[dict[str, Any]],
    overlap: Mapping[str, Any],
    notes: list[str],
    *,
    samples: str | None,
    seconds: float,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The whole set: flag counts, the mutation scores' spread, causes, and statuses by flag."""
    n = len(records)
    flag_counts = {f: sum(f in r["flags"] for r in records) for f in FLAGS}
    muts = [r["mutation"] for r in records if r.get("mutation") and r["mutation"]["score"] is not None]
    causes = Counter(r["broken"].split(":")[0] for r in records if "broken" in r)
    out: dict[str, Any] = {
        "tasks": n,
        "clean": sum(not r["flags"] for r in records),
        "flags": flag_counts,
        "broken_causes": dict(causes),
        "mutation": {
            "tasks": len(muts),
            "score": _spread([m["score"] for m in muts]),
            "score_without_equivalent": _spread(
                [m["score_without_equivalent"] for m in muts if m["score_without_equivalent"] is not None]
            ),
            "mutants_run": sum(m["run"] for m in muts),
            "survived": sum(m["survived"] for m in muts),
            "likely_equivalent": sum(m["likely_equivalent"] for m in muts),
            "with_witness": sum("witness" in x for m in muts for x in m["survivors"]),
            "equivalence_search": _search_summary(muts, settings.get("equivalence_inputs")),
        },
        "duplicate_pairs": len(overlap["duplicates"]),
        "contamination_matches": len(overlap["contamination"]),
        "weak_rule": dict(Counter(r["weak_rule"] for r in records if r.get("weak_rule"))),
        "seconds": round(seconds, 1),
        "seconds_per_task": round(seconds / n, 3) if n else None,
        "notes": notes + [f"{r['task_id']}: {x}" for r in records for x in r["notes"]],
        "settings": dict(settings),
        "version": __version__,
    }
    diffs = [r["samples_differential"] for r in records if (r.get("samples_differential") or {}).get("compared")]
    if diffs:
        out["samples_differential"] = {
            "tasks_compared": len(diffs),
            "tasks_with_wrong": sum(d["wrong"] > 0 for d in diffs),
            "passing": sum(d["passing"] for d in diffs),
            "distinct": sum(d["distinct"] for d in diffs),
            "wrong": sum(d["wrong"] for d in diffs),
            "weak_samples": settings.get("weak_samples"),
        }
    if samples:
        groups = _sample_groups(samples)
        table: dict[str, dict[str, Any]] = {}
        for f in ("clean",) + FLAGS:
            rows = [
                r for r in records if (f in r["flags"] if f != "clean" else not r["flags"]) and r["task_id"] in groups
            ]
            st: Counter = Counter()
            kinds: Counter = Counter()
            for r in rows:
                st.update(groups[r["task_id"]])
                kinds[_group_kind(groups[r["task_id"]])] += 1
            if rows:
                table[f] = {"tasks": len(rows), "groups": dict(kinds), "statuses": dict(st)}
        out["by_flag"] = table
    return out


def run_task_audit(cfg: TaskAuditConfig, progress: bool = False) -> dict[str, Any]:
    """Audit every task of ``cfg.tasks`` into ``cfg.out`` (resuming what is there); return the summary."""
    tasks = load_tasks(cfg.tasks)
    if cfg.limit:
        tasks = tasks[: cfg.limit]
    out = Path(cfg.out)
    if out.exists() and not out.is_dir():
        raise UserError("exists and is not a folder", path=str(out))
    out.mkdir(parents=True, exist_ok=True)
    passing = _passing_samples(cfg.samples) if cfg.samples else None  # a bad file stops the audit before it runs
    settings = cfg.settings(sha256_file(cfg.tasks), _samples_digest(passing) if passing is not None else None)
    sp = out / SETTINGS_FILE
    if sp.exists():
        old = read_json(sp)
        if old != json.loads(json.dumps(settings)):
            diff = sorted(k for k in settings if old.get(k) != json.loads(json.dumps(settings[k])))
            raise UserError(
                f"holds an audit with other settings ({', '.join(diff)}): give another --out or remove it",
                path=str(out),
            )
    else:
        atomic_write_json(sp, settings)
    notes: list[str] = []
    wrong = load_wrong(cfg.wrong, {t.task_id: t for t in tasks}, notes) if cfg.wrong else {}
    op = out / OVERLAP_FILE
    overlap = read_json(op) if op.exists() else find_overlap(tasks, cfg.against)
    atomic_write_json(op, overlap)
    dups, cont = _overlap_by_task(overlap)
    tp = out / TASKS_FILE
    repair_jsonl_tail(tp)
    done = {obj["task_id"]: obj for _, obj in iter_jsonl(tp)} if tp.exists() else {}
    todo = [t for t in tasks if t.task_id not in done]
    t0 = time.monotonic()
    if todo:
        run = _Run(cfg)
        try:
            with (
                JsonlAppender(tp) as w,
                tqdm(
                    total=len(tasks),
                    initial=len(tasks) - len(todo),
                    unit="task",
                    disable=not progress,
                    file=sys.stderr,
                    desc="audit",
                ) as bar,
            ):
                for lo in range(0, len(todo), _CHUNK):
                    chunk = todo[lo : lo + _CHUNK]
                    recs = audit_chunk(run, chunk, wrong, passing)
                    for r in recs:
                        _add_overlap(r, dups, cont)
                        r["seconds"] = round((time.monotonic() - t0) / (lo + len(chunk)), 3)
                    w.write_many(recs)
                    done.update((r["task_id"], r) for r in recs)
                    bar.update(len(chunk))
        finally:
            run.close()
    records = [done[t.task_id] for t in tasks]
    summary = summarize(records, overlap, notes, samples=cfg.samples, seconds=time.monotonic() - t0, settings=settings)
    if cfg.add_witness_tests:
        summary["witness_tests"] = write_witness_tests(cfg, done, cfg.add_witness_tests)
    atomic_write_json(out / SUMMARY_FILE, summary)
    return summary


def _witnesses(rec: Mapping[str, Any]) -> Iterable[tuple[Any, Any]]:
    """(input, the reference's answer) of each witness of an audit record: the surviving mutants', then the passing
    samples' (``samples_differential``; only those whose answer is a literal)."""
    for s in (rec.get("mutation") or {}).get("survivors", ()):
        yield s.get("witness_input"), s.get("witness_output")
    for w in (rec.get("samples_differential") or {}).get("witnesses", ()):
        if w.get("literal"):
            yield w.get("input"), w.get("reference")


def witness_tests(task: Task, rec: Mapping[str, Any]) -> list[TestCase]:
    """A test per witness of ``task``'s audit record, in the task's own format (an assert on the entry point): the
    reference's answer on an input where a surviving mutant, or a passing sample, answers otherwise; one per
    distinct input."""
    if task.is_script or not task.entry_point or task.language != "python":
        return []
    names = {t.name for t in task.tests}
    out: list[TestCase] = []
    seen: set[str] = set()
    for given, want in _witnesses(rec):
        if not isinstance(given, str) or not isinstance(want, str) or given in seen:
            continue
        try:
            args = ast.literal_eval(given)
            ast.literal_eval(want)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(args, tuple):
            continue
        seen.add(given)
        k = len(out)
        while f"witness_{k}" in names:
            k += 1
        names.add(f"witness_{k}")
        out.append(
            TestCase(name=f"witness_{k}", code=f"assert candidate({', '.join(repr(a) for a in args)}) == {want}")
        )
    return out


def write_witness_tests(cfg: TaskAuditConfig, records: Mapping[str, Mapping[str, Any]], path: str) -> dict[str, Any]:
    """``--add-witness-tests OUT``: the whole task set written to ``path``, each audited task with a test per
    witness added (:func:`witness_tests`); returns how many tests and tasks."""
    if Path(path).resolve() == Path(cfg.tasks).resolve():
        raise UserError("is the audited task file: give --add-witness-tests another path", path=path)
    counts = Counter[str]()

    def strengthened() -> Iterable[Task]:
        for t in load_tasks(cfg.tasks):
            new = witness_tests(t, records[t.task_id]) if t.task_id in records else []
            if new:
                counts["tests"] += len(new)
                counts["tasks"] += 1
                t = dataclasses.replace(
                    t, tests=t.tests + tuple(new), metadata={**t.metadata, "grpo_wb_witness_tests": len(new)}
                )
            yield t

    write_tasks(path, strengthened())
    return {"out": path, "tests": counts["tests"], "tasks": counts["tasks"]}


def _add_overlap(rec: dict[str, Any], dups: Mapping[str, list[str]], cont: Mapping[str, list[dict[str, Any]]]) -> None:
    tid = rec["task_id"]
    if dups.get(tid):
        rec["duplicates"] = sorted(dups[tid])
        rec["flags"].append("duplicate")
    if cont.get(tid):
        rec["contamination"] = cont[tid]
        rec["flags"].append("contaminated")


def read_task_audit(folder: str | Path) -> dict[str, dict[str, Any]]:
    """An audit's per-task records by task id (for headroom, filter and the report)."""
    p = Path(folder) / TASKS_FILE
    if not p.exists():
        raise UserError(f"no {TASKS_FILE}: not a grpo-wb tasks audit folder", path=str(folder))
    out = {}
    for lineno, obj in iter_jsonl(p):
        if not (
            isinstance(obj, dict)
            and isinstance(obj.get("task_id"), str)
            and isinstance(obj.get("flags"), list)
            and isinstance(obj.get("tests"), dict)
        ):
            raise UserError("not a task audit record (task_id, flags, tests)", path=str(p), line=lineno)
        out[obj["task_id"]] = obj
    return out


def audit_tasks(
    tasks_file: str, out_dir: str | Path, **settings: Any
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """What the task_audit notebook runs: the audit of ``tasks_file`` into ``out_dir/audit`` (resumed when there),
    its settings checked as ``grpo-wb tasks audit``'s flags are; returns the summary and the per-task records."""
    folder = Path(out_dir) / "audit"
    cfg = from_dict(
        TaskAuditConfig, {"tasks": str(tasks_file), "out": str(folder), **settings}, source="task_audit parameters"
    )
    return run_task_audit(cfg), read_task_audit(folder)


def _short(text: Any, n: int = 80) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def tasks_frame(records: Mapping[str, Mapping[str, Any]]):
    """One row per task: its flags, its tests, its references and its mutation score."""
    rows = []
    for tid, r in records.items():
        m, refs = r.get("mutation") or {}, r.get("references") or {}
        rows.append(
            {
                "task": tid,
                "flags": ", ".join(r["flags"]) or "clean",
                "tests": r["tests"]["tests"],
                "distinct inputs": r["tests"]["distinct_inputs"],
                "references passing": f"{refs.get('passed', 0)} of {refs.get('n', 0)}",
                "mutation score": m.get("score"),
                "without equivalent": m.get("score_without_equivalent"),
                "mutants run": m.get("run"),
                "survivors": len(m.get("survivors", ())),
                "likely equivalent": m.get("likely_equivalent"),
                "false positives": (r.get("wrong") or {}).get("false_positive_rate"),
            }
        )
    return dataframe(rows).set_index("task") if rows else dataframe(rows)


def flags_frame(summary: Mapping[str, Any]):
    """How many tasks carry each flag."""
    n = summary["tasks"]
    rows = [{"flag": f, "tasks": c, "share": round(c / n, 3) if n else None} for f, c in summary["flags"].items()]
    return dataframe(
        [{"flag": "clean", "tasks": summary["clean"], "share": round(summary["clean"] / n, 3) if n else None}, *rows]
    ).set_index("flag")


def broken_frame(records: Mapping[str, Mapping[str, Any]]):
    """Each reference that fails: why, and the first failing test's input, expected and actual output."""
    rows = []
    for tid, r in records.items():
        for x in (r.get("references") or {}).get("results", ()):
            if x["status"] != "pass":
                f = x.get("failure") or {}
                rows.append(
                    {
                        "task": tid,
                        "reference": x["i"],
                        "status": x["status"],
                        "cause": x.get("cause", ""),
                        "test": f.get("test", ""),
                        "input or call": _short(f.get("input", f.get("code", ""))),
                        "expected": _short(f.get("expected", "")),
                        "reference's output": _short(f.get("actual", "")),
                        "error": _short(x.get("error", "")),
                    }
                )
    return dataframe(rows)


def survivors(records: Mapping[str, Mapping[str, Any]], n: int = 8) -> str:
    """The first ``n`` surviving mutants that answer an input the tests lack differently, as diffs with it."""
    out: list[str] = []
    for tid, r in records.items():
        for s in (r.get("mutation") or {}).get("survivors", ()):
            if "witness" in s and len(out) < n:
                out.append(f"{tid}: {s['description']}\n{s['diff']}\n  -> {s['witness']}")
    return "\n\n".join(out) if out else "no surviving mutant was caught answering an input differently"


def hackable_frame(records: Mapping[str, Mapping[str, Any]]):
    """Each program that knows nothing and passes a task's tests."""
    return dataframe(
        [
            {
                "task": tid,
                "program": h["program"],
                "code": _short(h["code"].strip(), 120),
                "tests": r["tests"]["tests"],
                "only the prompt's examples": r["tests"]["only_prompt_examples"],
            }
            for tid, r in records.items()
            for h in r.get("hackable", ())
        ]
    )


def overlap_frame(folder: str | Path):
    """Near-duplicate pairs and evaluation-set matches, one row each."""
    ov = read_json(Path(folder) / OVERLAP_FILE)
    rows = [{"kind": "duplicate", "task": p["a"], "other": p["b"], "jaccard": p["jaccard"]} for p in ov["duplicates"]]
    rows += [
        {
            "kind": f"in {m['eval_set']}",
            "task": m["task_id"],
            "other": m["eval_id"],
            "jaccard": m["jaccard"],
            "containment": m["containment"],
        }
        for m in ov["contamination"]
    ]
    return dataframe(rows)


def audit_headline(summary: Mapping[str, Any], tasks_file: str) -> dict[str, Any]:
    """What the batch index shows of an audit."""
    f, m = summary["flags"], summary["mutation"]
    return {
        "tasks": summary["tasks"],
        "clean": summary["clean"],
        "broken": f["broken"],
        "flaky": f["flaky"],
        "hackable": f["hackable"],
        "weak": f["weak"],
        "mutation score (mean, without equivalent)": m["score_without_equivalent"]["mean"],
        "seconds per task": summary["seconds_per_task"],
        "source": f"tests of {Path(tasks_file).name}",
    }


def by_flag_frame(summary: Mapping[str, Any]):
    """With samples: per flag, its tasks' groups (all pass / mixed / none pass) and their samples' statuses."""
    rows = [
        {
            "flag": f,
            "tasks": x["tasks"],
            **{f"groups {k}": v for k, v in x["groups"].items()},
            **{f"samples {k}": v for k, v in x["statuses"].items()},
        }
        for f, x in summary.get("by_flag", {}).items()
    ]
    return dataframe(rows).fillna(0).set_index("flag") if rows else dataframe(rows)
