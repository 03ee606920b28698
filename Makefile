PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# checkov pins packaging<24, which pytest cannot use: it gets an environment of its own
CHECKOV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV)/.installed

.PHONY: demo test lint typecheck unit integration e2e bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(CHECKOV_STAMP):
	$(PYTHON) -m venv $(CHECKOV)
	$(CHECKOV)/bin/pip install --quiet checkov==3.3.30
	touch $(CHECKOV_STAMP)

demo: $(STAMP)
	$(BIN)/distkpi local

lint: $(STAMP) $(CHECKOV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PATH=$(CURDIR)/$(BIN):$(CURDIR)/$(CHECKOV)/bin:$$PATH $(BIN)/python infra/lint_template.py

typecheck: $(STAMP)
	$(BIN)/mypy

# the test tiers: unit (pure code and the services on in-memory ports, no AWS; seconds),
# integration (the handlers on moto and a GitHub stand-in; a minute or two), e2e
# (`distkpi local` with real training; minutes)
unit: $(STAMP)
	$(BIN)/pytest -q tests/unit tests/service

integration: $(STAMP)
	$(BIN)/pytest -q tests/integration

e2e: $(STAMP)
	$(BIN)/pytest -q tests/e2e

test: lint typecheck unit integration e2e

bench: $(STAMP)
	$(BIN)/python bench/parse_throughput.py
	$(BIN)/python bench/hostile_input.py

clean:
	rm -rf $(VENV) $(CHECKOV) .mypy_cache .ruff_cache .pytest_cache out
