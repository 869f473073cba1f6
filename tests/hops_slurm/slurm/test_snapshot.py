"""Cluster views built from Slurm's node and job records (pure)."""

from __future__ import annotations

from hops_slurm.slurm.api import SlurmJob, SlurmNode
from hops_slurm.slurm.snapshot import cluster_view, current_configs

HOPS = "hops:gpus=1,2 samples=10 batch-size=1 model=m"
NODES = [
    SlurmNode(name="a100-1", state="mixed", gpu_type="a100", gpus_total=8, gpus_used=(0, 1, 2, 3, 4), partitions=("hops",),
              features=("a100", "a100-dgx")),
    SlurmNode(name="v100-1", state="mixed", gpu_type="v100", gpus_total=4, gpus_used=(0,), partitions=("hops",), features=("v100",)),
    SlurmNode(name="v100-2", state="idle", flags=("DRAIN",), gpu_type="v100", gpus_total=4, partitions=("hops",)),
    SlurmNode(name="cpu-1", state="idle", partitions=("hops",)),
    SlurmNode(name="p-1", state="idle", gpu_type="v100", gpus_total=4, partitions=("profiler",)),
]
JOBS = [
    # a Hops job on a100-1 (3 GPUs) and v100-1 (1); a non-Hops job holds the other 2 GPUs of a100-1
    SlurmJob(job_id="1", state="RUNNING", admin_comment=HOPS, gpu_alloc={"a100-1": (0, 1, 2), "v100-1": (0,)}),
    SlurmJob(job_id="2", state="RUNNING", gpu_alloc={"a100-1": (3, 4)}),
    SlurmJob(job_id="3", state="PENDING", admin_comment=HOPS),
]


def test_round_view_counts_running_hops_gpus_as_free() -> None:
    view = cluster_view(NODES, JOBS, fragment=False)
    assert [(n.name, n.server_class, n.total_gpus, n.free_gpus) for n in view.nodes] == [
        ("a100-1", "a100-dgx", 8, 6),  # 8 - 2 held by the non-Hops job
        ("v100-1", "v100", 4, 4),
    ]


def test_fragment_view_counts_only_idle_gpus() -> None:
    view = cluster_view(NODES, JOBS, fragment=True)
    assert [(n.name, n.free_gpus) for n in view.nodes] == [("a100-1", 3), ("v100-1", 3)]
    assert [n.name for n in cluster_view(NODES, JOBS, fragment=True, partition=None).nodes] == ["a100-1", "v100-1", "p-1"]


def test_current_configs() -> None:
    assert {k: dict(v) for k, v in current_configs(JOBS).items()} == {"1": {"a100-1": 3, "v100-1": 1}}
