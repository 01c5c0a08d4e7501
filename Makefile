# Two commands on a fresh machine (see README):  make book   and   make test
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
JB_FLAGS ?= --warningiserror --keep-going

.PHONY: install book test lint notebooks bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[book,test,spark]"
	touch $(STAMP)

install: $(STAMP)

## build the browsable book into _build/html (renders the committed, executed notebooks)
book: $(STAMP)
	$(BIN)/jupyter-book build . $(JB_FLAGS)

## all tests: lint, unit and statistical tests, doctests, nbval re-execution of the book
test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools book
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools book

## re-execute every notebook with papermill (default parameters) and refresh its outputs
notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/ctmc_scaling.py
	$(BIN)/python benchmarks/simulator_speed.py

clean:
	rm -rf _build
