"""The command line, ``grpo-wb``: commands registered by name in :mod:`grpo_wb.cli.main`, a module per command
(imported when it is chosen); flags derived from the config dataclasses. Nothing imports this package but the entry
point."""

from grpo_wb.cli.main import main

__all__ = ["main"]
