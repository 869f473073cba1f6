"""GPU indices that are not one range (``IDX:0,2``) as the live slurmctld reports them, read back by the
CLI backend for jobs (``squeue --json`` gres_detail) and nodes (``sinfo --json`` gres_used).

Slurm hands a job scattered indices once earlier jobs on the node ended out of order; a parser that split
the GRES string at every comma lost them, so a running job looked GPU-less to the engine and its node
looked busier than it was."""

from __future__ import annotations

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.slurm.cli import CliSlurm
from slurm_helpers import wait_for_state, wait_until

pytestmark = pytest.mark.slurm


def _plain(cluster: Minicluster, gpus: int) -> str:
    out = cluster.run(["sbatch", "--parsable", "-p", "profiler", "-w", "a100-1", f"--gres=gpu:a100:{gpus}",
                       "-o", "/dev/null", "--wrap", "sleep 300"])
    return out.stdout.strip().split(";")[0]


def test_scattered_gpu_indices_of_a_job_and_a_node_are_read_back(minicluster: Minicluster, api: CliSlurm) -> None:
    assert not [r for r in api.reservations() if "a100-1" in r.nodes], "a reservation on a100-1 is left over"
    ids = [_plain(minicluster, 1) for _ in range(3)]
    try:
        for job_id in ids:
            wait_for_state(minicluster, job_id, {"RUNNING"})
        jobs = lambda: {j.job_id: j for j in api.jobs()}  # noqa: E731
        held = {i: jobs()[i].gpu_alloc["a100-1"] for i in ids}
        assert sorted(k for idx in held.values() for k in idx) == [0, 1, 2], held
        middle = next(i for i, idx in held.items() if idx == (1,))
        minicluster.run(["scancel", middle])
        node = lambda: next(n for n in api.nodes() if n.name == "a100-1")  # noqa: E731
        wait_until(lambda: len(node().gpus_used) == 2, "the middle GPU freed")
        assert node().gpus_used == (0, 2)  # sinfo says gpu:a100:2(IDX:0,2)
        ids.append(_plain(minicluster, 2))
        wait_for_state(minicluster, ids[-1], {"RUNNING"})
        two = jobs()[ids[-1]]
        assert two.gpu_alloc == {"a100-1": (1, 3)} and two.gpu_config() == {"a100-1": 2}  # gpu:a100:2(IDX:1,3)
        assert node().gpus_used == (0, 1, 2, 3)
    finally:
        minicluster.run(["scancel", *ids], check=False)
