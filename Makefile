# hops-slurm: `make demo`, `make test`, `make bench`. Each installs what it needs and is safe to re-run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOPS := $(VENV)/bin/hops-slurm
STAMP := $(VENV)/.stamp-install
PYTEST_ARGS ?=
# The Slurm release of the live clusters: empty = 22.05 (the host's Debian 12 packages); 24.11 or 26.05 =
# a Debian trixie / sid root built once under /var/lib/hops-slurm/roots (see docs/slurm-releases.md).
SLURM ?=

.PHONY: all install slurm demo test test-live bench clean

all: test

# The venv: torch==2.13.0 first so the local CPU build is used, then the package with its extras.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[profiler,highs,dev]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Slurm packages (apt-get, root); a no-op when they are already there. With SLURM=24.11|26.05
# also that release's root (debootstrap, installed with apt-get when missing; reused while healthy).
slurm: $(STAMP)
	$(HOPS) minicluster install --spec tests/data/minicluster-accounting.toml
ifneq ($(SLURM),)
	$(HOPS) minicluster install --spec tests/data/minicluster-accounting.toml --slurm $(SLURM)
endif

# HOPS_ONLY=1: the jobs under Hops only (no second run under Slurm's own backfill). The report, plots and
# records go to var/demo (git-ignored); OUT=docs/demo rewrites the README's pictures instead.
# SLURM_PRIORITY=multifactor: the Slurm half with priority/multifactor and fair share (an accounting cluster).
demo: install slurm
	$(HOPS) demo $(if $(SLURM),--slurm $(SLURM)) $(if $(OUT),--out $(OUT)) $(if $(HOPS_ONLY),--hops-only) $(if $(SLURM_PRIORITY),--slurm-priority $(SLURM_PRIORITY))

# Everything; the live tests on $(SLURM) (make test SLURM=24.11).
test: install slurm
	HOPS_TEST_SLURM=$(SLURM) $(PY) -m pytest $(PYTEST_ARGS)

# Only the live tests (marker `slurm`), on $(SLURM): what CI runs for 24.11 and 26.05.
test-live: install slurm
	HOPS_TEST_SLURM=$(SLURM) $(PY) -m pytest -m slurm $(PYTEST_ARGS)

# BENCH=NAME: one benchmark (default all). ON_SLURM=1: each benchmark (each part of paper-tables and engine-sim)
# a task of one Slurm job array on the cluster this runs on, the checkout on a file system its nodes share;
# PARTITION=, TIME= (per task, as sbatch takes it), RETRIES= (docs/simulator.md, "Sweeps as Slurm job arrays").
BENCH ?= all
bench: install
	$(HOPS) bench $(BENCH) --out docs/results$(if $(ON_SLURM), --on-slurm$(if $(PARTITION), --partition $(PARTITION))$(if $(TIME), --time $(TIME))$(if $(RETRIES), --retries $(RETRIES)))

clean:
	-$(HOPS) minicluster down $(if $(SLURM),--slurm $(SLURM)) 2>/dev/null
	rm -rf $(VENV) var build *.egg-info .pytest_cache .hypothesis
