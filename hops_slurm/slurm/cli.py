"""The Slurm backend over the client commands of Slurm 22.05 (``squeue/sinfo --json``, ``scontrol``).

Where it sits: implements :class:`hops_slurm.slurm.api.SlurmApi` for the engine and the enactment
(:mod:`hops_slurm.slurm.enact`). Commands are run as argv lists (never through a shell) with the given
environment (``SLURM_CONF``); a failure raises :class:`SlurmCommandError` naming the command and
Slurm's message. ``squeue --json`` ignores ``-j``/``-t`` in 22.05, so filtering happens here.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Mapping
from typing import Any

from hops_slurm.slurm.api import SlurmCommandError, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import expand_hostlist, job_gpu_allocation, parse_gpu_gres, parse_oneliner

log = logging.getLogger(__name__)

_INVALID_JOB = "Invalid job id specified"


class CliSlurm:
    """:class:`SlurmApi` over Slurm's command-line clients. ``env``: the environment (must carry SLURM_CONF
    unless the site's default config is meant); ``timeout``: seconds per command."""

    name = "cli"

    def __init__(self, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
        self.env = dict(env) if env is not None else None
        self.timeout = timeout

    # ----- running commands -----------------------------------------------------------------------
    def _run(self, argv: list[str]) -> str:
        log.debug("slurm: %s", argv)
        try:
            proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=self.timeout, check=False)
        except FileNotFoundError as exc:
            raise SlurmCommandError(argv, 127, f"{argv[0]} not found: install the Slurm client commands") from exc
        except subprocess.TimeoutExpired as exc:
            raise SlurmCommandError(argv, 124, f"no answer within {self.timeout:g} s: is slurmctld up?") from exc
        if proc.returncode != 0:
            raise SlurmCommandError(argv, proc.returncode, proc.stderr or proc.stdout)
        return proc.stdout

    def _json(self, argv: list[str]) -> dict[str, Any]:
        out = self._run(argv)
        try:
            data = json.loads(out)
        except json.JSONDecodeError as exc:
            raise SlurmCommandError(argv, 0, f"output is not JSON: {out[:200]!r}") from exc
        errors = data.get("errors") or []
        if errors:
            raise SlurmCommandError(argv, 0, "; ".join(str(e.get("description") or e) for e in errors))
        return data

    # ----- reading --------------------------------------------------------------------------------
    def jobs(self) -> list[SlurmJob]:
        data = self._json(["squeue", "--json"])
        return [_job_from_json(j) for j in data.get("jobs", [])]

    def job(self, job_id: str) -> SlurmJob | None:
        listed = next((j for j in self.jobs() if j.job_id == str(job_id)), None)
        if listed is None:
            return None
        try:
            line = self._run(["scontrol", "-o", "-d", "show", "job", str(job_id)])
        except SlurmCommandError as exc:
            if _INVALID_JOB in exc.slurm_message:
                return None
            raise
        alloc = job_gpu_allocation(line) if listed.active else {}
        fields = parse_oneliner(line)
        return listed.model_copy(update={"gpu_alloc": alloc, "reservation": _null(fields.get("Reservation", listed.reservation))})

    def nodes(self) -> list[SlurmNode]:
        data = self._json(["sinfo", "--json"])
        return [_node_from_json(n) for n in data.get("nodes", [])]

    def reservations(self) -> list[SlurmReservation]:
        out = self._run(["scontrol", "-o", "show", "reservation"])
        found = []
        for line in out.splitlines():
            if not line.startswith("ReservationName="):
                continue  # "No reservations in the system"
            f = parse_oneliner(line)
            found.append(
                SlurmReservation(
                    name=f["ReservationName"],
                    nodes=tuple(expand_hostlist(_null(f.get("Nodes", "")))),
                    users=tuple(u for u in _null(f.get("Users", "")).split(",") if u),
                    flags=tuple(x for x in _null(f.get("Flags", "")).split(",") if x),
                )
            )
        return found

    # ----- acting ---------------------------------------------------------------------------------
    def hold(self, job_id: str) -> None:
        self._run(["scontrol", "hold", str(job_id)])

    def release(self, job_id: str) -> None:
        self._run(["scontrol", "release", str(job_id)])

    def requeue_hold(self, job_id: str) -> None:
        self._run(["scontrol", "requeuehold", str(job_id)])

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        if not fields:
            return
        self._run(["scontrol", "update", f"JobId={job_id}", *(f"{k}={v}" for k, v in fields.items())])

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        argv = ["scontrol", "create", "reservation", f"ReservationName={name}", f"Nodes={','.join(nodes)}",
                f"Users={','.join(users)}", "StartTime=now", "Duration=UNLIMITED"]
        if flags:
            argv.append(f"Flags={','.join(flags)}")
        self._run(argv)

    def delete_reservation(self, name: str) -> None:
        self._run(["scontrol", "delete", f"ReservationName={name}"])

    def cancel(self, job_id: str) -> None:
        self._run(["scancel", str(job_id)])


def _null(value: str | None) -> str:
    return "" if value in (None, "(null)", "None", "N/A") else str(value)


def _job_from_json(j: dict[str, Any]) -> SlurmJob:
    nodes = expand_hostlist(j.get("nodes") or "")
    state = str(j.get("job_state") or "")
    alloc: dict[str, tuple[int, ...]] = {}
    if state in ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"):
        # gres_detail has one entry per allocated node, in expanded node order (22.05)
        for node, detail in zip(nodes, j.get("gres_detail") or [], strict=False):
            gres = parse_gpu_gres(detail)
            alloc[node] = gres.indices if gres else ()
    return SlurmJob(
        job_id=str(j["job_id"]),
        name=str(j.get("name") or ""),
        user=str(j.get("user_name") or ""),
        state=state,
        reason=_null(j.get("state_reason")),
        priority=int(j.get("priority") or 0),
        partition=str(j.get("partition") or ""),
        comment=_null(j.get("comment")),
        admin_comment=_null(j.get("admin_comment")),
        submit_time=float(j.get("submit_time") or 0),
        start_time=float(j.get("start_time") or 0),
        end_time=float(j.get("end_time") or 0),
        nodes=tuple(nodes),
        required_nodes=tuple(expand_hostlist(_null(j.get("required_nodes")))),
        node_count=int(j.get("node_count") or 0),
        tres_per_node=_null(j.get("tres_per_node")),
        tres_per_job=_null(j.get("tres_per_job")),
        gpu_alloc=alloc,
        reservation=_null(j.get("resv_name")),
        restart_count=int(j.get("restart_cnt") or 0),
    )


def _node_from_json(n: dict[str, Any]) -> SlurmNode:
    total = parse_gpu_gres(n.get("gres") or "")
    used = parse_gpu_gres(n.get("gres_used") or "")
    features = n.get("features") or ""
    return SlurmNode(
        name=str(n["name"]),
        state=str(n.get("state") or "").lower(),
        flags=tuple(str(f) for f in n.get("state_flags") or ()),
        gpu_type=total.gpu_type if total else "",
        gpus_total=total.count if total else 0,
        gpus_used=used.indices if used else (),
        partitions=tuple(n.get("partitions") or ()),
        features=tuple(dict.fromkeys(f for f in (features.split(",") if isinstance(features, str) else features) if f)),
        cpus=int(n.get("cpus") or 0),
        alloc_cpus=int(n.get("alloc_cpus") or 0),
    )
