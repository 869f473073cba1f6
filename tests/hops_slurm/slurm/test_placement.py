"""Placement arithmetic of the enactment (pure): field sets, Slurm's greedy split, realisability, job env files."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.slurm.api import SlurmNode
from hops_slurm.slurm.enact import (
    PlacementError,
    greedy_split,
    hops_job_env,
    job_reservation,
    placement_fields,
    read_job_env,
    realisable,
    reservation_job,
    write_job_env,
)

ORDER = ["a100-1", "a100-2", "v100-1", "v100-2"]
NODES = {
    "a100-1": SlurmNode(name="a100-1", state="idle", gpu_type="a100", gpus_total=8),
    "a100-2": SlurmNode(name="a100-2", state="idle", gpu_type="a100", gpus_total=8),
    "v100-1": SlurmNode(name="v100-1", state="idle", gpu_type="v100", gpus_total=4),
    "v100-2": SlurmNode(name="v100-2", state="idle", gpu_type="v100", gpus_total=4),
}
IDLE = {"a100-1": 8, "a100-2": 8, "v100-1": 4, "v100-2": 4}


def test_even_split_uses_per_node_request() -> None:
    assert placement_fields({"a100-2": 2, "a100-1": 2}, NODES, ORDER) == {
        "TresPerJob": "", "TresPerNode": "gres:gpu:2", "NumNodes": "2", "NodeList": "a100-1,a100-2",
    }


def test_uneven_split_uses_per_job_request() -> None:
    assert placement_fields({"v100-1": 3, "v100-2": 1}, NODES, ORDER) == {
        "TresPerJob": "gres:gpu:4", "TresPerNode": "", "NumNodes": "2", "NodeList": "v100-1,v100-2",
    }


def test_requests_are_untyped_and_zero_entries_dropped() -> None:
    f = placement_fields({"a100-1": 1, "v100-2": 1, "v100-1": 0}, NODES, ORDER)
    assert f["TresPerNode"] == "gres:gpu:1" and f["NodeList"] == "a100-1,v100-2" and f["NumNodes"] == "2"


def test_impossible_placements_are_refused() -> None:
    with pytest.raises(PlacementError, match="v100-1 has 4 GPUs, the plan gives it 5"):
        placement_fields({"v100-1": 5}, NODES, ORDER)
    with pytest.raises(PlacementError, match="does not know: x9"):
        placement_fields({"x9": 1}, NODES, ORDER)
    with pytest.raises(PlacementError, match="empty"):
        placement_fields({}, NODES, ORDER)


def test_greedy_split_matches_observed_slurm() -> None:
    # observed on Slurm 22.05: --gpus=6 over two idle 8-GPU nodes -> 5+1; --gpus=4 over two idle 4-GPU -> 3+1
    assert greedy_split(6, ["a100-1", "a100-2"], IDLE) == {"a100-1": 5, "a100-2": 1}
    assert greedy_split(4, ["v100-1", "v100-2"], IDLE) == {"v100-1": 3, "v100-2": 1}
    # free GPUs force the split: 2 free on the first node -> 2+4
    assert greedy_split(6, ["a100-1", "a100-2"], {"a100-1": 2, "a100-2": 8}) == {"a100-1": 2, "a100-2": 4}
    assert greedy_split(9, ["v100-1", "v100-2"], IDLE) is None


def test_realisable() -> None:
    assert realisable({"a100-1": 5, "a100-2": 1}, IDLE, ORDER)
    assert not realisable({"a100-1": 1, "a100-2": 5}, IDLE, ORDER)  # Slurm would give 5+1
    assert realisable({"a100-1": 1, "a100-2": 5}, {"a100-1": 1, "a100-2": 8}, ORDER)  # forced by free GPUs
    assert realisable({"a100-1": 4, "a100-2": 4}, IDLE, ORDER)
    assert realisable({"v100-1": 4}, {"v100-1": 3}, ORDER)  # even: exact when it starts, waits meanwhile
    assert not realisable({"v100-1": 3, "v100-2": 1}, {"v100-1": 2, "v100-2": 4}, ORDER)  # uneven needs them free


def test_reservation_names_round_trip() -> None:
    assert reservation_job(job_reservation("123")) == "123"
    assert reservation_job("hops-gate") is None and reservation_job("maint") is None


def test_job_env_file(tmp_path: Path) -> None:
    path = write_job_env(tmp_path / "env", "42", {"HOPS_GPUS": "6", "HOPS_LR": "0.1", "HOPS_NOTE": "a b'c"})
    assert path.stat().st_mode & 0o777 == 0o644
    assert read_job_env(tmp_path / "env", "42") == {"HOPS_GPUS": "6", "HOPS_LR": "0.1", "HOPS_NOTE": "a b'c"}


def test_hops_job_env_scales_the_learning_rate() -> None:
    linear = "gpus=1,2,4,8 samples=1000000 batch-size=32 model=resnet50 lr=0.1@8 lr-scale=linear"
    where = {"HOPS_PLACEMENT": "a100-1:2,a100-2:2", "HOPS_CONFIG": "a100-1:2,a100-2:2"}
    assert hops_job_env(linear, {"a100-1": 2, "a100-2": 2}) == {"HOPS_GPUS": "4", "HOPS_LR": "0.05", **where}
    sqrt = "gpus=1,2,4,8 samples=1000000 batch-size=32 model=resnet50 lr=0.1@8 lr-scale=sqrt"
    assert hops_job_env(sqrt, {"v100-1": 2}, {"HOPS_RECORDER": "x"}, placed=False) == {
        "HOPS_GPUS": "2", "HOPS_LR": "0.05", "HOPS_RECORDER": "x"}
    assert hops_job_env("gpus=1,2 samples=10 batch-size=1 model=m", {"v100-1": 1}, placed=False) == {"HOPS_GPUS": "1"}


def test_the_placement_variable_and_its_old_name_say_the_same_and_extras_come_last() -> None:
    env = hops_job_env(None, {"v100-2": 3, "v100-1": 1}, {"HOPS_GPU_TYPE": "v100"})
    assert list(env) == ["HOPS_GPUS", "HOPS_PLACEMENT", "HOPS_CONFIG", "HOPS_GPU_TYPE"]
    assert env["HOPS_PLACEMENT"] == env["HOPS_CONFIG"] == "v100-2:3,v100-1:1" and env["HOPS_GPUS"] == "4"


def test_an_env_value_with_line_breaks_of_any_kind_reads_back_whole(tmp_path: Path) -> None:
    """A value the job's owner chose (its name, say) may hold \\n, \\r or U+2028: the file is read as the
    shell reads it, one quoted text, so each value comes back whole (a line-by-line reading cut it and
    stopped the simulated engine's planning)."""
    values = {"HOPS_GPUS": "2", "HOPS_NAME": "a\nb\rc\u2028d'e\"f", "HOPS_EMPTY": ""}
    write_job_env(tmp_path / "jobs", "7", values)
    assert read_job_env(tmp_path / "jobs", "7") == values
