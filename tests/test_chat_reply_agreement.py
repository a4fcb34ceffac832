"""grpo_wb's verdicts on 3,344 raw chat-model replies against MapCoder's own ``is_solved``.

The replies (GPT-4-Turbo, ChatGPT and Gemini to HumanEval, MBPP and APPS; data/external/chat_replies_mapcoder,
see its PROVENANCE section) are what a chat-tuned policy's rollouts look like: prose around the code,
several fenced blocks, examples before the answer, fences indented in Markdown lists. Each file is scored
against the tasks its own rows define (`grpo-wb tasks import mapcoder`); the 74 call-based APPS problems
per APPS file whose expected outputs are values, not text, are left out (MapCoder's ExecEval judged them
False whatever the reply: its harness fails on a non-string output).

MapCoder's verdict is its harness's on its extraction, so a disagreement is a case to explain. Accepted
causes, each checked here from the data (anything else fails the test):

* ``indented-block``: MapCoder ran its extracted code as it stood in an indented Markdown fence, so it
  raised IndentationError; grpo_wb dedents the block (MapCoder's code does not compile, its dedent does).
* ``shared-namespace``: MapCoder ``exec``s every problem of a file in one namespace, so an earlier answer's
  import or definition helps or breaks a later one; replayed alone (MapCoder's program: its code, the
  row's test, ``check(entry_point)``, in grpo_wb's sandbox) it gets grpo_wb's verdict, and it reads a name
  it does not bind (``math``, ``sum``) that an earlier program of the same file binds at module level.
* ``prompt-not-prepended``: MapCoder runs the answer without the prompt; the answer uses what the prompt
  imports or defines, and passes once the prompt is put before it.
* ``other-block``: MapCoder took another block than grpo_wb (an example problem's code, or one its regex
  paired across two fences); its code fails alone, grpo_wb's passes.
* ``slow`` (APPS): a heavy program (over a second here, where APPS answers take milliseconds) that MapCoder's
  ExecEval timed out at 6 s per test. Its run time depends on the machine: GPT-4's Direct answer to APPS
  2183 builds a string by ``+=`` a million times, 39 s under a plain ``exec`` on this machine, 1.8 s in a
  sandbox child (whether CPython's in-place resize can grow the string where it lies is the allocator's call).
* ``not reproduced``: the rows of :data:`NOT_REPRODUCED`, listed one by one, all of GPT-4's Analogical
  HumanEval and MBPP files. MapCoder's own program passes alone here and no earlier program of its file binds
  a name it reads. When this test was written, a replay of each file in one shared namespace in file order
  (exec in one process, as MapCoder's harness runs) reproduced every verdict of 9 of the 11 HumanEval and
  MBPP files; these two were the exceptions, as if their stored runs were resumed or run in another order.
  The list must match exactly, so it cannot go stale.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections import Counter

import pytest
from conftest import read_jsonl

from grpo_wb.bundled import CHAT_REPLIES
from grpo_wb.scoring.extraction import _compiles, extract_program
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.importers import import_mapcoder
from grpo_wb.tasks.records import Task, TestCase

pytestmark = [pytest.mark.data, pytest.mark.sandbox, pytest.mark.slow]

TIMEOUT = 10.0
NOT_REPRODUCED = {
    ("GPT4__HumanEval__GPT4-Turbo-Analogical-Human-Python3-0-1.jsonl.gz", "HumanEval/129"),
    ("GPT4__MBPP__GPT4-Turbo-Analogical-MBPP-Python3-0-1.jsonl.gz", "mbpp_419_round_and_sum"),
    ("GPT4__MBPP__GPT4-Turbo-Analogical-MBPP-Python3-0-1.jsonl.gz", "mbpp_448_cal_sum"),
    ("GPT4__MBPP__GPT4-Turbo-Analogical-MBPP-Python3-0-1.jsonl.gz", "mbpp_558_digit_distance_nums"),
    ("GPT4__MBPP__GPT4-Turbo-Analogical-MBPP-Python3-0-1.jsonl.gz", "mbpp_598_armstrong_number"),
    ("GPT4__MBPP__GPT4-Turbo-Analogical-MBPP-Python3-0-1.jsonl.gz", "mbpp_724_power_base_sum"),
}
"""(file, task id): MapCoder said not solved, and no replay of MapCoder's own program reproduces that."""
FILES = sorted(CHAT_REPLIES.glob("*.jsonl.gz"))


@functools.cache
def _raw(path):
    return read_jsonl(path)


@pytest.fixture(scope="module")
def verdicts():
    """One row per reply: file, dataset, MapCoder's row, the task, grpo_wb's scored result."""
    assert len(FILES) == 19, FILES
    out = []
    with Scorer(SandboxLimits(timeout=TIMEOUT), workers=2) as sc:
        for path in FILES:
            mc = import_mapcoder(path)
            raw = _raw(path)
            tasks = {t.task_id: t for t in mc.tasks}
            reqs = [
                ScoreRequest(tasks[s["task_id"]], s["completion"], i, completion_id=f"{path.name}:{s['line']}")
                for i, s in enumerate(mc.samples)
            ]
            for s, res in zip(mc.samples, sc.score(reqs)):
                out.append(
                    {
                        "file": path,
                        "index": s["line"] - 1,
                        "set": path.name.split("__")[1],
                        "row": raw[s["line"] - 1],
                        "task": tasks[s["task_id"]],
                        "is_solved": s["is_solved"],
                        "res": res,
                    }
                )
    return out


def _mapcoder_program(row: dict, with_prompt: bool) -> str:
    """What MapCoder's HumanEval/MBPP evaluator executes (``func_evaluate.py``), optionally after the prompt."""
    head = "from typing import *\n" + (row["prompt"] + "\n" if with_prompt else "")
    return head + row["source_codes"][0] + "\n" + row["test"] + "\n" + f"check({row['entry_point']})\n"


def _names(code: str) -> tuple[set[str], set[str]]:
    """(names the program binds at module level, names it reads that it binds nowhere itself)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set(), set()
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            top.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            top.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    bound, read = set(top), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (read if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
    return top, read - bound


def _shared_namespace_evidence(v) -> set[str]:
    """Names this program reads without binding them (a missing import, a builtin) that an earlier problem's
    program in the same MapCoder file binds at module level: in MapCoder's one namespace, the earlier
    definition is what this program found (helping it, or shadowing what it meant)."""
    earlier: set[str] = set()
    for row in _raw(v["file"])[: v["index"]]:
        if row.get("source_codes"):
            earlier |= _names(_mapcoder_program(row, with_prompt=False))[0]
    free = _names(_mapcoder_program(v["row"], with_prompt=False))[1]
    return free & earlier - {"check", "candidate", "METADATA"}  # what every program defines afresh


def _norm(code: str) -> str:
    return "\n".join(ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#"))


def _causes(verdicts) -> list[tuple[dict, str]]:
    disagree = [v for v in verdicts if v["res"].passed != v["is_solved"]]
    replays = []
    for v in disagree:
        if v["set"] == "APPS":
            continue
        for with_prompt in (False, True):
            t = Task(
                task_id=f"replay/{v['res'].completion_id}/{with_prompt}",
                prompt="",
                entry_point=v["row"]["entry_point"],
                tests=(TestCase(name="ran", code="pass"),),
            )
            replays.append(ScoreRequest(t, _mapcoder_program(v["row"], with_prompt), completion_id=t.task_id))
    with Scorer(SandboxLimits(timeout=TIMEOUT), workers=2, cache=False) as sc:
        replays_scored = list(sc.score(replays))
    replayed = {r.completion_id: r.passed for r in replays_scored}
    replay_timed_out = {r.completion_id: r.status == "timeout" for r in replays_scored}
    out = []
    for v in disagree:
        code, ours = v["row"]["source_codes"][0], v["res"].passed
        cid = v["res"].completion_id
        if v["set"] == "APPS":
            cause = "slow" if ours and v["res"].duration_s >= 1.0 else "unexplained"
        elif ours and not _compiles(code) and _compiles(textwrap.dedent(code)):
            cause = "indented-block"
        elif replayed[f"replay/{cid}/False"] == ours and _shared_namespace_evidence(v):
            cause = "shared-namespace"
        elif ours and not replayed[f"replay/{cid}/False"] and replayed[f"replay/{cid}/True"]:
            cause = "prompt-not-prepended"
        elif ours and _norm(code) not in _norm(
            extract_program(v["task"].prompt, v["task"].entry_point, v["row"]["responses"][0]).program or ""
        ):
            cause = "other-block"
        elif (
            ours
            and (replayed[f"replay/{cid}/False"] or replay_timed_out[f"replay/{cid}/False"])
            and (v["file"].name, v["row"].get("task_id")) in NOT_REPRODUCED
        ):
            # a listed row whose replay timed out: HumanEval/129's search runs near the limit (below), so a
            # busier moment than its own scoring's (a parallel test run) times the replay out
            cause = "not reproduced"
        else:
            cause = "unexplained"
        out.append((v, cause))
    return out


def test_agreement_with_mapcoder_and_every_disagreement_explained(verdicts):
    causes = _causes(verdicts)
    n, agree = len(verdicts), len(verdicts) - len(causes)
    table = Counter((v["set"], "MapCoder solved" if v["is_solved"] else "MapCoder not solved", c) for v, c in causes)
    statuses = Counter(v["res"].status for v in verdicts)
    print(f"\nagreement with MapCoder's is_solved: {agree}/{n} = {100 * agree / n:.2f}%; statuses {dict(statuses)}")
    for (ds, side, cause), k in sorted(table.items(), key=lambda kv: -kv[1]):
        print(f"  {k:4d}  {ds:9s} {side:20s} {cause}")
    unexplained = [
        (v["file"].name, v["row"].get("task_id"), v["is_solved"], v["res"].status, v["res"].error[:100])
        for v, c in causes
        if c == "unexplained"
    ]
    assert unexplained == [], unexplained
    found = {(v["file"].name, v["row"].get("task_id")) for v, c in causes if c == "not reproduced"}
    # a row of the list missing here must have timed out: HumanEval/129's answer is a search whose run time sits
    # near the 10 s limit, so on a slower or busier machine it times out and then agrees with MapCoder
    timed_out = {(v["file"].name, v["row"].get("task_id")) for v in verdicts if v["res"].status == "timeout"}
    assert found <= NOT_REPRODUCED and NOT_REPRODUCED - found <= timed_out, (found, NOT_REPRODUCED)
    assert n == 3344 and agree / n > 0.94


def test_no_reply_mapcoder_solved_is_a_parse_failure_here(verdicts):
    """Extraction on real chat replies: what MapCoder ran and passed, grpo_wb finds code in too."""
    lost = [
        (v["file"].name, v["row"].get("task_id"))
        for v in verdicts
        if v["is_solved"] and v["res"].status == "parse_failure"
    ]
    assert lost == []


def test_an_example_block_left_unclosed_does_not_hide_the_answer():
    """ChatGPT's Analogical replies to MBPP: the last example's fence is never closed and the answer follows it
    under a header; the definition of the entry point is cut out of that incomplete block."""
    path = next(p for p in FILES if "ChatGPT__MBPP__ChatGPT-Analogical" in p.name)
    mc = import_mapcoder(path)
    tasks = {t.task_id: t for t in mc.tasks}
    chosen = [s for s in mc.samples if s["task_id"] in ("mbpp/mbpp_92_is_undulating", "mbpp/mbpp_400_extract_freq")]
    assert len(chosen) == 2, [s["task_id"] for s in chosen]
    for s in chosen:
        t = tasks[s["task_id"]]
        ext = extract_program(t.prompt, t.entry_point, s["completion"])
        assert ext.rule == "entry point cut from an incomplete block" and ext.block == ext.n_blocks - 1, ext
        assert _compiles(ext.program) and re.search(rf"^def {t.entry_point}\(", ext.program, re.M)
