"""The command line, ``grpo-wb``: one module per command group; flags derived from the config dataclasses.
Nothing imports this package but the entry point."""

from grpo_wb.cli.main import main

__all__ = ["main"]
