"""Training: the TRL bridge (:mod:`.bridge`: the metrics callback; it re-exports the execution reward of
:mod:`grpo_wb.scoring.trainer_reward`) and ``grpo-wb train`` (:mod:`.train`). Imports runs and everything below,
never reports or audit (peers); TRL itself only when used."""
