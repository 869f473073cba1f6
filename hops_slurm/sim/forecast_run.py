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
dwarfs. ``stop()`` (the caller's wall-clock budget) ends it early: the jobs not started by then get
no forecast start, only ``after`` (the virtual time the forecast reached: they start later than that).

A queue longer than :data:`LARGE_QUEUE` (approximations of the forecast only, never of a round):

* a coarser timetable (:meth:`Timetable.for_queue`): 2 exact rounds, then each round twice as long as
  the one before, its refresh ticks too up to 32 times the engine's. A round plan of a cluster such a
  queue keeps full costs seconds (it plans every running job), so they come at doubling intervals (about
  a dozen for a week ahead); the fragment plans at the ticks start jobs on the GPUs that come back;
* a queue window (:func:`window_for`, :mod:`hops_slurm.sim.forecast_window`): each planning sees every
  running job and the head of the waiting queue in the policy's order, four times the idle GPUs' worth of
  smallest requests, so a planning costs in proportion to the cluster, not the queue;
* running jobs held in place far ahead (``Timetable.planned_rounds``, :data:`HELD_AFTER`): the first
  rounds (0, 6 and 12 minutes ahead with the engine's 360 s rounds) have their round plan as the engine
  makes it; in the rounds after them every planning is a fragment plan, the engine's own at a refresh tick
  (:func:`hops_slurm.core.rounds.run_rounds` with ``hold_running``): running jobs keep their GPUs (no
  preemption, no move), the head of the queue is placed on the GPUs that are idle or come back. A round
  plan of a cluster that such a queue keeps full re-plans each of its hundreds of running jobs (seconds of
  CPU each), and what it would change that far ahead (a preemption for a higher latency ratio, a move
  to a faster configuration) is smaller than the forecast's own error there. The queue's order is made
  again at each round's length (the priorities move with the waits), and a fragment plan that placed
  nothing is not made again until a job starts or ends (:class:`ForecastBackend`, ``hold``).

docs/results/forecast-scale.md measures them on 10,000 jobs on 4096 GPUs, and what the window and the
held rounds change to each job's start on a smaller instance. A queue up to :data:`LARGE_QUEUE` (the
accuracy bench on paper-512) is forecast with none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hops_slurm.core.rounds import LoopSettings, run_rounds
from hops_slurm.sim.forecast_backend import ForecastBackend
from hops_slurm.sim.forecast_window import QueueWindow, policy_order
from planner.forecast import Forecast
from planner.views import ClusterView, JobView, Policy

#: waiting jobs beyond which a forecast plans on a coarser timetable (:meth:`Timetable.for_queue`)
LARGE_QUEUE = 1000
#: a long queue's rounds with a round plan (:meth:`Timetable.for_queue`); the later ones hold running jobs
HELD_AFTER = 3


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
    #: rounds at each stretch after the exact ones (None: ``exact_rounds``)
    stretch_rounds: int | None = None
    #: refresh ticks stretch up to this many times the engine's (None: as the rounds)
    max_tick_stretch: float | None = None
    #: rounds with a round plan; the rounds after them hold running jobs in place (None: every round)
    planned_rounds: int | None = None

    @classmethod
    def for_queue(cls, waiting: int, round_seconds: float = 360.0, refresh_seconds: float = 30.0) -> Timetable:
        """The timetable for a queue of ``waiting`` jobs: beyond :data:`LARGE_QUEUE`, 2 exact rounds, then
        each round twice as long as the one before (its refresh ticks too), a round plan and one fragment
        plan at an instant, round plans in the first :data:`HELD_AFTER` rounds only (running jobs held in
        place after them): a round plan of a cluster that such a queue keeps full costs seconds, while the
        fragment plans at the ticks,
        cheap with the queue's window (:mod:`hops_slurm.sim.forecast_window`), start the jobs on the GPUs
        that come back, to a few percent of how far ahead that is."""
        if waiting <= LARGE_QUEUE:
            return cls(round_seconds, refresh_seconds)
        return cls(round_seconds, refresh_seconds, exact_rounds=2, max_stretch=4096.0, stretch_rounds=1,
                   max_tick_stretch=32.0, plans_per_instant=2, planned_rounds=HELD_AFTER)

    def __post_init__(self) -> None:
        if self.round_seconds <= 0 or self.refresh_seconds <= 0 or self.exact_rounds < 1 or self.max_stretch < 1 \
                or (self.stretch_rounds is not None and self.stretch_rounds < 1) \
                or (self.max_tick_stretch is not None and self.max_tick_stretch < 1) \
                or (self.planned_rounds is not None and self.planned_rounds < 1):
            raise ValueError("a forecast's timetable needs positive lengths, at least one round at each stretch, "
                             "a stretch >= 1")


def window_for(policy: Policy, waiting: int) -> QueueWindow | None:
    """The queue window of a forecast of ``waiting`` jobs planned by ``policy``: beyond :data:`LARGE_QUEUE`
    waiting jobs, the head of the queue in the policy's order (:mod:`hops_slurm.sim.forecast_window`); None
    (every planning sees the whole queue) for a shorter queue or a policy whose order is not known here."""
    order = policy_order(policy)
    return QueueWindow(order) if order is not None and waiting > LARGE_QUEUE else None


@dataclass(frozen=True)
class Outcome:
    """A forecast: each job waiting at ``made`` -> its :class:`~planner.forecast.Forecast`; ``after``: how
    far the run got (jobs without a start start later than that); ``plannings``: how many it made."""

    made: float
    forecasts: dict[str, Forecast]
    after: float
    plannings: int
    complete: bool
    #: the most jobs (running and waiting) a planning saw
    widest: int = 0


def forecast(policy: Policy, cluster: ClusterView, jobs: Sequence[JobView], now: float, *,
             timetable: Timetable = Timetable(), speed: float = 1.0,
             stop: Callable[[], bool] = lambda: False, window: QueueWindow | None = None,
             arrivals: Sequence[JobView] = ()) -> Outcome:
    """Run the round loop forward from ``now`` (see the module docstring); ``policy`` is used up (pass a
    copy of the engine's). ``speed``: every estimated rate times it (1.0: as estimated). ``window``: each
    planning sees only the head of the waiting queue (:mod:`hops_slurm.sim.forecast_window`); None: all of it.
    ``arrivals``: jobs expected later, each queued at its submission time (:mod:`hops_slurm.sim.forecast_arrivals`)."""
    backend = ForecastBackend(cluster, jobs, now, speed=speed, stop=stop, window=window, arrivals=arrivals)
    plannings = rounds_so_far = at_stretch = 0  # rounds so far; of them at this stretch
    stretch = 1.0
    while not backend.done() and backend.now() - now < timetable.horizon_seconds:
        length = timetable.round_seconds * stretch
        ticks = stretch == 1.0 or timetable.ticks_beyond
        tick = timetable.refresh_seconds * min(stretch, timetable.max_tick_stretch or stretch)
        settings = LoopSettings(length, tick if ticks else length, max_plans_per_instant=timetable.plans_per_instant)
        backend.lookahead = settings.refresh_seconds
        before = backend.now()
        per_stretch = timetable.exact_rounds if stretch == 1.0 or timetable.stretch_rounds is None \
            else timetable.stretch_rounds
        rounds = per_stretch - at_stretch
        planned = timetable.planned_rounds
        hold = planned is not None and rounds_so_far >= planned
        if planned is not None and not hold:
            rounds = min(rounds, planned - rounds_so_far)
        backend.hold, backend.reorder_after = hold, (length if hold else None)
        plannings += len(run_rounds(backend, policy, settings, max_rounds=rounds, hold_running=hold))
        rounds_so_far, at_stretch = rounds_so_far + rounds, at_stretch + rounds
        if backend.now() <= before:  # nothing runs and nothing would start: it cannot go on
            break
        if at_stretch >= per_stretch:
            stretch, at_stretch = min(stretch * 2.0, timetable.max_stretch), 0
    ends = backend.forecast_ends()
    out = {j: Forecast(backend.starts.get(j), ends.get(j)) for j in sorted(backend.targets)}
    return Outcome(now, out, backend.now(), plannings, complete=not backend.waiting, widest=backend.widest)


__all__ = ["LARGE_QUEUE", "Outcome", "Timetable", "forecast", "window_for"]
