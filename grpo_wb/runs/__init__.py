"""Runs: the smoke loop (:mod:`.smoke`), the artifacts every run writes (:mod:`.artifacts`), reading run
directories as tables (:mod:`.load`), scored files and run groups read and checked (:mod:`.scored`), the chosen
tasks written out (:mod:`.exports`), the test audit (:mod:`.task_audit`), and the notebook-facing recipes that
run things (:mod:`.recipes`).
Imports rollouts, scoring, signal, tasks, base. ``grpo_wb.load_run`` is :func:`.load.load_run`."""
