"""Shared fixtures for the report tests: the recorded data files in ``data/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.report.source import RecordSet, open_source

DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def sim() -> RecordSet:
    """Six jobs and five plan records on a simulated clock (hand-computed values in the tests)."""
    return open_source(DATA / "sim_records.jsonl").load()


@pytest.fixture
def live() -> RecordSet:
    """Five jobs on the epoch clock, matching the recorded sacct output in data/sacct_2205.*."""
    return open_source(DATA / "live_records.jsonl").load()
