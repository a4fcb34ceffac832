"""What every command module shares: the :class:`Command` record and terminal views used by several commands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grpo_wb.config import add_flags
from grpo_wb.errors import UserError
from grpo_wb.jsonio import iter_jsonl
from grpo_wb.layout import RunFiles


@dataclass(frozen=True)
class Command:
    """One subcommand: its words (``("tasks", "validate")``), its arguments dataclass (the flags are derived
    from it), the function that runs it with the parsed arguments, and its help line."""

    words: tuple[str, ...]
    """The subcommand path under ``grpo-wb``."""
    args: type | None
    """The dataclass whose fields are the command's flags (None: no flags)."""
    run: Callable[[argparse.Namespace], int]
    """Runs the command; returns the exit code."""
    help: str
    """One line for ``grpo-wb --help``."""

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        if self.args is not None:
            add_flags(parser, self.args)
        parser.set_defaults(_command=self)


def print_step_table(run_dir: str | Path) -> None:
    """The per-step table smoke and train print: informative fraction, variance, pass rate, failures."""
    rows = [m for _, m in iter_jsonl(Path(run_dir) / RunFiles.METRICS)]
    head = (
        f"{'step':>4}  {'informative':>11}  {'variance':>8}  {'all-pass':>8}  {'all-fail':>8}  "
        f"{'reward':>6}  {'pass':>5}  {'parse-fail':>10}  {'timeout':>7}  {'compl/s':>7}"
    )
    print(head)
    print("-" * len(head))
    for m in rows:
        print(
            f"{m['step']:>4}  {m['informative_fraction']:>11.3f}  {m['reward_variance_fraction']:>8.3f}  "
            f"{m['all_pass_fraction']:>8.3f}  {m['all_fail_fraction']:>8.3f}  {m['mean_reward'] or 0:>6.3f}  "
            f"{m['pass_rate']:>5.2f}  {m['parse_failure_rate']:>10.3f}  {m['timeout_rate']:>7.3f}  "
            f"{m['completions_per_second']:>7.1f}"
        )


def refuse_to_overwrite(path: str | Path | None, force: bool) -> None:
    """An output that exists is replaced only with ``--force``."""
    if path and Path(path).exists() and not force:
        raise UserError(f"{path} exists; pass --force to replace it")
