"""A stand-in for slurmctld in the engine's unit tests: an in-memory :class:`hops_slurm.slurm.api.SlurmApi`.

Named a stand-in because it is one: it keeps jobs, nodes and reservations in dicts and records every
operation. By default it never starts a job (a released job stays pending); with ``starts=True`` it
models the one thing of slurmctld's scheduler the engine relies on: a released Hops job in its own
reservation starts at the next read on its required nodes when their GPUs are free (lowest indices
first; a per-job GPU count split greedily in node order, as 22.05 does), and a requeued job frees its
GPUs. ``signal_job`` records the notice and calls ``on_signal(job_id, signal)`` when a test set one (to
make the job answer or end); with ``clock`` set, :meth:`now` is that virtual clock and :meth:`sleep`
advances it (the enactor's pause while it waits for a notice). The live tests (``test_engine_live.py``, ``test_engine_faults_live.py``) run the same engine
against real daemons; these unit tests ask what the engine's own logic does (one bad job, the round,
crash points and recovery), in-process and without root.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.sim.slurmctld import startable
from hops_slurm.slurm.api import ProbeJob, SlurmCommandError, SlurmJob, SlurmNode, SlurmReservation


class StandInSlurm:
    name = "stand-in"

    def __init__(self, gpus_per_node: int = 4, nodes: int = 2, starts: bool = False) -> None:
        self.starts = starts
        self.reads: dict[str, int] = {"jobs": 0, "job": 0, "nodes": 0, "reservations": 0}
        self._jobs: dict[str, SlurmJob] = {}
        self._nodes = [SlurmNode(name=f"n{i}", state="idle", gpu_type="a100", gpus_total=gpus_per_node,
                                 partitions=("hops",), cpus=16) for i in range(1, nodes + 1)]
        self._resv: dict[str, SlurmReservation] = {}
        self.calls: list[tuple[str, ...]] = []
        self.fail_every = 0  # > 0: every n-th mutating call fails (fault injection)
        self.on_signal: Callable[[str, str], None] | None = None
        self.clock: float | None = None  # virtual time (None: the wall clock)
        self.faults = 0
        self._count = 0
        self._quiet = False

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
        if self._quiet:
            return
        self.calls.append(call)
        self._count += 1
        if self.fail_every and self._count % self.fail_every == 0:
            self.faults += 1
            raise SlurmCommandError(list(call), 1, "stand-in fault")

    # ----- the scheduler (starts=True) --------------------------------------------------------------
    def _used(self) -> dict[str, set[int]]:
        used: dict[str, set[int]] = {n.name: set() for n in self._nodes}
        for j in self._jobs.values():
            if j.active:
                for n, idx in j.gpu_alloc.items():
                    used.setdefault(n, set()).update(idx)  # a node Slurm no longer lists (a hostile case)
        return used

    def _schedule(self) -> None:
        if not self.starts:
            return
        for j in list(self._jobs.values()):
            used = self._used()
            total = {n.name: n.gpus_total for n in self._nodes}
            want = startable(j, self._resv, {n: total[n] - len(used[n]) for n in total})  # the simulator's rule
            if want is None:
                continue
            alloc = {n: tuple(sorted(set(range(total[n])) - used[n]))[:k] for n, k in want.items()}
            self._change(j.job_id, state="RUNNING", reason="None", nodes=tuple(want), gpu_alloc=alloc,
                         start_time=1000.0 + len(self.calls))

    # ----- SlurmApi --------------------------------------------------------------------------------
    def jobs(self) -> list[SlurmJob]:
        self.reads["jobs"] += 1
        self._schedule()
        return list(self._jobs.values())

    def job(self, job_id: str) -> SlurmJob | None:
        self.reads["job"] += 1
        self._schedule()
        return self._jobs.get(job_id)

    def nodes(self) -> list[SlurmNode]:
        self.reads["nodes"] += 1
        self._schedule()
        used = self._used()
        return [n.model_copy(update={"gpus_used": tuple(sorted(used[n.name]))}) for n in self._nodes]

    def reservations(self) -> list[SlurmReservation]:
        self.reads["reservations"] += 1
        return list(self._resv.values())

    def hold(self, job_id: str) -> None:
        self._mutating("hold", job_id)
        self._change(job_id, reason="JobHeldAdmin", priority=0)

    def release(self, job_id: str) -> None:
        self._mutating("release", job_id)
        self._change(job_id, reason="Resources", priority=1000)

    def requeue_hold(self, job_id: str) -> None:
        self._mutating("requeuehold", job_id)
        job = self._jobs[job_id]
        if not job.active:  # `requeuehold Incomplete`: an ended job is left alone
            return
        self._change(job_id, state="PENDING", reason="JobHeldUser", priority=0, gpu_alloc={},
                     restart_count=job.restart_count + 1)

    # list forms (hops_slurm.slurm.batch): one recorded call, as the CLI backend runs one process
    def hold_all(self, job_ids: list[str]) -> None:
        self._batch("hold", job_ids, self.hold)

    def release_all(self, job_ids: list[str]) -> None:
        self._batch("release", job_ids, self.release)

    def requeue_hold_all(self, job_ids: list[str]) -> None:
        self._batch("requeuehold", job_ids, self.requeue_hold)

    def update_job_all(self, job_ids: list[str], fields: dict[str, str]) -> None:
        self._batch("update", job_ids, lambda j: self.update_job(j, fields), *(f"{k}={v}" for k, v in fields.items()))

    def _batch(self, what: str, job_ids: list[str], one: Callable[[str], None], *fields: str) -> None:
        self._mutating(what, ",".join(job_ids), *fields)  # a fault refuses the whole command
        gone = [j for j in job_ids if j not in self._jobs]
        self._quiet = True  # one command, whatever it does to each job
        try:
            for j in job_ids:
                if j in self._jobs:
                    one(j)
        finally:
            self._quiet = False
        if gone:  # as 22.05: the others are changed, the command fails naming the missing ones
            raise SlurmCommandError(["scontrol", what, ",".join(job_ids)], 1,
                                    f"Invalid job id specified for job {','.join(gone)}")

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

    def signal_job(self, job_id: str, signal: str) -> None:
        self._mutating("signal", job_id, signal)
        if not self._jobs[job_id].active:
            raise SlurmCommandError(["scancel", "--batch", f"--signal={signal}", job_id], 1, "Job is not running")
        if self.on_signal is not None:
            self.on_signal(job_id, signal)

    def end(self, job_id: str, state: str = "COMPLETED") -> None:
        """The job ends by itself (test helper)."""
        self._change(job_id, state=state, gpu_alloc={}, reason="None")

    def sleep(self, seconds: float) -> None:
        if self.clock is None:
            time.sleep(seconds)
        else:
            self.clock += seconds

    def submit_probe(self, probe: ProbeJob) -> str:
        """A probe job that never runs (these tests pre-profile their models)."""
        self._mutating("submit_probe", probe.name)
        job_id = str(90000 + len(self._jobs))
        self._jobs[job_id] = SlurmJob(job_id=job_id, name=probe.name, state="PENDING", reason="Resources",
                                      partition=probe.partition, reservation=probe.reservation)
        return job_id

    def now(self) -> float:
        return time.time() if self.clock is None else self.clock
