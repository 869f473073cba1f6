"""Reading Slurm 22.05: ``squeue --json`` and ``sinfo --json`` (openapi/v0.0.38), ``scontrol -o show reservation``.

Where it sits: one of the readers :mod:`hops_slurm.slurm.dialect` picks by the Slurm it talks to; turns
22.05's output into the views of :mod:`hops_slurm.slurm.api`. 22.05 has no ``scontrol --json``. Jobs come
only from ``squeue --json`` (its ``gres_detail`` gives each running job's GPU indices per node): the
one-line ``scontrol -o show job`` text is never read, because a job name or comment can imitate its
``Key=Value`` fields. Reservations (which only administrators create) come from ``scontrol -o show
reservation``, parsed against the keys 22.05 prints, in their order. Pure: data in, views out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hops_slurm.slurm.api import ACTIVE_STATES, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import (canonical_tres, expand_hostlist, gpu_allocation, null_text, parse_gpu_gres,
                                    parse_record)

#: What ``meta.plugin.type`` of 22.05's JSON says.
DATA_PARSERS = frozenset({"openapi/v0.0.38"})

#: ``scontrol -o show reservation`` keys, in the order 22.05 prints them (src/api/reservation_info.c).
RESERVATION_KEYS = ("ReservationName", "StartTime", "EndTime", "Duration", "Nodes", "NodeCnt", "CoreCnt", "Features",
                    "PartitionName", "Flags", "NodeName", "CoreIDs", "TRES", "Users", "Groups", "Accounts", "Licenses",
                    "State", "BurstBuffer", "Watts", "MaxStartDelay")


def jobs(data: Mapping[str, Any]) -> list[SlurmJob]:
    return [job(j) for j in data.get("jobs") or []]


def job(j: Mapping[str, Any]) -> SlurmJob:
    nodes = expand_hostlist(null_text(j.get("nodes")))
    state = str(j["job_state"])
    return SlurmJob(
        job_id=str(j["job_id"]),
        name=str(j.get("name") or ""),
        user=str(j.get("user_name") or ""),
        state=state,
        reason=null_text(j.get("state_reason")),
        priority=int(j.get("priority") or 0),
        partition=str(j.get("partition") or ""),
        comment=null_text(j.get("comment")),
        admin_comment=null_text(j.get("admin_comment")),
        submit_time=float(j.get("submit_time") or 0),
        start_time=float(j.get("start_time") or 0),
        end_time=float(j.get("end_time") or 0),
        nodes=tuple(nodes),
        required_nodes=tuple(expand_hostlist(null_text(j.get("required_nodes")))),
        node_count=int(j.get("node_count") or 0),
        tres_per_node=canonical_tres(j.get("tres_per_node") or ""),
        tres_per_job=canonical_tres(j.get("tres_per_job") or ""),
        gpu_alloc=gpu_allocation(nodes, list(j.get("gres_detail") or [])) if state in ACTIVE_STATES else {},
        reservation=null_text(j.get("resv_name")),
        restart_count=int(j.get("restart_cnt") or 0),
    )


def nodes(data: Mapping[str, Any]) -> list[SlurmNode]:
    if "nodes" not in data:
        raise ValueError("no 'nodes' list")
    return [node(n) for n in data["nodes"]]


def node(n: Mapping[str, Any]) -> SlurmNode:
    total = parse_gpu_gres(n.get("gres") or "")
    used = parse_gpu_gres(n.get("gres_used") or "")
    features = n.get("features") or ""
    return SlurmNode(
        name=str(n["name"]),
        state=str(n["state"]).lower(),
        flags=tuple(sorted(str(f) for f in n.get("state_flags") or ())),
        gpu_type=total.gpu_type if total else "",
        gpus_total=total.count if total else 0,
        gpus_used=used.indices if used else (),
        partitions=tuple(n.get("partitions") or ()),
        features=tuple(dict.fromkeys(f for f in (features.split(",") if isinstance(features, str) else features) if f)),
        cpus=int(n.get("cpus") or 0),
        alloc_cpus=int(n.get("alloc_cpus") or 0),
    )


def reservations(text: str) -> list[SlurmReservation]:
    """``scontrol -o show reservation``: one record a line; "No reservations in the system" when none."""
    found = []
    for line in text.splitlines():
        if not line.startswith("ReservationName="):
            continue
        f = parse_record(line, RESERVATION_KEYS)
        found.append(SlurmReservation(
            name=f["ReservationName"],
            nodes=tuple(expand_hostlist(null_text(f.get("Nodes")))),
            users=tuple(u for u in null_text(f.get("Users")).split(",") if u),
            flags=tuple(sorted(x for x in null_text(f.get("Flags")).split(",") if x)),
        ))
    return found
