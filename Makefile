# The front door: `make help` lists the targets.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install demo lint typecheck test check bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## Create .venv with adws and the dev tools

demo: install ## Run the deep_research workflow with the offline demo agent
	$(BIN)/adws run deep_research -i topic="railway-oriented programming"

lint: install ## ruff check and ruff format --check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install ## mypy --strict with the returns plugin
	$(BIN)/mypy

test: install ## pytest with 100% line and branch coverage
	$(BIN)/pytest --cov --cov-report=term-missing

check: lint typecheck test ## Everything CI runs

bench: install ## Print the benchmark table and write benchmarks/results.json (installs LangGraph)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python benchmarks/run.py

clean: ## Remove the virtualenv, caches and the run journal
	rm -rf $(VENV) .adws .mypy_cache .pytest_cache .ruff_cache .coverage reports
