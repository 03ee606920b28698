PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# checkov pins packaging<24, which pytest cannot use: it gets an environment of its own
CHECKOV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV)/.installed

.PHONY: demo test tiers lint typecheck unit integration e2e slow browser bench clean lock package docs

# the layer's lock is the tests' constraints: they run the versions that are deployed
$(STAMP): pyproject.toml layers/distkpi/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -c layers/distkpi/requirements.txt
	touch $(STAMP)

$(CHECKOV_STAMP):
	$(PYTHON) -m venv $(CHECKOV)
	$(CHECKOV)/bin/pip install --quiet checkov==3.3.30
	touch $(CHECKOV_STAMP)

DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]' -c layers/distkpi/requirements.txt
	touch $(DOCS_STAMP)

# the documentation site in out/site-docs: the reference pages written from the code first,
# then MkDocs with warnings as errors (a broken link or anchor, a page left out of the nav)
docs: $(DOCS_STAMP)
	$(BIN)/python -m distkpi_cli.reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

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
# (`distkpi local` with real training; minutes). Each runs its tests on every core, a
# pytest-xdist worker per core (WORKERS=0: in this one process, as to debug)
WORKERS ?= auto
PYTEST = $(BIN)/pytest -q -n $(WORKERS) --dist worksteal

unit: $(STAMP)
	$(PYTEST) tests/unit tests/service -m "not slow"

integration: $(STAMP)
	$(PYTEST) tests/integration

e2e: $(STAMP)
	$(PYTEST) tests/e2e -m "not slow"

# the tests of minutes, kept out of make test: the end-to-end tests beyond the first hour's
# path (tests/e2e/conftest.py), every attack on the real node, every bench script's smoke
# run, the diagnosis on profiled training, the LLM suite, calibration, bisection, accepting,
# the pull-request comment, the tutorials' commands, the history application in headless
# chromium (tests/browser). CI runs it after make test
slow: $(STAMP)
	$(PYTEST) tests -m "slow or browser"

# the history application's pages in Debian's headless chromium; their screenshots are
# saved in out/browser-screenshots/
browser: $(STAMP)
	$(PYTEST) tests/browser

# lint, types and the three tiers side by side: one pytest run, two workers per core, the
# tests waiting on subprocesses, polls and locks about half their time, which a second
# worker per core and the linters fill (bench/README.md, the test tiers). The end-to-end
# tests are handed out first, and the workers start once rather than once per tier
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
test: $(STAMP) $(CHECKOV_STAMP)
	$(MAKE) -j3 --output-sync=target lint typecheck tiers

tiers: WORKERS = $(TEST_WORKERS)
tiers: $(STAMP)
	$(PYTEST) tests/e2e tests/integration tests/service tests/unit -m "not slow"

# layers/distkpi/requirements.txt from requirements.in, at the versions the tests install
lock: $(STAMP)
	$(BIN)/python infra/lock_layer.py

# the layer as sam build makes it, its size, and the four handlers run on it alone (Python 3.12)
package: $(STAMP)
	$(BIN)/python infra/package_layer.py

bench: $(STAMP)
	$(BIN)/python bench/parse_throughput.py
	$(BIN)/python bench/hostile_input.py

clean:
	rm -rf $(VENV) $(CHECKOV) .mypy_cache .ruff_cache .pytest_cache out
