"""Reading Slurm 23.02 and later: ``scontrol show job|nodes|reservation --json`` (data_parser 0.0.42, 0.0.45).

Where it sits: one of the readers :mod:`hops_slurm.slurm.dialect` picks by the Slurm it talks to; turns the
structured records into the same views of :mod:`hops_slurm.slurm.api` that 22.05's output gives. What
differs from 22.05 (recorded in tests/data/slurm-output/): numbers that may be unset or infinite are
``{"set", "infinite", "number"}`` objects; ``job_state`` and a node's ``state`` are lists of a base state
and flags; TRES requests read ``gres/gpu:...``; reservation flags come as a list. ``scontrol show job`` is
used rather than ``squeue --json``, which from 24.11 on leaves out the jobs that ended (slurmctld still
knows them for MinJobAge, and the engine dates their end from them), and ``scontrol show nodes`` rather
than ``sinfo --json``, which gives groups of nodes, not one record per node. Only the data_parser versions
listed in :data:`DATA_PARSERS` were recorded and checked field by field; no other is read. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hops_slurm.slurm.api import ACTIVE_STATES, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import (canonical_tres, expand_hostlist, gpu_allocation, job_state, node_state,
                                    null_text, parse_gpu_gres, slurm_number)

#: What ``meta.plugin.data_parser`` says: 24.11 and 26.05 (the fields read here are the same in both).
DATA_PARSERS = frozenset({"data_parser/v0.0.42", "data_parser/v0.0.45"})


def _int(value: object) -> int:
    return slurm_number(value) or 0


def jobs(data: Mapping[str, Any]) -> list[SlurmJob]:
    if "jobs" not in data:
        raise ValueError("no 'jobs' list")
    return [job(j) for j in data["jobs"]]


def job(j: Mapping[str, Any]) -> SlurmJob:
    nodes = expand_hostlist(null_text(j.get("nodes")))
    state = job_state(list(j["job_state"]))
    return SlurmJob(
        job_id=str(j["job_id"]),
        name=str(j.get("name") or ""),
        user=str(j.get("user_name") or ""),
        state=state,
        reason=null_text(j.get("state_reason")),
        priority=_int(j.get("priority")),
        partition=str(j.get("partition") or ""),
        comment=null_text(j.get("comment")),
        admin_comment=null_text(j.get("admin_comment")),
        submit_time=float(_int(j.get("submit_time"))),
        start_time=float(_int(j.get("start_time"))),
        end_time=float(_int(j.get("end_time"))),
        nodes=tuple(nodes),
        required_nodes=tuple(expand_hostlist(null_text(j.get("required_nodes")))),
        node_count=_int(j.get("node_count")),
        tres_per_node=canonical_tres(j.get("tres_per_node") or ""),
        tres_per_job=canonical_tres(j.get("tres_per_job") or ""),
        gpu_alloc=gpu_allocation(nodes, list(j.get("gres_detail") or [])) if state in ACTIVE_STATES else {},
        reservation=null_text(j.get("resv_name")),
        restart_count=_int(j.get("restart_cnt")),
    )


def nodes(data: Mapping[str, Any]) -> list[SlurmNode]:
    if "nodes" not in data:
        raise ValueError("no 'nodes' list (sinfo --json gives groups under 'sinfo': read scontrol show nodes --json)")
    return [node(n) for n in data["nodes"]]


def node(n: Mapping[str, Any]) -> SlurmNode:
    total = parse_gpu_gres(n.get("gres") or "")
    used = parse_gpu_gres(n.get("gres_used") or "")
    state, flags = node_state(list(n["state"]))
    return SlurmNode(
        name=str(n["name"]),
        state=state,
        flags=flags,
        gpu_type=total.gpu_type if total else "",
        gpus_total=total.count if total else 0,
        gpus_used=used.indices if used else (),
        partitions=tuple(n.get("partitions") or ()),
        features=tuple(dict.fromkeys(str(f) for f in n.get("features") or () if f)),
        cpus=_int(n.get("cpus")),
        alloc_cpus=_int(n.get("alloc_cpus")),
    )


def reservations(data: Mapping[str, Any]) -> list[SlurmReservation]:
    if "reservations" not in data:
        raise ValueError("no 'reservations' list")
    return [
        SlurmReservation(
            name=str(r["name"]),
            nodes=tuple(expand_hostlist(null_text(r.get("node_list")))),
            users=tuple(u for u in null_text(r.get("users")).split(",") if u),
            flags=tuple(sorted(str(f) for f in r.get("flags") or ())),
        )
        for r in data["reservations"]
    ]
