"""CodeGen-16B's 16,400 HumanEval samples (data/external/codet_codegen16b_humaneval), scored once by grpo_wb's
sandbox and kept as one pass/fail string a task (``verdicts.json`` there), so the planning tests read 164 strings
instead of scoring 16,400 programs, some 3 minutes of both cores, at every run. ``test_plan.py`` scores a seeded
sample of them again and compares: a scorer or data change that moves a verdict fails there.

    .venv/bin/python tests/codegen_verdicts.py   # writes the file again (about 3 minutes on 2 cores)
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from collections.abc import Iterable

from grpo_wb.bundled import CODEGEN_SAMPLES
from grpo_wb.jsonio import atomic_write_json

VERDICTS = CODEGEN_SAMPLES.parent / "verdicts.json"
TIMEOUT = 3.0
"""Seconds a sample may run (SandboxLimits.timeout), as when the file was made."""


def score(keep: Iterable[str] | None = None) -> list[dict]:
    """Score the bundled samples (those whose ``completion_id``, ``task_id#k``, is in ``keep``; default all) in the
    sandbox with binary reward: ScoredCompletion rows, in the samples file's order."""
    from grpo_wb.scoring.sandbox import SandboxLimits
    from grpo_wb.scoring.scorer import Scorer, sample_requests
    from grpo_wb.tasks.importers import import_humaneval

    tasks = {t.task_id: t for t in import_humaneval()[0]}
    wanted = None if keep is None else set(keep)
    requests = [r for r in sample_requests(CODEGEN_SAMPLES, tasks) if wanted is None or r.completion_id in wanted]
    with Scorer(SandboxLimits(timeout=TIMEOUT), workers=2) as sc:
        return [r.to_json() for r in sc.score(requests)]


def read() -> dict[str, str]:
    """Each task's verdicts in the samples file's order: '1' passed, '0' did not."""
    return json.loads(VERDICTS.read_text())["verdicts"]


def rows() -> list[dict]:
    """The file as scored rows (``task_id``, ``passed``, ``reward``: the binary reward is the pass)."""
    return [{"task_id": tid, "passed": v == "1", "reward": float(v == "1")} for tid, vs in read().items() for v in vs]


def main() -> None:
    scored = score()
    verdicts: dict[str, str] = {}
    for r in scored:
        assert r["reward"] == float(r["passed"]), r  # binary: the string keeps all of it
        assert r["status"] != "sandbox_error", r
        verdicts[r["task_id"]] = verdicts.get(r["task_id"], "") + ("1" if r["passed"] else "0")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    atomic_write_json(
        VERDICTS,
        {
            "made_by": f"tests/codegen_verdicts.py at {commit or 'an unknown commit'}, "
            f"{datetime.date.today().isoformat()}: grpo_wb's Scorer, SandboxLimits(timeout={TIMEOUT}), 2 workers, "
            "binary reward",
            "samples": str(CODEGEN_SAMPLES.relative_to(VERDICTS.parents[3])),
            "verdicts": verdicts,
        },
    )
    print(f"{VERDICTS}: {len(scored)} verdicts, {sum(v.count('1') for v in verdicts.values())} passed", file=sys.stderr)


if __name__ == "__main__":
    main()
