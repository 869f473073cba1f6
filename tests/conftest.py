"""Shared fixtures. ``minicluster``: one real fake-GPU Slurm cluster for the whole test session,
started from tests/data/minicluster-test.toml (or the spec named by $HOPS_TEST_SPEC, so parallel
sessions can use their own ports and state directory) with the submit hook hooks/job_submit.lua, and torn down (by PID) at the end, checking that no
process of it is left behind. ``$HOPS_TEST_SLURM`` (24.11, 26.05; ``make test-live SLURM=...``) runs every
live cluster of the session on that Slurm release, in its Debian root.

``no_silent_step_failures`` (every test): the engine's cycle logs a failed step and goes on
(hops_slurm/engine/cycle.py), so a fault in a step would not fail a test that does not look for it; a
test fails when a step failed during it, unless it is marked ``step_failures`` (it makes them on purpose)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hops_slurm.tools.minicluster.cluster import Minicluster  # noqa: E402
from slurm_helpers import leftover_processes, load_test_spec, root_mounts  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
HOOK = Path(__file__).resolve().parents[1] / "hooks" / "job_submit.lua"


@pytest.fixture(scope="session")
def minicluster() -> Iterator[Minicluster]:
    if os.geteuid() != 0:
        pytest.fail("the Slurm integration tests run real slurmctld/slurmd daemons and need root (CI runs as root)")
    spec_path = Path(os.environ["HOPS_TEST_SPEC"]) if os.environ.get("HOPS_TEST_SPEC") else DATA / "minicluster-test.toml"
    cluster = Minicluster(load_test_spec(spec_path), job_submit_lua=HOOK)
    cluster.down()  # a previous run that was killed may have left it up
    mounts_before = root_mounts(cluster)
    cluster.up()
    yield cluster
    cluster.down()
    left = leftover_processes(cluster.state)
    assert not left, f"processes left behind by the minicluster: {left}"
    assert root_mounts(cluster) == mounts_before, "mounts left behind in the Slurm root by the minicluster"


class _StepFailures(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(autouse=True)
def no_silent_step_failures(request: pytest.FixtureRequest) -> Iterator[None]:
    logger = logging.getLogger("hops_slurm.engine.cycle")
    handler = _StepFailures()
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    if handler.lines and request.node.get_closest_marker("step_failures") is None:
        pytest.fail("steps of the engine's cycle failed:\n" + "\n".join(handler.lines[:5]))
