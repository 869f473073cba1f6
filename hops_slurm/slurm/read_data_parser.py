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

from hops_slurm.slurm.api import SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import expand_hostlist, job_state, node_state, null_text, slurm_number
from hops_slurm.slurm.read_common import JobCache, job_record, node_record

#: What ``meta.plugin.data_parser`` says: 24.11 and 26.05 (the fields read here are the same in both).
DATA_PARSERS = frozenset({"data_parser/v0.0.42", "data_parser/v0.0.45"})


def _int(value: object) -> int:
    return slurm_number(value) or 0


def jobs(data: Mapping[str, Any], cache: JobCache | None = None) -> list[SlurmJob]:
    if "jobs" not in data:
        raise ValueError("no 'jobs' list")
    return cache.jobs(data["jobs"], job) if cache is not None else [job(j) for j in data["jobs"]]


def job(j: Mapping[str, Any]) -> SlurmJob:
    return job_record(j, state=job_state(list(j["job_state"])), number=_int)


def nodes(data: Mapping[str, Any]) -> list[SlurmNode]:
    if "nodes" not in data:
        raise ValueError("no 'nodes' list (sinfo --json gives groups under 'sinfo': read scontrol show nodes --json)")
    return [node(n) for n in data["nodes"]]


def node(n: Mapping[str, Any]) -> SlurmNode:
    state, flags = node_state(list(n["state"]))
    return node_record(n, state=state, flags=flags, features=n.get("features") or (), number=_int)


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
