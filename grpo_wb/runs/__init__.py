"""Runs: the smoke loop (:mod:`.smoke`), reading run directories as tables (:mod:`.load`), and the
notebook-facing recipes that run things (:mod:`.recipes`). Imports rollouts, scoring, signal, tasks, base."""
from grpo_wb.runs.load import Run, load_run

__all__ = ["Run", "load_run"]
