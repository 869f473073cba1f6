"""Helpers for the integration tests that drive the real minicluster (shared by tests/ subfolders)."""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from hops_slurm.tools.minicluster import processes
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import MiniclusterSpec, load_spec


def test_release() -> str | None:
    """The Slurm release the live tests run on: ``$HOPS_TEST_SLURM`` (``make test-live SLURM=24.11``),
    else each spec's own (22.05)."""
    return os.environ.get("HOPS_TEST_SLURM") or None


def load_test_spec(path: Path) -> MiniclusterSpec:
    """A test cluster's spec on the release under test (its own state directory per release)."""
    return load_spec(path, slurm=test_release())


def job_fields(cluster: Minicluster, job_id: str) -> dict[str, str]:
    """``scontrol -o -d show job`` as a dict (split on spaces, first occurrence of a key wins): for the tests'
    own jobs only, whose names and comments hold no ``Key=`` text (the adapter never reads this form)."""
    fields: dict[str, str] = {}
    for token in cluster.run(["scontrol", "-o", "-d", "show", "job", job_id]).stdout.split():
        key, eq, value = token.partition("=")
        if eq:
            fields.setdefault(key, value)
    return fields


def wait_until(pred: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``pred`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout} s"
        time.sleep(0.3)


def wait_for_state(cluster: Minicluster, job_id: str, states: set[str], timeout: float = 30.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        fields = job_fields(cluster, job_id)
        if fields.get("JobState") in states:
            return fields
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} not in {states} after {timeout} s: {fields.get('JobState')} {fields.get('Reason')}")
        time.sleep(0.2)


def leftover_processes(state_dir: Path, marker: str | None = None) -> list[str]:
    """Live processes that belong to the cluster in ``state_dir`` (or carry ``marker`` in argv)."""
    state = str(state_dir)
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        if not processes.is_alive(pid):
            continue
        argv = " ".join(processes.cmdline(pid))
        mine = state in argv or (marker is not None and marker in argv)
        if not mine and argv.startswith("slurmstepd"):
            # a job step inside a Slurm root shows its files under <root>/<state>/
            mine = any(t.startswith(state + "/") or (state + "/") in t for t in processes.open_files(pid))
        if mine:
            left.append(f"{pid} {argv}")
    return left


def root_mounts(cluster: Minicluster) -> list[str]:
    """Mount points inside the cluster's Slurm root, sorted (none for 22.05). Other clusters on the same
    root mount there too: compare a snapshot taken before ``up`` with one taken after ``down``."""
    if cluster.rooted is None:
        return []
    from hops_slurm.tools.minicluster.roots import mounts_under

    return sorted(mounts_under(cluster.rooted.root))


TEST_USER = "hopsuser"


def ensure_test_user() -> str:
    """A non-root user to own jobs (created if missing; never removed, nothing else touched). A Slurm
    root gets it copied in by ``Minicluster.user_argv``."""
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", TEST_USER], check=True)
    return TEST_USER
