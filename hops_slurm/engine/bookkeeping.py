"""The engine's long-lived resources, and the per-job bookkeeping over them: what a refresh learns about one
job and writes down.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.open` makes one :class:`Resources` (one typed object,
whole once open) after taking the lock and opening the store, the journal, the engine state and the records
file; each named step of the refresh and the round (:mod:`hops_slurm.engine.refresh`,
:mod:`hops_slurm.engine.round`) is a plain function of a session (what one cycle knows:
:mod:`hops_slurm.engine.cycle`) and these resources. Nothing in them is Optional but what is absent by
design: the profiler and the checkpoint marks in a dry run, the store in a dry run without a store file,
the offer writer without ``[engine] offer_file``.

The refresh's steps call the functions below job by job: a new job's state (:func:`new_state`,
:func:`check_new`), its accounting from Slurm's listing (:func:`account_job`), its Comment in step with its
set-aside reason (:func:`review_aside`; one bad job never stops the round: :mod:`hops_slurm.engine.aside`),
its eq. 9 age (:func:`refresh_job_ages`), its runtime records (:func:`ingest_metrics`) and where a starting
job writes them (:func:`recorder_env`), declared vs processed samples (:func:`declaration_verdicts`,
:func:`act_on_declaration`: :mod:`hops_slurm.engine.honesty_review`), its JobRecord (:func:`job_record`),
and each pending job's reason published (:func:`publish_reasons`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hops_slurm.config import SiteConfig
from hops_slurm.core.timetable import LoopSettings
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine import reasons
from hops_slurm.engine.aside import COMMENT_PREFIX, check_directives, per_job, reason_text
from hops_slurm.engine.checkpoints import Marks, placement_notice
from hops_slurm.engine.estimates import StoreReader
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.engine.failopen import COMMENT as FAILOPEN_COMMENT
from hops_slurm.engine.known_jobs import ViewCache, estimate, refresh_ages
from hops_slurm.engine.live_backend import SlurmBackend
from hops_slurm.engine.offer_file import OfferWriter
from hops_slurm.engine.profiling import ProfilerFlow
from hops_slurm.engine.reasons import Reasons
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.engine.restarts import RestartCosts
from hops_slurm.engine.runtime_records import RUNTIME_FILE, SeenFiles, checkpoints_key, ingest_job, metrics_key
from hops_slurm.engine.state import PROFILE_NEW, EngineState, JobState, account
from hops_slurm.engine.userfiles import Owner, make_place
from hops_slurm.engine.written import Written
from hops_slurm.errors import HopsError
from hops_slurm.journal import Journal
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.scope import HopsScope
from planner.views import Policy

if TYPE_CHECKING:
    from hops_slurm.core.interface import Planning

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Places:
    """The engine's directories and files (``[paths]``, ``[engine]``)."""

    state_dir: Path
    metrics_dir: Path  # each job's place for its runtime records and checkpoint marks
    probe_dir: Path


@dataclass
class Counters:
    """What the engine counts across cycles: the round number (stored), the refreshes, and this refresh's
    budget of records stored per user (:mod:`hops_slurm.engine.record_limits`)."""

    round_no: int = 0
    refreshes: int = 0
    record_budget: RefreshBudget = field(default_factory=RefreshBudget)


@dataclass
class Resources:
    """See the module docstring. ``tracked``: job id -> its state, for every job the engine tracks;
    ``last_planning``: the first planning of the last round that planned (the offer step's fallback)."""

    config: SiteConfig
    scope: HopsScope  # the Hops partitions: jobs of others are never tracked (hops_slurm.slurm.scope)
    api: SlurmApi
    now: Callable[[], float]
    owners: Callable[[str], Owner]
    dry_run: bool
    places: Places
    store: Any  # estimator.store.ThroughputStore; None in a dry run without a store file
    reader: StoreReader
    journal: Journal
    state: EngineState
    records_file: Any  # hops_slurm.report.source.RecordsFile; None in a dry run (nothing written)
    enactor: Enactor
    backend: SlurmBackend
    profiler: ProfilerFlow | None
    marks: Marks | None
    offers: OfferWriter | None
    policy: Policy
    restarts: RestartCosts
    tracked: dict[str, JobState]
    seen_files: SeenFiles
    written: Written
    metrics: EngineMetrics
    views: ViewCache
    reasons: Reasons
    loop: LoopSettings  # the timetable's settings (hops_slurm.core.timetable): how many plannings each instant makes
    counters: Counters = field(default_factory=Counters)
    last_planning: Planning | None = None
    #: (the last list of nodes, node -> its GPU type): :func:`hops_slurm.engine.bookkeeping.node_types`
    types_memo: tuple[object, dict[str, str]] | None = None

    def set_aside(self, js: JobState, reason: str) -> None:
        """Set ``js`` aside (one bad job never stops the round: :mod:`hops_slurm.engine.aside`): not
        scheduled, its profiling forgotten."""
        js.aside = reason
        if self.profiler is not None:
            self.profiler.forget(js.job_id)

    def estimator(self) -> Any:
        """The estimator on the current snapshot (:meth:`hops_slurm.engine.estimates.StoreReader.estimator`)."""
        return self.reader.estimator(self.backend.snapshot)


# ----- the per-job bookkeeping ------------------------------------------------------------------------
def new_state(job: SlurmJob, now: float) -> JobState:
    """A new job's state, before anything is checked (:func:`check_new`)."""
    return JobState(job_id=job.job_id, name=job.name, user=job.user, directives=job.directives or "",
                    submit_time=job.submit_time or now, first_seen=now, last_seen=job.submit_time or now,
                    last_state="PENDING")


def check_new(r: Resources, js: JobState) -> None:
    """A new job's stored directives read back, else it is set aside (not scheduled)."""
    per_job(js, "not scheduled", lambda: check_directives(js), r.set_aside)


def account_job(r: Resources, js: JobState, seen: SlurmJob, now: float) -> None:
    """One job's wait, run time and GPU-seconds from Slurm's listing (:func:`hops_slurm.engine.state.account`)."""
    if seen.active:
        # the allocation Slurm lists; while it lists none yet (job still configuring), the config the
        # job was released on (the enactor verifies and records the real one when it settles)
        config = seen.gpu_config() or r.enactor.planned_config(js.job_id) or {}
        account(js, now, "RUNNING", config, started=seen.start_time, stopped=_requeued_at(r, js))
    else:
        account(js, now, "PENDING", {}, stopped=_requeued_at(r, js))


def _requeued_at(r: Resources, js: JobState) -> float | None:
    """The engine's last requeue of a job seen running (the end of its run: :func:`account`)."""
    return r.journal.last_started(js.job_id, "requeuehold") if js.last_state == "RUNNING" else None


def review_aside(r: Resources, js: JobState, seen: SlurmJob) -> None:
    """Take a job back when Slurm now shows other stored directives that parse (an administrator
    corrected them); bring the owner's view (the job's Comment) in step with the engine's: the
    set-aside reason while aside, and no engine-written comment (set aside, released by failopen)
    once the job is back in play."""
    if js.aside and seen.directives is not None and seen.directives != js.directives:
        js.directives = seen.directives
        try:
            check_directives(js)
        except ValueError as exc:
            js.aside = reason_text("not scheduled", exc)
        else:
            log.info("job %s: its directives parse again; taken back", js.job_id)
            js.aside, js.profile, js.probes, js.profile_error = "", PROFILE_NEW, {}, ""
    if r.dry_run:
        return
    want = COMMENT_PREFIX + js.aside if js.aside else ""
    ours = seen.comment.startswith((COMMENT_PREFIX, FAILOPEN_COMMENT))  # written by the engine or failopen
    if seen.comment == want or (not js.aside and not ours):
        return
    try:
        with r.journal.action("aside", js.job_id, {"reason": js.aside}, "refresh"):
            r.api.update_job(js.job_id, {"Comment": want})
    except SlurmError as exc:  # shown at the next refresh
        log.warning("job %s: cannot write its set-aside reason into Slurm: %s", js.job_id, exc)


def refresh_job_ages(r: Resources, jobs: list[JobState]) -> None:
    """Eq. 9 ages (:func:`hops_slurm.engine.known_jobs.refresh_ages`): one cluster view and estimator per snapshot."""
    if r.store is not None:
        usable = r.backend.snapshot.usable_gpu_nodes(r.config.slurm.hops_partitions)
        refresh_ages(jobs, r.estimator, usable, r.set_aside)


def ingest_metrics(r: Resources, js: JobState) -> None:
    """New runtime records of one job, from its own place only (:mod:`hops_slurm.engine.runtime_records`),
    checked against where Slurm ran it (after this refresh's accounting); its checkpoint marks first.
    A file unchanged since each reader last read it to its end is not opened (one ``lstat`` for both)."""
    looked = r.seen_files.look(r.places.metrics_dir, js.job_id)
    marks = r.marks
    if marks is not None and not r.seen_files.unchanged(checkpoints_key(js.job_id), looked):
        per_job(js, "its checkpoint marks", lambda: marks.read(js), r.set_aside)
    if r.store is None or not js.signature:
        return
    if r.seen_files.unchanged(metrics_key(js.job_id), looked):
        return  # nothing new since the last look
    types = node_types(r)
    report = per_job(js, "its runtime records", lambda: ingest_job(
        r.store, r.state, r.places.metrics_dir, js, types, r.owners(js.user).uid, r.counters.record_budget,
        r.seen_files), r.set_aside)
    if report is not None and report.accepted:
        r.reader.ingested(js.signature)
        if r.profiler is not None:
            r.profiler.measured(js, report.types)  # later jobs of its model have data on these types
    if report is not None:
        from hops_slurm.engine.honesty_review import add_records

        for seconds in add_records(js, report.windows, r.now()):
            r.restarts.observe(js, seconds, r.now())


# ----- declared vs processed samples (issue 16: hops_slurm.engine.honesty_review, estimator.honesty) ------
def _rates(r: Resources) -> Callable[[JobState, Mapping[str, int]], float | None]:
    """(job, config) -> its estimated samples/s in that config (None: no config or no estimate); the
    refresh's one estimator (:meth:`Resources.estimator`), jobs of one model share one store read."""
    def rate(js: JobState, config: Mapping[str, int]) -> float | None:
        if not config or r.store is None:
            return None
        try:
            fn = estimate(js, r.estimator(), r.reader.estimates).throughput
            return float(fn(dict(config))) if fn is not None else None
        except Exception as exc:  # noqa: BLE001 - no rate: the records' own rate is used
            log.info("job %s: no throughput estimate for its config (%s)", js.job_id, exc)
            return None

    return rate


def declaration_verdicts(r: Resources) -> dict[str, Any]:
    """Processed vs declared samples of every job in play -> its age factor (one review for all: an
    owner's history spans their jobs); job id -> its verdict, for :func:`act_on_declaration`."""
    from hops_slurm.engine.honesty_review import review

    return review(r.tracked.values(), r.state, r.config.honesty.params(), _rates(r),
                  now=r.now(), restart_of=r.restarts.of)


def act_on_declaration(r: Resources, js: JobState, verdict: Any, seen: SlurmJob | None) -> None:
    """The site's action (``[honesty]`` in hops.toml) on one job past its declaration by the margin."""
    from hops_slurm.engine.honesty_review import act

    if seen is None or not (seen.pending or seen.active):
        return
    h = r.config.honesty

    def write_comment(text: str, kind: str = "declaration") -> None:
        with r.journal.action(kind, js.job_id, {"comment": text}, "refresh"):
            r.api.update_job(js.job_id, {"Comment": text})

    def requeue_hold() -> None:
        with r.journal.action("requeuehold", js.job_id, {"reason": "declaration"}, "refresh"):
            r.api.requeue_hold(js.job_id)

    try:
        act(js, verdict, h.action, comment=seen.comment, write_comment=write_comment, requeue_hold=requeue_hold,
            set_aside=r.set_aside)
    except SlurmError as exc:  # tried again at the next refresh
        log.warning("job %s: cannot apply [honesty] action %s: %s", js.job_id, h.action, exc)
    if js.aside:  # its Comment says why at once, not one refresh later
        review_aside(r, js, seen)


def record_declaration(r: Resources, js: JobState) -> None:
    """An ended job's declaration outcome (:func:`hops_slurm.engine.honesty_review.record_outcome`)."""
    from hops_slurm.engine.honesty_review import record_outcome

    record_outcome(r.state, js, _rates(r), r.restarts.of)


def node_types(r: Resources) -> dict[str, str]:
    """Node name -> GPU type in the last read of Slurm (made once per list of nodes)."""
    nodes, memo = r.backend.snapshot.nodes, r.types_memo
    if memo is None or memo[0] is not nodes:
        memo = r.types_memo = (nodes, {n.name: n.gpu_type for n in nodes})
    return memo[1]


def job_record(r: Resources, js: JobState) -> JobRecord:
    """The job's JobRecord as of now (records.sqlite)."""
    try:
        d = HopsDirectives.from_canonical(js.directives) if js.directives else None
    except Exception:  # noqa: BLE001 - a job set aside for its directives still gets its record
        d = None
    types = node_types(r)
    placements = []
    for p in js.placements:
        ts = {types.get(n, "") for n in p["config"]}
        placements.append(PlacementRecord(start=p["start"], end=p.get("end"), config=p["config"],
                                          gpu_type=ts.pop() if len(ts) == 1 else "mixed",
                                          preempted=bool(p.get("preempted")), **placement_notice(p)))
    state = js.end_state or js.last_state
    seen = r.backend.listing.get(js.job_id)
    partition = seen.partition if seen is not None and seen.partition else r.config.slurm.partition
    return JobRecord(job_id=js.job_id, name=js.name, user=js.user, partition=partition,
                     submit=js.submit_time, start=js.first_start, end=js.ended, state=state,
                     requirements=list(d.gpus) if d else [], age_estimate=js.age,
                     total_samples=float(d.samples) if d else None, placements=placements,
                     processed_samples=js.processed if js.run_time > 0 else None,
                     reason=r.reasons.last_name(js.job_id) if state == "PENDING" else "",
                     aside=js.aside,  # a job set aside and then cancelled counts as set aside, as in the simulator
                     time_limit=seen.time_limit if seen is not None and seen.time_limit > 0 else None,
                     forecast_start=r.reasons.first_forecast(js.job_id))


def recorder_envs(r: Resources, job_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """Job id -> :func:`recorder_env`, for jobs about to start."""
    return {j: recorder_env(r, j) for j in job_ids}


def recorder_env(r: Resources, job_id: str) -> dict[str, str]:
    """Recorder settings for a job about to start: its own place for runtime records (owned by its
    owner, :mod:`hops_slurm.engine.runtime_records`), its signature (the live backend adds its GPU type),
    the notice before a planned requeue (docs/preemption.md) and its samples budget."""
    js = r.tracked.get(job_id)
    e = r.config.engine
    env = {"HOPS_PREEMPT_SIGNAL": e.preempt_signal, "HOPS_PREEMPT_GRACE": f"{e.preempt_grace:g}"}
    if js is not None and not r.dry_run:
        try:
            place = make_place(r.places.metrics_dir, job_id, r.owners(js.user))
        except (HopsError, OSError) as exc:  # the job runs without a recorder file
            log.warning("job %s: no place for runtime records: %s", job_id, exc)
        else:
            env["HOPS_METRICS_FILE"] = str(place / RUNTIME_FILE)
    if js is not None and js.signature:
        env["HOPS_JOB_SIGNATURE"] = js.signature
    if js is not None:
        from hops_slurm.engine.honesty_review import budget_env

        env.update(budget_env(js))
    return env


def publish_reasons(r: Resources, listing: Mapping[str, SlurmJob], now: float) -> None:
    """The ``summary`` step of the refresh and the round (:func:`hops_slurm.engine.reasons.publish`)."""
    reasons.publish(r.reasons, r.tracked, listing, now, metrics=r.metrics, state_dir=r.places.state_dir,
                    refresh_seconds=r.config.scheduler.queue_refresh)
