"""The reward audit: a red team for anyone's reward function (``grpo-wb reward-audit``; not the tasks audit,
:mod:`grpo_wb.runs.task_audit`, which audits a task set's tests). The battery of exploits, controls and tasks
(:mod:`.battery`), the driver that calls the function inside a sandbox child (:mod:`._driver`, standard library
only) and the runner that judges and reports (:mod:`.run`). Imports scoring (the sandbox, and grpo_wb's own
reward, the reference) and tasks (the trainers' row formats); never reports or training (peers)."""
