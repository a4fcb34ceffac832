"""verl 0.9.1's ``default_compute_score`` as it scores code: the branch for data sources ``codecontests``,
``apps``, ``codeforces`` and ``taco`` without a sandbox URL, which calls ``prime_code.compute_score(solution_str,
ground_truth, continuous=True)`` and turns its result into a float. ``prime_code`` is verl's module, bundled
unchanged in grpo_wb/data/reward_harnesses/verl-0.9.1 and loaded on its own: ``import verl`` would pull torch,
Ray and tensordict for nothing (verl/__init__.py imports DataProto).
"""

import importlib.util
import os
import sys

BUNDLE = os.environ.get("GRPO_WB_VERL_PRIME_CODE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../data/reward_harnesses/verl-0.9.1/prime_code"
)
_spec = importlib.util.spec_from_file_location(
    "prime_code",
    os.path.join(os.path.normpath(BUNDLE), "__init__.py"),
    submodule_search_locations=[os.path.normpath(BUNDLE)],
)
if _spec is None or _spec.loader is None:  # never for a .py path: its spec comes with a source loader
    raise ImportError(f"cannot load prime_code from {BUNDLE}")
prime_code = importlib.util.module_from_spec(_spec)
sys.modules["prime_code"] = prime_code
_spec.loader.exec_module(prime_code)

CODE_SOURCES = ("codecontests", "apps", "codeforces", "taco")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if data_source not in CODE_SOURCES:
        raise NotImplementedError(f"Reward function is not implemented for {data_source=}")
    res = prime_code.compute_score(solution_str, ground_truth, continuous=True)
    if isinstance(res, dict):
        return res
    elif isinstance(res, (int, float, bool)):
        return float(res)
    return float(res[0])
