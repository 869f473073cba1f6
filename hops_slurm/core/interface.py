"""The backend interface: what the round loop needs from a cluster, live (Slurm) or simulated.

Data flow (docs/design.md, "Principles": one engine, two backends)::

    round loop (hops_slurm.core.rounds)     --reads--> Backend.cluster_view / job_views
                 |                                    policy.plan(...) -> Plan
                 +--------------enacts-------------> Backend.apply(plan)  (start / preempt / keep)
                 +--------------waits--------------> Backend.wait_until(t)

The simulator (:class:`hops_slurm.sim.sim_backend.SimBackend`) implements it with a virtual clock; the
live Slurm engine implements the same seven methods on slurmctld
(:class:`hops_slurm.engine.live_backend.PlanningBackend`: ``wait_until`` sleeps, ``apply`` places
holds/reservations). Deliberately small.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hops_slurm.records import RoundRecord
from planner.changes import plan_changes
from planner.governance import governed_plan, with_fair_share
from planner.reasons import plan_reasons
from planner.views import ClusterView, JobView, Plan, Policy

#: the cause of a preemption the plan did not name
OTHER = "other"


@dataclass
class Enactment:
    """What :meth:`Backend.apply` did: job ids started (incl. restarted elsewhere), preempted, kept."""

    started: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


@runtime_checkable
class Backend(Protocol):
    def now(self) -> float:
        """Seconds on the backend's clock (virtual in simulation, epoch seconds live)."""

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        """Nodes for a round plan (running jobs' GPUs counted free) or a fragment plan (idle GPUs only)."""

    def job_views(self, *, fragment: bool) -> tuple[JobView, ...]:
        """Active jobs ready to schedule (profiled): all for a round plan; for a fragment plan the waiting
        ones to place and the running ones (``current`` set) as context, never placed (planner.backfill)."""

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        """Enact a plan: unchanged configs keep running, changed or dropped ones are preempted."""

    def wait_until(self, t: float) -> None:
        """Let the cluster run until time ``t`` (arrivals, completions and probes happen meanwhile)."""

    def next_activity(self) -> float | None:
        """When idle: the earliest time a job may become schedulable (None: nothing will ever come)."""

    def done(self) -> bool:
        """True when no job is active and none will arrive (always False live)."""


def seen_by_fragment_plan(*, running: bool, started: bool, promised: bool) -> bool:
    """Whether a fragment plan sees a job (both backends' :meth:`Backend.job_views` with ``fragment``):
    a waiting job to place, and a running one (``running``: its view shows where it runs) as context;
    not one placed and not started yet (``promised``: its GPUs are promised), nor one started that its view
    does not show running yet."""
    return not promised and (running or not started)


# ----- one planning, shared by the simulator's loop and the live engine ---------------------------


@dataclass
class Planning:
    plan: Plan
    jobs: tuple[JobView, ...]
    enactment: Enactment | None
    record: RoundRecord
    read_seconds: float = 0.0
    plan_seconds: float = 0.0
    enact_seconds: float = 0.0


def plan_once(backend: Backend, policy: Policy, index: int, *, fragment: bool, dry_run: bool = False,
              before_apply: Callable[[Plan], None] | None = None) -> Planning | None:
    """Plan once; None when there is nothing to plan (no job, or a fragment plan with no idle GPU).
    ``dry_run``: plan but do not enact (the record then describes the cluster as it is);
    ``before_apply``: the caller's own step between planning and enacting (the live engine prepares the
    environment of the jobs the plan starts)."""
    t0 = time.perf_counter()
    # a fragment plan places on idle GPUs only: with none idle there is nothing to plan, and no job views
    # to make (most refresh ticks of a busy cluster; the views are the costly read)
    cluster = backend.cluster_view(fragment=True) if fragment else None
    if cluster is not None and cluster.free_gpus == 0:
        return None
    jobs = backend.job_views(fragment=fragment)
    # a fragment plan places waiting jobs; the running ones are context for a policy that reads them
    # (planner.views.Policy.fragment_context; the Hops backfill step) and left out for the others
    plannable = tuple(j for j in jobs if j.current is None) if fragment else jobs
    if not plannable:
        return None
    if fragment and not getattr(policy, "fragment_context", False):
        jobs = plannable
    if cluster is None:
        cluster = backend.cluster_view(fragment=fragment)
    now = backend.now()
    # the site's governance, where a backend knows it (the live one: hops_slurm.slurm.assoc): each owner's
    # fair-share factor (planner.fairshare) and the limits kept around any policy (planner.governance)
    standing, limits_of = getattr(backend, "fair_share", None), getattr(backend, "limits", None)
    if callable(standing):
        jobs = with_fair_share(jobs, standing())
    limits = limits_of() if callable(limits_of) else None
    t1 = time.perf_counter()
    plan = governed_plan(policy, cluster, jobs, now, fragment=fragment, limits=limits)
    # why each waiting job it saw waits (planner.reasons: one vocabulary for queue, records, metrics, logs)
    plan.diagnostics["reasons"] = {j: why.as_dict() for j, why in
                                   plan_reasons(plan.assignments, plan.diagnostics, jobs).items()}
    if not fragment:  # why each running job it changes is preempted (planner.changes)
        plan.diagnostics["changes"] = {j: c.value for j, c in
                                       plan_changes(plan.assignments, plan.diagnostics, jobs, cluster).items()}
    t2 = time.perf_counter()
    if before_apply is not None and not dry_run:
        before_apply(plan)
    enactment = None if dry_run else backend.apply(plan, fragment=fragment)
    t3 = time.perf_counter()
    placed = plan.placed()
    after = backend.cluster_view(fragment=True)
    record = RoundRecord(
        time=now, plan_index=index, policy=policy.name, active_jobs=len(plannable),
        unassigned_jobs=sum(1 for j in plannable if j.job_id not in placed),
        idle_gpus_after=after.free_gpus, gpus_in_use=after.total_gpus - after.free_gpus,
        total_gpus=after.total_gpus, solve_seconds=t2 - t1,
        fallback=str(plan.diagnostics.get("fallback") or ""),
        limit_hit=bool(plan.diagnostics.get("time_limit_hit")),
        preempted_by=preempted_by(plan, enactment),
    )
    return Planning(plan, plannable, enactment, record, read_seconds=t1 - t0, plan_seconds=t2 - t1, enact_seconds=t3 - t2)


def cause_of(plan: Plan, job_id: str) -> str:
    """Why ``plan`` preempts running job ``job_id`` (its ``changes``, planner.changes; ``other`` where it does
    not say: a fragment plan, or a job it did not name). The one derivation: the round record's counts, the
    job's placement (both backends) and the metric read it."""
    changes = plan.diagnostics.get("changes")
    return str(changes.get(job_id, OTHER)) if isinstance(changes, dict) else OTHER


def preempted_by(plan: Plan, enactment: Enactment | None) -> dict[str, int]:
    """The preemptions ``enactment`` made, counted per cause (:func:`cause_of`)."""
    counts: dict[str, int] = {}
    for job_id in enactment.preempted if enactment is not None else ():
        cause = cause_of(plan, job_id)
        counts[cause] = counts.get(cause, 0) + 1
    return dict(sorted(counts.items()))
