"""The engine's cycle as named steps: the refresh and the round, each an ordered list run by one loop.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.refresh` and :meth:`~hops_slurm.engine.engine.Engine.round`
open a session (:class:`Refresh`, :class:`Round`) over the engine, and :func:`run_steps` runs the session's
steps in order, logs each one and times it; the durations go to the engine's metrics as the histogram
``hops_engine_step_duration_seconds{cycle, step}`` (:mod:`hops_slurm.engine.exporter`; the Grafana
dashboard ``etc/grafana/hops-slurm.json`` graphs them).

**One bad job never stops a refresh or a round** (docs/security.md, "One bad job"). Each step that works
on jobs handles each job on its own (:meth:`Session.each`, over :func:`hops_slurm.engine.aside.per_job`):
a job whose processing in that step fails is set aside with a one-line reason naming the step
(``refresh step adopt: no learning rate for 4 GPUs``), logged once, and the step goes on with the others.
Those steps are the ones with a per-job method ``_<step>_one`` (:meth:`Session.per_job_steps`); the others
are not per job (``read``, ``gate``, ``resync``, ``calibrate``, ``metrics``, ``heartbeat``, ``plannings``,
``offer``), or their per-job loop lives where the jobs are handled, under the same rule: the enactor's
journal phases record a failure per job (``evict``, ``hold``, ``settle``), ``tidy`` per probe
reservation, :func:`hops_slurm.engine.known_jobs.refresh_ages` (``ages``) and
:class:`~hops_slurm.engine.known_jobs.ViewCache` (``views``) set a job aside themselves.
A step that fails as a whole for a reason that is no one job's and not the engine's own (a fault in the
step itself, data no job owns) is recorded (:attr:`Session.failed`, and ``failed`` in the refresh's
result), logged on one line, and the cycle runs the steps after it, but for those that need it
(:data:`Refresh.NEEDS`, :data:`Round.NEEDS`): every refresh step needs ``read``, whose failure of any kind
ends the refresh as a failure of the engine does (without a fresh read of Slurm ``close`` would take
every job for ended, and no round may plan on it); ``account`` and ``profile`` need ``close`` (until it ran,
the tracked jobs include ended ones); ``records`` needs ``save`` (the records are of the states
saved); ``plannings`` needs ``views`` and ``offer`` needs ``plannings`` (an offer is what the
plannings left idle: a round whose offer step failed or was skipped closes the offer). ``resync`` reads the snapshot again whole after any failed step before it.
A failure of the engine itself (Slurm unreachable or a command refused, the engine's storage, memory:
:func:`hops_slurm.engine.aside.per_job_failure` is False) still ends the session (its time is observed):
every later step would meet it too, and Slurm's state must be repaired from the journal before another
command; the daemon logs it and does that before its next step (:mod:`hops_slurm.engine.daemon`).

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
(their JobRecords into records.sqlite), ``summary``* (each pending job's reason logged where it changed,
counted in ``hops_pending_jobs{reason}`` and written to the queue summary users read:
:func:`hops_slurm.engine.reasons.publish`), ``metrics``* and ``heartbeat``* (for ``hops-slurm failopen``).

**Round** (:data:`Round.STEPS`): ``views`` (the job views on the snapshot), ``plannings`` (a round or
fragment plan, then fragment plans at the same instant: :func:`hops_slurm.core.rounds.plan_instant`, the
simulator's loop too), ``offer``* (the idle GPUs a new job may take unheld, with ``[engine] offer_file``),
``summary``* (as the refresh's, with the plannings' reasons; with ``[engine] forecast``, a round plan's
first hands its views to the forecast worker: :func:`hops_slurm.engine.reasons.start_forecast`).
Each planning inside is itself timed by part under ``cycle="planning"``: ``plan``,
``enact`` (from its :class:`~hops_slurm.core.interface.Planning`), ``record`` and ``views`` (the views again
after enactment, recomputed only for the jobs whose inputs changed: :class:`hops_slurm.engine.known_jobs.ViewCache`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from hops_slurm.core.ledger import slurm_time
from hops_slurm.engine import offer, offer_grant, reasons
from hops_slurm.engine.aside import per_job, per_job_failure, reason_text, set_aside_unservable
from hops_slurm.engine.bookkeeping import JobBookkeeping as Engine  # the engine as its steps see it
from hops_slurm.engine.failopen import touch_heartbeat
from hops_slurm.engine.inplace import probe_capacity
from hops_slurm.engine.profiling import ProfilerFlow, cancel_probes
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.core.rounds import LoopSettings, Planning, plan_instant
from hops_slurm.engine.userfiles import drop_place
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_INPLACE, JobState, account, job_row
from hops_slurm.slurm.api import SlurmError, SlurmJob
from hops_slurm.slurm.placement import drop_job_env
from hops_slurm.slurm.scope import node_in
from hops_slurm.slurm.snapshot import Snapshot

log = logging.getLogger(__name__)
T = TypeVar("T")

#: the end state of a job its owner moved out of the Hops partitions (the engine no longer tracks it)
LEFT_HOPS = "LEFT_HOPS"
#: observe(cycle, step, seconds): where each step's duration goes (the engine's metrics)
Observe = Callable[[str, str, float], None]


@dataclass(frozen=True)
class Step:
    """One named step of a cycle: ``run`` takes no argument (it works on its session); ``needs``: the
    earlier steps it cannot run without (it is skipped when one of them failed or was skipped)."""

    name: str
    run: Callable[[], object]
    needs: tuple[str, ...] = ()
    vital: bool = False  # its failure, whatever it is, ends the cycle (the refresh's read of Slurm)


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


def run_steps(cycle: str, steps: Sequence[Step], observe: Observe, failed: dict[str, str] | None = None) -> dict[str, str]:
    """Run ``steps`` in order, each timed (:func:`timed`). A failure of the engine itself
    (:func:`hops_slurm.engine.aside.per_job_failure` False), or any failure of a vital step, ends the cycle;
    any other failure goes into ``failed`` (step -> one-line reason), is logged on one line, and the steps
    after it run but for those that need it (:attr:`Step.needs`), which are skipped (``failed``: "skipped:
    ..."). Returns ``failed``."""
    failed = {} if failed is None else failed
    t0 = time.perf_counter()
    for i, step in enumerate(steps):
        missing = [n for n in step.needs if n in failed]
        if missing:
            failed[step.name] = f"skipped: it needs {missing[0]}"
            continue
        try:
            with timed(cycle, step.name, observe):
                step.run()
        except Exception as exc:
            if step.vital or not per_job_failure(exc):
                raise
            failed[step.name] = reason_text(f"{type(exc).__name__}", exc)
            log.error("%s step %s failed (%s); skipped: %s; the other steps run", cycle, step.name,
                      failed[step.name], ", ".join(_dependents(step.name, steps[i + 1:])) or "none")
    log.debug("%s: %d steps in %.3f s", cycle, len(steps), time.perf_counter() - t0)
    return failed


def _dependents(name: str, later: Sequence[Step]) -> list[str]:
    """The steps of ``later`` that need ``name``, directly or through another of them."""
    out = {name}
    for step in later:
        if out.intersection(step.needs):
            out.add(step.name)
    return [s.name for s in later if s.name in out]


class Session:
    """What the refresh and the round share: the engine, the steps' failures so far (:attr:`failed`) and
    the per-job guard (:meth:`each`)."""

    cycle = ""
    #: step -> the earlier steps it needs besides those every step of the cycle needs (:data:`FIRST`)
    NEEDS: Mapping[str, tuple[str, ...]] = {}
    #: the step every other step of the cycle needs ("" for none)
    FIRST = ""

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self.failed: dict[str, str] = {}  # step -> why it failed, or that it was skipped (run_steps)

    def step(self, name: str) -> Step:
        needs = self.NEEDS.get(name, ())
        if self.FIRST and name != self.FIRST:
            needs = (self.FIRST, *needs)
        return Step(name, getattr(self, "_" + name), needs, vital=name == self.FIRST)

    def each(self, step: str, jobs: Iterable[JobState], one: Callable[[JobState], T]) -> dict[str, T]:
        """``one(job)`` for each of ``jobs``, each on its own: a job whose processing fails is set aside with
        a reason naming the step (logged once: :func:`hops_slurm.engine.aside.per_job`) and the others go
        on. Returns job id -> what ``one`` returned, for the jobs it went through."""
        out: dict[str, T] = {}
        for js in list(jobs):
            got = per_job(js, f"{self.cycle} step {step}", lambda js=js: (one(js),), self.e._set_aside)
            if got is not None:
                out[js.job_id] = got[0]
        return out

    @classmethod
    def per_job_steps(cls) -> dict[str, str]:
        """Step -> the name of its per-job method (``_<step>_one``), for the steps that have one."""
        names = [n if isinstance(n, str) else n[0] for n in getattr(cls, "STEPS", ())]
        return {n: f"_{n}_one" for n in names if hasattr(cls, f"_{n}_one")}


#: wall seconds a round's forecast may take at most (in its worker, beside the rounds; and 90% of the round)
FORECAST_BUDGET = 300.0


def publish_reasons(e: Engine, listing: Mapping[str, SlurmJob], now: float) -> None:
    """The ``summary`` step of the refresh and the round (:func:`hops_slurm.engine.reasons.publish`)."""
    reasons.publish(e.reasons, e.tracked, listing, now, metrics=e.metrics, state_dir=e.state_dir,
                    refresh_seconds=e.config.scheduler.queue_refresh)


# ----- the refresh ----------------------------------------------------------------------------------
class Refresh(Session):
    """One refresh of the engine's view of Slurm (see the module docstring); ``listing``: a job listing
    just read, reused as the snapshot's. :attr:`out` says what changed (``failed``: the steps that failed)."""

    cycle = "refresh"
    #: (name, only when the engine may change things); the order they run in
    STEPS: tuple[tuple[str, bool], ...] = (
        ("read", False), ("gate", True), ("evict", True), ("hold", True), ("settle", True), ("resync", True),
        ("calibrate", False), ("track", False), ("close", False), ("account", False), ("profile", False),
        ("adopt", True), ("ingest", True), ("tidy", True), ("ages", True), ("declarations", True), ("save", True),
        ("records", True), ("summary", True), ("metrics", True), ("heartbeat", True))
    FIRST = "read"
    NEEDS = {"account": ("close",), "profile": ("close",), "records": ("save",)}

    def __init__(self, engine: Engine, listing: list[SlurmJob] | None = None, listed_at: float | None = None) -> None:
        assert engine.backend is not None and engine.enactor is not None and engine.state is not None
        super().__init__(engine)
        self.given, self.listed_at = listing, listed_at
        self.snap = Snapshot()
        self.out: dict[str, Any] = {"held": [], "ended": [], "profiled": [], "in_place": []}
        self.gated = False
        self.verified: list[str] = []
        self.gpu_types: list[str] = []
        self.now = engine.now()  # again when the jobs are tracked, after the engine's commands
        self.changed: list[JobState] = []
        self.due: list[tuple[JobState, tuple[Any, ...]]] = []  # the changed jobs written (hops_slurm.engine.written)
        self.records: list[Any] = []
        self.capacity: Any = None  # the profile step's probe capacity
        self.verdicts: dict[str, Any] = {}  # the declarations step's verdicts

    def steps(self) -> list[Step]:
        return [self.step(name) for name, acts in self.STEPS if not (acts and self.e.dry_run)]

    # each step below, in the order of STEPS (a per-job step's work on one job: _<step>_one)
    def _read(self) -> None:
        e = self.e
        e._refreshes, e._record_budget = e._refreshes + 1, RefreshBudget()  # one record budget per refresh
        self.snap = e.backend.read(self.given, self.listed_at)  # type: ignore[union-attr]
        e.enactor.round_id = "refresh"  # type: ignore[union-attr]

    def _gate(self) -> None:
        self.gated = self.e.enactor.ensure_gate(self.snap.reservations)  # type: ignore[union-attr]
        if self.e.config.engine.offer_file is not None:
            self.gated = offer.ensure_reservation(self.e.enactor, self.snap.reservations) or self.gated  # type: ignore[arg-type]

    def _settled_jobs(self) -> list[SlurmJob]:  # every job but those about to start on an offer (left alone)
        return [j for j in self.snap.jobs if not offer.starting(j, self.snap.taken)]

    def _evict(self) -> None:
        probes = {str(p["slurm_id"]) for js in self.e.tracked.values() for p in js.probes.values() if "slurm_id" in p}
        self.out["evicted"] = self.e.enactor.evict_foreign(self._settled_jobs(), probes)  # type: ignore[union-attr]

    def _hold(self) -> None:
        self.out["held"] = self.e.enactor.hold_new(self._settled_jobs())  # type: ignore[union-attr]

    def _settle(self) -> None:
        settled = self.e.enactor.settle(snapshot=self.snap)  # type: ignore[union-attr]
        self.out["mismatched"] = dict(settled.mismatched)
        self.verified = list(settled.verified)

    def _resync(self) -> None:
        b, out = self.e.backend, self.out
        assert b is not None
        if out.get("mismatched") or self.failed:
            self.snap = b.read()  # requeue-held again, or a step before failed half-way: read it all back
        elif out["held"] or out.get("evicted") or self.verified or self.gated:
            # the engine's own commands, which succeeded: the snapshot is brought up to date without
            # another job listing (the reservations, created or deleted, are read again)
            snap = self.snap.held(out["held"]).detached([*out.get("evicted", []), *self.verified])
            b.keep(snap.with_reservations(self.e.api.reservations()) if self.gated or self.verified else snap)
            self.snap = b.snapshot

    def _gpu_types(self) -> list[str]:  # of the Hops partitions' GPU nodes in the snapshot
        parts = self.e.config.slurm.hops_partitions
        return sorted({n.gpu_type for n in self.snap.nodes if n.gpus_total and node_in(n, parts)})

    def _calibrate(self) -> None:
        self.e._ensure_calibrations(set(self._gpu_types()))

    def _track(self) -> None:
        e = self.e
        self.now = e.now()
        new = [job for job in self._settled_jobs() if job.is_hops and e.scope.inside(job)
               and job.job_id not in e.tracked and (job.pending or job.active)]
        for job in new:  # tracked at once: a job whose check fails is tracked set aside
            e.tracked[job.job_id] = e._new_state(job, self.now)
        self.each("track", [e.tracked[job.job_id] for job in new], self._track_one)

    def _track_one(self, js: JobState) -> None:
        self.e._check_new(js)

    def _close(self) -> None:
        e, listing = self.e, self.snap.listing
        # ended, or moved by its owner to a partition that is not Hops's (it leaves Hops)
        ended = [js for js in e.tracked.values() if not ((seen := listing.get(js.job_id)) is not None
                                                         and (seen.pending or seen.active) and not seen.outside)]
        self.each("close", ended, self._close_one)
        for js in ended:  # closed even when its last bookkeeping failed: it ended
            if js.ended is None:
                js.ended, js.end_state = self.now, js.end_state or "COMPLETED"
            if e.profiler is not None:
                e.profiler.forget(js.job_id)
            e.seen_files.forget(js.job_id)
            del e.tracked[js.job_id]
            self.out["ended"].append(js.job_id)
            self.changed.append(js)

    def _close_one(self, js: JobState) -> None:
        e, seen = self.e, self.snap.listing.get(js.job_id)
        left = seen is not None and seen.outside  # moved to a partition that is not Hops's (by its owner)
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
            drop_job_env(e.enactor.env_dir, js.job_id)  # type: ignore[union-attr]
            for root in (e.metrics_dir, e.probe_dir):  # its places: their last records were read above
                drop_place(root, js.job_id)

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
        jobs = [js for js in self.e.tracked.values() if js.job_id in self.snap.listing]
        self.each("account", jobs, self._account_one)
        self.changed.extend(jobs)

    def _account_one(self, js: JobState) -> None:
        e, seen = self.e, self.snap.listing[js.job_id]
        per_job(js, "reading its state from Slurm", lambda: e._account(js, seen, self.now), e._set_aside)
        e._review_aside(js, seen)

    def _profile(self) -> None:
        e, out = self.e, self.out
        # a job whose profiling is settled has nothing to advance: the capacity is read only for the others
        todo = [js for js in e.tracked.values() if not js.aside and not ProfilerFlow.settled(js)]
        if e.profiler is not None and todo:
            part, self.gpu_types = e.config.slurm, self._gpu_types()
            self.capacity = probe_capacity(self.snap, part.hops_partitions, part.profiler_partition, e.backend.placed)  # type: ignore[union-attr]
            self.each("profile", todo, self._profile_one)
        out["aside"] = {js.job_id: js.aside for js in e.tracked.values() if js.aside}

    def _profile_one(self, js: JobState) -> None:
        e = self.e
        moved = per_job(js, "profiling", lambda: e.profiler.advance(  # type: ignore[union-attr]
            js, self.gpu_types, self.snap.listing, self.capacity), e._set_aside)
        if moved and js.profile in (PROFILE_DONE, PROFILE_INPLACE):
            self.out["in_place" if js.profile == PROFILE_INPLACE else "profiled"].append(js.job_id)

    def _adopt(self) -> None:  # jobs Slurm started on an offer, before the engine saw them: their env files
        e, listing = self.e, self.snap.listing
        todo = [js for j, js in e.tracked.items() if j in listing and offer.adoptable(listing[j])]
        if not todo:
            return
        # one that holds anything but what it was granted is put right, never adopted as it is
        writer = e.offers
        wrong = offer_grant.misfits([listing[js.job_id] for js in todo], e.config.slurm.hops_partitions,
                                    writer.history if writer else ())
        self.out["put_right"] = offer_grant.put_right(e.enactor, wrong) if wrong else []  # type: ignore[arg-type]
        todo = [js for js in todo if js.job_id not in wrong]
        adopted = [j for j, done in self.each("adopt", todo, self._adopt_one).items() if done]
        if adopted:
            self.out["adopted"] = adopted
            log.info("started on an offer: %s", ", ".join(adopted))

    def _adopt_one(self, js: JobState) -> bool:
        e = self.e
        return bool(offer.adopt([self.snap.listing[js.job_id]], self.snap, e.enactor.env_dir,  # type: ignore[union-attr]
                                e._job_envs([js.job_id])))

    def _ingest(self) -> None:
        self.each("ingest", self.e.tracked.values(), self._ingest_one)

    def _ingest_one(self, js: JobState) -> None:
        self.e._ingest_metrics(js)

    def _tidy(self) -> None:
        if self.e.profiler is not None:
            self.e.profiler.tidy(self.e.tracked)

    def _ages(self) -> None:
        self.e._refresh_ages(self.changed)  # the ended jobs too: their records carry the age

    def _declarations(self) -> None:
        self.verdicts = self.e._declaration_verdicts()
        self.each("declarations", [self.e.tracked[j] for j in self.verdicts if j in self.e.tracked],
                  self._declarations_one)

    def _declarations_one(self, js: JobState) -> None:
        self.e._act_on_declaration(js, self.verdicts[js.job_id], self.snap.listing.get(js.job_id))

    def _save(self) -> None:
        # only the jobs that changed beyond the clock (hops_slurm.engine.written), in one transaction
        due = self.e.written.due(self.changed, self.now)
        rows = self.each("save", [js for js, _ in due], self._save_one)
        state = self.e.state
        assert state is not None
        try:
            state.save_rows(list(rows.values()))
            saved: Mapping[str, object] = rows
        except Exception as exc:
            if not per_job_failure(exc):
                raise
            # a row the database would not take (all rolled back): each on its own, so one keeps no other out
            saved = self.each("save", [js for js, _ in due if js.job_id in rows],
                              lambda js: state.save_rows([rows[js.job_id]]))
        self.due = [(js, key) for js, key in due if js.job_id in saved]

    def _save_one(self, js: JobState) -> dict[str, object]:
        return job_row(js)

    def _records(self) -> None:
        made = self.each("records", [js for js, _ in self.due], self._records_one)
        self.records = list(made.values())
        self.e.records_file.write(self.records)  # one transaction on the file the engine keeps open
        self.e.written.wrote([(js, key) for js, key in self.due if js.job_id in made], self.now)

    def _records_one(self, js: JobState) -> Any:
        return self.e._job_record(js)

    def _summary(self) -> None:  # each pending job's reason: log, metric, the summary users read
        publish_reasons(self.e, self.snap.listing, self.now)

    def _metrics(self) -> None:
        e = self.e
        e.metrics.refresh(e.tracked.values(), [r for r in self.records if r.end is not None], self.now,
                          e.config.paths.resolve(e.config.paths.store), e.store)
        e.metrics.journal(e.journal)

    def _heartbeat(self) -> None:
        touch_heartbeat(self.e.state_dir)  # hops-slurm failopen: the engine is alive


# ----- the round ------------------------------------------------------------------------------------
class Round(Session):
    """One round (or, with ``fragment``, one fragment plan) on the engine's last read of Slurm: the
    instant's plannings, each recorded. :attr:`first`: the first planning (None: nothing to plan)."""

    cycle = "round"
    STEPS = ("views", "plannings", "offer", "summary")
    NEEDS = {"plannings": ("views",), "offer": ("plannings",)}

    def __init__(self, engine: Engine, fragment: bool) -> None:
        assert engine.backend is not None and engine.state is not None
        super().__init__(engine)
        self.fragment = fragment
        if not fragment:
            engine._round_no += 1
        self.tag = f"round{engine._round_no}"
        self.now = engine.now()  # the instant: every planning of this round sees the jobs as of it
        self.first: Planning | None = None
        self.last: Planning | None = None
        b = engine.backend
        b.round_id = self.tag + ("-fragment" if fragment else "")
        b.job_env = {}

    def steps(self) -> list[Step]:
        return [self.step(name) for name in self.STEPS]

    def _views(self) -> None:  # the job views on the current snapshot, handed to the backend
        e = self.e
        e.backend.views = e.views.update(e.schedulable(), e.backend.listing, e._estimator(), self.now,  # type: ignore[union-attr]
                                         e._set_aside, restart_cost=e.restarts.of, memo=e.estimates)

    def _before_enacting(self, plan: Any) -> None:  # the environment of the jobs this plan starts
        self.e.backend.job_env = self.e._job_envs(plan.placed())  # type: ignore[union-attr]
        if not self.e.dry_run:
            try:  # the plan may hand out what the offer offers: closed until the next offer step
                offer.close_while_enacting(self.e.offers)
            except OSError as exc:
                log.warning("cannot close the offer file: %s", exc)

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
        self.last = plannings[-1] if plannings else None

    def _summary(self) -> None:  # the reasons the plannings gave, published (as the refresh's step)
        e, b = self.e, self.e.backend
        assert b is not None
        if e.dry_run:
            return
        if e.config.engine.forecast and not self.fragment and b.views:  # once a round: handed to its worker
            sched = e.config.scheduler
            reasons.start_forecast(e.reasons, e.policy, b.cluster_view(fragment=False), b.views, e.now(),
                                   round_seconds=sched.round_length, refresh_seconds=sched.queue_refresh,
                                   budget=min(sched.round_length * 0.9, FORECAST_BUDGET))
        publish_reasons(e, b.listing, e.now())

    def _offer(self) -> None:  # what a new job may take unheld, as the plannings left Slurm
        e, b = self.e, self.e.backend
        if e.offers is None or e.dry_run or b is None:
            return
        aside = {j for j, s in e.tracked.items() if s.aside}
        parts = e.config.slurm.hops_partitions
        planning = self.last or e.last_planning
        last = planning.plan.diagnostics.get("limited") if planning is not None else None
        limited = set(last) if isinstance(last, dict) else set()
        waiting = offer.waiting_jobs(b.jobs, parts, aside, b.snapshot.taken, limited)
        made = offer.make_offer(b.snapshot, partitions=parts, waiting=waiting, promised=b.placed, views=b.views,
                                now=e.now(), ttl=2.0 * e.config.scheduler.queue_refresh, tres=offer.tres_prefix(e.api))
        self._publish(made)

    def close_offer(self) -> None:
        """No offer on a round that failed before its offer step (what the plannings left is not known)."""
        if self.e.offers is not None and not self.e.dry_run:
            self._publish(None)

    def _publish(self, made: offer.Offer | None) -> None:
        e = self.e
        assert e.offers is not None
        try:
            e.offers.publish(made, e.now())
        except OSError as exc:
            log.warning("cannot write the offer file %s: %s", e.offers.path, exc)
