"""The engine's cycle as named steps: the refresh and the round, each an ordered list run by one loop.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.refresh` and :meth:`~hops_slurm.engine.engine.Engine.round`
open a session (:class:`Refresh`, :class:`Round`) over the engine, and :func:`run_steps` runs the session's
steps in order, logs each one and times it; the durations go to the engine's metrics as the histogram
``hops_engine_step_duration_seconds{cycle, step}`` (:mod:`hops_slurm.engine.exporter`; the Grafana
dashboard ``etc/grafana/hops-slurm.json`` graphs them). A step that raises ends the session (its time is
still observed); the daemon logs the failure and repairs Slurm's state from the journal before its next
step (:mod:`hops_slurm.engine.daemon`).

**Refresh** (:data:`Refresh.STEPS`; the steps marked * only when the engine may change things, not in a
dry run): ``read`` Slurm (one snapshot), ``gate``* (the gate reservation), ``evict``* (foreign jobs out of
Hops reservations), ``hold``* (admin-hold new jobs), ``settle``* (read back released jobs' allocations),
``resync``* (the snapshot brought up to date after those commands), ``calibrate`` (default calibrations
for new GPU types), ``track`` (new jobs' states), ``close`` (ended jobs: last records, declaration outcome,
probes cancelled; a job its owner moved out of the Hops partitions leaves the same way, the engine's admin
hold released), ``account`` (wait, run time, GPU-seconds; set-aside reasons), ``profile`` (probes and
in-place measurement), ``adopt``* (the environment files of jobs Slurm started on an offer:
:mod:`hops_slurm.engine.offer`), ``ingest``* (runtime records), ``tidy``* (probe files), ``ages``* (eq. 9),
``declarations``* (declared vs processed samples), ``save``* (the states of the jobs that changed beyond
the clock, or not written for a round: :mod:`hops_slurm.engine.written`; one transaction), ``records``*
(their JobRecords into records.sqlite), ``metrics``* and ``heartbeat``* (for ``hops-slurm failopen``).

**Round** (:data:`Round.STEPS`): ``views`` (the job views on the snapshot), ``plannings`` (a round or
fragment plan, then fragment plans at the same instant: :func:`hops_slurm.core.rounds.plan_instant`, the
simulator's loop too), ``offer``* (the idle GPUs a new job may take unheld, with ``[engine] offer_file``).
Each planning inside is itself timed by part under ``cycle="planning"``: ``plan``,
``enact`` (from its :class:`~hops_slurm.core.interface.Planning`), ``record`` and ``views`` (the views again
after enactment, recomputed only for the jobs whose inputs changed: :class:`hops_slurm.engine.known_jobs.ViewCache`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hops_slurm.core.ledger import slurm_time
from hops_slurm.engine import offer
from hops_slurm.engine.aside import per_job, set_aside_unservable
from hops_slurm.engine.bookkeeping import JobBookkeeping as Engine  # the engine as its steps see it
from hops_slurm.engine.failopen import touch_heartbeat
from hops_slurm.engine.inplace import probe_capacity
from hops_slurm.engine.profiling import ProfilerFlow, cancel_probes
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.core.rounds import LoopSettings, Planning, plan_instant
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_INPLACE, JobState, account
from hops_slurm.slurm.api import SlurmError, SlurmJob
from hops_slurm.slurm.scope import node_in
from hops_slurm.slurm.snapshot import Snapshot

log = logging.getLogger(__name__)

#: the end state of a job its owner moved out of the Hops partitions (the engine no longer tracks it)
LEFT_HOPS = "LEFT_HOPS"
#: observe(cycle, step, seconds): where each step's duration goes (the engine's metrics)
Observe = Callable[[str, str, float], None]


@dataclass(frozen=True)
class Step:
    """One named step of a cycle: ``run`` takes no argument (it works on its session)."""

    name: str
    run: Callable[[], object]


@contextmanager
def timed(cycle: str, step: str, observe: Observe) -> Iterator[None]:
    """Time one step (also when it raises), log it and hand the seconds to ``observe``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - t0
        log.debug("%s/%s: %.3f s", cycle, step, seconds)
        observe(cycle, step, seconds)


def run_steps(cycle: str, steps: Sequence[Step], observe: Observe) -> None:
    """Run ``steps`` in order, each timed (:func:`timed`); a step that raises ends the cycle."""
    t0 = time.perf_counter()
    for step in steps:
        with timed(cycle, step.name, observe):
            step.run()
    log.debug("%s: %d steps in %.3f s", cycle, len(steps), time.perf_counter() - t0)


# ----- the refresh ----------------------------------------------------------------------------------
class Refresh:
    """One refresh of the engine's view of Slurm (see the module docstring); ``listing``: a job listing
    just read, reused as the snapshot's. :attr:`out` says what changed."""

    #: (name, only when the engine may change things); the order they run in
    STEPS: tuple[tuple[str, bool], ...] = (
        ("read", False), ("gate", True), ("evict", True), ("hold", True), ("settle", True), ("resync", True),
        ("calibrate", False), ("track", False), ("close", False), ("account", False), ("profile", False),
        ("adopt", True), ("ingest", True), ("tidy", True), ("ages", True), ("declarations", True), ("save", True),
        ("records", True), ("metrics", True), ("heartbeat", True))

    def __init__(self, engine: Engine, listing: list[SlurmJob] | None = None) -> None:
        assert engine.backend is not None and engine.enactor is not None and engine.state is not None
        self.e, self.given = engine, listing
        self.snap = Snapshot()
        self.out: dict[str, Any] = {"held": [], "ended": [], "profiled": [], "in_place": []}
        self.gated = False
        self.verified: list[str] = []
        self.gpu_types: list[str] = []
        self.now = 0.0
        self.changed: list[JobState] = []
        self.due: list[tuple[JobState, tuple[Any, ...]]] = []  # the changed jobs written (hops_slurm.engine.written)
        self.records: list[Any] = []

    def steps(self) -> list[Step]:
        return [Step(name, getattr(self, "_" + name)) for name, acts in self.STEPS if not (acts and self.e.dry_run)]

    # each step below, in the order of STEPS
    def _read(self) -> None:
        e = self.e
        e._refreshes, e._record_budget = e._refreshes + 1, RefreshBudget()  # one record budget per refresh
        self.snap = e.backend.read(self.given)  # type: ignore[union-attr]
        e.enactor.round_id = "refresh"  # type: ignore[union-attr]

    def _gate(self) -> None:
        self.gated = self.e.enactor.ensure_gate(self.snap.reservations)  # type: ignore[union-attr]
        if self.e.config.engine.offer_file is not None:
            self.gated = offer.ensure_reservation(self.e.enactor, self.snap.reservations) or self.gated  # type: ignore[arg-type]

    def _settled_jobs(self) -> list[SlurmJob]:  # every job but those about to start on an offer (left alone)
        return [j for j in self.snap.jobs if not offer.starting(j, self.snap.taken)]

    def _evict(self) -> None:
        self.out["evicted"] = self.e.enactor.evict_foreign(self._settled_jobs())  # type: ignore[union-attr]

    def _hold(self) -> None:
        self.out["held"] = self.e.enactor.hold_new(self._settled_jobs())  # type: ignore[union-attr]

    def _settle(self) -> None:
        settled = self.e.enactor.settle(snapshot=self.snap)  # type: ignore[union-attr]
        self.out["mismatched"] = dict(settled.mismatched)
        self.verified = list(settled.verified)

    def _resync(self) -> None:
        b, out = self.e.backend, self.out
        assert b is not None
        if out["mismatched"]:
            self.snap = b.read()  # requeue-held again: read it all back
        elif out["held"] or out["evicted"] or self.verified or self.gated:
            # the engine's own commands, which succeeded: the snapshot is brought up to date without
            # another job listing (the reservations, created or deleted, are read again)
            snap = self.snap.held(out["held"]).detached([*out["evicted"], *self.verified])
            b.keep(snap.with_reservations(self.e.api.reservations()) if self.gated or self.verified else snap)
            self.snap = b.snapshot

    def _calibrate(self) -> None:
        parts = self.e.config.slurm.hops_partitions
        self.gpu_types = sorted({n.gpu_type for n in self.snap.nodes if n.gpus_total and node_in(n, parts)})
        self.e._ensure_calibrations(set(self.gpu_types))

    def _track(self) -> None:
        e = self.e
        self.now = e.now()
        for job in self._settled_jobs():
            if job.is_hops and e.scope.inside(job) and job.job_id not in e.tracked \
                    and (job.pending or job.active):
                e.tracked[job.job_id] = e._new_state(job, self.now)

    def _close(self) -> None:
        e, listing = self.e, self.snap.listing
        for js in list(e.tracked.values()):
            seen = listing.get(js.job_id)
            left = seen is not None and seen.outside  # moved to a partition that is not Hops's (by its owner)
            if seen is not None and (seen.pending or seen.active) and not left:
                continue
            if left:
                self._hand_back(seen)  # type: ignore[arg-type]
            before = js.last_seen
            account(js, self.now, "ENDED", {}, started=seen.start_time if seen else None,
                    ended=seen.end_time if seen else None, ran=e.enactor.planned_config(js.job_id))  # type: ignore[union-attr]
            # ended when Slurm says (into the interval since the last refresh, as the accounting dates it),
            # not when the engine noticed: a busy engine must not lengthen its jobs' JCT
            end_time = seen.end_time if seen is not None else None
            js.ended = slurm_time(end_time, before, self.now)
            js.end_state = LEFT_HOPS if left else seen.state if seen is not None else "COMPLETED"
            if not e.dry_run:
                e._ingest_metrics(js)  # its last records count too
                e._record_declaration(js)
                cancel_probes(js, e.api)
            if e.profiler is not None:
                e.profiler.forget(js.job_id)
            e.seen_files.forget(js.job_id)
            del e.tracked[js.job_id]
            self.out["ended"].append(js.job_id)
            self.changed.append(js)

    def _hand_back(self, job: SlurmJob) -> None:
        """A tracked job now in a partition that is not Hops's leaves Hops: the engine's admin hold on it is
        released (journaled) so Slurm schedules it there; nothing else of it is touched again (the evict
        step already took it out of any Hops reservation)."""
        e = self.e
        log.info("job %s moved to partition %s, not a Hops partition: it leaves Hops", job.job_id, job.partition[:100])
        if e.dry_run or not (job.pending and job.reason == "JobHeldAdmin"):
            return
        try:
            with e.journal.action("leave", job.job_id, {"partition": job.partition[:100]}, "refresh"):  # type: ignore[union-attr]
                e.api.release(job.job_id)
        except SlurmError as exc:  # it stays held; the owner sees the hold, the log says why
            log.warning("job %s: cannot release the engine's hold after it left Hops: %s", job.job_id, exc)

    def _account(self) -> None:
        e, listing = self.e, self.snap.listing
        for js in list(e.tracked.values()):
            seen = listing[js.job_id]
            per_job(js, "reading its state from Slurm", lambda js=js, seen=seen: e._account(js, seen, self.now),
                    e._set_aside)
            e._review_aside(js, seen)
            self.changed.append(js)

    def _profile(self) -> None:
        e, out = self.e, self.out
        # a job whose profiling is settled has nothing to advance: the capacity is read only for the others
        todo = [js for js in e.tracked.values() if not js.aside and not ProfilerFlow.settled(js)]
        if e.profiler is not None and todo:
            part = e.config.slurm
            capacity = probe_capacity(self.snap, part.hops_partitions, part.profiler_partition, e.backend.placed)  # type: ignore[union-attr]
            listing = self.snap.listing
            for js in todo:
                moved = per_job(js, "profiling", lambda js=js: e.profiler.advance(  # type: ignore[union-attr]
                    js, self.gpu_types, listing, capacity), e._set_aside)
                if moved and js.profile in (PROFILE_DONE, PROFILE_INPLACE):
                    out["in_place" if js.profile == PROFILE_INPLACE else "profiled"].append(js.job_id)
        out["aside"] = {js.job_id: js.aside for js in e.tracked.values() if js.aside}

    def _adopt(self) -> None:  # jobs Slurm started on an offer, before the engine saw them: their env files
        e, listing = self.e, self.snap.listing
        todo = [j for j in e.tracked if j in listing and offer.adoptable(listing[j])]
        if todo:
            self.out["adopted"] = offer.adopt([listing[j] for j in todo], self.snap, e.enactor.env_dir,  # type: ignore[union-attr]
                                              e._job_envs(todo))
            if self.out["adopted"]:
                log.info("started on an offer: %s", ", ".join(self.out["adopted"]))

    def _ingest(self) -> None:
        for js in self.e.tracked.values():
            self.e._ingest_metrics(js)

    def _tidy(self) -> None:
        if self.e.profiler is not None:
            self.e.profiler.tidy(self.e.tracked)

    def _ages(self) -> None:
        self.e._refresh_ages(self.changed)  # the ended jobs too: their records carry the age

    def _declarations(self) -> None:
        self.e._review_declarations(self.snap.listing)

    def _save(self) -> None:
        # only the jobs that changed beyond the clock (hops_slurm.engine.written), in one transaction
        self.due = self.e.written.due(self.changed, self.now)
        self.e.state.save_all([js for js, _ in self.due])  # type: ignore[union-attr]

    def _records(self) -> None:
        self.records = [self.e._job_record(js) for js, _ in self.due]
        self.e.records_file.write(self.records)  # one transaction on the file the engine keeps open
        self.e.written.wrote(self.due, self.now)

    def _metrics(self) -> None:
        e = self.e
        e.metrics.refresh(e.tracked.values(), [r for r in self.records if r.end is not None], self.now,
                          e.config.paths.resolve(e.config.paths.store), e.store)
        e.metrics.journal(e.journal)

    def _heartbeat(self) -> None:
        touch_heartbeat(self.e.state_dir)  # hops-slurm failopen: the engine is alive


# ----- the round ------------------------------------------------------------------------------------
class Round:
    """One round (or, with ``fragment``, one fragment plan) on the engine's last read of Slurm: the
    instant's plannings, each recorded. :attr:`first`: the first planning (None: nothing to plan)."""

    STEPS = ("views", "plannings", "offer")

    def __init__(self, engine: Engine, fragment: bool) -> None:
        assert engine.backend is not None and engine.state is not None
        self.e, self.fragment = engine, fragment
        if not fragment:
            engine._round_no += 1
        self.tag = f"round{engine._round_no}"
        self.now = engine.now()  # the instant: every planning of this round sees the jobs as of it
        self.first: Planning | None = None
        b = engine.backend
        b.round_id = self.tag + ("-fragment" if fragment else "")
        b.job_env = {}

    def steps(self) -> list[Step]:
        return [Step(name, getattr(self, "_" + name)) for name in self.STEPS]

    def _views(self) -> None:  # the job views on the current snapshot, handed to the backend
        e = self.e
        e.backend.views = e.views.update(e.schedulable(), e.backend.listing, e._estimator(), self.now,  # type: ignore[union-attr]
                                         e._set_aside, restart_cost=e.restarts.of, memo=e.estimates)

    def _before_enacting(self, plan: Any) -> None:  # the environment of the jobs this plan starts
        self.e.backend.job_env = self.e._job_envs(plan.placed())  # type: ignore[union-attr]

    def _recorded(self, planning: Planning) -> None:
        e, b = self.e, self.e.backend
        assert b is not None
        observe = e.metrics.step
        observe("planning", "plan", planning.plan_seconds)
        observe("planning", "enact", planning.enact_seconds)
        with timed("planning", "record", observe):
            e._record(planning, b.round_id)
            set_aside_unservable(e.tracked, {} if e.dry_run else planning.plan.diagnostics, e._set_aside)
        b.round_id = self.tag + "-fragment"  # what follows at this instant is a fragment plan
        with timed("planning", "views", observe):
            self._views()  # on the snapshot read after enactment

    def _plannings(self) -> None:
        limit = LoopSettings().max_plans_per_instant + (0 if self.fragment else 1)
        plannings = plan_instant(self.e.backend, self.e.policy, fragment=self.fragment,  # type: ignore[arg-type]
                                 index=1 if self.fragment else 0, limit=limit, dry_run=self.e.dry_run,
                                 before_apply=self._before_enacting, on_planning=self._recorded)
        self.first = plannings[0] if plannings else None

    def _offer(self) -> None:  # what a new job may take unheld, as the plannings left Slurm
        e, b = self.e, self.e.backend
        path = e.config.engine.offer_file
        if path is None or e.dry_run or b is None:
            return
        aside = {j for j, s in e.tracked.items() if s.aside}
        part = e.config.slurm.hops_partitions
        made = offer.make_offer(b.snapshot, partition=part, waiting=offer.waiting_jobs(b.jobs, part, aside, b.snapshot.taken),
                                promised=b.placed, views=b.views, now=e.now(),
                                ttl=2.0 * e.config.scheduler.queue_refresh, tres=offer.tres_prefix(e.api))
        try:
            offer.publish(path, made)
        except OSError as exc:
            log.warning("cannot write the offer file %s: %s", path, exc)
