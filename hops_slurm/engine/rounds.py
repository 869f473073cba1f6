"""One planning on any :class:`hops_slurm.backend.Backend`: views -> policy.plan -> apply -> RoundRecord.

Where it sits: the live engine's round (every ``round_length``) and fragment plans (refresh, monitor)
call :func:`plan_once`. It is the same sequence as the simulator's loop (:mod:`hops_slurm.sim.loop`),
but keeps the :class:`planner.views.Plan` and the :class:`hops_slurm.backend.Enactment`, which the
live engine shows (``hops-slurm queue``) and journals; the timing is the wall clock of the daemon.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hops_slurm.backend import Backend, Enactment
from hops_slurm.records import RoundRecord
from planner.views import JobView, Plan, Policy


@dataclass
class Planning:
    plan: Plan
    jobs: tuple[JobView, ...]
    enactment: Enactment | None
    record: RoundRecord
    read_seconds: float = 0.0
    plan_seconds: float = 0.0
    enact_seconds: float = 0.0


def plan_once(backend: Backend, policy: Policy, index: int, *, fragment: bool, dry_run: bool = False) -> Planning | None:
    """Plan once; None when there is nothing to plan (no job, or a fragment plan with no idle GPU).
    ``dry_run``: plan but do not enact (the record then describes the cluster as it is)."""
    t0 = time.perf_counter()
    jobs = backend.job_views(fragment=fragment)
    if not jobs:
        return None
    cluster = backend.cluster_view(fragment=fragment)
    if fragment and cluster.free_gpus == 0:
        return None
    now = backend.now()
    t1 = time.perf_counter()
    plan = policy.plan(cluster, jobs, now, fragment=fragment)
    t2 = time.perf_counter()
    enactment = None if dry_run else backend.apply(plan, fragment=fragment)
    t3 = time.perf_counter()
    placed = plan.placed()
    after = backend.cluster_view(fragment=True)
    record = RoundRecord(
        time=now, plan_index=index, policy=policy.name, active_jobs=len(jobs),
        unassigned_jobs=sum(1 for j in jobs if j.job_id not in placed),
        idle_gpus_after=after.free_gpus, gpus_in_use=after.total_gpus - after.free_gpus,
        total_gpus=after.total_gpus, solve_seconds=t2 - t1,
        fallback=str(plan.diagnostics.get("fallback") or ""),
    )
    return Planning(plan, jobs, enactment, record, read_seconds=t1 - t0, plan_seconds=t2 - t1, enact_seconds=t3 - t2)
