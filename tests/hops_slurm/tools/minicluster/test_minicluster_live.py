"""The minicluster with real daemons: placement by scontrol, idempotent up, crash recovery, clean down."""

from __future__ import annotations

import os
import signal
import time

import pytest

from hops_slurm.tools.minicluster import processes
from hops_slurm.tools.minicluster.cluster import Minicluster
from tests_paths import DATA
from slurm_helpers import job_fields, leftover_processes, load_test_spec, root_mounts, wait_for_state

pytestmark = pytest.mark.slurm


def test_held_gpu_job_runs_exactly_where_placed(minicluster: Minicluster, tmp_path) -> None:
    out = tmp_path / "job.out"
    os.chmod(tmp_path, 0o777)
    job_id = minicluster.run(
        ["sbatch", "--parsable", "-H", "-p", "hops", "--gres=gpu:a100:3", "-o", str(out),
         "--wrap", "echo CVD=$CUDA_VISIBLE_DEVICES; sleep 20"]
    ).stdout.strip().split(";")[0]
    held = job_fields(minicluster, job_id)
    assert held["JobState"] == "PENDING" and held["Reason"] == "JobHeldUser"
    minicluster.run(["scontrol", "update", f"JobId={job_id}", "NodeList=a100-2"])
    minicluster.run(["scontrol", "release", job_id])
    running = wait_for_state(minicluster, job_id, {"RUNNING"})
    assert running["NodeList"] == "a100-2"
    assert running["GRES"] == "gpu:a100:3(IDX:0-2)"
    deadline = time.monotonic() + 10
    while "CVD=" not in (out.read_text() if out.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "CVD=0,1,2" in out.read_text()
    minicluster.run(["scancel", job_id])
    wait_for_state(minicluster, job_id, {"CANCELLED", "COMPLETED"})


def test_up_twice_is_harmless(minicluster: Minicluster) -> None:
    before = {r: d.pid for r, d in minicluster.registry.load().items()}
    status = minicluster.up()
    after = {r: d.pid for r, d in minicluster.registry.load().items()}
    assert before == after
    assert status.up and {n.state for n in status.nodes} <= {"idle", "mixed", "allocated"}


def test_up_restarts_a_crashed_slurmd(minicluster: Minicluster) -> None:
    daemons = minicluster.registry.load()
    victim = daemons["slurmd:v100-2"]
    os.kill(victim.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while processes.is_alive(victim.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not minicluster.status().up
    status = minicluster.up()
    assert status.up
    assert minicluster.registry.load()["slurmd:v100-2"].pid != victim.pid
    assert minicluster.registry.load()["slurmctld"].pid == daemons["slurmctld"].pid


def test_down_after_a_slurmd_crash_leaves_nothing() -> None:
    cluster = Minicluster(load_test_spec(DATA / "minicluster-lifecycle.toml"))
    cluster.down()
    mounts_before = root_mounts(cluster)  # the session's cluster shares the root (and its /proc, /tmp)
    try:
        cluster.up()
        cluster.up()
        marker = "4321.5"
        job_id = cluster.run(["sbatch", "--parsable", "-w", "n2", "--gres=gpu:t4:1", "-o", "/dev/null",
                              "--wrap", f"sleep {marker}"]).stdout.strip()
        wait_for_state(cluster, job_id, {"RUNNING"})
        # crash the slurmd whose job keeps running without it
        os.kill(cluster.registry.load()["slurmd:n2"].pid, signal.SIGKILL)
        time.sleep(0.3)
        assert leftover_processes(cluster.state, marker)  # the job is still there
    finally:
        stopped = cluster.down()
    assert "slurmctld" in stopped and "munged" in stopped
    assert not leftover_processes(cluster.state, marker)
    assert root_mounts(cluster) == mounts_before  # a Slurm root: every bind mount of `up` released
    assert leftover_processes(cluster.state, marker) == []
    assert cluster.down() == []  # a second down is a no-op
