"""Which waiting jobs each planning of a forecast sees: the head of the queue, sized by the GPUs in play.

Where it sits: in forecasts only (never in a live round or ``hops-slurm simulate``), between the
forecast's simulated cluster (:meth:`hops_slurm.sim.forecast_backend.ForecastBackend.job_views`) and the
round loop's plannings (:func:`hops_slurm.core.rounds.run_rounds` with the engine's policy). A forecast
of 10,000 waiting jobs makes hundreds of plannings; a planning that sees the whole queue costs in
proportion to the queue (its views, verdicts, priorities, reasons and the backfill behind the window),
although only jobs near the queue's head can start at one instant. So each planning of a forecast sees
every running job and only a window of the waiting queue, cut in the policy's own order
(:func:`policy_order`; a policy without one sees the whole queue):

* walking the queue from its head, each job's smallest request R_1 is added up (jobs asking for more
  than the cluster has are kept but not counted) until the sum reaches :meth:`QueueWindow.gpus`:
  ``factor`` (4) times the GPUs that can be handed out at this instant (the idle ones; with ``ahead``,
  also those of running jobs that end before the next instant), and at least ``floor`` (0) times the
  GPUs the planning sees; never fewer than one job. Behind that head, the window also holds the first
  jobs whose smallest request fits the idle GPUs, until theirs add up to as much (the ones the planner's
  backfill and sensitivity fillers would take: :mod:`planner.backfill`, :mod:`planner.window`). A round plan (or, with running jobs held in
  place far ahead, a fragment plan) that starts nothing on an idle cluster while the window left jobs out
  doubles it for the next (so jobs no configuration serves at the head never block the ones behind);
* the order is made at each round plan (every waiting job's view at that instant), and at a fragment
  plan only when a job it does not know waits (a preempted one) or, with running jobs held in place (no
  round plans), once the order is a round's length old; otherwise a fragment plan reads the last order,
  which the next round plan refreshes. The views keep the jobs' own order (the planner breaks
  ties by it), so a window that holds the whole queue changes nothing.

What it changes: at a round plan of a full cluster, a waiting job behind the window cannot take a
running job's GPUs (a preemption for a higher latency ratio); fillers are chosen among fewer jobs, and
the fillers' mean sensitivity of the queue is the window's. docs/results/forecast-scale.md measures the difference
the window makes to each job's forecast start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from planner.hops import HopsPolicy
from planner.priorities import priorities, queue_order
from planner.views import JobView, Policy

#: waiting jobs (their views at now), now, the cluster's GPUs -> the jobs in the policy's queue order
Order = Callable[[Sequence[JobView], float, int], list[JobView]]


def policy_order(policy: Policy) -> Order | None:
    """The queue order ``policy`` plans in (Hops: its priority rule and fair-share weight,
    :mod:`planner.priorities`); None for a policy whose order is not known here (no window)."""
    if not isinstance(policy, HopsPolicy):
        return None
    params = policy.params

    def order(jobs: Sequence[JobView], now: float, total_gpus: int) -> list[JobView]:
        prios = priorities(jobs, now, params.priority, total_gpus, fairshare_weight=params.fairshare_weight)
        return queue_order(jobs, prios)

    return order


@dataclass(frozen=True)
class QueueWindow:
    """How many waiting jobs a forecast's planning sees (see the module docstring)."""

    order: Order
    #: the window's smallest requests add up to this many times the GPUs that can be handed out
    factor: float = 4.0
    #: ... and to at least this many times the GPUs the planning sees (free, or held by running jobs)
    floor: float = 0.0
    #: count the GPUs of running jobs that end before the next instant too (False: the idle GPUs only)
    ahead: bool = False

    def __post_init__(self) -> None:
        if self.factor < 1.0 or self.floor < 0.0:
            raise ValueError("a forecast's queue window needs a factor >= 1 and a floor >= 0")

    def gpus(self, freeable: int, plannable: int) -> float:
        """The GPUs the window's smallest requests add up to, given the GPUs that can be handed out by the
        next instant and the GPUs the planning sees."""
        return max(self.factor * freeable, self.floor * plannable, 1.0)


__all__ = ["Order", "QueueWindow", "policy_order"]
