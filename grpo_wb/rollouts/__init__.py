"""Rollouts: where completions come from. The backend protocol and records (:mod:`.types`), the mock
and replay backends, a served model (:mod:`.openai_backend`), a local one (:mod:`.hf_backend`), what they
share (:mod:`.sampling`) and :func:`~.factory.make_backend`. Imports tasks and the base modules."""
