"""Tasks: the canonical task record and its JSONL format (:mod:`.records`), and the importers of public
task sets: HumanEval, MBPP, APPS, MapCoder's replies (:mod:`.importers`), the row datasets (:mod:`.rowformats`, a
module per dataset family), and what a test audit builds from a task without running it: mutants (:mod:`.mutants`),
trivial programs and test inputs (:mod:`.probes`), prompt overlap (:mod:`.overlap`). :mod:`.sandbox_programs` reads
the programs kept as files that the row formats and the tasks audit send to the sandbox. Imports only the base
modules."""
