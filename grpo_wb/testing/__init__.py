"""Stand-ins for the outside world that tests and benchmarks talk to: a loopback model server on 127.0.0.1.

Nothing here is on a user's path; it ships in the package so that ``grpo-wb bench`` and the notebooks' tests can
start it without a test tree.
"""
