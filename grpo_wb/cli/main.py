"""``grpo-wb``: tasks (validate, calibrate, import), sample, score, smoke, headroom, filter, plan, audit, report, batch,
train, doctor, bench.

Each command is a :class:`~grpo_wb.cli.common.Command` of one of the modules below, whose flags are derived
from its arguments dataclass (:func:`grpo_wb.config.add_flags`). User mistakes (bad files, bad flags,
impossible settings) end with one line on stderr, ``grpo-wb: error: ...``, and exit code 1 (2 for malformed
command lines, as argparse does); never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from grpo_wb.cli import audit, bench, doctor, filtering, headroom, plan, reports, sample, score, smoke, tasks, train
from grpo_wb.cli.common import Command
from grpo_wb.errors import UserError, ValidationError
from grpo_wb.version import __version__

MODULES = (tasks, sample, score, smoke, headroom, filtering, plan, audit, reports, train, doctor, bench)


def commands() -> list[Command]:
    """Every command, in the order ``grpo-wb --help`` lists them."""
    return [c for m in MODULES for c in m.COMMANDS]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo-wb", description=("Will this code task set plus an execution reward give GRPO a learning signal?")
    )
    parser.add_argument("--version", action="version", version=f"grpo_wb {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for cmd in commands():
        if len(cmd.words) == 1:
            p = sub.add_parser(cmd.words[0], help=cmd.help)
        else:  # a group: `grpo-wb tasks validate`
            group, word = cmd.words
            if group not in groups:
                gp = sub.add_parser(
                    group, help=f"{group}: " + ", ".join(c.words[1] for c in commands() if c.words[0] == group)
                )
                groups[group] = gp.add_subparsers(dest=f"{group}_command", required=True, metavar="ACTION")
            p = groups[group].add_parser(word, help=cmd.help)
        cmd.add_to(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args._command.run(args)
    except ValidationError as e:
        if len(e.problems) == 1:
            print(f"grpo-wb: error: {e.problems[0]}", file=sys.stderr)
            return 1
        for p in e.problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {len(e.problems)} problems in the input (first: {e.problems[0]})", file=sys.stderr)
        return 1
    except UserError as e:
        print(f"grpo-wb: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        kept = "; complete steps are kept (run it again with --resume)" if hasattr(args, "resume") else ""
        print(f"grpo-wb: interrupted{kept}", file=sys.stderr)
        return 130
