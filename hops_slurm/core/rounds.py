"""The round, once for the live engine and the simulator: plan, then plan again at the same instant.

Where it sits: between a :class:`planner.views.Policy` and a :class:`hops_slurm.core.interface.Backend` (the live
Slurm backend, :class:`hops_slurm.engine.live_backend.SlurmBackend`, or the simulator's
:class:`hops_slurm.sim.sim_backend.SimBackend`). One planning is :func:`hops_slurm.core.interface.plan_once`.

* :func:`plan_instant`: a round plan (or, at a refresh tick, a fragment plan) and then, for policies
  that support them, fragment plans at the same instant while one still places and starts a job and
  GPUs stay idle (the paper plans again "if there are still available resources after the initial planning";
  at most ``max_plans_per_instant`` plans); it says why it stopped (:data:`EXIT_REASONS`). The live engine
  runs it at each instant of the timetable (:meth:`hops_slurm.engine.engine.Engine.round`).
* :func:`run_rounds`: the fast simulator's driver of the timetable (:mod:`hops_slurm.core.timetable`, the
  one the engine simulation and the daemon drive too) on the backend's own clock, until the backend is
  done: what ``hops-slurm simulate`` runs. Each planning becomes a :class:`hops_slurm.records.RoundRecord`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hops_slurm.core.interface import Backend, Planning, plan_once
from hops_slurm.core.timetable import Instant, Kind, LoopSettings, round_instants
from hops_slurm.records import RoundRecord
from planner.views import Plan, Policy

log = logging.getLogger(__name__)

__all__ = ["EXIT_REASONS", "LoopSettings", "Planning", "Plannings", "plan_instant", "plan_once", "plan_summary",
           "run_rounds"]


#: why an instant's plannings stopped (:func:`plan_instant`; counted as ``hops_planning_exits_total{reason}``,
#: as Slurm's backfill counts ``bf_exit``): nothing (more) to plan (no job to plan, or a fragment plan
#: with no idle GPU); the instant's most plannings made; one planning asked for (a dry run, a round plan
#: whose fragment plans come at ticks); a policy without fragment plans; a fragment plan that placed
#: no job; no GPU idle after a fragment plan; every placement of a fragment plan refused by Slurm
EXIT_NOTHING = "nothing_to_plan"
EXIT_LIMIT = "max_plans"
EXIT_SINGLE = "single_plan"
EXIT_NO_FRAGMENTS = "no_fragment_plans"
EXIT_PLACED_NONE = "placed_none"
EXIT_NO_IDLE = "no_idle_gpus"
EXIT_REFUSED = "refused"
EXIT_REASONS = (EXIT_NOTHING, EXIT_LIMIT, EXIT_SINGLE, EXIT_NO_FRAGMENTS, EXIT_PLACED_NONE, EXIT_NO_IDLE,
                EXIT_REFUSED)


class Plannings(list[Planning]):
    """An instant's plannings, in order, and why they stopped (``exit``: one of :data:`EXIT_REASONS`)."""

    exit: str = EXIT_NOTHING


def plan_instant(backend: Backend, policy: Policy, *, fragment: bool, index: int = 0, limit: int = 4,
                 follow: bool = True, dry_run: bool = False,
                 before_apply: Callable[[Plan], None] | None = None,
                 on_planning: Callable[[Planning], None] | None = None) -> Plannings:
    """Plan once (a round plan, or a fragment plan with ``fragment``), numbered from ``index``; then, with
    ``follow`` and a policy that supports them, fragment plans at this instant: after a round plan at
    least one, and again while the last fragment plan placed a job, its enactment started one (live, Slurm
    may refuse a placement it would not split as planned: the same inputs would plan the same again) and
    GPUs are still idle; at most ``limit`` plannings in all. ``on_planning`` is called with each planning
    as it is made (the engine records it). The plannings carry why they stopped (:class:`Plannings`)."""
    out = Plannings()
    frag = fragment
    while True:
        if len(out) >= limit:
            out.exit = EXIT_LIMIT
            break
        planning = plan_once(backend, policy, index + len(out), fragment=frag, dry_run=dry_run, before_apply=before_apply)
        if planning is None:
            out.exit = EXIT_NOTHING
            break
        out.append(planning)
        if on_planning is not None:
            on_planning(planning)
        stop = _stop_after(planning, policy, frag, follow=follow and not dry_run)
        if stop is not None:
            out.exit = stop
            break
        frag = True
    return out


def _stop_after(planning: Planning, policy: Policy, fragment: bool, *, follow: bool) -> str | None:
    """Why no planning follows ``planning`` at its instant (None: another one may)."""
    if not follow:
        return EXIT_SINGLE
    if not policy.supports_fragment_plans:
        return EXIT_NO_FRAGMENTS
    if not fragment:
        return None  # after a round plan, at least one fragment plan
    if not planning.plan.placed():
        return EXIT_PLACED_NONE
    if planning.record.idle_gpus_after == 0:
        return EXIT_NO_IDLE
    if planning.enactment is not None and not planning.enactment.started:
        return EXIT_REFUSED  # every placement refused (live Slurm would not split it so): the same inputs plan the same
    return None


class _BackendClock:
    """The timetable's clock on a backend's own (virtual) clock."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def now(self) -> float:
        return self.backend.now()

    def done(self) -> bool:
        return self.backend.done()

    def next_event(self) -> float | None:
        return self.backend.next_activity()


def run_rounds(
    backend: Backend,
    policy: Policy,
    settings: LoopSettings = LoopSettings(),
    *,
    on_round: Callable[[float], None] | None = None,
    max_rounds: int | None = None,
    on_instant: Callable[[Instant], None] | None = None,
    exits: dict[str, int] | None = None,
    hold_running: bool = False,
) -> list[RoundRecord]:
    """Plan rounds until the backend is done (or ``max_rounds``) on the timetable
    (:func:`hops_slurm.core.timetable.round_instants`); returns every planning's record. ``on_instant``
    sees each instant as the loop reaches it; ``exits`` counts why each instant's plannings stopped.
    ``hold_running``: a round's own instant makes fragment plans, as a tick does (running jobs stay where
    they are; a forecast far ahead, :mod:`hops_slurm.sim.forecast_run`)."""
    records: list[RoundRecord] = []
    rounds = 0
    clock = _BackendClock(backend)
    while not backend.done():
        if max_rounds is not None and rounds >= max_rounds:
            break
        if not backend.job_views(fragment=False):
            nxt = backend.next_activity()
            if nxt is None:
                break
            backend.wait_until(max(nxt, backend.now()))
            continue
        rounds += 1
        index = 0
        for instant in round_instants(settings, backend.now(), clock):
            if instant.kind is not Kind.ROUND:  # a round starts now (waiting would run the backend's checks again)
                backend.wait_until(instant.at)
            if on_instant is not None:
                on_instant(instant)
            if instant.kind is Kind.END:
                break
            fragment = instant.fragment or (hold_running and instant.kind is Kind.ROUND)
            if fragment and not policy.supports_fragment_plans:
                continue
            limit, follow = settings.plannings(Kind.TICK if fragment else instant.kind)
            this = plan_instant(backend, policy, fragment=fragment, index=index, limit=limit, follow=follow)
            records += [p.record for p in this]
            index = max(1, index + len(this))
            if exits is not None:
                exits[this.exit] = exits.get(this.exit, 0) + 1
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
        # why each running job it changes is preempted (planner.changes; round plans only)
        "changes": {str(k): str(v) for k, v in dict(d.get("changes") or {}).items()},  # type: ignore[call-overload]
        "read_seconds": p.read_seconds, "plan_seconds": p.plan_seconds, "enact_seconds": p.enact_seconds,
    }


def _number(v: object) -> object:
    """A priority for the queue view: a number (Hops), or a number per GPU type (Gavel's, in simulation)."""
    if isinstance(v, dict):
        return {str(k): float(x) for k, x in v.items()}
    return float(v)  # type: ignore[arg-type]
