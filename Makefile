# The Mamba recall book. Each of these sets everything up on a fresh machine:
#   make lab    open the chapters in JupyterLab (from .venv, on copies of book/ in _build/lab) to read and explore
#   make book   execute every chapter (papermill) and build the HTML book into _build/html
#   make test-isa  the same checked outputs with another instruction set forced (torch scalar, numba generic)
#   make test   ruff (lint, format), library tests (with the live-widget test in JupyterLab), the capped paper pass (smoke), the book
#               build (plain papermill on every notebook), its checked outputs against book/ (nbval-lax's own comparison)
#               and the browser check
# Variables: PRESET=ci|paper  DEVICE=auto|cpu|cuda  BACKEND=auto|reference|chunked|mamba_ssm|fused  PYTHON=python3
#            JOBS=2 (test files, notebooks and the browser check's pages run at once; outputs do not depend on it)

PYTHON ?= python3
PRESET ?= ci
DEVICE ?= auto
BACKEND ?= auto
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Seconds any one cell may run in the batch passes (a hang stops there with an error).
CELL_TIMEOUT ?= 900
# Processes that run test files (pytest-xdist, one file per process), notebooks (one kernel each) and the browser
# check's pages (one headless Chromium each) at once; each then gets one CPU thread (OMP_NUM_THREADS=1: on 2 cores,
# two processes of two threads each are no faster than one).
JOBS ?= 2

.PHONY: book test test-isa lint pytest nbval smoke browser bench reproduce refresh venv lab clean

venv: $(STAMP)

# The book's environment pins torch here (pyproject.toml only asks for torch>=2.2, so that a researcher's
# own torch survives `pip install mamba-recall`): installed first, as 2.13.0, so that a CPU machine gets the
# CPU build instead of several GB of CUDA packages; on a GPU machine install the CUDA build of the same
# version first. The editable install keeps it (it satisfies torch>=2.2).
# TORCH_INDEX_URL: where torch comes from (empty: the configured index). From the public PyPI on Linux,
# torch==2.13.0 is the CUDA build (several GB of nvidia-* wheels); the CPU build (about 200 MB) comes from
# make book TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
TORCH_INDEX_URL ?=

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(PY) -m pip install --quiet -e '.[book,test,bench,cluster]'
	touch $(STAMP)

# Explore: JupyterLab from the project's .venv on copies of book/ in _build/lab (the chapters' notebooks, live
# explorers): Run All and JupyterLab's autosave change the copies, never the committed notebooks. A copy stays as
# you left it until its committed page changes; LAB_ARGS=--fresh replaces them all. --allow-root is added when
# run as root (containers). LAB_ARGS passes options on, e.g. make lab LAB_ARGS="--no-browser --port 8899".
lab: $(STAMP)
	$(PY) -m mamba_recall lab $(LAB_ARGS)

# Executes every notebook with papermill (no environment variable; the README's plain papermill run),
# then builds the HTML book.
book: $(STAMP)
	$(PY) -m mamba_recall book --preset $(PRESET) --device $(DEVICE) --backend $(BACKEND) --jobs $(JOBS) \
	  $(if $(filter ci,$(PRESET)),--timeout $(CELL_TIMEOUT))

# ruff (configured in pyproject.toml) on the library, the tests, the tools, the benchmarks and the notebooks: lint,
# and the format check.
lint: $(STAMP)
	$(PY) -m ruff check src tests tools benchmarks book
	$(PY) -m ruff format --check src tests tools benchmarks book

# The papers' text, where a checkout sits beside it (../shared/papers): the claims' quotes and printed numbers
# are then checked against it (tests/claims/test_claims.py); elsewhere those two tests are skipped with the reason.
PAPERS ?= $(wildcard $(abspath ../shared/papers))

pytest: $(STAMP)
	$(if $(PAPERS),MAMBA_RECALL_PAPERS=$(PAPERS)) $(if $(filter-out 1,$(JOBS)),OMP_NUM_THREADS=1) $(PY) -m pytest -ra --durations=25 -n $(JOBS) --dist loadfile tests

nbval: $(STAMP)
	$(PY) -m pytest -ra --nbval-lax --nbval-current-env --nbval-cell-timeout=$(CELL_TIMEOUT) -p no:cacheprovider book

# The paper path of every notebook with the smoke cap (every grid axis, verdict branch, bundle and chart; a
# handful of steps and cells; see mamba_recall.presets): papermill -p preset paper -p smoke True -p device cpu.
smoke: $(STAMP)
	$(PY) -m mamba_recall run all --preset paper --smoke --device cpu --out _build/smoke --timeout $(CELL_TIMEOUT) --jobs $(JOBS)

browser: $(STAMP)
	$(PY) tools/browser_check.py _build/html --toc _toc.yml --jobs $(JOBS)

# The book pass executes every notebook once (plain papermill, ci); check-outputs then compares its
# NBVAL_CHECK_OUTPUT cells with book/'s committed outputs (what `make nbval` checks, without a second
# execution of every notebook).
test: lint pytest smoke
	$(MAKE) book PRESET=ci DEVICE=cpu BACKEND=auto
	$(PY) -m mamba_recall check-outputs _build/executed
	$(MAKE) browser

# Another CPU type on this machine (mamba_recall.determinism): every notebook executed with torch's scalar kernels
# and the fused scan's kernels compiled for a generic CPU, its checked outputs compared with book/'s (made with
# AVX-512 kernels). About 10 minutes on 2 cores; make test runs two notebooks and the retraining this way.
ISA_ENV ?= ATEN_CPU_CAPABILITY=default NUMBA_CPU_NAME=generic
test-isa: $(STAMP)
	$(ISA_ENV) $(PY) -m mamba_recall run all --preset ci --device cpu --out _build/isa --timeout $(CELL_TIMEOUT) --jobs $(JOBS)
	$(PY) -m mamba_recall check-outputs _build/isa

bench: $(STAMP)
	$(PY) benchmarks/scan.py --device $(DEVICE) --out results/scan_bench_$(DEVICE).json

# Regenerate every committed result (see README, "Results"): the scan benchmark, then the committed
# runs of every experiment runner in src/mamba_recall/experiments (ONLY="ch2_scaling ..." picks some).
reproduce: $(STAMP)
	$(PY) -m mamba_recall reproduce $(if $(ONLY),--only $(ONLY))

# Rewrite the committed notebook outputs in book/ (what nbval compares against).
refresh: $(STAMP)
	$(PY) -m mamba_recall refresh

clean:
	rm -rf _build
