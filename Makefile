# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv when it is missing and (re)install when pyproject.toml changes.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_OUT ?= reports/runs/toy_mock

.PHONY: demo test install lab clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found; run 'make PYTHON=python3 ...'"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/grpo-wb smoke --tasks data/toy_tasks.jsonl --backend mock --group-size 8 --batch-size 8 \
		--steps 3 --seed 0 --out $(DEMO_OUT) --overwrite

test: $(STAMP)
	$(BIN)/python -m pytest -q

lab: $(STAMP)
	$(BIN)/jupyter lab --allow-root --notebook-dir=notebooks

clean:
	rm -rf $(VENV) reports/runs .pytest_cache
