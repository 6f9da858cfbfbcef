# The front door: `make help` lists the targets.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev

.DEFAULT_GOAL := help
.PHONY: help install demo lint typecheck test check bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# The demo needs adws and its three dependencies only; the checks add the dev tools.
$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME)

# The checks run `adws batch --dask` on a real LocalCluster, so the dask extra comes with them.
$(DEV): $(RUNTIME)
	$(BIN)/python -m pip install --quiet -e '.[dev,dask]'
	touch $(DEV)

install: $(DEV) ## Create .venv with adws and the dev tools

demo: $(RUNTIME) ## Run deep_research with the offline demo agent (installs only adws)
	$(BIN)/adws run deep_research -i topic="railway-oriented programming"
	@echo "Put adws on your PATH with: . $(VENV)/bin/activate"

lint: $(DEV) ## ruff check and ruff format --check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV) ## mypy --strict with the returns plugin
	$(BIN)/mypy

test: $(DEV) ## pytest with 100% line and branch coverage (real processes included)
	$(BIN)/pytest --cov --cov-report=term-missing

check: lint typecheck test ## Everything CI runs

bench: $(DEV) ## Print the benchmark table and write benchmarks/results.json (installs LangGraph)
	$(BIN)/python -m pip install --quiet -e '.[dev,dask,bench]'
	$(BIN)/python benchmarks/run.py

clean: ## Remove the virtualenv, caches and the run journal
	rm -rf $(VENV) .adws .mypy_cache .pytest_cache .ruff_cache .coverage .coverage.* reports
