"""Fixtures for the Slurm backend and enactment tests on the live minicluster: a backend, a job
submitter (root or a non-root test user) and cleanup of every job and hops reservation made."""

from __future__ import annotations


import pwd
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from slurm_helpers import TEST_USER, ensure_test_user  # noqa: F401
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.cli import CliSlurm

HOPS_SCRIPT = """#!/bin/bash
#HOPS gpus=1,2,4,8 samples=1M batch-size=32 model=resnet50 lr=0.1@8
{body}
"""

Submit = Callable[..., str]




@pytest.fixture
def api(minicluster: Minicluster) -> CliSlurm:
    return CliSlurm(minicluster.env())


@pytest.fixture
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="hops-slurmapi-"))
    d.chmod(0o777)  # jobs of the test user write here
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


@pytest.fixture
def submit(minicluster: Minicluster, api: CliSlurm, workdir: Path) -> Iterator[Submit]:
    """``submit(body="sleep 300", user=None, args=())`` -> job id; every job is cancelled at the end and
    every reservation whose name starts with ``hops-`` (the gate, per-job ones) deleted."""
    submitted: list[str] = []

    def _submit(body: str = "sleep 300", user: str | None = None, args: tuple[str, ...] = ()) -> str:
        script = workdir / f"job{len(submitted)}.sh"
        script.write_text(HOPS_SCRIPT.format(body=body))
        script.chmod(0o755)
        argv = ["sbatch", "--parsable", "-o", "/dev/null", "-D", str(workdir), *args, str(script)]
        if user:
            argv = minicluster.user_argv(user, argv)
        out = subprocess.run(argv, env=minicluster.env(), capture_output=True, text=True, check=True, timeout=30)
        job_id = out.stdout.strip().split(";")[0]
        submitted.append(job_id)
        return job_id

    yield _submit
    if submitted:
        minicluster.run(["scancel", *submitted], check=False)
    deadline = time.monotonic() + 30
    while any(j.job_id in submitted and (j.pending or j.active) for j in api.jobs()) and time.monotonic() < deadline:
        time.sleep(0.2)
    # delete the gate and per-job reservations even if a test failed half-way (a reservation still
    # attached to a job cannot be deleted: detach every job first), so later tests find free nodes
    names = [r.name for r in api.reservations() if r.name.startswith("hops-")]
    for job in api.jobs():
        if job.reservation in names and (job.pending or job.active):
            minicluster.run(["scontrol", "update", f"JobId={job.job_id}", "Reservation="], check=False)
    failed = []
    for name in names:
        if minicluster.run(["scontrol", "delete", f"ReservationName={name}"], check=False).returncode != 0:
            failed.append(name)
    assert not failed, f"reservations left behind: {failed}"


def wait_job(api: CliSlurm, job_id: str, pred: Callable[[SlurmJob], bool], timeout: float = 20.0) -> SlurmJob:
    deadline = time.monotonic() + timeout
    while True:
        job = api.job(job_id)
        if job is not None and pred(job):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} did not reach the expected state in {timeout} s: {job}")
        time.sleep(0.2)


def stays(api: CliSlurm, job_id: str, pred: Callable[[SlurmJob], bool], seconds: float = 3.0) -> SlurmJob:
    """Assert ``pred`` holds for the job for ``seconds`` (bf_interval=1: a startable job starts within ~1 s)."""
    deadline = time.monotonic() + seconds
    while True:
        job = api.job(job_id)
        assert job is not None and pred(job), f"job {job_id}: {job}"
        if time.monotonic() > deadline:
            return job
        time.sleep(0.3)



class Live:
    """Helpers handed to the live tests (test modules cannot import this conftest under importlib mode)."""

    wait_job = staticmethod(wait_job)
    stays = staticmethod(stays)
    ensure_test_user = staticmethod(ensure_test_user)


@pytest.fixture
def live() -> type[Live]:
    return Live
