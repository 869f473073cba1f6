# hops-slurm: `make demo`, `make test`, `make bench`. Each installs what it needs and is safe to re-run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOPS := $(VENV)/bin/hops-slurm
STAMP := $(VENV)/.stamp-install
PYTEST_ARGS ?=

.PHONY: all install slurm demo test bench clean

all: test

# The venv: torch==2.13.0 first so the local CPU build is used, then the package with its extras.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[profiler,highs,dev]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Slurm packages (apt-get, root); a no-op when they are already there.
slurm: $(STAMP)
	$(HOPS) minicluster install --spec tests/data/minicluster-accounting.toml

demo: install slurm
	$(HOPS) demo

test: install slurm
	$(PY) -m pytest $(PYTEST_ARGS)

bench: install
	$(HOPS) bench all --out docs/results

clean:
	-$(HOPS) minicluster down 2>/dev/null
	rm -rf $(VENV) var build *.egg-info .pytest_cache .hypothesis
