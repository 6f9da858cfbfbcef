# The front door: `make help` lists the targets.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
# The real agent CLIs the tests drive, pinned, from npm, into a cache folder of the checkout.
CLIS := .cache/agent-clis
CLAUDE_CODE := @anthropic-ai/claude-code@2.1.330
CODEX := @openai/codex@0.169.0
CLIS_STAMP := $(CLIS)/.installed-2.1.330-0.169.0

.DEFAULT_GOAL := help
.PHONY: help install installs clis system browser postgres demo demo-best-of demo-parked demo-eval demo-ticket lint typecheck layout test docs site check package bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# The demo needs adws and its three dependencies only; the checks add the dev tools.
$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME)

# The checks run `adws batch --dask` on a real LocalCluster, ClaudeAgent through the Claude
# Agent SDK's bundled CLI, pydantic schemas and spans exported through the OpenTelemetry SDK,
# so the dask, claude, pydantic and otel extras come with them; the journal's tests run on a
# real PostgreSQL server too (the postgres extra), `adws serve`'s on its app (the serve extra)
# and `adws mcp`'s on the MCP SDK (the mcp extra).
$(DEV): $(RUNTIME)
	$(BIN)/python -m pip install --quiet -e '.[dev,dask,claude,pydantic,otel,postgres,serve,mcp]'
	touch $(DEV)

# Never global, never the user's PATH: the tests put $(CLIS)/node_modules/.bin first on theirs.
$(CLIS_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
		echo "installing $(CLAUDE_CODE) and $(CODEX) from npm into $(CLIS)"; \
		npm install --prefix $(CLIS) --no-save --no-package-lock --no-audit --no-fund \
			--loglevel=error $(CLAUDE_CODE) $(CODEX) && touch $(CLIS_STAMP); \
	else echo "npm not found: the tests that run the real claude and codex CLIs will be skipped"; fi

clis: $(CLIS_STAMP) ## Install the pinned claude and codex CLIs from npm into .cache/agent-clis

install: $(DEV) ## Create .venv with adws and the dev tools

# The checks test `adws report`'s page in a real headless Chromium and the shared journal on
# a real PostgreSQL server (run as the `postgres` user when we are root): Debian's packages,
# installed when missing and we can (CI runs as root); elsewhere those tests are skipped and
# say why. What is there already is never installed again.
CHROMIUM ?= chromium
POSTGRES_BIN ?= /usr/lib/postgresql/15/bin/postgres
CHROMIUM_MISSING = $(if $(shell command -v $(CHROMIUM) 2>/dev/null),,chromium)
POSTGRES_MISSING = $(if $(wildcard $(POSTGRES_BIN)),,postgresql)

# $(call apt,PACKAGES): install Debian packages as root in one apt-get, saying so first.
define apt
	@if [ -z "$(strip $(1))" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing $(strip $(1)) with apt-get (as root)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null; \
	else echo "note: $(strip $(1)) missing and not root: the tests that use it are skipped"; fi
endef

browser: ## Install Debian's chromium for the report page's browser test (as root), if missing
	$(call apt,$(CHROMIUM_MISSING))

postgres: ## Install Debian's postgresql for the shared journal's tests (as root), if missing
	$(call apt,$(POSTGRES_MISSING))

system: ## Install the system packages the checks use that are missing (chromium, postgresql)
	$(call apt,$(CHROMIUM_MISSING) $(POSTGRES_MISSING))

installs: ## Say what `make check` installs (only what is missing) before it installs anything
	@echo "make check installs what is missing, then runs the checks:"
	@missing="$(strip $(CHROMIUM_MISSING) $(POSTGRES_MISSING))"; \
	if [ -z "$$missing" ]; then echo "  system packages: chromium and postgresql are there"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "  system packages, with apt-get as root: $$missing (with their dependencies and"; \
		echo "    the CLIs below, about 1.5 GB on a fresh Debian; the browser and PostgreSQL tests)"; \
	else echo "  system packages: $$missing missing and not root: their tests will be skipped"; fi
	@if [ -f $(CLIS_STAMP) ]; then echo "  agent CLIs: $(CLAUDE_CODE) and $(CODEX) are in $(CLIS)"; \
	elif command -v npm >/dev/null 2>&1; then \
		echo "  agent CLIs, from npm into $(CLIS) (never global): $(CLAUDE_CODE) $(CODEX)"; \
	else echo "  agent CLIs: npm not found: the tests of the real claude and codex will be skipped"; fi
	@if [ -f $(DEV) ]; then echo "  Python tools: $(VENV) has them"; \
	else echo "  Python tools, with pip into $(VENV): adws with its extras dev, dask, claude,"; \
		echo "    pydantic, otel, postgres, serve and mcp"; fi

demo: $(RUNTIME) ## Run deep_research with the offline demo agent (installs only adws)
	$(BIN)/adws run deep_research -i topic="railway-oriented programming"
	@echo "Put adws on your PATH with: . $(VENV)/bin/activate"

# Offline too: three demo agents in worktrees of a throwaway repository, an approval, a merge.
demo-best-of: $(RUNTIME) ## Run implement_best_of on a throwaway git repository and approve it
	ADWS=$(BIN)/adws sh demo/best_of.sh

# Offline: the demo agent answers deep_research on three topics, twice each, under two variants.
demo-eval: $(RUNTIME) ## Compare two variants of deep_research with adws eval (offline, the demo agent)
	$(BIN)/adws eval deep_research demo/eval_tasks.jsonl -n 2 -q \
		--variant plain: --variant capped:--max-cost=1

demo-parked: $(RUNTIME) clis ## Park a run on a usage limit and finish it with resume --due (offline, real claude)
	ADWS=$(BIN)/adws PYTHON=$(BIN)/python sh demo/parked.sh

# Offline: the fake GitHub, a bare origin, the demo agent: an issue, a draft pull request, a review.
demo-ticket: $(RUNTIME) ## Turn an issue into a draft pull request and a /adws comment into a second commit
	ADWS=$(BIN)/adws PYTHON=$(BIN)/python sh demo/ticket.sh

lint: $(DEV) ## ruff check and ruff format --check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV) ## mypy --strict with the returns plugin
	$(BIN)/mypy

layout: $(DEV) ## No import circle in adws/, imports only downward through its layers
	$(BIN)/pytest tests/test_layout.py -q --no-cov

# Two workers: most tests wait on processes they started, so the suite overlaps them.
test: $(DEV) $(CLIS_STAMP) system ## pytest with 100% line and branch coverage (real processes, CLIs and a browser)
	$(BIN)/pytest -n 2 --cov --cov-report=term-missing --durations=30

# The site is built from docs/ and the docstrings; a broken link or reference fails it. The
# build goes to a throwaway folder: `site/` is never committed.
docs: $(DEV) ## Serve the documentation site at http://127.0.0.1:8000 (mkdocs serve)
	$(BIN)/mkdocs serve

site: $(DEV) ## Build the documentation site strictly, into a temporary folder
	@out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && $(BIN)/mkdocs build --strict --quiet -d "$$out"

# `make test` builds the site strictly too (tests/test_docs.py). `installs` comes first: what
# is missing is said before anything is installed.
check: installs lint typecheck test ## Everything CI runs (says first what it installs)

# `make test` already builds both, checks them and installs the wheel into a fresh venv
# (tests/test_packaging.py); this target keeps them, in dist/.
package: $(DEV) ## Build the sdist and the wheel into dist/ and check them with twine
	$(BIN)/python -m build --no-isolation --outdir dist .
	$(BIN)/twine check --strict dist/*

bench: $(DEV) ## Print the benchmark table and write benchmarks/results.json (installs LangGraph)
	$(BIN)/python -m pip install --quiet -e '.[dev,dask,claude,pydantic,otel,serve,mcp,bench]'
	$(BIN)/python benchmarks/run.py

clean: ## Remove the virtualenv, caches and the run journal
	rm -rf $(VENV) .cache .adws dist build .mypy_cache .pytest_cache .ruff_cache .coverage .coverage.* reports site
