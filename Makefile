# Bootstraps a virtualenv from nothing (Python 3.11+, pip and make) and runs the project.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# a2a-sdk 0.3.x cannot live beside 1.x: its side of the a2a03 tests runs in this second venv.
A2A03_VENV ?= .venv-a2a03
A2A03_STAMP := $(A2A03_VENV)/.installed
# fastmcp-tasks pins fastmcp-slim: the FastMCP upstream of the MCP Tasks tests runs in this venv.
FASTMCP_TASKS_VENV ?= .venv-fastmcp-tasks
FASTMCP_TASKS_STAMP := $(FASTMCP_TASKS_VENV)/.installed
# FastMCP pins its own `mcp`: its side of the Skills-over-MCP tests runs in a venv of its own.
FASTMCP_VENV ?= .venv-fastmcp
FASTMCP_STAMP := $(FASTMCP_VENV)/.installed

.PHONY: demo test docs lint typecheck check bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)  ## the offline demo on embedded defaults
	$(BIN)/toolnexus demo

$(A2A03_STAMP): tests/support/a2a03/requirements.txt
	$(PYTHON) -m venv $(A2A03_VENV)
	$(A2A03_VENV)/bin/python -m pip install -q -r tests/support/a2a03/requirements.txt
	touch $(A2A03_STAMP)

$(FASTMCP_TASKS_STAMP): tests/support/fastmcp_tasks/requirements.txt
	$(PYTHON) -m venv $(FASTMCP_TASKS_VENV)
	$(FASTMCP_TASKS_VENV)/bin/python -m pip install -q -r tests/support/fastmcp_tasks/requirements.txt
	touch $(FASTMCP_TASKS_STAMP)

$(FASTMCP_STAMP): tests/support/fastmcp/requirements.txt
	$(PYTHON) -m venv $(FASTMCP_VENV)
	$(FASTMCP_VENV)/bin/python -m pip install -q -r tests/support/fastmcp/requirements.txt
	touch $(FASTMCP_STAMP)

# COVERAGE=1 make test: the same suite under coverage, failing below the floor in pyproject.toml.
test: $(STAMP) $(A2A03_STAMP) $(FASTMCP_TASKS_STAMP) $(FASTMCP_STAMP)  ## the whole test suite
	TOOLNEXUS_A2A03_PYTHON=$(CURDIR)/$(A2A03_VENV)/bin/python \
	TOOLNEXUS_FASTMCP_TASKS_PYTHON=$(CURDIR)/$(FASTMCP_TASKS_VENV)/bin/python \
	TOOLNEXUS_FASTMCP_PYTHON=$(CURDIR)/$(FASTMCP_VENV)/bin/python \
	$(if $(COVERAGE),$(BIN)/coverage run -m pytest,$(BIN)/python -m pytest)
	$(if $(COVERAGE),$(BIN)/coverage combine -q && $(BIN)/coverage report)

docs: $(STAMP)  ## the docs site into site/, every warning an error
	$(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --strict tests/typing
	$(BIN)/pyright tests/typing

check: test docs lint typecheck

bench-quick: $(STAMP)
	$(BIN)/python bench/run.py --quick

clean:
	rm -rf .coverage .coverage.* $(VENV) $(A2A03_VENV) $(FASTMCP_TASKS_VENV) $(FASTMCP_VENV) build dist site .pytest_cache .mypy_cache .ruff_cache
