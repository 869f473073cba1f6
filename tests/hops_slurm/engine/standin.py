"""A stand-in for slurmctld in the engine's unit tests: an in-memory :class:`hops_slurm.slurm.api.SlurmApi`.

Named a stand-in because it is one: it keeps jobs, nodes and reservations in dicts and records every
operation, but never starts a job (a released job stays pending). The live tests
(``test_engine_live.py``, ``test_engine_faults_live.py``) run the same engine against real daemons;
these unit tests only ask what the engine does around one bad job, without a cluster.
"""

from __future__ import annotations

from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.slurm.api import SlurmCommandError, SlurmJob, SlurmNode, SlurmReservation


class StandInSlurm:
    name = "stand-in"

    def __init__(self, gpus_per_node: int = 4, nodes: int = 2) -> None:
        self._jobs: dict[str, SlurmJob] = {}
        self._nodes = [SlurmNode(name=f"n{i}", state="idle", gpu_type="a100", gpus_total=gpus_per_node,
                                 partitions=("hops",), cpus=16) for i in range(1, nodes + 1)]
        self._resv: dict[str, SlurmReservation] = {}
        self.calls: list[tuple[str, ...]] = []
        self.fail_every = 0  # > 0: every n-th mutating call fails (fault injection)
        self.faults = 0
        self._count = 0

    # ----- test helpers -------------------------------------------------------------------------
    def submit(self, job_id: str, directives: str, user: str = "root") -> None:
        self._jobs[job_id] = SlurmJob(job_id=job_id, name=f"job{job_id}", user=user, state="PENDING",
                                      reason="JobHeldUser", priority=0, partition="hops",
                                      admin_comment=COMMENT_PREFIX + directives, submit_time=1000.0)

    def get(self, job_id: str) -> SlurmJob:
        return self._jobs[job_id]

    def _change(self, job_id: str, **update: object) -> None:
        self._jobs[job_id] = self._jobs[job_id].model_copy(update=update)

    def _mutating(self, *call: str) -> None:
        self.calls.append(call)
        self._count += 1
        if self.fail_every and self._count % self.fail_every == 0:
            self.faults += 1
            raise SlurmCommandError(list(call), 1, "stand-in fault")

    # ----- SlurmApi --------------------------------------------------------------------------------
    def jobs(self) -> list[SlurmJob]:
        return list(self._jobs.values())

    def job(self, job_id: str) -> SlurmJob | None:
        return self._jobs.get(job_id)

    def nodes(self) -> list[SlurmNode]:
        return list(self._nodes)

    def reservations(self) -> list[SlurmReservation]:
        return list(self._resv.values())

    def hold(self, job_id: str) -> None:
        self._mutating("hold", job_id)
        self._change(job_id, reason="JobHeldAdmin", priority=0)

    def release(self, job_id: str) -> None:
        self._mutating("release", job_id)
        self._change(job_id, reason="Resources", priority=1000)

    def requeue_hold(self, job_id: str) -> None:
        self._mutating("requeuehold", job_id)
        self._change(job_id, state="PENDING", reason="JobHeldUser", priority=0, gpu_alloc={})

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self._mutating("update", job_id, *(f"{k}={v}" for k, v in fields.items()))
        update: dict[str, object] = {}
        for k, v in fields.items():
            if k == "Comment":
                update["comment"] = v
            elif k == "AdminComment":
                update["admin_comment"] = v
            elif k == "Reservation":
                update["reservation"] = v
            elif k == "NodeList":
                update["required_nodes"] = tuple(x for x in v.split(",") if x)
            elif k == "TresPerNode":
                update["tres_per_node"] = v
            elif k == "TresPerJob":
                update["tres_per_job"] = v
            elif k == "NumNodes":
                update["node_count"] = int(v)
        self._change(job_id, **update)

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        self._mutating("create_reservation", name)
        self._resv[name] = SlurmReservation(name=name, nodes=tuple(nodes), users=tuple(users), flags=tuple(flags))

    def delete_reservation(self, name: str) -> None:
        self._mutating("delete_reservation", name)
        self._resv.pop(name, None)

    def cancel(self, job_id: str) -> None:
        self._mutating("cancel", job_id)
        self._change(job_id, state="CANCELLED")
