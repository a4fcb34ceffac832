"""Training: the TRL bridge (:mod:`.bridge`: the execution reward and the metrics callback) and
``grpo-wb train`` (:mod:`.train`). Imports runs and everything below; TRL itself only when used."""
