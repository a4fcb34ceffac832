"""grpo_wb: will this task set plus an execution reward give GRPO a learning signal?

The package is organised one module per concern: :mod:`tasks` (canonical
records), :mod:`importers`, :mod:`backends` (mock, replay), :mod:`extraction`,
:mod:`sandbox`, :mod:`scoring`, :mod:`rewards`, :mod:`advantages`,
:mod:`diagnostics`, :mod:`smoke` (the smoke trainer) and :mod:`cli`.
"""
__version__ = "0.1.0"


def load_run(path):
    """Load a smoke-run directory as pandas tables (lazy: ``import grpo_wb`` stays light); see :mod:`grpo_wb.runs`."""
    from .runs import load_run as _load_run

    return _load_run(path)


__all__ = ["__version__", "load_run"]
