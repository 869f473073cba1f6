"""The loop's timetable, once: from the loop settings, the instants of a round in order.

Where it sits: below the three drivers of the loop, which each consume it: the fast simulator
(:func:`hops_slurm.core.rounds.run_rounds`), the engine simulation (:meth:`hops_slurm.sim.engine_run.EngineSim.run`)
and the daemon (:mod:`hops_slurm.engine.daemon`). A round starting at ``start`` is:

* a **round** instant at ``start``: a round plan, then (``fragment_at_once``, the paper's) fragment plans
  at its instant;
* a **tick** every ``refresh_seconds`` inside the round (the queue refresh): a refresh and a fragment plan;
* with ``plan_on_events``, an **event** instant at each of the clock's events between ticks (an arrival,
  a completion, a probe's end: Slurm's own scheduler runs there, ``hops-slurm whatif``): a fragment plan.
  With ``event_gap`` > 0, an event sooner than that after the last instant is merged into one instant at
  ``last + event_gap`` (the events meanwhile are all in its planning), as slurmctld rate-limits the
  scheduling its events trigger (``batch_sched_delay``; docs/simulator.md, "Slurm's event-triggered scheduling");
* the round's **end** at ``start + round_seconds``, where the next round starts.

How many plannings each instant makes is :meth:`LoopSettings.plannings`, the one rule that both backends
follow (``--fragment-plans at-ticks``: one fragment plan at a tick, none after the round plan). The
timetable reads a :class:`Clock` (now, done, the next event) and waits for nothing: the driver waits until
each instant it gets (a virtual clock jumps; the daemon sleeps, running its monitor, the live event
source, meanwhile). Pure: no wall clock, no Slurm.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

#: instants closer than this (seconds) are the same instant
EPS = 1e-9


class Kind(str, Enum):
    """What happens at an instant."""

    ROUND = "round"
    TICK = "tick"
    EVENT = "event"
    END = "end"


@dataclass(frozen=True)
class Instant:
    kind: Kind
    at: float

    @property
    def fragment(self) -> bool:
        """Whether the instant's first planning is a fragment plan (every instant but a round's start)."""
        return self.kind is not Kind.ROUND


@dataclass(frozen=True)
class LoopSettings:
    round_seconds: float = 360.0
    refresh_seconds: float = 30.0
    #: fragment plans at the round plan's instant (the paper's); False: only at refresh ticks (ablation)
    fragment_at_once: bool = True
    max_plans_per_instant: int = 4
    #: also plan (fragment plans) at each of the backend's events between ticks (an arrival, a completion,
    #: a probe's end): Slurm's own scheduler runs at each submission and end, not on a timer. ``hops-slurm
    #: whatif`` replays Slurm's policies so (:mod:`hops_slurm.whatif.replay`); the rest plan on the timetable
    plan_on_events: bool = False
    #: with ``plan_on_events``: the least seconds from one instant to an event instant; the events sooner than
    #: that are merged into one planning at the gap's end (slurmctld's ``batch_sched_delay``); 0: every event
    event_gap: float = 0.0

    def __post_init__(self) -> None:
        if self.round_seconds <= 0 or self.refresh_seconds <= 0:
            raise ValueError("round and refresh lengths must be positive seconds")
        if not self.event_gap >= 0:
            raise ValueError("event_gap must be zero or positive seconds")
        if self.max_plans_per_instant < 1:
            raise ValueError("max_plans_per_instant must be at least 1")

    def plannings(self, kind: Kind) -> tuple[int, bool]:
        """At an instant of ``kind``: the most plannings it makes, and whether fragment plans follow its first
        (:func:`hops_slurm.core.rounds.plan_instant`). A round: its round plan and, when fragment plans
        come at once, up to ``max_plans_per_instant`` of them; a tick or an event: fragment plans, only
        one when they come at ticks."""
        if kind is Kind.ROUND:
            return 1 + self.max_plans_per_instant, self.fragment_at_once
        return (self.max_plans_per_instant if self.fragment_at_once else 1), True


class Clock(Protocol):
    """What the timetable reads of a driver's clock."""

    def now(self) -> float:
        """Seconds on the driver's clock."""

    def done(self) -> bool:
        """True when no instant is wanted any more (the simulated workload ended; the daemon was stopped)."""

    def next_event(self) -> float | None:
        """When something happens next by itself (read only with ``plan_on_events``; None: nothing)."""


def round_instants(settings: LoopSettings, start: float, clock: Clock, *, coalesce: bool = False) -> Iterator[Instant]:
    """The instants of the round that starts at ``start``, in order: the round, its ticks (and, with
    ``plan_on_events``, the events between them) while the clock is not done, and its end (always last).
    ``coalesce``: a tick the clock has already passed is skipped when the next tick has passed too (a
    step that overran runs the refresh it missed once, late, as a timer that coalesces would)."""
    yield Instant(Kind.ROUND, start)
    last = start  # the last instant yielded: an event instant comes ``event_gap`` after it at the soonest
    end = start + settings.round_seconds
    step = settings.refresh_seconds
    tick = start + step
    while tick < end - EPS and not clock.done():
        while coalesce and tick + step < end - EPS and clock.now() >= tick + step - EPS:
            tick += step
        event = clock.next_event() if settings.plan_on_events else None
        if event is not None and clock.now() + EPS < event:
            at = max(event, last + settings.event_gap)  # the events before ``at`` are merged into its planning
            if at < tick - EPS:
                yield Instant(Kind.EVENT, at)  # an event before the tick: Slurm schedules there and then
                last = at
                continue
        yield Instant(Kind.TICK, tick)
        last = tick
        tick += step
    yield Instant(Kind.END, end)


__all__ = ["Clock", "EPS", "Instant", "Kind", "LoopSettings", "round_instants"]
