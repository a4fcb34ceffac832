"""Signal: arithmetic on scored rows only. Group-relative advantages as TRL computes them
(:mod:`.advantages`), group statistics and step metrics (:mod:`.diagnostics`), headroom estimators
(:mod:`.headroom`), a test audit's flags (:mod:`.testflags`), failure clusters (:mod:`.clusters`). Its only file
reading is the clusters' one pass over a scored file; scored files and run groups are read, and chosen tasks
written, by :mod:`grpo_wb.runs.scored` and :mod:`grpo_wb.runs.exports`. Imports tasks and the base modules, neither
scoring nor rollouts."""
