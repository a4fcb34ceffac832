"""grpo_wb: will this task set plus an execution reward give GRPO a learning signal?

The package is organised one module per concern: :mod:`tasks` (canonical
records), :mod:`importers`, :mod:`backends` (mock, replay), :mod:`extraction`,
:mod:`sandbox`, :mod:`scoring`, :mod:`rewards`, :mod:`advantages`,
:mod:`diagnostics`, :mod:`smoke` (the smoke trainer) and :mod:`cli`.
"""
__version__ = "0.1.0"
