"""Jobs the simulated cluster sets aside: no usable config (no progress, no placement), or never placed.

Where it sits: :meth:`hops_slurm.sim.sim_backend.SimBackend.apply` asks :func:`no_usable_config` after every
round plan, whatever the policy: a job the plan left unplaced whose estimates give every config on the
whole (idle) cluster throughput 0 (:func:`planner.hops.why_unservable`; a config where its runtime
records show no progress is one, :mod:`estimator.progress`) is set aside with that reason, as the live
engine tells its owner (``hops-slurm queue``, the job's Comment), and leaves the run, so a simulation of
a trace with such jobs ends. The stall rule (:func:`stalled_out`) stays the last resort: jobs a policy
never places on an idle cluster for ``stall_seconds`` are cancelled. Pure apart from the log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from planner.hops import NO_USABLE_CONFIG, why_unservable
from planner.params import PlannerParams
from planner.views import ClusterView, JobView, NodeView

log = logging.getLogger(__name__)


def no_usable_config(views: Iterable[JobView], cluster: ClusterView, placed: Mapping[str, object],
                     sigma: float = PlannerParams().sigma) -> dict[str, str]:
    """Job id -> reason, for each job in ``views`` not in ``placed`` that no config of the whole idle
    ``cluster`` serves (a positive estimate somewhere keeps a job in play)."""
    whole = ClusterView(tuple(NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus, n.total_gpus)
                              for n in cluster.nodes))
    out: dict[str, str] = {}
    for view in views:
        if view.job_id in placed:
            continue
        reason = why_unservable(view, whole, sigma)
        if reason.startswith(NO_USABLE_CONFIG):
            out[view.job_id] = reason
    for job_id, reason in out.items():
        log.warning("job %s set aside: %s", job_id, reason)
    return out


def stall_out(sim: Any) -> None:
    """The stall rule (``sim``: a :class:`hops_slurm.sim.sim_backend.SimBackend`, untyped here to keep the
    import one way): when the whole cluster has been idle ``stall_seconds`` with ready jobs, no arrivals,
    probes or notices left, the policy cannot place them (e.g. a rigid request outside its config space):
    they are cancelled."""
    stalled = (
        sim.active
        and sim._next_arrival >= len(sim._pending_arrivals)
        and not sim._probes_due
        and not sim._drains
        and all(j.config is None and j.ready_at <= sim.t for j in sim.active.values())
    )
    if not stalled:
        sim._idle_since = None
        return
    if sim._idle_since is None:
        sim._idle_since = sim.t
    elif sim.t - sim._idle_since >= sim.settings.stall_seconds:
        ids = sorted(sim.active)
        log.warning("cancelling %d job(s) the policy never placed in %.0f h on an idle cluster: %s",
                    len(ids), sim.settings.stall_seconds / 3600, ", ".join(ids))
        for job_id in ids:
            job = sim.active.pop(job_id)
            job.record.state = "CANCELLED"
            sim.cancelled[job_id] = job


__all__ = ["no_usable_config", "stall_out"]
