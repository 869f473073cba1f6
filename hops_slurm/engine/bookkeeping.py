"""The engine's bookkeeping of each Hops job: what a refresh learns about one job and writes down.

Where it sits: :class:`hops_slurm.engine.engine.Engine` inherits these methods; the refresh's named steps
(:class:`hops_slurm.engine.cycle.Refresh`) call them job by job: a new job's state (:meth:`_new_state`, :meth:`_check_new`), its
accounting from Slurm's listing (:meth:`_account`), setting a job aside and keeping its Comment in step
(:meth:`_set_aside`, :meth:`_review_aside`; one bad job never stops the round: :mod:`hops_slurm.engine.aside`),
its eq. 9 age (:meth:`_refresh_ages`), its runtime records (:meth:`_ingest_metrics`), declared vs processed
samples (:meth:`_declaration_verdicts`, :meth:`_act_on_declaration`: :mod:`hops_slurm.engine.honesty_review`) and its JobRecord (:meth:`_job_record`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hops_slurm.config import SiteConfig
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.aside import COMMENT_PREFIX, check_directives, per_job, reason_text
from hops_slurm.engine.failopen import COMMENT as FAILOPEN_COMMENT
from hops_slurm.engine.checkpoints import Marks, placement_notice
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.engine.known_jobs import ViewCache, estimate, refresh_ages
from hops_slurm.engine.reasons import Reasons
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.engine.restarts import RestartCosts
from hops_slurm.engine.runtime_records import SeenFiles, checkpoints_key, ingest_job, metrics_key
from hops_slurm.engine.state import PROFILE_NEW, EngineState, JobState, account
from hops_slurm.engine.userfiles import Owner
from hops_slurm.engine.written import Written
from hops_slurm.journal import Journal
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob
from hops_slurm.slurm.scope import HopsScope

if TYPE_CHECKING:
    from hops_slurm.core.interface import Planning
    from planner.views import Policy
    from hops_slurm.engine.live_backend import SlurmBackend
    from hops_slurm.engine.offer_file import OfferWriter
    from hops_slurm.engine.profiling import ProfilerFlow
    from hops_slurm.slurm.enact import Enactor

log = logging.getLogger(__name__)


class JobBookkeeping:
    """The per-job methods of :class:`hops_slurm.engine.engine.Engine`, which sets these attributes and
    defines the methods below that raise here; the cycle's steps (:mod:`hops_slurm.engine.cycle`) see
    the engine through this class."""

    config: SiteConfig
    scope: HopsScope  # the Hops partitions: jobs of others are never tracked (hops_slurm.slurm.scope)
    api: SlurmApi
    now: Callable[[], float]
    owners: Callable[[str], Owner]
    dry_run: bool
    store: Any
    journal: Journal | None
    state: EngineState | None
    enactor: Enactor | None
    backend: SlurmBackend | None
    profiler: ProfilerFlow | None
    marks: Marks | None
    seen_files: SeenFiles
    written: Written
    restarts: RestartCosts
    tracked: dict[str, JobState]
    metrics_dir: Path
    probe_dir: Path
    records_path: Path
    state_dir: Path
    metrics: EngineMetrics
    views: ViewCache
    reasons: Reasons  # each pending job's reason (hops_slurm.engine.reasons)
    estimates: dict[tuple[object, ...], object]
    policy: Policy
    offers: OfferWriter | None
    last_planning: Planning | None
    _record_budget: RefreshBudget
    _types_memo: tuple[object, dict[str, str]] | None = None
    _refreshes: int
    _round_no: int

    # the engine's own methods the cycle's steps call (hops_slurm.engine.cycle)
    def _estimator(self) -> Any:
        raise NotImplementedError

    def _ingested(self, signature: str) -> None:
        raise NotImplementedError

    def _ensure_calibrations(self, gpu_types: set[str]) -> None:
        raise NotImplementedError

    def _job_envs(self, job_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        raise NotImplementedError

    def _record(self, planning: Planning, tag: str) -> None:
        raise NotImplementedError

    def schedulable(self) -> list[JobState]:
        raise NotImplementedError

    def _new_state(self, job: SlurmJob, now: float) -> JobState:
        """A new job's state, before anything is checked (:meth:`_check_new`)."""
        return JobState(job_id=job.job_id, name=job.name, user=job.user, directives=job.directives or "",
                        submit_time=job.submit_time or now, first_seen=now, last_seen=job.submit_time or now,
                        last_state="PENDING")

    def _check_new(self, js: JobState) -> None:
        """A new job's stored directives read back, else it is set aside (not scheduled)."""
        per_job(js, "not scheduled", lambda: check_directives(js), self._set_aside)

    def _account(self, js: JobState, seen: SlurmJob, now: float) -> None:
        assert self.enactor is not None
        if seen.active:
            # the allocation Slurm lists; while it lists none yet (job still configuring), the config the
            # job was released on (the enactor verifies and records the real one when it settles)
            config = seen.gpu_config() or self.enactor.planned_config(js.job_id) or {}
            account(js, now, "RUNNING", config, started=seen.start_time, stopped=self._requeued_at(js))
        else:
            account(js, now, "PENDING", {}, stopped=self._requeued_at(js))

    def _requeued_at(self, js: JobState) -> float | None:
        """The engine's last requeue of a job seen running (the end of its run: :func:`account`)."""
        return self.journal.last_started(js.job_id, "requeuehold") if self.journal is not None and js.last_state == "RUNNING" else None

    # ----- jobs set aside (one bad job never stops the round: hops_slurm.engine.aside) ---------------
    def _set_aside(self, js: JobState, reason: str) -> None:
        js.aside = reason
        if self.profiler is not None:
            self.profiler.forget(js.job_id)

    def _review_aside(self, js: JobState, seen: SlurmJob) -> None:
        """Take a job back when Slurm now shows other stored directives that parse (an administrator
        corrected them); keep the owner's view (the job's Comment) in step with the engine's: the
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
        if self.dry_run or self.journal is None:
            return
        want = COMMENT_PREFIX + js.aside if js.aside else ""
        ours = seen.comment.startswith((COMMENT_PREFIX, FAILOPEN_COMMENT))  # written by the engine or failopen
        if seen.comment == want or (not js.aside and not ours):
            return
        try:
            with self.journal.action("aside", js.job_id, {"reason": js.aside}, "refresh"):
                self.api.update_job(js.job_id, {"Comment": want})
        except SlurmError as exc:  # shown at the next refresh
            log.warning("job %s: cannot write its set-aside reason into Slurm: %s", js.job_id, exc)

    def _refresh_ages(self, jobs: list[JobState]) -> None:
        """Eq. 9 ages (:func:`hops_slurm.engine.known_jobs.refresh_ages`): one cluster view and estimator per snapshot."""
        if self.store is not None and self.backend is not None:
            usable = self.backend.snapshot.usable_gpu_nodes(self.config.slurm.hops_partitions)
            refresh_ages(jobs, self._estimator, usable, self._set_aside)

    def _ingest_metrics(self, js: JobState) -> None:
        """New runtime records of one job, from its own place only (:mod:`hops_slurm.engine.runtime_records`),
        checked against where Slurm ran it (after this refresh's accounting); its checkpoint marks first.
        A file unchanged since each reader last read it to its end is not opened (one ``lstat`` for both)."""
        looked = self.seen_files.look(self.metrics_dir, js.job_id)
        if self.marks is not None and not self.seen_files.unchanged(checkpoints_key(js.job_id), looked):
            per_job(js, "its checkpoint marks", lambda: self.marks.read(js), self._set_aside)  # type: ignore[union-attr]
        if self.store is None or self.state is None or self.backend is None or not js.signature:
            return
        if self.seen_files.unchanged(metrics_key(js.job_id), looked):
            return  # nothing new since the last look
        types = self._node_types()
        report = per_job(js, "its runtime records", lambda: ingest_job(  # type: ignore[arg-type]
            self.store, self.state, self.metrics_dir, js, types, self.owners(js.user).uid, self._record_budget,
            self.seen_files), self._set_aside)
        if report is not None and report.accepted:
            self._ingested(js.signature)
            if self.profiler is not None:
                self.profiler.measured(js, report.types)  # later jobs of its model have data on these types
        if report is not None:
            from hops_slurm.engine.honesty_review import add_records

            for seconds in add_records(js, report.windows, self.now()):
                self.restarts.observe(js, seconds, self.now())

    # ----- declared vs processed samples (issue 16: hops_slurm.engine.honesty_review, estimator.honesty) ------
    def _rates(self) -> Any:
        """(job, config) -> its estimated samples/s in that config (None: no config or no estimate); the
        refresh's one estimator (:meth:`_estimator`), jobs of one model share one store read."""
        def rate(js: JobState, config: Mapping[str, int]) -> float | None:
            if not config or self.store is None or self.backend is None:
                return None
            try:
                est = self._estimator()
                fn = estimate(js, est, self.estimates).throughput
                return float(fn(dict(config))) if fn is not None else None
            except Exception as exc:  # noqa: BLE001 - no rate: the records' own rate is used
                log.info("job %s: no throughput estimate for its config (%s)", js.job_id, exc)
                return None

        return rate

    def _declaration_verdicts(self) -> dict[str, Any]:
        """Processed vs declared samples of every job in play -> its age factor (one review for all: an
        owner's history spans their jobs); job id -> its verdict, for :meth:`_act_on_declaration`."""
        from hops_slurm.engine.honesty_review import review

        assert self.state is not None
        return review(self.tracked.values(), self.state, self.config.honesty.params(), self._rates(),  # type: ignore[arg-type]
                      now=self.now(), restart_of=self.restarts.of)

    def _act_on_declaration(self, js: JobState, verdict: Any, seen: SlurmJob | None) -> None:
        """The site's action (``[honesty]`` in hops.toml) on one job past its declaration by the margin."""
        from hops_slurm.engine.honesty_review import act

        assert self.journal is not None
        if seen is None or not (seen.pending or seen.active):
            return
        h = self.config.honesty

        def write_comment(text: str, kind: str = "declaration") -> None:
            with self.journal.action(kind, js.job_id, {"comment": text}, "refresh"):  # type: ignore[union-attr]
                self.api.update_job(js.job_id, {"Comment": text})

        def requeue_hold() -> None:
            with self.journal.action("requeuehold", js.job_id, {"reason": "declaration"}, "refresh"):  # type: ignore[union-attr]
                self.api.requeue_hold(js.job_id)

        try:
            act(js, verdict, h.action, comment=seen.comment, write_comment=write_comment, requeue_hold=requeue_hold,
                set_aside=self._set_aside)
        except SlurmError as exc:  # tried again at the next refresh
            log.warning("job %s: cannot apply [honesty] action %s: %s", js.job_id, h.action, exc)
        if js.aside:  # its Comment says why at once, not one refresh later
            self._review_aside(js, seen)

    def _record_declaration(self, js: JobState) -> None:
        if self.state is not None:
            from hops_slurm.engine.honesty_review import record_outcome

            record_outcome(self.state, js, self._rates(), self.restarts.of)

    def _node_types(self) -> dict[str, str]:
        """Node name -> GPU type in the last read of Slurm (made once per list of nodes)."""
        nodes = self.backend.snapshot.nodes if self.backend is not None else ()
        memo = getattr(self, "_types_memo", None)
        if memo is None or memo[0] is not nodes:
            memo = (nodes, {n.name: n.gpu_type for n in nodes})
            self._types_memo = memo
        return memo[1]

    def _job_record(self, js: JobState) -> JobRecord:
        try:
            d = HopsDirectives.from_canonical(js.directives) if js.directives else None
        except Exception:  # noqa: BLE001 - a job set aside for its directives still gets its record
            d = None
        types = self._node_types()
        placements = []
        for p in js.placements:
            ts = {types.get(n, "") for n in p["config"]}
            placements.append(PlacementRecord(start=p["start"], end=p.get("end"), config=p["config"],
                                              gpu_type=ts.pop() if len(ts) == 1 else "mixed",
                                              preempted=bool(p.get("preempted")), **placement_notice(p)))
        state = js.end_state or js.last_state
        seen = self.backend.listing.get(js.job_id) if self.backend is not None else None
        partition = seen.partition if seen is not None and seen.partition else self.config.slurm.partition
        return JobRecord(job_id=js.job_id, name=js.name, user=js.user, partition=partition,
                         submit=js.submit_time, start=js.first_start, end=js.ended, state=state,
                         requirements=list(d.gpus) if d else [], age_estimate=js.age,
                         total_samples=float(d.samples) if d else None, placements=placements,
                         processed_samples=js.processed if js.run_time > 0 else None,
                         reason=self.reasons.last_name(js.job_id) if state == "PENDING" else "",
                         time_limit=seen.time_limit if seen is not None and seen.time_limit > 0 else None,
                         forecast_start=self.reasons.first_forecast(js.job_id))
