"""The Slurm backend over pyslurm (the 25.11 API), for sites whose pyslurm matches their Slurm. UNTESTED.

Where it sits: a second implementation of :class:`hops_slurm.slurm.api.SlurmApi`, meant to be
interchangeable with :class:`hops_slurm.slurm.cli.CliSlurm` under :mod:`hops_slurm.slurm.enact`. Optional:
pyslurm is imported only when this backend is constructed.

Status, stated plainly: this code has never run against a live Slurm, here or anywhere we know of.
pyslurm on PyPI is 25.11.x only (plus 17.x/18.x), and its build refuses any Slurm but 25.11 ("Slurm version
mismatch"). The releases this project runs and tests are 22.05 (Debian 12), 24.11 (Debian 13) and 26.05
(Debian sid); no Debian suite ships 25.11 (backports and experimental included), so pyslurm cannot be
built or exercised here. The calls below follow pyslurm 25.11's documented classes (``Jobs.load``,
``Job.hold/release/requeue/modify``, ``JobSubmitDescription``, ``Nodes.load``, ``Reservation.create/
delete``) and were not checked against a running daemon; per-node GPU indices of nodes are not available
through it (stand-in indices, see :meth:`PyslurmSlurm.nodes`). The contract suite
(tests/hops_slurm/slurm/test_contract.py) runs it wherever ``import pyslurm`` works and otherwise reports
the environmental reason. Use :class:`CliSlurm`, which is tested on every supported release.
"""

from __future__ import annotations

import time
from typing import Any

from hops_slurm.slurm.api import ProbeJob, SlurmError, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import expand_hostlist, gpu_allocation, parse_gpu_gres


class PyslurmSlurm:
    """:class:`SlurmApi` over pyslurm 25.11 (talks to slurmctld through libslurm, no subprocesses)."""

    name = "pyslurm"

    def __init__(self) -> None:
        try:
            import pyslurm  # type: ignore[import-not-found]
        except ImportError as exc:
            raise SlurmError(
                "the pyslurm backend needs pyslurm built against this site's Slurm (pyslurm 25.11 needs Slurm 25.11); "
                "use the CLI backend (CliSlurm) otherwise"
            ) from exc
        self.ps: Any = pyslurm

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self.ps.RPCError as exc:  # pyslurm's error type carries Slurm's message
            raise SlurmError(f"pyslurm {what} failed: {exc}") from exc

    # ----- reading --------------------------------------------------------------------------------
    def jobs(self) -> list[SlurmJob]:
        loaded = self._call("Jobs.load", self.ps.Jobs.load)
        return [self._job(j) for j in loaded.values()]

    def job(self, job_id: str) -> SlurmJob | None:
        try:
            j = self.ps.Job.load(int(job_id))
        except self.ps.RPCError:
            return None
        return self._job(j)

    def _job(self, j: Any) -> SlurmJob:
        state = str(j.state or "")
        nodes = expand_hostlist(j.allocated_nodes or "") if getattr(j, "allocated_nodes", None) else []
        # pyslurm exposes per-node GRES indices only through the detail strings, one per node in node order
        detail = list(getattr(j, "gres_detail", None) or [])
        alloc = gpu_allocation(nodes, detail) if state == "RUNNING" else {}
        return SlurmJob(
            job_id=str(j.id), name=str(j.name or ""), user=str(j.user_name or ""), state=state,
            reason=str(j.state_reason or ""), priority=int(j.priority or 0), partition=str(j.partition or ""),
            comment=str(j.comment or ""), admin_comment=str(j.admin_comment or ""),
            submit_time=float(j.submit_time or 0), start_time=float(j.start_time or 0), end_time=float(j.end_time or 0), nodes=tuple(nodes),
            required_nodes=tuple(expand_hostlist(j.required_nodes or "")), node_count=int(j.num_nodes or 0),
            tres_per_node=str(j.gres_per_node or ""), tres_per_job=str(getattr(j, "gpus", "") or ""),
            gpu_alloc=alloc, reservation=str(j.reservation or ""), restart_count=int(j.requeue_count or 0),
        )

    def nodes(self) -> list[SlurmNode]:
        loaded = self._call("Nodes.load", self.ps.Nodes.load)
        out = []
        for n in loaded.values():
            total = parse_gpu_gres(",".join(f"{k}:{v}" for k, v in (n.configured_gres or {}).items()))
            used = parse_gpu_gres(",".join(f"{k}:{v}" for k, v in (n.allocated_gres or {}).items()))
            out.append(SlurmNode(
                name=n.name, state=str(n.state or "").lower(), gpu_type=total.gpu_type if total else "",
                gpus_total=total.count if total else 0,
                # pyslurm reports allocated GPU counts, not indices: stand-in indices 0..used-1
                gpus_used=tuple(range(used.count)) if used else (),
                partitions=tuple(n.partitions or ()), features=tuple(n.available_features or ()),
                cpus=int(n.total_cpus or 0), alloc_cpus=int(n.allocated_cpus or 0),
            ))
        return out

    def reservations(self) -> list[SlurmReservation]:
        loaded = self._call("Reservations.load", self.ps.Reservations.load)
        return [SlurmReservation(name=r.name, nodes=tuple(expand_hostlist(r.nodes or "")), users=tuple(r.users or ()),
                                 flags=tuple(str(f) for f in (r.flags or ()))) for r in loaded.values()]

    # ----- acting ---------------------------------------------------------------------------------
    def hold(self, job_id: str) -> None:
        self._call("Job.hold", self.ps.Job(int(job_id)).hold)

    def release(self, job_id: str) -> None:
        self._call("Job.release", self.ps.Job(int(job_id)).release)

    def requeue_hold(self, job_id: str) -> None:
        # pyslurm has no "Incomplete" flag: an ended job is left alone by reading it first (a job that ends
        # between the read and the requeue is the one case the CLI backend's flag covers and this does not)
        job = self.job(job_id)
        if job is not None and not job.active:
            return
        self._call("Job.requeue", self.ps.Job(int(job_id)).requeue, hold=True)

    def signal_job(self, job_id: str, signal: str) -> None:
        self._call("Job.send_signal", self.ps.Job(int(job_id)).send_signal, f"SIG{signal}", steps="batch")

    _FIELDS = {"NodeList": "required_nodes", "NumNodes": "nodes", "TresPerNode": "gres_per_node", "TresPerJob": "gpus",
               "Reservation": "reservations", "StartTime": "begin_time", "Comment": "comment", "AdminComment": "admin_comment"}

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        kwargs: dict[str, Any] = {}
        for key, value in fields.items():
            if key not in self._FIELDS:
                raise SlurmError(f"pyslurm backend: updating {key} is not supported")
            kwargs[self._FIELDS[key]] = value
        desc = self.ps.JobSubmitDescription(**kwargs)
        self._call("Job.modify", self.ps.Job(int(job_id)).modify, desc)

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        flag_value = 0
        for f in flags:
            flag_value |= getattr(self.ps.ReservationFlags, f)
        resv = self.ps.Reservation(name=name, nodes=",".join(nodes), users=users, start_time="now",
                                   duration="UNLIMITED", flags=flag_value)
        self._call("Reservation.create", resv.create)

    def delete_reservation(self, name: str) -> None:
        self._call("Reservation.delete", self.ps.Reservation(name).delete)

    def cancel(self, job_id: str) -> None:
        self._call("Job.cancel", self.ps.Job(int(job_id)).cancel)

    def submit_probe(self, probe: ProbeJob) -> str:
        """Probes go through ``sbatch`` (the owner's uid and gid, the script on standard input), as with
        the CLI backend: pyslurm 25.11's job submission is not used (untested here)."""
        from hops_slurm.slurm.cli import CliSlurm

        return CliSlurm().submit_probe(probe)

    def now(self) -> float:
        return time.time()
