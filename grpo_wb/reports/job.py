"""The child process of ``grpo-wb batch``: ``python -m grpo_wb.reports.job JOB.json`` runs one report.

A report runs in a process of its own so that a hung or crashed kernel cannot take the batch down;
``result.json`` in the report directory is its answer (the batch reads it, or writes a failed one).
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from grpo_wb.errors import UserError
from grpo_wb.reports.notebooks import run_report


def job_main(spec_path: str) -> int:
    """Run the job in JOB.json; exit 0 when the report succeeded."""

    def _term(signum, frame):  # let nbclient shut its kernel down when the batch kills us
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    try:
        res = run_report(
            spec["notebook"],
            spec["out_dir"],
            spec["parameters"],
            name=spec["name"],
            cell_timeout=spec["cell_timeout"],
            start_timeout=spec.get("start_timeout", 60.0),
            base_dir=spec.get("base_dir"),
        )
    except UserError as e:
        print(f"grpo-wb: error: {e}", file=sys.stderr)
        return 1
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(job_main(sys.argv[1]))
