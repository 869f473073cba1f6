"""What every Slurm release's JSON has in common: one job record and one node record -> the views of
:mod:`hops_slurm.slurm.api`.

Where it sits: the readers of 22.05 (:mod:`hops_slurm.slurm.read_v0038`, openapi/v0.0.38) and of 23.02 and
later (:mod:`hops_slurm.slurm.read_data_parser`, data_parser 0.0.42/0.0.45) name the same fields; they
differ in how a number is written (plain, or a ``{"set", "infinite", "number"}`` object), how a state is
written (a word, or a list of a base state and flags) and how node features come (a comma list, or a
list). Each reader passes its own ``number`` and the state it read; the field mapping is here, once. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hops_slurm.slurm.api import ACTIVE_STATES, SlurmJob, SlurmNode
from hops_slurm.slurm.parse import canonical_tres, expand_hostlist, gpu_allocation, null_text, parse_gpu_gres


def job_record(j: Mapping[str, Any], *, state: str, number: Callable[[object], int]) -> SlurmJob:
    """One job of ``squeue --json`` (22.05) or ``scontrol show job --json`` (23.02+); ``state``: its base state."""
    nodes = expand_hostlist(null_text(j.get("nodes")))
    return SlurmJob(
        job_id=str(j["job_id"]),
        name=str(j.get("name") or ""),
        user=str(j.get("user_name") or ""),
        state=state,
        reason=null_text(j.get("state_reason")),
        priority=number(j.get("priority")),
        partition=str(j.get("partition") or ""),
        account=null_text(j.get("account")),
        qos=null_text(j.get("qos")),
        comment=null_text(j.get("comment")),
        admin_comment=null_text(j.get("admin_comment")),
        submit_time=float(number(j.get("submit_time"))),
        start_time=float(number(j.get("start_time"))),
        end_time=float(number(j.get("end_time"))),
        nodes=tuple(nodes),
        required_nodes=tuple(expand_hostlist(null_text(j.get("required_nodes")))),
        node_count=number(j.get("node_count")),
        tres_per_node=canonical_tres(j.get("tres_per_node") or ""),
        tres_per_job=canonical_tres(j.get("tres_per_job") or ""),
        gpu_alloc=gpu_allocation(nodes, list(j.get("gres_detail") or [])) if state in ACTIVE_STATES else {},
        reservation=null_text(j.get("resv_name")),
        restart_count=number(j.get("restart_cnt")),
        time_limit=_time_limit(number(j.get("time_limit"))),
        eligible_time=float(number(j.get("eligible_time"))),
        dependency=null_text(j.get("dependency"))[:MAX_DEPENDENCY],
    )


#: every field of a job record :func:`job_record` reads: a record with the same values gives the same job
JOB_FIELDS = ("job_id", "name", "user_name", "job_state", "state_reason", "priority", "partition", "account", "qos",
              "comment", "admin_comment", "submit_time", "start_time", "end_time", "nodes", "required_nodes",
              "node_count", "tres_per_node", "tres_per_job", "gres_detail", "resv_name", "restart_cnt", "time_limit",
              "eligible_time", "dependency")


def record_key(j: Mapping[str, Any]) -> tuple[object, ...]:
    """The values of :data:`JOB_FIELDS` in one job record, the job id first (compared with ``==``: lists and
    objects compare by value)."""
    return tuple(map(j.get, JOB_FIELDS))


class JobCache:
    """The jobs of the last whole listing, each with the values of its record: a job whose record is
    unchanged since (every field :func:`job_record` reads: :data:`JOB_FIELDS`) is the same job, not read
    again. What makes a refresh of 10,000 pending jobs cost little more than the JSON decoding when few
    changed (issue 37). Holds only the jobs of the last listing it read."""

    def __init__(self) -> None:
        self._seen: dict[object, tuple[tuple[object, ...], SlurmJob]] = {}
        self.reused = 0  # jobs of the last listing taken from the cache

    def jobs(self, records: Iterable[Mapping[str, Any]], read: Callable[[Mapping[str, Any]], SlurmJob]) -> list[SlurmJob]:
        """The jobs of ``records`` (a whole listing), each read with ``read`` unless unchanged."""
        seen, fresh, out, reused = self._seen, {}, [], 0
        for j in records:
            key = record_key(j)
            if not isinstance(key[0], (int, str)):  # not an id Slurm writes: read, never cached
                out.append(read(j))
                continue
            hit = seen.get(key[0])
            if hit is not None and hit[0] == key:
                fresh[key[0]] = hit  # the entry kept: the new key is garbage at once, not one more long-lived tuple
                out.append(hit[1])
                reused += 1
                continue
            job = read(j)
            fresh[key[0]] = (key, job)
            out.append(job)
        self._seen, self.reused = fresh, reused
        return out


#: characters of a job's dependency text kept (whether one is unmet is all the engine asks)
MAX_DEPENDENCY = 1024


#: a time limit in minutes at or over this is Slurm's "none" (NO_VAL, INFINITE) or not a limit at all
_NO_LIMIT_MINUTES = 100_000_000


def _time_limit(minutes: int) -> float:
    """Seconds of a job's ``time_limit`` (minutes in every release's JSON); 0.0 for none or unknown."""
    return 60.0 * minutes if 0 < minutes < _NO_LIMIT_MINUTES else 0.0


def node_record(n: Mapping[str, Any], *, state: str, flags: Iterable[str], features: Iterable[object],
                number: Callable[[object], int]) -> SlurmNode:
    """One node of ``sinfo --json`` (22.05) or ``scontrol show nodes --json`` (23.02+)."""
    total = parse_gpu_gres(n.get("gres") or "")
    used = parse_gpu_gres(n.get("gres_used") or "")
    return SlurmNode(
        name=str(n["name"]),
        state=state,
        flags=tuple(flags),
        gpu_type=total.gpu_type if total else "",
        gpus_total=total.count if total else 0,
        gpus_used=used.indices if used else (),
        partitions=tuple(n.get("partitions") or ()),
        features=tuple(dict.fromkeys(str(f) for f in features if f)),
        cpus=number(n.get("cpus")),
        alloc_cpus=number(n.get("alloc_cpus")),
    )
