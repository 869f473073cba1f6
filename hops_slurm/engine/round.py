"""The round's named steps: plain functions of (:class:`~hops_slurm.engine.cycle.RoundSession`,
:class:`~hops_slurm.engine.bookkeeping.Resources`), listed in :data:`STEPS` in the order they run.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.round` opens a session and runs :data:`CYCLE`'s
steps through :func:`hops_slurm.engine.cycle.run_steps`. ``views`` makes the job views of the session's
instant, ``plannings`` plans and enacts at that instant (:func:`hops_slurm.core.rounds.plan_instant`, the
simulator's loop too) through :class:`hops_slurm.engine.live_backend.PlanningBackend`, which hands the
session's views and job environment to the live backend, and each planning is recorded
(:func:`record_planning`); ``offer`` and ``summary`` publish what the plannings left.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from hops_slurm.core.interface import cause_of
from hops_slurm.core.rounds import Planning, plan_instant, plan_summary
from hops_slurm.core.timetable import Kind
from hops_slurm.engine import bookkeeping as bk
from hops_slurm.engine import offer, reasons
from hops_slurm.engine.aside import per_job_failure, reason_text, set_aside_unservable
from hops_slurm.engine.checkpoints import note_stops
from hops_slurm.engine.cycle import Cycle, RoundSession, timed
from hops_slurm.engine.known_jobs import schedulable
from hops_slurm.engine.live_backend import PlanningBackend
from hops_slurm.engine.bookkeeping import Resources
from hops_slurm.engine.state import JobState

log = logging.getLogger(__name__)

#: wall seconds a round's forecast may take at most (in its worker, beside the rounds; and 90% of the round)
FORECAST_BUDGET = 300.0
S = RoundSession


def schedulable_jobs(r: Resources) -> list[JobState]:
    """Tracked jobs Slurm lists as pending or running, profiled (or failed), not set aside."""
    return schedulable(r.tracked.values(), r.backend.listing)


def views(s: S, r: Resources) -> None:  # the job views on the current snapshot, planned on
    s.views = r.views.update(schedulable_jobs(r), r.backend.listing, r.estimator(), s.now, r.set_aside,
                             restart_cost=r.restarts.of, memo=r.reader.estimates)


def before_enacting(s: S, r: Resources, plan: Any) -> None:  # the environment of the jobs this plan starts
    s.job_env = bk.recorder_envs(r, plan.placed())
    if not r.dry_run:
        try:  # the plan may hand out what the offer offers: closed until the next offer step
            offer.close_while_enacting(r.offers)
        except OSError as exc:
            log.warning("cannot close the offer file: %s", exc)


def recorded(s: S, r: Resources, planning: Planning) -> None:
    """After each planning of the instant: recorded, then the views again for the next one."""
    observe = r.metrics.step
    observe("planning", "plan", planning.plan_seconds)
    observe("planning", "enact", planning.enact_seconds)
    with timed("planning", "record", observe):
        record_planning(r, planning, s.round_id)
        set_aside_unservable(r.tracked, {} if r.dry_run else planning.plan.diagnostics, r.set_aside)
    s.round_id = s.tag + "-fragment"  # what follows at this instant is a fragment plan
    with timed("planning", "views", observe):
        views(s, r)  # on the snapshot read after enactment


def record_planning(r: Resources, planning: Planning, tag: str) -> None:
    """One planning into the engine state (``hops-slurm queue``), records.sqlite, the metrics and the log."""
    if r.dry_run:
        return
    fragment = planning.record.plan_index > 0
    r.state.set_meta("rounds", str(r.counters.round_no))
    r.state.set_meta("last_fragment" if fragment else "last_plan", json.dumps(plan_summary(planning), default=str))
    r.records_file.write([], [planning.record])
    r.reasons.take(planning.plan.diagnostics)
    res = r.backend.last_result
    if res is not None:  # what each requeue's notice came to, in the placement it ends
        r.state.save_all(note_stops(r.tracked, res, r.marks, r.now(), lambda j: cause_of(planning.plan, j)))
    r.metrics.planning(planning, fragment, res)
    r.metrics.journal(r.journal)
    log.info("%s: %d jobs, placed %d, started %s, preempted %s, kept running %d, refused %s "
             "(plan %.2f s, enact %.2f s)",
             tag, len(planning.jobs), len(planning.plan.placed()), res.started if res else [],
             {j: cause_of(planning.plan, j) for j in res.preempted} if res else {}, len(res.kept) if res else 0,
             res.refused if res else {},
             planning.plan_seconds, planning.enact_seconds)


def plannings(s: S, r: Resources) -> None:
    limit, follow = r.loop.plannings(Kind.TICK if s.fragment else Kind.ROUND)  # the timetable's rule
    made = plan_instant(PlanningBackend(r.backend, s), r.policy, fragment=s.fragment,
                        index=1 if s.fragment else 0, limit=limit, follow=follow, dry_run=r.dry_run,
                        before_apply=lambda plan: before_enacting(s, r, plan),
                        on_planning=lambda planning: recorded(s, r, planning))
    r.metrics.planning_exit(made.exit)  # why the instant stopped (hops_planning_exits_total)
    s.first = made[0] if made else None
    s.last = made[-1] if made else None


def summary(s: S, r: Resources) -> None:  # the reasons the plannings gave, published (as the refresh's step)
    if r.dry_run:
        return
    if r.config.engine.forecast and not s.fragment and s.views:  # once a round: handed to its worker
        sched = r.config.scheduler
        reasons.start_forecast(r.reasons, r.policy, r.backend.cluster_view(fragment=False), s.views, r.now(),
                               round_seconds=sched.round_length, refresh_seconds=sched.queue_refresh,
                               budget=min(sched.round_length * 0.9, FORECAST_BUDGET),
                               arrivals=r.config.engine.forecast_arrivals)
    bk.publish_reasons(r, r.backend.listing, r.now())


def offer_step(s: S, r: Resources) -> None:  # what a new job may take unheld, as the plannings left Slurm
    if r.offers is None or r.dry_run:
        return
    b = r.backend
    aside = {j for j, js in r.tracked.items() if js.aside}
    parts = r.config.slurm.hops_partitions
    planning = s.last or r.last_planning
    last = planning.plan.diagnostics.get("limited") if planning is not None else None
    limited = set(last) if isinstance(last, dict) else set()
    waiting = offer.waiting_jobs(b.jobs, parts, aside, b.snapshot.taken, limited)
    made = offer.make_offer(b.snapshot, partitions=parts, waiting=waiting, promised=b.placed, views=s.views,
                            now=r.now(), ttl=2.0 * r.config.scheduler.queue_refresh, tres=offer.tres_prefix(r.api))
    publish_offer(r, made)


def close_offer(r: Resources) -> None:
    """No offer after a round that failed before its offer step (what the plannings left is not known)."""
    if r.offers is not None and not r.dry_run:
        publish_offer(r, None)


def publish_offer(r: Resources, made: offer.Offer | None) -> None:
    assert r.offers is not None
    try:
        r.offers.publish(made, r.now())
    except OSError as exc:
        log.warning("cannot write the offer file %s: %s", r.offers.path, exc)


#: the round's steps, in the order they run
STEPS: tuple[tuple[str, Callable[[S, Resources], None]], ...] = (
    ("views", views), ("plannings", plannings), ("offer", offer_step), ("summary", summary))
#: step -> the earlier steps it needs
NEEDS = {"plannings": ("views",), "offer": ("plannings",)}
#: no step of the round works job by job (the views set a job aside themselves: ViewCache)
PER_JOB: dict[str, Callable[[S, Resources, JobState], object]] = {}
CYCLE: Cycle[S, Resources] = Cycle("round", STEPS, NEEDS)
