"""What each folder grpo_wb writes holds: its file names, declared once.

Writers and readers of the same folder live in different layers (a run directory is written by ``runs`` and
``training``, read by ``runs.load``, ``signal.clusters`` and the command line), so the names live here, below them
all. What each file *contains* is declared by its writer (see :mod:`grpo_wb.runs.artifacts` for a run directory).
"""

from __future__ import annotations


class RunFiles:
    """A run directory: ``grpo-wb smoke``'s and ``grpo-wb train``'s (:mod:`grpo_wb.runs.artifacts`)."""

    METRICS = "metrics.jsonl"
    GROUPS = "groups.jsonl"
    ROLLOUTS = "rollouts.jsonl"
    LAST_ROLLOUTS = "last_rollouts.jsonl"
    SUMMARY = "summary.json"
    MANIFEST = "checkpoint_manifest.json"
    TRL_LOG = "trl_log.jsonl"
    """TRL's own log lines (``grpo-wb train`` only)."""
    STEP_FILES = (METRICS, GROUPS, ROLLOUTS)
    """Appended once per step."""
    ARTIFACTS = (*STEP_FILES, LAST_ROLLOUTS, SUMMARY, MANIFEST)


class ReportFiles:
    """One report's folder (``grpo-wb report``, a batch's job)."""

    NOTEBOOK = "report.ipynb"
    HTML = "report.html"
    RESULT = "result.json"
    HEADLINE = "headline.json"
    JOB = "job.json"
    """The job as the batch ran it (a batch's job only)."""


class BatchFiles:
    """A batch's output folder, above its reports' folders."""

    INDEX_HTML = "index.html"
    INDEX_JSON = "index.json"


class RecipeFiles:
    """The folder a notebook's recipe writes into (``out_dir``)."""

    TASKS = "tasks.jsonl"
    SAMPLES = "samples.jsonl"
    SCORED = "scored.jsonl"
    MOCK_SCORED = "mock_scored.jsonl"
    PLAN = "plan.json"


class RewardAuditFiles:
    """``grpo-wb reward-audit``'s folder (the reward audit and its agreement check)."""

    AUDIT = "audit.json"
    AGREEMENT = "agreement.json"
    AGREEMENT_ROWS = "agreement.jsonl"


class TaskAuditFiles:
    """``grpo-wb tasks audit``'s folder."""

    TASKS = "tasks.jsonl"
    OVERLAP = "overlap.json"
    SUMMARY = "summary.json"
    SETTINGS = "settings.json"
