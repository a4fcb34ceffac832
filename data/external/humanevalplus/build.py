"""Rebuild ``labels.jsonl`` here: which HumanEval tasks' tests let wrong CodeGen-16B samples through, by HumanEval+.

Ground truth for ``grpo-wb bench --set task-scores`` (how well a test-strength score ranks tasks). For each of
HumanEval's 164 tasks, the bundled CodeGen-16B samples (``data/external/codet_codegen16b_humaneval``, 100 a task)
that pass the task's original tests (a ``grpo-wb score`` results file of them) are run beside HumanEval+'s
canonical solution on HumanEval+'s inputs (``base_input`` + ``plus_input`` of a release file: EvalPlus's
``HumanEvalPlus-Mini.jsonl.gz`` by default), both in grpo_wb's sandbox (one program per distinct passing sample:
model code never runs in this process), and compared as EvalPlus's ``unsafe_execute`` compares (evalplus 0.3.1,
``grpo_wb/data/reward_harnesses``): equal, else, when the row's ``atol`` is set or the expected value is a float or a
list of floats (then ``atol`` 1e-6), the same type and length and every number within ``atol + 1e-7 * |expected|``;
HumanEval/32 (``find_zero``) by its oracle ``|poly(xs, x)| <= atol``. A sample that raises where the canonical
solution answers, or runs past ``max(1 s, 4 x`` the canonical solution's time ``)`` on an input (EvalPlus's
``min_time_limit`` and ``gt_time_limit_factor``), is wrong there too, as EvalPlus counts it.

A task is ``weak`` when at least one sample that passes its original tests is wrong on some HumanEval+ input,
``strong`` when samples pass and none of them is wrong, and has no label (``null``) when no sample passes. Each row
also says how many samples (and distinct programs) passed, how many were wrong and how (``value``, ``raises``,
``slow``), which ones (``wrong_samples``: ``sample_idx``), and whether HumanEval's own canonical solution agrees with
HumanEval+'s on those inputs (``humaneval_canonical``: ``same`` or how it differs; EvalPlus fixed a few).

    python data/external/humanevalplus/build.py --humanevalplus HumanEvalPlus-Mini.jsonl.gz \\
        --tasks he.jsonl --scored scored.jsonl --workers 1

with ``he.jsonl`` from ``grpo-wb tasks import humaneval --out he.jsonl`` and ``scored.jsonl`` from ``grpo-wb score
--tasks he.jsonl --completions data/external/codet_codegen16b_humaneval/samples_codet_truncated.jsonl.gz --out
scored.jsonl``. The release file: ``HumanEvalPlus-Mini.jsonl.gz`` of github.com/evalplus/humanevalplus_release
(v0.1.10), not bundled (the labels are: see ``PROVENANCE.md`` here).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from grpo_wb.bundled import CODEGEN_SAMPLES  # noqa: E402
from grpo_wb.jsonio import iter_jsonl  # noqa: E402
from grpo_wb.scoring.executors import open_scorer  # noqa: E402
from grpo_wb.scoring.extraction import as_reply, extract_answer  # noqa: E402
from grpo_wb.scoring.rewards import RewardConfig  # noqa: E402
from grpo_wb.scoring.sandbox import SandboxLimits  # noqa: E402
from grpo_wb.scoring.scorer import ScoreRequest  # noqa: E402
from grpo_wb.tasks.inputs import explore_inputs  # noqa: E402
from grpo_wb.tasks.records import Task, TestCase, load_tasks  # noqa: E402

LABELS = HERE / "labels.jsonl"
EXPLORED = 256
"""``--explored``: inputs a task, as ``tasks audit --equivalence-inputs`` draws them by default."""
SECONDS = 60.0
"""The sandbox's limit for one program (the canonical solution and one sample on every input); past 50 s of it the
program says how far it got (``undecided``)."""

_PROGRAM = r'''import ast, copy, io, json, math, signal, sys, time
ENTRY, ATOL = {entry!r}, {atol!r}
REFERENCE, SAMPLE = {reference!r}, {sample!r}
INPUTS = {loads}({inputs!r})
REF_S = {ref_s!r}
_OUT = sys.stdout
DEADLINE = time.perf_counter() + {deadline!r}


class _Slow(BaseException):
    pass


def _alarm(*_):
    raise _Slow()


signal.signal(signal.SIGALRM, _alarm)


def load(src):
    ns = {{"__name__": "_program"}}
    sys.stdout = io.StringIO()
    try:
        exec(compile(src, "<program>", "exec"), ns)
    except BaseException:
        return None
    finally:
        sys.stdout = _OUT
    f = ns.get(ENTRY)
    return f if callable(f) else None


def call(f, args, limit):
    sys.stdout = io.StringIO()
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return "value", f(*copy.deepcopy(args)), time.perf_counter() - t0
    except _Slow:
        return "slow", None, limit
    except BaseException as e:
        return "raises", type(e).__name__, time.perf_counter() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout = _OUT


def is_floats(x):
    if isinstance(x, float):
        return True
    return isinstance(x, (list, tuple)) and bool(x) and all(isinstance(i, float) for i in x)


def close(a, b, atol):
    """numpy.allclose(a, b, rtol=1e-07, atol=atol), for numbers and flat or nested lists of them."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))) or len(a) != len(b):
            return False
        return all(close(x, y, atol) for x, y in zip(a, b))
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + 1e-07 * abs(b)


def poly(xs, x):
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def agrees(args, out, exp):
    """EvalPlus's comparison (evalplus 0.3.1 unsafe_execute, HumanEval)."""
    try:
        if ENTRY == "find_zero":
            return abs(poly(*args, out)) <= ATOL
        exact = out == exp
        atol = ATOL
        if atol == 0 and is_floats(exp):
            atol = 1e-6
        if not exact and atol != 0:
            if type(out) != type(exp):
                return False
            if isinstance(exp, (list, tuple)) and len(out) != len(exp):
                return False
            return close(out, exp, atol)
        return bool(exact)
    except BaseException:
        return False


ref = load(REFERENCE)
if SAMPLE is None:  # which inputs the reference answers within REF_S (each once)
    bits = 0
    for k, args in enumerate(INPUTS):
        if time.perf_counter() > DEADLINE:
            break
        bits |= (call(ref, args, REF_S)[0] == "value") << k
    print("domain", format(bits, "x"))
    sys.exit()
cand = load(SAMPLE)
if ref is None or cand is None:
    print("unloadable", int(ref is None), int(cand is None))
    sys.exit()
met = skipped = 0
for k, args in enumerate(INPUTS):
    if time.perf_counter() > DEADLINE:
        print("undecided", met, skipped)
        sys.exit()
    kind, exp, dt = call(ref, args, REF_S)
    if kind != "value":
        skipped += 1
        continue
    met += 1
    got = call(cand, args, max(1.0, 4 * dt))
    if got[0] != "value":
        print("differs", k, got[0])
        sys.exit()
    if not agrees(args, got[1], exp):
        print("differs", k, "value")
        sys.exit()
print("same", met, skipped)
'''


def program(entry: str, atol: float, reference: str, sample: str | None, inputs: str, explored: bool = False) -> str:
    """The sandbox program comparing ``sample`` with ``reference`` on the inputs; it prints one line: ``same MET
    SKIPPED``, ``differs K KIND`` (input index; ``value``, ``raises`` or ``slow``), ``undecided MET SKIPPED`` or
    ``unloadable REF SAMPLE``; with no sample, ``domain HEXMASK``: bit k set where the reference answers input k.
    ``inputs``: a JSON list of argument lists (HumanEval+'s), or with ``explored`` the
    repr of a list of argument tuples (grpo_wb's explored inputs: the reference gets 0.2 s on each, as in the
    audit's equivalence search, and an input it does not answer in time is skipped)."""
    return _PROGRAM.format(
        entry=entry,
        atol=atol,
        reference=reference,
        sample=sample,
        inputs=inputs,
        loads="ast.literal_eval" if explored else "json.loads",
        ref_s=0.2 if explored else 20.0,
        deadline=SECONDS - 10.0,
    )


def probe_task(task_id: str) -> Task:
    """A task whose one stdio test never passes: the program's one line is read from the failure."""
    return Task(
        task_id=task_id,
        prompt="",
        entry_point="",
        tests=(TestCase(name="probe", type="stdio", input="", output="(read by build.py)\n"),),
        timeout=SECONDS,
    )


def printed(res) -> str:
    return str(res.failure.get("actual") or "").strip() if res.status == "fail" else f"error {res.status}"


def _kind(line: str) -> str:
    """``same``, or how a program differed (``value``, ``raises``, ``slow``), or what else it printed."""
    m = re.fullmatch(r"differs \d+ (\w+)", line)
    return m.group(1) if m else "same" if line.startswith("same") else line


def _request(tid: str, text: str, j: int) -> ScoreRequest:
    return ScoreRequest(task=probe_task(tid), completion=as_reply(text), completion_id=f"{tid}#{j}", meta={"j": j})


def _run(reqs: list[ScoreRequest], workers: int) -> dict[str, dict[int, str]]:
    """What each program printed, by task and index."""
    verdict: dict[str, dict[int, str]] = defaultdict(dict)
    with open_scorer(SandboxLimits(timeout=SECONDS), RewardConfig(), workers=workers, cache=False) as scorer:
        for n, res in enumerate(scorer.score(reqs), 1):
            verdict[res.task_id][res.meta["j"]] = printed(res)
            if n % 200 == 0:
                print(f"{n} of {len(reqs)} programs", file=sys.stderr)
    return verdict


def sha256(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build(
    hep_path: Path, tasks_path: Path, scored_path: Path, samples_path: Path, workers: int, explored: bool = False
) -> list[dict]:
    """The labels (or, ``explored``, the same counts on grpo_wb's explored inputs against HumanEval's canonical
    solution: what ``tasks audit --samples`` could see without HumanEval+)."""
    hep = {r["task_id"]: r for _, r in iter_jsonl(hep_path)}
    tasks = {t.task_id: t for t in load_tasks(str(tasks_path))}
    completion = {(r["task_id"], r["sample_idx"]): r["completion"] for _, r in iter_jsonl(samples_path)}
    passed: dict[str, list[int]] = defaultdict(list)
    for _, r in iter_jsonl(scored_path):
        if r["passed"]:
            passed[r["task_id"]].append(r["meta"]["sample_idx"])
    groups: dict[str, list[list[int]]] = {}
    sources: dict[str, list[str]] = {}
    n_inputs: dict[str, int] = {}
    setup: dict[str, tuple[str, str, float, str]] = {}  # task -> reference, inputs, atol, HumanEval's canonical
    domain = []
    for tid, row in hep.items():
        t = tasks[tid]
        he_canonical = t.prompt + (t.canonical_solution or "")
        atol = float(row["atol"] or 0)
        inputs = json.dumps(row["base_input"] + row["plus_input"])
        setup[tid] = (row["prompt"] + row["canonical_solution"], inputs, atol, he_canonical)
        n_inputs[tid] = len(row["base_input"]) + len(row["plus_input"])
        if explored:
            cands = explore_inputs(t, he_canonical, EXPLORED, seed=0)
            setup[tid] = (he_canonical, repr(cands), atol, he_canonical)
            text = program(row["entry_point"], atol, he_canonical, None, repr(cands), explored)
            domain.append(_request(tid, text, 0))
        progs: dict[str, list[int]] = defaultdict(list)
        for i in sorted(passed.get(tid, [])):
            ext = extract_answer(t.prompt, t.entry_point, completion[(tid, i)])
            progs[ext.program or completion[(tid, i)]].append(i)
        groups[tid], sources[tid] = list(progs.values()), list(progs)
    if explored:  # only the inputs the reference answers within 0.2 s (as the audit's search keeps them)
        for tid, v in _run(domain, workers).items():
            m = re.fullmatch(r"domain ([0-9a-f]+)", v[0])
            bits = int(m.group(1), 16) if m else 0
            ref, cands_repr, atol, he = setup[tid]
            kept = [a for k, a in enumerate(ast.literal_eval(cands_repr)) if bits >> k & 1]
            setup[tid] = (ref, repr(kept), atol, he)
            n_inputs[tid] = len(kept)
    reqs = []
    for tid, row in hep.items():
        ref, inputs, atol, he_canonical = setup[tid]
        for j, src in enumerate([he_canonical, *sources[tid]]):
            reqs.append(_request(tid, program(row["entry_point"], atol, ref, src, inputs, explored), j))
    verdict = _run(reqs, workers)
    rows = []
    for tid in hep:
        v = verdict[tid]
        wrong: list[int] = []
        by: dict[str, int] = defaultdict(int)
        undecided = 0
        for j, idxs in enumerate(groups[tid], 1):
            m = re.fullmatch(r"differs \d+ (\w+)", v.get(j, ""))
            if m:
                wrong += idxs
                by[m.group(1)] += len(idxs)
            elif not v.get(j, "").startswith("same"):
                undecided += len(idxs)
                print(f"{tid}: sample(s) {idxs[:5]} not decided: {v.get(j)!r}", file=sys.stderr)
        n_pass = sum(len(g) for g in groups[tid])
        rows.append(
            {
                "task_id": tid,
                "inputs": n_inputs[tid],
                "label": None if not n_pass else ("weak" if wrong else "strong"),
                "samples_passing": n_pass,
                "distinct_passing": len(groups[tid]),
                "wrong": len(wrong),
                "distinct_wrong": sum(1 for j, g in enumerate(groups[tid], 1) if v.get(j, "").startswith("differs")),
                "wrong_by": dict(sorted(by.items())),
                "undecided": undecided,
                "humaneval_canonical": _kind(v.get(0, "")),
                "wrong_samples": sorted(wrong),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--humanevalplus", type=Path, required=True, help="HumanEvalPlus-Mini.jsonl.gz (or the full set)")
    ap.add_argument("--tasks", type=Path, required=True, help="grpo-wb tasks import humaneval --out FILE")
    ap.add_argument("--scored", type=Path, required=True, help="grpo-wb score results of the CodeGen-16B samples")
    ap.add_argument("--samples", type=Path, default=CODEGEN_SAMPLES)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=LABELS)
    ap.add_argument(
        "--explored",
        action="store_true",
        help="compare on grpo_wb's explored inputs with HumanEval's canonical solution instead (no labels)",
    )
    a = ap.parse_args()
    rows = build(a.humanevalplus, a.tasks, a.scored, a.samples, a.workers, a.explored)
    a.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    n = {k: sum(r["label"] == k for r in rows) for k in ("weak", "strong", None)}
    print(
        f"wrote {len(rows)} tasks to {a.out}: {n['weak']} weak, {n['strong']} strong, "
        f"{n[None]} with no passing sample; "
        f"{sum(r['wrong'] for r in rows)} of {sum(r['samples_passing'] for r in rows)} passing samples wrong; "
        f"{a.humanevalplus.name} sha256 {sha256(a.humanevalplus)}"
    )


if __name__ == "__main__":
    main()
