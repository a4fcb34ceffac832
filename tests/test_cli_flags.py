"""Every flag of every command reaches the config it names: no flag is accepted and ignored.

The flags are derived from each command's arguments dataclass; this walks every subcommand's parser, changes
one flag at a time from a valid command line, and checks that exactly the field the flag names changed.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib

import pytest
from conftest import ROOT, TOY

from grpo_wb.cli.main import REGISTRY, CommandParser, build_parser, commands, main
from grpo_wb.config import from_args

# valid values for the required fields and positionals, by field name
REQUIRED = {
    "tasks": str(TOY),
    "out": "out.jsonl",
    "completions": "samples.jsonl",
    "path": str(TOY),
    "model": "model-dir",
    "input": "scored.jsonl",
    "notebook": "nb.ipynb",
    "plan": "plan.yaml",
}
# a command whose base line needs more than its required fields
BASE = {
    ("tasks", "import"): ["mapcoder", "--src", "replies.jsonl.gz", "--out", "tasks.jsonl"],
    ("filter",): ["scored.jsonl", "--recipe", "dapo"],
    ("reward-audit",): ["--reward", "rewards:fn", "--style", "verl", "--out", "audit"],
}
# a flag that goes with another kind of base line than its command's
ROWS = ["--src", "rows.parquet", "--out", "tasks.jsonl"]
BASE_FOR = {
    (("tasks", "import"), "split"): ["verl", *ROWS],
    (("tasks", "import"), "limit"): ["verl", *ROWS],
    (("tasks", "import"), "skip_bad"): ["verl", *ROWS],
    (("tasks", "import"), "test_set"): ["code-contests", *ROWS],
    (("tasks", "import"), "language"): ["code-contests", *ROWS],
    (("tasks", "import"), "map"): ["rows", *ROWS, "--map", "prompt=p,tests=t"],
    (("sample",), "headroom"): ["--tasks", str(TOY), "--out", "s.jsonl", "--score"],
    (("reward-audit",), "trl_format"): ["--reward", "rewards:fn", "--style", "trl", "--out", "audit"],
    (("sample",), "export_frontier"): ["--tasks", str(TOY), "--out", "s.jsonl", "--score", "--headroom"],
    (("sample",), "adaptive"): ["--tasks", str(TOY), "--out", "s.jsonl", "--score"],
}
# flags whose new value is valid only with another flag too (that flag's field may change as well)
COMPANIONS = {
    "ray_address": (["--executor", "ray"], {"executor"}),
    "backend": (["--completions", "samples.jsonl"], {"completions"}),
    "resume": ([], set()),
    "overwrite": ([], set()),
    "drop": (["--audit", "DIR"], {"audit"}),
    "min_mutation_score": (["--audit", "DIR"], {"audit"}),
    "export": (["--tasks", str(TOY)], {"tasks"}),
}


def _subparser(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> argparse.ArgumentParser:
    """The command's parser with its flags (they are added when the command is chosen: CommandParser.load)."""
    for w in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[w]
    assert isinstance(parser, CommandParser), words
    return parser.load()


def _base_argv(cmd, parser, dest: str | None = None) -> list[str]:
    if (cmd.words, dest) in BASE_FOR:
        return list(BASE_FOR[(cmd.words, dest)])
    if cmd.words in BASE:
        return list(BASE[cmd.words])
    argv: list[str] = []
    for a in parser._actions:
        if not a.option_strings and a.dest != "help":
            argv.append(REQUIRED[a.dest] if a.choices is None else list(a.choices)[0])
        elif getattr(a, "required", False):
            argv += [a.option_strings[-1], REQUIRED[a.dest]]
    return argv


# a value the flag's field checks (any other would be refused, not ignored)
VALID = {
    (("reward-audit",), "exploits"): "always_equal",
    (("reward-audit",), "reward"): "other_rewards:fn",
    (("tasks", "audit"), "mutants"): "3",
    (("tasks", "audit"), "against"): "humaneval",
    (("filter",), "drop"): "broken",
    (("bench",), "rows"): "5,6",
    (("plan",), "sweep"): "4,8",
}


def _changed(action: argparse.Action, default, words: tuple[str, ...] = ()) -> list[str]:
    flag = action.option_strings[-1]
    if (words, action.dest) in VALID:
        return [flag, VALID[(words, action.dest)]]
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return [flag]
    if action.choices is not None:
        if isinstance(action, argparse._AppendAction):
            return [flag, list(action.choices)[0]]
        return [flag, next(str(c) for c in action.choices if c != default)]
    if isinstance(action, argparse._AppendAction):
        return [flag, *(["x"] * (action.nargs if isinstance(action.nargs, int) else 1))]
    if action.dest in ("k", "ks"):
        return [flag, "3,4"]
    if isinstance(action.nargs, int) and action.nargs > 1:  # --band LOW HIGH
        return [flag, *(str(0.2 + 0.1 * i) for i in range(action.nargs))]
    if action.type in (int, float) or getattr(action.type, "__name__", "") in (
        "positive_int",
        "non_negative_int",
        "positive_float",
        "fraction",
    ):
        base = default if isinstance(default, (int, float)) else 1
        new = (
            base + 1
            if getattr(action.type, "__name__", "") in ("int", "positive_int", "non_negative_int")
            else min(1.0, base / 2 + 0.25)
        )
        if new == base:
            new = base / 4
        return [flag, str(new)]
    return [flag, "something-else"]


PARSER = functools.lru_cache(maxsize=1)(build_parser)
CASES = [
    (c, a)
    for c in commands()
    if c.args is not None
    for a in _subparser(PARSER(), c.words)._actions
    if a.option_strings and a.dest != "help"
]


@pytest.mark.parametrize("cmd, action", CASES, ids=[f"{' '.join(c.words)}:{a.option_strings[-1]}" for c, a in CASES])
def test_each_flag_changes_exactly_its_field(cmd, action):
    parser = PARSER()
    sub = _subparser(parser, cmd.words)
    base_argv = [*cmd.words, *_base_argv(cmd, sub, action.dest)]
    fields = {f.name for f in dataclasses.fields(cmd.args)}
    assert action.dest in fields, f"{action.option_strings[-1]} is not a field of {cmd.args.__name__}"
    base = from_args(cmd.args, parser.parse_args(base_argv))
    if action.choices is not None and len(action.choices) == 1:  # one value: the flag can only refuse others
        with pytest.raises(SystemExit):
            parser.parse_args(base_argv + [action.option_strings[-1], "not-a-choice"])
        return
    extra, also = COMPANIONS.get(action.dest, ([], set()))
    changed = from_args(
        cmd.args, parser.parse_args(base_argv + _changed(action, getattr(base, action.dest), cmd.words) + extra)
    )
    diff = {f for f in fields if getattr(base, f) != getattr(changed, f)}
    assert action.dest in diff, f"{action.option_strings[-1]}: {cmd.args.__name__}.{action.dest} did not change"
    assert diff <= {action.dest} | also, diff


def test_every_command_derives_its_flags_from_its_dataclass():
    """No flag outside a dataclass: each parser's options are exactly the fields of its command's dataclass."""
    parser = build_parser()
    for c in commands():
        sub = _subparser(parser, c.words)
        dests = {a.dest for a in sub._actions if a.dest not in ("help",)}
        names = {f.name for f in dataclasses.fields(c.args)} if c.args else set()
        assert dests == names, (c.words, dests ^ names)


@pytest.mark.trl  # the bridge imports transformers
def test_train_site_packages_reaches_the_reward():
    """`grpo-wb train --site-packages` was accepted and ignored once; now it is in the reward's sandbox limits."""
    from grpo_wb.training.bridge import ExecutionReward
    from grpo_wb.training.config import TrlTrainConfig

    args = build_parser().parse_args(
        ["train", "--model", "m", "--tasks", str(TOY), "--out", "o", "--site-packages", "--isolation", "strict"]
    )
    cfg = from_args(TrlTrainConfig, args)
    reward = ExecutionReward(TOY, limits=cfg.limits())
    assert reward.limits.site_packages is True and reward.limits.isolation == "strict"


def test_the_registry_lists_each_command_as_its_module_declares_it():
    """``grpo-wb --help`` reads the registry (grpo_wb.cli.main.REGISTRY), not the command modules: each registered
    command is in its module with the same help line, and each command a module of grpo_wb.cli declares is
    registered (else it could never be run)."""
    by_words = {r.words: r for r in REGISTRY}
    assert len(by_words) == len(REGISTRY)
    for c, r in zip(commands(), REGISTRY):
        assert (c.words, c.help) == (r.words, r.help)
    declared = {
        c.words: name
        for name in (p.stem for p in (ROOT / "grpo_wb" / "cli").glob("*.py") if not p.stem.startswith("__"))
        for c in getattr(importlib.import_module(f"grpo_wb.cli.{name}"), "COMMANDS", [])
    }
    assert declared == {w: r.module for w, r in by_words.items()}


@pytest.mark.parametrize("cmd", commands(), ids=lambda c: " ".join(c.words))
def test_a_commands_help_shows_its_flags(cmd, capsys):
    """``grpo-wb CMD --help``, through the parser the command line builds (the flags are added when the command is
    chosen), shows every flag of the command's parser (its dataclass's fields: the test above)."""
    with pytest.raises(SystemExit) as e:
        main([*cmd.words, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: grpo-wb {' '.join(cmd.words)} "), out[:200]
    flags = [a.option_strings[-1] for a in _subparser(build_parser(), cmd.words)._actions if a.option_strings]
    assert len(flags) > (1 if cmd.args else 0) and [f for f in flags if f not in out] == [], out
