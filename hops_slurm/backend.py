"""The backend interface: what the round loop needs from a cluster, live (Slurm) or simulated.

Data flow (DESIGN.md, "one engine, two backends")::

    round loop (hops_slurm.sim.loop.run_rounds) --reads--> Backend.cluster_view / job_views
                 |                                    policy.plan(...) -> Plan
                 +--------------enacts-------------> Backend.apply(plan)  (start / preempt / keep)
                 +--------------waits--------------> Backend.wait_until(t)

The simulator (:class:`hops_slurm.sim.backend.SimBackend`) implements it with a virtual clock; the
live Slurm engine implements the same six methods on slurmctld (``wait_until`` sleeps, ``apply``
places holds/reservations). Kept deliberately small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from planner.views import ClusterView, JobView, Plan


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
        """Active jobs ready to schedule (profiled): all for a round plan, pending only for a fragment plan."""

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        """Enact a plan: unchanged configs keep running, changed or dropped ones are preempted."""

    def wait_until(self, t: float) -> None:
        """Let the cluster run until time ``t`` (arrivals, completions and probes happen meanwhile)."""

    def next_activity(self) -> float | None:
        """When idle: the earliest time a job may become schedulable (None: nothing will ever come)."""

    def done(self) -> bool:
        """True when no job is active and none will arrive (always False live)."""
