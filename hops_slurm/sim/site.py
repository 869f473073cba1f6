"""The site's own Slurm policies, simulated as Slurm runs them: one definition for the simulator and whatif.

Where it sits: :func:`hops_slurm.sim.runner.simulate` (``hops-slurm simulate``, the paper tables, the
fair-share bench, and ``hops-slurm whatif`` through it) asks :func:`as_slurm_runs` for the cluster and
options of a policy of :data:`SITE_POLICIES` before it runs it. Slurm profiles nothing, so no job waits
for a probe (the cluster's ``probe_seconds`` is 0: a job is ready at its submission), and slurmctld's
scheduler runs at each submission and job end, not on the engine's refresh timer
(:attr:`hops_slurm.sim.runner.Options.plan_on_events`), rate-limited as slurmctld limits it: events sooner
than :data:`SLURM_EVENT_GAP` after the last scheduling pass are merged into one pass (its default
``batch_sched_delay``; docs/simulator.md, "Slurm's event-triggered scheduling"). Time limits come with the workload: a job's
``time_limit`` (a workload column; whatif's from the export) is what the backfill plans with
(:attr:`planner.views.JobView.time_limit`), else its expected run time.

What depends on the workload, not the policy, stays with the caller: a first start free of the process
start (:func:`first_start_free`) is right where the run times were recorded by Slurm (whatif: the
recorded elapsed time already holds the start), not for a generated workload whose run times are the
work alone (every policy pays the start there, Hops and Slurm alike).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, TypeVar

from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.costs import CostModel


class _RunOptions(Protocol):
    """What is read here of :class:`hops_slurm.sim.runner.Options` (which imports this module)."""

    costs: CostModel
    plan_on_events: bool
    event_gap: float | None
    __dataclass_fields__: dict[str, Any]


Options = TypeVar("Options", bound=_RunOptions)

#: the simulated policies that stand for the site's own Slurm
SITE_POLICIES = ("slurm-backfill", "slurm-multifactor")

#: seconds from one scheduling pass to the next that events trigger: slurmctld's background loop runs the
#: pass a submission or job end asked for once ``batch_sched_delay`` (SchedulerParameters, default 3 s) has
#: passed since the last pass; the events meanwhile are all in that pass
SLURM_EVENT_GAP = 3.0


def is_site_policy(policy_name: str) -> bool:
    return policy_name.partition(":")[0] in SITE_POLICIES


def as_slurm_runs(cluster: ClusterSpec, options: Options) -> tuple[ClusterSpec, Options]:
    """The cluster and options a site policy runs with: no probes, scheduling at events, at most once per
    :data:`SLURM_EVENT_GAP` (an event gap already set is kept)."""
    profiler = cluster.profiler.model_copy(update={"probe_seconds": 0.0})
    gap = SLURM_EVENT_GAP if options.event_gap is None else options.event_gap
    return (cluster.model_copy(update={"profiler": profiler}),
            replace(options, plan_on_events=True, event_gap=gap))  # type: ignore[type-var]


def first_start_free(options: Options) -> Options:
    """``options`` whose first start of a job costs nothing more than its run time holds (restarts after a
    move still pay ``process_start`` and the checkpoint load); a first-start cost already set is kept."""
    if options.costs.first_start is not None:
        return options
    return replace(options, costs=replace(options.costs, first_start=0.0))  # type: ignore[type-var]


__all__ = ["SITE_POLICIES", "SLURM_EVENT_GAP", "is_site_policy", "as_slurm_runs", "first_start_free"]
