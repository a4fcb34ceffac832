"""The programs that run inside the sandbox: standard library only, and nothing of ``grpo_wb`` (an import-linter
contract in pyproject.toml). ``main.py`` is the warm worker the scorer starts (``python -s -P -S -B main.py``); it
loads its sibling modules as top-level modules (``wb_*``), which its forked children inherit:

* :mod:`wb_protocol` -- what crosses between the scorer, the worker and a child (framing, messages, events);
* :mod:`wb_values` -- how a child encodes what the candidate returned (builtin types only);
* :mod:`wb_harness` -- what a child runs: the candidate, then its tests, reporting raw events;
* :mod:`wb_remote` -- a job with exec tests runs them in the child (the tester) and the candidate in a process the
  tester forked before it read its tests; calls cross between them by value, objects as handles;
* :mod:`wb_child` -- how a child is set up (session, descriptors, uid, limits, seccomp) and what it can measure;
* ``main.py`` -- the job loop: fork, deadline, stream, kill, clean up.
"""
