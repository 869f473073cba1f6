"""Slurm notation parsers, on strings as Slurm 22.05, 24.11 and 26.05 print them."""

from __future__ import annotations

import pytest

from hops_slurm.slurm.parse import (GpuGres, canonical_tres, expand_hostlist, expand_indices, gpu_allocation, job_state,
                                    node_state, parse_gpu_gres, parse_record, slurm_number)


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


def test_allocation_from_gres_detail_in_node_order() -> None:
    nodes = expand_hostlist("a100-[1-2]")
    assert gpu_allocation(nodes, ["gpu:a100:5(IDX:0-4)", "gpu:a100:1(IDX:7)"]) == {"a100-1": (0, 1, 2, 3, 4), "a100-2": (7,)}
    # right after the start Slurm may not list every node yet; a node without GPUs maps to ()
    assert gpu_allocation(nodes, ["gpu:a100:5(IDX:0-4)"]) == {"a100-1": (0, 1, 2, 3, 4)}
    assert gpu_allocation(["c1"], ["mps:100"]) == {"c1": ()}


def test_scattered_indices_and_other_gres_beside_the_gpus() -> None:
    # Slurm prints an index list with commas inside the parentheses once jobs ended out of order
    assert parse_gpu_gres("gpu:a100:2(IDX:0,3)") == GpuGres("a100", 2, (0, 3))
    assert parse_gpu_gres("gpu:a100:3(IDX:0-1,5),mps:100") == GpuGres("a100", 3, (0, 1, 5))
    assert parse_gpu_gres("mps:100,gpu:v100:3(IDX:0,2-3)") == GpuGres("v100", 3, (0, 2, 3))
    assert gpu_allocation(["a100-1", "a100-2"], ["gpu:a100:2(IDX:1,3)", "gpu:a100:3(IDX:0,2,7)"]) == {
        "a100-1": (1, 3), "a100-2": (0, 2, 7)}


def test_numbers_plain_and_as_set_infinite_number_objects() -> None:
    assert slurm_number(7) == 7 and slurm_number(None) is None
    assert slurm_number({"set": True, "infinite": False, "number": 1795416441}) == 1795416441
    assert slurm_number({"set": False, "infinite": False, "number": 0}) is None
    assert slurm_number({"set": True, "infinite": True, "number": 0}) is None
    with pytest.raises(ValueError, match="not a Slurm number"):
        slurm_number("12")


def test_job_state_lists_read_as_the_one_word_22_05_prints() -> None:
    assert job_state(["RUNNING"]) == "RUNNING"
    assert job_state(["PENDING", "REQUEUED"]) == "REQUEUED"
    assert job_state(["COMPLETED", "COMPLETING"]) == "COMPLETING"
    assert job_state(["PENDING", "REQUEUE_HOLD", "REQUEUED"]) == "REQUEUED"  # Slurm's own precedence
    for bad in ([], ["REQUEUED"], ["RUNNING", "PENDING"], ["WAITING"]):
        with pytest.raises(ValueError, match="no single base state"):
            job_state(bad)


def test_node_state_lists_split_into_base_state_and_flags() -> None:
    assert node_state(["MIXED", "RESERVED"]) == ("mixed", ("RESERVED",))
    assert node_state(["IDLE", "DRAIN"]) == ("idle", ("DRAIN",))
    with pytest.raises(ValueError, match="no single base state"):
        node_state(["DRAIN"])


def test_tres_requests_in_the_form_scontrol_update_takes() -> None:
    assert canonical_tres("gres/gpu:a100:1") == "gres:gpu:a100:1"
    assert canonical_tres("gres:gpu:a100:1") == "gres:gpu:a100:1"
    assert canonical_tres("gres/gpu:2,gres/mps:10") == "gres:gpu:2,gres:mps:10"
    assert canonical_tres("(null)") == ""


KEYS = ("ReservationName", "StartTime", "Nodes", "Flags", "Users", "State")


def test_records_are_split_at_the_keys_slurm_prints_in_order() -> None:
    line = "ReservationName=r1 StartTime=2026-11-23T06:47:02 Nodes=a100-[1-2] Flags=OVERLAP,IGNORE_JOBS Users=root State=ACTIVE"
    assert parse_record(line, KEYS) == {"ReservationName": "r1", "StartTime": "2026-11-23T06:47:02",
                                        "Nodes": "a100-[1-2]", "Flags": "OVERLAP,IGNORE_JOBS", "Users": "root",
                                        "State": "ACTIVE"}
    # keys Slurm leaves out are skipped; text in a value naming an earlier or unknown key stays in the value
    f = parse_record("ReservationName=a StartTime=x Nodes=n1 Flags= ReservationName=b Other=c Users=u", KEYS)
    assert f == {"ReservationName": "a", "StartTime": "x", "Nodes": "n1", "Flags": "ReservationName=b Other=c", "Users": "u"}
    with pytest.raises(ValueError, match="not a record"):
        parse_record("No reservations in the system", KEYS)
