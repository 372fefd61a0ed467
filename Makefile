# Bootstraps a virtualenv from nothing (Python 3.11+, pip and make) and runs the project.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck check bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)  ## the offline demo on embedded defaults
	$(BIN)/toolnexus demo

test: $(STAMP)  ## the whole test suite
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --strict tests/typing
	$(BIN)/pyright tests/typing

check: test lint typecheck

bench-quick: $(STAMP)
	$(BIN)/python bench/run.py --quick

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
