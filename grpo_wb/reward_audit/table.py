"""``python -m grpo_wb.reward_audit.table AUDIT_DIR...``: the exploits of several audits side by side, as the Markdown
table in the README (each cell: the exploit's outcome against that function; ``—``: not run there).

Run each audit first (``grpo-wb reward-audit --reward builtin:NAME --out reports/audit/NAME``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from grpo_wb.errors import UserError
from grpo_wb.reward_audit.run import read_reward_audit

MARK = {"won": "**won**", "harmed": "harmed", "crashed": "crashed", "held": "held"}


def markdown(audits: Sequence[dict[str, Any]]) -> str:
    """One row per exploit, one column per audit; versions and verdicts under the table."""
    names = [a["config"]["reference"] or a["config"]["reward"] for a in audits]
    order: list[str] = []
    for a in audits:
        order += [e["name"] for e in a["exploits"] if e["name"] not in order]
    by = [{e["name"]: e for e in a["exploits"]} for a in audits]
    lines = ["| exploit | goal | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for name in order:
        goal = next(b[name]["goal"] for b in by if name in b)
        cells = [MARK[b[name]["outcome"]] if name in b else "—" for b in by]
        lines.append(f"| {name} | {goal} | " + " | ".join(cells) + " |")
    lines.append("| **verdict** | | " + " | ".join(a["verdict"] for a in audits) + " |")
    lines.append("")
    for n, a in zip(names, audits):
        lines.append(f"* {n}: {'; '.join(a['versions'])}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        print(markdown([read_reward_audit(p) for p in argv]))
    except UserError as e:
        print(f"grpo-wb: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
