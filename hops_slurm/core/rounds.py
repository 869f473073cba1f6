"""The round, once for the live engine and the simulator: plan, then plan again at the same instant.

Where it sits: between a :class:`planner.views.Policy` and a :class:`hops_slurm.core.interface.Backend` (the live
Slurm backend, :class:`hops_slurm.engine.live_backend.SlurmBackend`, or the simulator's
:class:`hops_slurm.sim.sim_backend.SimBackend`). One planning is :func:`hops_slurm.core.interface.plan_once`.

* :func:`plan_instant`: a round plan (or, at a refresh tick, a fragment plan) and then, for policies
  that support them, fragment plans at the same instant while one still places and starts a job and
  GPUs stay idle (the paper plans again "if there are still available resources after the initial planning";
  at most ``max_plans_per_instant`` plans). The live engine runs it at each round and each refresh
  (:meth:`hops_slurm.engine.engine.Engine.round`); the timetable is the daemon's
  (:mod:`hops_slurm.engine.daemon`).
* :func:`run_rounds`: the same instants on the backend's own clock, every ``round_seconds`` (default
  360 s, Gavel's) a round, every ``refresh_seconds`` (30 s, the paper's queue refresh) inside it a
  refresh, until the backend is done: what ``hops-slurm simulate`` runs (the daemon's timetable on a
  virtual clock); with ``plan_on_events`` also at each event between ticks (Slurm's own scheduler,
  replayed by ``hops-slurm whatif``). Each planning becomes a :class:`hops_slurm.records.RoundRecord`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hops_slurm.core.interface import Backend, Planning, plan_once
from hops_slurm.records import RoundRecord
from planner.views import Plan, Policy

log = logging.getLogger(__name__)

__all__ = ["LoopSettings", "Planning", "plan_instant", "plan_once", "plan_summary", "run_rounds"]


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

    def __post_init__(self) -> None:
        if self.round_seconds <= 0 or self.refresh_seconds <= 0:
            raise ValueError("round and refresh lengths must be positive seconds")
        if self.max_plans_per_instant < 1:
            raise ValueError("max_plans_per_instant must be at least 1")


def plan_instant(backend: Backend, policy: Policy, *, fragment: bool, index: int = 0, limit: int = 4,
                 follow: bool = True, dry_run: bool = False,
                 before_apply: Callable[[Plan], None] | None = None,
                 on_planning: Callable[[Planning], None] | None = None) -> list[Planning]:
    """Plan once (a round plan, or a fragment plan with ``fragment``), numbered from ``index``; then, with
    ``follow`` and a policy that supports them, fragment plans at this instant: after a round plan at
    least one, and again while the last fragment plan placed a job, its enactment started one (live, Slurm
    may refuse a placement it would not split as planned: the same inputs would plan the same again) and
    GPUs are still idle; at most ``limit`` plannings in all. ``on_planning`` is called with each planning as it is made (the engine
    records it)."""
    out: list[Planning] = []
    frag = fragment
    while len(out) < limit:
        planning = plan_once(backend, policy, index + len(out), fragment=frag, dry_run=dry_run, before_apply=before_apply)
        if planning is None:
            break
        out.append(planning)
        if on_planning is not None:
            on_planning(planning)
        if dry_run or not follow or not policy.supports_fragment_plans:
            break
        if frag and (not planning.plan.placed() or planning.record.idle_gpus_after == 0):
            break
        if frag and planning.enactment is not None and not planning.enactment.started:
            break  # every placement refused (live Slurm would not split it so): the same inputs plan the same
        frag = True
    return out


def fragment_plans(backend: Backend, policy: Policy, index: int, limit: int) -> list[RoundRecord]:
    """Fragment plans at this instant, numbered from ``index`` (:func:`plan_instant`); their records."""
    return [p.record for p in plan_instant(backend, policy, fragment=True, index=index, limit=limit)]


def run_rounds(
    backend: Backend,
    policy: Policy,
    settings: LoopSettings = LoopSettings(),
    *,
    on_round: Callable[[float], None] | None = None,
    max_rounds: int | None = None,
) -> list[RoundRecord]:
    """Plan rounds until the backend is done (or ``max_rounds``); returns every planning's record."""
    records: list[RoundRecord] = []
    rounds = 0
    limit = settings.max_plans_per_instant
    while not backend.done():
        if max_rounds is not None and rounds >= max_rounds:
            break
        if not backend.job_views(fragment=False):
            nxt = backend.next_activity()
            if nxt is None:
                break
            backend.wait_until(max(nxt, backend.now()))
            continue
        start = backend.now()
        rounds += 1
        # the round plan, then (the paper's) fragment plans at its instant
        this = plan_instant(backend, policy, fragment=False, limit=1 + limit, follow=settings.fragment_at_once)
        records += [p.record for p in this]
        index = max(1, len(this))
        tick = start + settings.refresh_seconds
        while tick < start + settings.round_seconds - 1e-9 and not backend.done():
            event = backend.next_activity() if settings.plan_on_events else None
            if event is not None and backend.now() + 1e-9 < event < tick - 1e-9:
                backend.wait_until(event)  # an event before the tick: Slurm schedules there and then
                if policy.supports_fragment_plans:
                    more = fragment_plans(backend, policy, index, limit if settings.fragment_at_once else 1)
                    records += more
                    index += len(more)
                continue
            backend.wait_until(tick)
            if policy.supports_fragment_plans:
                more = fragment_plans(backend, policy, index, limit if settings.fragment_at_once else 1)
                records += more
                index += len(more)
            tick += settings.refresh_seconds
        backend.wait_until(start + settings.round_seconds)
        if on_round:
            on_round(backend.now())
    return records


def plan_summary(p: Planning) -> dict[str, Any]:
    """What ``hops-slurm queue`` shows of the last planning (stored in the engine state)."""
    d = p.plan.diagnostics
    return {
        "time": p.record.time,
        "plan_index": p.record.plan_index,
        "priorities": {k: _number(v) for k, v in dict(d.get("priorities") or {}).items()},  # type: ignore[call-overload]
        "window": list(d.get("window") or []),  # type: ignore[call-overload]
        "queue": list(d.get("queue") or []),  # type: ignore[call-overload]
        "unservable": {str(k): str(v) for k, v in dict(d.get("unservable") or {}).items()},  # type: ignore[call-overload]
        "limited": {str(k): str(v) for k, v in dict(d.get("limited") or {}).items()},  # type: ignore[call-overload]
        "assignments": {j: (dict(c) if c else None) for j, c in p.plan.assignments.items()},
        "read_seconds": p.read_seconds, "plan_seconds": p.plan_seconds, "enact_seconds": p.enact_seconds,
    }


def _number(v: object) -> object:
    """A priority for the queue view: a number (Hops), or a number per GPU type (Gavel's, in simulation)."""
    if isinstance(v, dict):
        return {str(k): float(x) for k, x in v.items()}
    return float(v)  # type: ignore[arg-type]
