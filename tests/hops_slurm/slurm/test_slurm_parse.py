"""Slurm notation parsers, on strings as Slurm 22.05 prints them."""

from __future__ import annotations

from hops_slurm.slurm.parse import GpuGres, expand_hostlist, expand_indices, job_gpu_allocation, parse_gpu_gres


def test_hostlists() -> None:
    assert expand_hostlist("a100-[1-2,4],v100-1") == ["a100-1", "a100-2", "a100-4", "v100-1"]
    assert expand_hostlist("n[08-10]") == ["n08", "n09", "n10"]
    assert expand_hostlist("(null)") == []
    assert expand_hostlist("solo") == ["solo"]


def test_indices() -> None:
    assert expand_indices("0-2,5") == [0, 1, 2, 5]
    assert expand_indices("N/A") == []


def test_gres_strings() -> None:
    assert parse_gpu_gres("gpu:a100:5(IDX:0-4)") == GpuGres("a100", 5, (0, 1, 2, 3, 4))
    assert parse_gpu_gres("gpu:v100:0(IDX:N/A)") == GpuGres("v100", 0, ())
    assert parse_gpu_gres("gres:gpu:a100:2") == GpuGres("a100", 2, ())
    assert parse_gpu_gres("gres:gpu:4") == GpuGres("", 4, ())
    assert parse_gpu_gres("(null)") is None


def test_allocation_from_scontrol_detail() -> None:
    line = (
        "JobId=12 JobName=x UserId=root(0) JobState=RUNNING NodeList=a100-[1-2] "
        "Nodes=a100-1 CPU_IDs=0 Mem=1000 GRES=gpu:a100:5(IDX:0-4) "
        "Nodes=a100-2 CPU_IDs=0 Mem=1000 GRES=gpu:a100:1(IDX:7) MinCPUsNode=1"
    )
    assert job_gpu_allocation(line) == {"a100-1": (0, 1, 2, 3, 4), "a100-2": (7,)}


def test_scattered_indices_and_other_gres_beside_the_gpus() -> None:
    # Slurm prints an index list with commas inside the parentheses once jobs ended out of order
    assert parse_gpu_gres("gpu:a100:2(IDX:0,3)") == GpuGres("a100", 2, (0, 3))
    assert parse_gpu_gres("gpu:a100:3(IDX:0-1,5),mps:100") == GpuGres("a100", 3, (0, 1, 5))
    assert parse_gpu_gres("mps:100,gpu:v100:3(IDX:0,2-3)") == GpuGres("v100", 3, (0, 2, 3))
    line = ("JobId=12 JobState=RUNNING Nodes=a100-1 CPU_IDs=0 Mem=1000 GRES=gpu:a100:2(IDX:1,3) "
            "Nodes=a100-2 CPU_IDs=0 Mem=1000 GRES=gpu:a100:3(IDX:0,2,7)")
    assert job_gpu_allocation(line) == {"a100-1": (1, 3), "a100-2": (0, 2, 7)}
