"""Signal: arithmetic on scored rows only. Group-relative advantages as TRL computes them
(:mod:`.advantages`), group statistics and step metrics (:mod:`.diagnostics`), headroom estimators and the
frontier export (:mod:`.headroom`), a test audit's flags (:mod:`.testflags`). Imports tasks and the base modules,
neither scoring nor rollouts."""
