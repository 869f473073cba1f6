"""Jobs the simulated cluster sets aside: no usable config (no progress, no placement), or never placed.

Where it sits: :meth:`hops_slurm.sim.sim_backend.SimBackend.apply` asks :func:`no_usable_config` after every
round plan, whatever the policy: a job the plan left unplaced whose estimates give every config on the
whole (idle) cluster throughput 0 (:func:`planner.servable.why_unservable`; a config where its runtime
records show no progress is one, :mod:`estimator.progress`) is set aside with that reason, as the live
engine tells its owner (``hops-slurm queue``, the job's Comment), and leaves the run, so a simulation of
a trace with such jobs ends. Two more rules make it the same for every policy, those that read no
estimate included: a job a round plan's diagnostics name ``unservable`` with that reason
(:func:`named_unservable`: Hops, Slurm's backfill and multifactor) is set aside; a job placed on a
config where its estimate is 0 is not placed there, and set aside when the policy places it there again
(:func:`placed_where_it_cannot_run`). Set-aside jobs carry the reason in ``JobRecord.aside`` and are
counted apart from unfinished ones. The stall rule (:class:`StallRule`, both simulation paths') stays the last resort: jobs a
policy never places on an idle cluster for ``stall_seconds`` are cancelled. Pure apart from the log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from planner.servable import NO_USABLE_CONFIG, why_unservable
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView

log = logging.getLogger(__name__)


def no_usable_config(views: Iterable[JobView], cluster: ClusterView, placed: Mapping[str, object],
                     sigma: float = PlannerParams().sigma) -> dict[str, str]:
    """Job id -> reason, for each job in ``views`` not in ``placed`` that no config of the whole idle
    ``cluster`` serves (a positive estimate somewhere keeps a job in play)."""
    whole = cluster.idle()
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


def placed_where_it_cannot_run(views: Mapping[str, JobView], placed: Mapping[str, Config]) -> dict[str, str]:
    """Job id -> reason, for each job ``placed`` on a config where its estimate is throughput 0 (its records
    there show no progress, :mod:`estimator.progress`, or the model cannot run there). A policy that reads
    no estimate places such a job there again and again: the backend does not place it there, and sets it
    aside when the policy places it there a second time (a policy that keeps a running job on a lease
    places it elsewhere once it is requeued)."""
    out: dict[str, str] = {}
    for job_id, config in placed.items():
        view = views.get(job_id)
        if view is None or _rate(view, config) > 0.0:
            continue
        shape = ", ".join(f"{n}:{g}" for n, g in sorted(config.items()))
        out[job_id] = (f"{NO_USABLE_CONFIG}: placed on {sum(config.values())} GPU(s) ({shape}), where it is "
                       f"estimated at throughput 0 or made no progress (e.g. the model cannot run on that many "
                       f"GPUs), and the policy places it there again; allow other GPU counts")
    for job_id, reason in out.items():
        log.warning("job %s set aside: %s", job_id, reason)
    return out


def named_unservable(diagnostics: Mapping[str, object], placed: Mapping[str, Config]) -> dict[str, str]:
    """Job id -> reason, for each job a plan's ``unservable`` diagnostics name as served by no configuration
    (:data:`planner.servable.NO_USABLE_CONFIG`) and the plan does not place: the policy's own verdict, which
    the live engine acts on too (:func:`hops_slurm.engine.aside.set_aside_unservable`)."""
    named = diagnostics.get("unservable")
    if not isinstance(named, Mapping):
        return {}
    return {str(j): str(r) for j, r in named.items() if j not in placed and str(r).startswith(NO_USABLE_CONFIG)}


def _rate(view: JobView, config: Config) -> float:
    try:
        rate = float(view.throughput(config))
    except Exception:  # noqa: BLE001 - an estimate that fails is no rate
        return 0.0
    return 0.0 if math.isnan(rate) else rate


class Stallable(Protocol):
    """A simulated cluster the stall rule watches (:class:`hops_slurm.sim.sim_backend.SimBackend`, and
    :class:`hops_slurm.sim.slurmctld.SimSlurmctld` under the engine)."""

    def stalled(self) -> bool:
        """Nothing runs, nothing is left to arrive, probe or drain, and jobs wait."""

    def cancel_waiting(self) -> list[str]:
        """Cancel every waiting job; their workload ids (for the log)."""


@dataclass
class StallRule:
    """The stall rule, once for both simulation paths: when the whole cluster has been idle ``seconds``
    with jobs waiting and nothing left to arrive, probe or drain, the policy cannot place them (e.g. a
    rigid request outside its config space): they are cancelled, as an administrator would, and reported
    so. :meth:`check` is called as the clock moves."""

    seconds: float
    idle_since: float | None = None  # when the cluster was last seen stalled first (None: it is not)

    def check(self, cluster: Stallable, now: float) -> None:
        if not cluster.stalled():
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = now
        elif now - self.idle_since >= self.seconds:
            names = cluster.cancel_waiting()
            log.warning("cancelling %d job(s) the policy never placed in %.0f h on an idle cluster: %s",
                        len(names), self.seconds / 3600, ", ".join(names))
            self.idle_since = None


__all__ = ["StallRule", "Stallable", "named_unservable", "no_usable_config", "placed_where_it_cannot_run"]
