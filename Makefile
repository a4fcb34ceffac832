# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv when it is missing and (re)install when pyproject.toml changes.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install lab clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found; run 'make PYTHON=python3 ...'"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

HUMANEVAL := reports/data/humaneval.jsonl

$(HUMANEVAL): | $(STAMP)
	$(BIN)/grpo-wb tasks import humaneval --out $@

# papermill batch: smoke / headroom / compare notebooks over toy tasks and HumanEval (mock backend,
# G = 4 and 8); the last line printed is the path of reports/index.html.
demo: $(STAMP) $(HUMANEVAL)
	$(BIN)/grpo-wb batch data/demo_plan.yaml

test: $(STAMP)
	$(BIN)/python -m pytest -q

lab: $(STAMP)
	$(BIN)/jupyter lab --allow-root --notebook-dir=notebooks

clean:
	rm -rf $(VENV) reports/runs .pytest_cache
