PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/distkpi local

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python infra/lint_template.py

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/parse_throughput.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache out
