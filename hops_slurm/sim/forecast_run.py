"""A forecast: the round loop of the simulator and the daemon run forward from now over the jobs of now.

Where it sits: called by the engine's forecast worker (:mod:`hops_slurm.engine.forecaster`) after a round,
and by the accuracy bench (``hops-slurm bench forecast``). It runs :func:`hops_slurm.core.rounds.run_rounds`
(the loop ``hops-slurm simulate`` runs: a round plan and fragment plans at its instant, a fragment plan
at every refresh tick while GPUs are idle) with a copy of the engine's own policy (its state: leases,
the previous plan) over a :class:`hops_slurm.sim.forecast_backend.ForecastBackend` made from the views
the round planned with, until every job waiting now has started. Each waiting job's first start there
is its forecast start.

The timetable (:class:`Timetable`): the engine's round and refresh lengths for the first
``exact_rounds`` rounds, then each further ``exact_rounds`` rounds twice as long as the ones before
(up to ``max_stretch`` times): a start hours ahead is resolved to a few minutes, which its uncertainty
dwarfs. A queue longer than :data:`LARGE_QUEUE` gets a coarser one (:meth:`Timetable.for_queue`), so
10,000 jobs are forecast in tens of plannings per simulated day instead of hundreds. ``stop()`` (the caller's wall-clock budget) ends it early: the jobs not started by then get
no forecast start, only ``after`` (the virtual time the forecast reached: they start later than that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hops_slurm.core.rounds import LoopSettings, run_rounds
from hops_slurm.sim.forecast_backend import ForecastBackend
from planner.forecast import Forecast
from planner.views import ClusterView, JobView, Policy

#: waiting jobs beyond which a forecast plans on a coarser timetable (:meth:`Timetable.for_queue`)
LARGE_QUEUE = 1000


@dataclass(frozen=True)
class Timetable:
    """The forecast's timetable (see the module docstring)."""

    round_seconds: float = 360.0
    refresh_seconds: float = 30.0
    exact_rounds: int = 10
    max_stretch: float = 16.0
    #: virtual seconds ahead at most (a job not started by then: no forecast start)
    horizon_seconds: float = 30 * 86400.0
    #: refresh ticks in the stretched rounds too (False: plannings at the rounds' instants only there)
    ticks_beyond: bool = True
    #: plannings at one instant at most (the engine's: a round plan and fragment plans while they place)
    plans_per_instant: int = LoopSettings().max_plans_per_instant

    @classmethod
    def for_queue(cls, waiting: int, round_seconds: float = 360.0, refresh_seconds: float = 30.0) -> Timetable:
        """The timetable for a queue of ``waiting`` jobs: beyond :data:`LARGE_QUEUE`, 2 exact rounds, then
        rounds doubling up to 64 times the engine's, planned at their instants only, a round plan and one
        fragment plan there (each planning of a queue that long costs seconds: a day ahead in tens of
        plannings, not hundreds)."""
        if waiting <= LARGE_QUEUE:
            return cls(round_seconds, refresh_seconds)
        return cls(round_seconds, refresh_seconds, exact_rounds=2, max_stretch=64.0, ticks_beyond=False,
                   plans_per_instant=2)

    def __post_init__(self) -> None:
        if self.round_seconds <= 0 or self.refresh_seconds <= 0 or self.exact_rounds < 1 or self.max_stretch < 1:
            raise ValueError("a forecast's timetable needs positive lengths, at least one exact round, a stretch >= 1")


@dataclass(frozen=True)
class Outcome:
    """A forecast: each job waiting at ``made`` -> its :class:`~planner.forecast.Forecast`; ``after``: how
    far the run got (jobs without a start start later than that); ``plannings``: how many it made."""

    made: float
    forecasts: dict[str, Forecast]
    after: float
    plannings: int
    complete: bool


def forecast(policy: Policy, cluster: ClusterView, jobs: Sequence[JobView], now: float, *,
             timetable: Timetable = Timetable(), speed: float = 1.0,
             stop: Callable[[], bool] = lambda: False) -> Outcome:
    """Run the round loop forward from ``now`` (see the module docstring); ``policy`` is used up (pass a
    copy of the engine's). ``speed``: every estimated rate times it (1.0: as estimated)."""
    backend = ForecastBackend(cluster, jobs, now, speed=speed, stop=stop)
    plannings = 0
    stretch = 1.0
    while not backend.done() and backend.now() - now < timetable.horizon_seconds:
        length = timetable.round_seconds * stretch
        ticks = stretch == 1.0 or timetable.ticks_beyond
        settings = LoopSettings(length, timetable.refresh_seconds * stretch if ticks else length,
                                max_plans_per_instant=timetable.plans_per_instant)
        before = backend.now()
        plannings += len(run_rounds(backend, policy, settings, max_rounds=timetable.exact_rounds))
        if backend.now() <= before:  # nothing runs and nothing would start: it cannot go on
            break
        stretch = min(stretch * 2.0, timetable.max_stretch)
    ends = backend.forecast_ends()
    out = {j: Forecast(backend.starts.get(j), ends.get(j)) for j in sorted(backend.targets)}
    return Outcome(now, out, backend.now(), plannings, complete=not backend.waiting)


__all__ = ["LARGE_QUEUE", "Outcome", "Timetable", "forecast"]
