"""Tasks: the canonical task record and its JSONL format (:mod:`.records`), and the importers of public
task sets: HumanEval, MBPP, APPS, MapCoder's replies (:mod:`.importers`). Imports only the base modules."""
