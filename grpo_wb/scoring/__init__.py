"""Scoring: from a completion to a status and a reward. Code extraction (:mod:`.extraction`), tests planned
so the scorer decides them (:mod:`.verdicts`), the sandbox and its worker (:mod:`.sandbox`), the
:class:`~.scorer.Scorer`, rewards, the executors (local pool or Ray), per-task limits (:mod:`.calibrate`) and
``grpo-wb bench``. Imports tasks and the base modules."""
