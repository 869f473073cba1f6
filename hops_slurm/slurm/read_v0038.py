"""Reading Slurm 22.05: ``squeue --json`` and ``sinfo --json`` (openapi/v0.0.38), ``scontrol -o show reservation``.

Where it sits: one of the readers :mod:`hops_slurm.slurm.dialect` picks by the Slurm it talks to; turns
22.05's output into the views of :mod:`hops_slurm.slurm.api`. 22.05 has no ``scontrol --json``. Jobs come
from ``squeue --json`` (its ``gres_detail`` gives each running job's GPU indices per node) or from the same
fields in squeue's text, split on a separator no user can write (:mod:`hops_slurm.slurm.read_text`, read
into these records); the one-line ``scontrol -o show job`` text is never read, because a job name or
comment can imitate its ``Key=Value`` fields. Reservations (which only administrators create) come from ``scontrol -o show
reservation``, parsed against the keys 22.05 prints, in their order. Pure: data in, views out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hops_slurm.slurm.api import SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import bounded_number, expand_hostlist, null_text, parse_record
from hops_slurm.slurm.read_common import JobCache, job_record, node_record

#: What ``meta.plugin.type`` of 22.05's JSON says.
DATA_PARSERS = frozenset({"openapi/v0.0.38"})

#: ``scontrol -o show reservation`` keys, in the order 22.05 prints them (src/api/reservation_info.c).
RESERVATION_KEYS = ("ReservationName", "StartTime", "EndTime", "Duration", "Nodes", "NodeCnt", "CoreCnt", "Features",
                    "PartitionName", "Flags", "NodeName", "CoreIDs", "TRES", "Users", "Groups", "Accounts", "Licenses",
                    "State", "BurstBuffer", "Watts", "MaxStartDelay")


def _number(value: object) -> int:
    if isinstance(value, float):
        return bounded_number(value) or 0  # not finite, or wider than Slurm prints: unset
    return int(value or 0)  # type: ignore[call-overload]


def jobs(data: Mapping[str, Any], cache: JobCache | None = None) -> list[SlurmJob]:
    records = data.get("jobs") or []
    return cache.jobs(records, job) if cache is not None else [job(j) for j in records]


def job(j: Mapping[str, Any]) -> SlurmJob:
    return job_record(j, state=str(j["job_state"]), number=_number)


def nodes(data: Mapping[str, Any]) -> list[SlurmNode]:
    if "nodes" not in data:
        raise ValueError("no 'nodes' list")
    return [node(n) for n in data["nodes"]]


def node(n: Mapping[str, Any]) -> SlurmNode:
    features = n.get("features") or ""
    return node_record(n, state=str(n["state"]).lower(), flags=sorted(str(f) for f in n.get("state_flags") or ()),
                       features=features.split(",") if isinstance(features, str) else features, number=_number)


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
