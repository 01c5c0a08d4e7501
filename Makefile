# Two commands on a fresh machine (see README):  make book   and   make test
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
JB_FLAGS ?= --warningiserror --keep-going
# the real workload logs (Parallel Workloads Archive) that the trace-replay tests and chapter read; they are not
# in the repository (see README: where to download them); a test or figure that needs a missing log is skipped
TRACES ?= $(abspath $(CURDIR)/../shared/traces)
export BARRIER_QUEUES_TRACES ?= $(TRACES)

.PHONY: install book book-full test test-quick lint notebooks bench browser clean

# setup.py and the kernels' source too: an edit of the Cython kernels rebuilds them. compileall writes the
# package's bytecode as pip does for a wheel: with PYTHONDONTWRITEBYTECODE set an editable install would otherwise
# compile every module again in every command (about 0.25 s of each, measured here)
$(STAMP): pyproject.toml setup.py src/barrier_queues/_kernels.pyx $(wildcard src/barrier_queues/*.pxi src/barrier_queues/schedulers/*.pxi)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[book,test,spark]"
	$(BIN)/python -m compileall -q src/barrier_queues
	touch $(STAMP)

install: $(STAMP)

## build the browsable book into _build/html (renders the committed, executed notebooks)
book: $(STAMP)
	$(BIN)/jupyter-book build . $(JB_FLAGS)

## Debian's headless Chromium and its driver for the browser test of the book
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

## all tests (on 2 processes, one test file each at a time: 14 min 16 s here, 22 min 30 s on one): lint, unit and
## statistical tests, doctests, nbval re-execution of the book, browser check;
## then the committed results/ (tables, claims, provenance) must be exactly what the re-execution wrote
test: $(STAMP) browser
	$(BIN)/ruff check src tests benchmarks tools book
	@rm -rf _build/nbval-results && mkdir -p _build/nbval-results
	BARRIER_QUEUES_RESULTS_DIR=$(CURDIR)/_build/nbval-results $(BIN)/python -m pytest -n 2 --dist loadfile
	@cd results && for f in *.csv *.json; do \
	  case "$$f" in traces_*|fig_traces_*|claims-traces.json) [ -f "$(BARRIER_QUEUES_TRACES)/KTH-SP2.swf.gz" ] || continue;; esac; \
	  case "$$f" in clocks_*|fig_clocks_*|claims-clocks.json|gpu_*|fig_gpu_*|claims-gpu.json) [ -f "$(BARRIER_QUEUES_TRACES)/philly-pollux.csv.gz" ] || continue;; esac; \
	  cmp -s "$$f" "../_build/nbval-results/$$f" || { \
	  echo "results/$$f differs from what the tests' re-execution of the book wrote (_build/nbval-results/$$f):" \
	       "run 'make notebooks' and commit results/"; exit 1; }; done

## daily work: lint and the unit tests without notebooks, browser, Spark and slow statistical checks (3 min 20 s
## of wall time on this project's idle 2-core machine, 2026-11-27); `make test` stays the full suite and CI's command
test-quick: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools book
	$(BIN)/python -m pytest tests -q -o addopts="-p no:cacheprovider" -m "not slow and not spark" \
	  --ignore=tests/test_notebooks.py --ignore=tests/test_browser.py --ignore=tests/test_spark_bench.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools book

## re-execute every notebook with papermill (default parameters) and refresh its outputs
notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py

## every result at the paper's scale (more jobs and replications) into _build/full (notebooks + results)
book-full: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py --full

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/ctmc_scaling.py
	$(BIN)/python benchmarks/simulator_speed.py

clean:
	rm -rf _build
