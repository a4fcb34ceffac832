"""Reports: the strict papermill runner and HTML (:mod:`.notebooks`), batches of reports and their index
(:mod:`.batch`), the figures notebooks show (:mod:`.plots`). Imports runs and everything below, never audit or
training (peers)."""

import sys

# jsonschema imports rfc3987_syntax (when installed, as jupyterlab's dependencies do) to check the ``iri``
# format, and it builds an Earley parser at import time: 1.4 s per report process, paid through nbformat.
# Notebook validation never uses that format, so it is kept out of any process that imports this package
# before nbformat (a no-op when something imported it first).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
