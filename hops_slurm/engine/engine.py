"""The live engine: Slurm read -> bookkeeping -> profiling -> plan -> enact, one step at a time.

Where it sits: ``hops-slurm daemon`` (:mod:`hops_slurm.engine.daemon`) schedules :meth:`Engine.refresh`
(every ``queue_refresh`` s), :meth:`Engine.round` (every ``round_length`` s) and :meth:`Engine.monitor`
(every ``monitor_interval`` s); ``hops-slurm plan --once`` runs one refresh and one round. On
:meth:`Engine.open` the engine takes the single-instance lock, opens the throughput store (it is the
only writer), the journal and its own state, and reconciles the journal with Slurm
(:func:`hops_slurm.slurm.reconcile.reconcile`) before anything else, so a crash at any step loses no
job and leaves no stray hold or reservation.

The refresh and the round are ordered lists of named steps, each timed and logged by one loop
(:mod:`hops_slurm.engine.cycle`, whose docstring lists them); the per-job bookkeeping they call is
:mod:`hops_slurm.engine.bookkeeping`.

Refresh: admin-hold new Hops jobs (the submit hook's hold is a user hold), settle released jobs
(read back and record their allocation), track wait / run time / GPU-seconds, close ended jobs (their
JobRecord goes to ``records.sqlite``), advance profiling (:mod:`hops_slurm.engine.profiling`; a job measured
in place, :mod:`hops_slurm.engine.inplace`, is schedulable at once), ingest runtime metrics files, and run a
fragment plan when GPUs are idle and schedulable jobs wait.

Crash testing: with ``HOPS_ENGINE_CRASH_AFTER=k`` in the environment the process exits (``os._exit``,
as abrupt as SIGKILL) right after the k-th journaled action of a round has been carried out, before the
journal marks it done; with ``HOPS_ENGINE_CRASH_AT=KIND[:before]`` at the first journaled action of
that kind, anywhere (:mod:`hops_slurm.engine.crashpoints`).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hops_slurm.config import SiteConfig
from hops_slurm.engine.live_backend import SlurmBackend
from hops_slurm.engine.bookkeeping import JobBookkeeping
from hops_slurm.engine.calibration_files import CalibrationFiles
from hops_slurm.engine.checkpoints import Marks, note_stops
from hops_slurm.engine.crashpoints import CrashingJournal, crashing_journal
from hops_slurm.engine.cycle import Refresh, Round, run_steps
from hops_slurm.engine.offer import starting
from hops_slurm.engine.offer_file import OfferWriter
from hops_slurm.engine import partition_file
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.engine.known_jobs import ViewCache, schedulable
from hops_slurm.engine.lock import InstanceLock
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.engine.reasons import Reasons
from hops_slurm.engine.restarts import RestartCosts
from hops_slurm.engine.profiling import ProbeSettings, ProfilerFlow
from hops_slurm.engine.retry import RetryingReads
from hops_slurm.core.rounds import Planning, plan_summary
from hops_slurm.engine.runtime_records import RUNTIME_FILE, SeenFiles
from hops_slurm.engine.state import EngineState, JobState, storage_errors
from hops_slurm.engine.userfiles import Owner, make_place, make_root, owner_of
from hops_slurm.engine.written import Written
from hops_slurm.errors import HopsError
from hops_slurm.rootfile import UnsafeDirectory, own_state_dir
from hops_slurm.journal import Journal
from hops_slurm.records import RoundRecord
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob, SlurmNode
from hops_slurm.slurm.partitions import PARTITION_ARGV, parse_partitions
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.notice import NoticeSettings
from hops_slurm.slurm.reconcile import reconcile
from hops_slurm.slurm.scope import HopsScope, ScopedSlurm
from hops_slurm.text import id_list
from planner.policies import make_policy

log = logging.getLogger(__name__)

class Engine(JobBookkeeping):
    """See the module docstring. ``api``: the Slurm backend (default: the CLI backend with this process's
    environment); ``dry_run``: read and plan only (no lock, no Slurm change, no store or state writes)."""

    def __init__(self, config: SiteConfig, *, api: SlurmApi | None = None, env: Mapping[str, str] | None = None,
                 dry_run: bool = False, owners: Callable[[str], Owner] = owner_of) -> None:
        self.config = config
        self.env, self._governance = (dict(env) if env is not None else None), None
        if api is None:
            from hops_slurm.slurm.cli import CliSlurm
            api, self._governance = CliSlurm(self.env), SlurmBackend.read_governance(self.env)  # the site's limits
        self.scope = HopsScope(config.slurm.hops_partitions)  # jobs of other partitions are never Hops's
        # a transient read failure costs a retry, not a step
        self.api: SlurmApi = RetryingReads(ScopedSlurm(api, self.scope))
        self.now = self.api.now  # Slurm's clock: the wall clock live, the virtual one in simulation
        self.owners = owners  # a job owner's uid and gid (the host's users; the simulator maps its own)
        self.dry_run = dry_run
        paths = config.paths
        self.state_dir = paths.state_dir
        self.lock = InstanceLock(self.state_dir / "engine.lock")
        self.env_dir = paths.resolve(config.engine.env_dir)
        self.probe_dir = paths.resolve(config.engine.probe_dir)
        self.metrics_dir = self.state_dir / "metrics"
        self.records_path = paths.resolve(paths.records)
        self.records_file: Any = None  # records.sqlite, open while the engine is (not in a dry run)
        self.store: Any = None
        self.journal: Journal | None = None
        self.state: EngineState | None = None
        self.enactor: Enactor | None = None
        self.marks: Marks | None = None  # the jobs' checkpoint marks (not in a dry run)
        self.seen_files = SeenFiles()  # the runtime files as last read to their end (unchanged: not read again)
        self.written = Written(config.scheduler.round_length)  # the job rows and records the refresh last wrote
        self.backend: SlurmBackend | None = None
        self.profiler: ProfilerFlow | None = None
        self.policy = make_policy("hops", config.planner)
        self.tracked: dict[str, JobState] = {}
        self.announced: set[str] = set()  # pending Hops jobs the monitor has already refreshed for
        self.last_planning: Planning | None = None
        self.reasons = Reasons()  # why each pending job waits (hops_slurm.engine.reasons; the queue summary)
        #: the offer file's one writer (``[engine] offer_file``; None: no offers)
        self.offers = OfferWriter(config.engine.offer_file) if config.engine.offer_file is not None else None
        self.views = ViewCache()  # the job views of the round's instant, remade only where their inputs changed
        self.metrics = EngineMetrics(config.metrics.raqlr_window)  # served by the daemon ([metrics] port)
        self.restarts = RestartCosts(None, config.engine.restart_cost_default)  # over the store once opened
        self._round_no = 0
        self._estimator_memo: tuple[object, object, object, Any] | None = None  # (store view, nodes, node key, estimator)
        #: the job-view pipeline's estimates (hops_slurm.core.jobview.estimate), kept while the store does
        #: not learn about their signature; signatures learned since the last read, the entity factors then
        self.estimates: dict[tuple[object, ...], object] = {}
        self._learned: set[str] = set()
        self._factors: dict[str, float] | None = None
        self._source: tuple[int, Any] | None = None  # (data_version, the store's cached view)
        self._calibrated: set[str] = set()  # GPU types the store is known to have a calibration for
        #: what `hops-slurm calibrate` wrote into [paths] calibrations, read as it changes
        self.calibration_files = CalibrationFiles(config.paths.resolve(config.paths.calibrations))
        self._refreshes, self._record_budget = 0, RefreshBudget()  # records stored per user: one budget per refresh
        self._opened = False
        self.recover_later = False  # the daemon: a failed repair at start is retried before its first step
        self.needs_recovery = False
        self._partition_problem = ""  # the last problem writing the partition file (logged once)

    # ----- lifecycle --------------------------------------------------------------------------------
    def open(self) -> Engine:
        if not self.dry_run:
            self.lock.acquire()
        try:
            with storage_errors(self.state_dir):
                self._open()
        except BaseException:
            self.close()
            raise
        return self

    def _open(self) -> None:
        from estimator.store import ThroughputStore
        store_path, state_path = (self.config.paths.resolve(p) for p in (self.config.paths.store, self.config.paths.engine_db))
        if self.dry_run:  # reads only, creates nothing
            self.store = ThroughputStore(store_path, read_only=True, momentary=True) if store_path.exists() else None
            jpath = self.config.paths.resolve(self.config.paths.journal)  # read for placed jobs only
            self.journal = Journal(jpath, read_only=True) if jpath.exists() else Journal(":memory:")
            self.state = EngineState.read_only(state_path) if state_path.exists() else EngineState(":memory:")
        else:
            # root's own, writable by no one else (else one line, nothing written); users reach their own
            # places below (probes, runtime records) but cannot list the directory
            try:
                own_state_dir(self.state_dir)
            except UnsafeDirectory as exc:
                raise HopsError(f"[paths] state_dir: {exc}: the engine writes nothing there") from None
            self.store = ThroughputStore(store_path)
            make_root(self.metrics_dir)
            self.journal = crashing_journal(self.config.paths.resolve(self.config.paths.journal))
            self.journal.clock = self.now  # its times on Slurm's clock: the accounting dates requeues by them
            self.metrics.count_journal_from(self.journal.last_id())  # counters start at this process's start
            self.state = EngineState(state_path)
            from hops_slurm.report.source import RecordsFile
            self.records_file = RecordsFile(self.records_path)
        self.restarts = RestartCosts(self.store, self.config.engine.restart_cost_default, writes=not self.dry_run)
        self.tracked = self.state.jobs()
        self._round_no = int(self.state.meta("rounds", "0"))
        nodes = self.api.nodes()
        managed = self.scope.managed(nodes) or None  # the Hops partitions' nodes
        self._check_partitions(nodes)
        self._publish_partitions()
        e = self.config.engine  # checkpoint marks: the notice before a planned requeue (engine/checkpoints.py)
        self.marks = None if self.dry_run else Marks(self.state, self.metrics_dir, lambda: self.tracked, self.owners,
                                                     self.now, self.seen_files)
        self.enactor = Enactor(self.api, self.journal, managed_nodes=managed, env_dir=self.env_dir,
                               settle_timeout=e.settle_timeout, notice=NoticeSettings(e.preempt_signal, e.preempt_grace),
                               listening=self.marks and self.marks.listening, answered=self.marks and self.marks.answered)
        self.backend = SlurmBackend(self.api, self.enactor, partition=self.scope.partitions, governance=self._governance,
                                    stored=lambda: {j: s.directives for j, s in self.tracked.items() if s.directives})
        if self.store is not None and not self.dry_run:
            e = self.config.engine
            self.profiler = ProfilerFlow(
                ProbeSettings(self.probe_dir, self.config.slurm.profiler_partition, e.probe_python, e.probe_size,
                              e.probe_iterations, e.probe_time_limit, e.probe_device, e.probe_retries,
                              in_place=e.probe_in_place), self.state,
                self.store, api=self.api, journal=self.journal, nodes=self.enactor.gate_nodes, owners=self.owners,
                ingested=self._ingested)
            self.profiler.adopt(self.tracked.values())
        if not self.dry_run:
            try:
                report = reconcile(self.api, self.journal, gate_nodes=managed)
            except SlurmError as exc:
                if not self.recover_later:
                    raise
                log.error("repairing Slurm's state from the journal failed (%s); retrying before the first step", exc)
                self.needs_recovery = True
            else:
                if report.interrupted or report.rolled_back or report.deleted_reservations or report.held:
                    log.warning("reconciled after restart: %d interrupted actions, held %s, rolled back %s, "
                                "deleted reservations %s", len(report.interrupted), id_list(report.held),
                                id_list(report.rolled_back), report.deleted_reservations)
        self._opened = True

    def _check_partitions(self, nodes: Iterable[SlurmNode]) -> None:
        """One line in the log for each configured Hops partition Slurm does not have (``scontrol show
        partition``; without the CLI backend, the partitions its nodes list)."""
        try:
            if self._governance is not None:
                known = set(parse_partitions(self._governance.run(PARTITION_ARGV)))
            else:
                known = {p for n in nodes for p in n.partitions}
        except (HopsError, ValueError, OSError, subprocess.SubprocessError) as exc:
            log.warning("cannot read Slurm's partitions to check [slurm] partitions: %s", str(exc).splitlines()[0][:300])
            return
        for p in partition_file.missing(self.scope.partitions, known):
            log.error("[slurm] partitions: Slurm has no partition %s (scontrol show partition): no job runs there "
                      "until it exists", p)

    def _publish_partitions(self) -> None:
        """The partition file for the submit hook (:mod:`hops_slurm.engine.partition_file`): at open and at
        every refresh, written when it no longer says what ``[slurm] partitions`` does; a problem is one
        line in the log (once while it lasts)."""
        e = self.config.engine
        where = partition_file.directory(e.hook_dir, e.offer_file)
        if where is None or self.dry_run:
            return
        try:
            if partition_file.publish(where, self.scope.partitions):
                log.info("wrote %s: Hops partitions %s", where / partition_file.FILE, ", ".join(self.scope.partitions))
            self._partition_problem = ""
        except (HopsError, OSError) as exc:
            problem = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            if problem != self._partition_problem:
                log.error("cannot write the partition file for the submit hook: %s", problem)
            self._partition_problem = problem

    def recover(self) -> None:
        """After a step failed half-way (Slurm unreachable, a command refused, the disk full): repair
        Slurm's state from the journal as after a restart (:func:`hops_slurm.slurm.reconcile.reconcile`)."""
        assert self.journal is not None and self.enactor is not None
        if self.dry_run:
            return
        report = reconcile(self.api, self.journal, gate_nodes=self.enactor.managed_nodes)
        log.info("recovered after a failed step: held %s, rolled back %s, deleted reservations %s",
                 id_list(report.held), id_list(report.rolled_back), report.deleted_reservations)

    def close(self) -> None:
        if self.offers is not None and not self.dry_run and self._opened:
            try:  # no daemon, no offers: new jobs are held until it is back
                self.offers.publish(None)
            except OSError as exc:
                log.warning("cannot close the offer file %s: %s", self.offers.path, exc)
        for thing in (self.reasons.forecaster, self.store, self.journal, self.state, self.records_file):
            if thing is not None and hasattr(thing, "close"):
                try:
                    thing.close()
                except Exception as exc:  # noqa: BLE001 - closing must go on
                    log.warning("closing %s: %s", type(thing).__name__, exc)
        self.store = self.journal = self.state = self.records_file = None
        self.lock.release()
        self._opened = False

    def __enter__(self) -> Engine:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- estimator and job environment -------------------------------------------------------------
    def _estimator_for(self, cluster: Any) -> Any:
        from estimator.estimate import Estimator

        if self.store is None:
            return None
        return Estimator.for_cluster(self._store_view(), cluster)

    def _store_view(self) -> Any:
        """The store as the estimator reads it: each signature read once and kept until the engine ingests
        a record for it (:meth:`_ingested`; the engine is the store's only writer of measurements), and
        read afresh whole when another process changed the file (``hops-slurm calibrate``: SQLite's
        ``data_version`` moves only for other connections' commits)."""
        from estimator.snapshot import CachedSource

        version = self.store.db.execute("PRAGMA data_version").fetchone()[0]
        if self._source is None or self._source[0] != version:
            self._source = (version, CachedSource(self.store))
        return self._source[1]

    def _ingested(self, signature: str) -> None:
        """A probe result or runtime record of ``signature`` went into the store: its snapshot and
        estimates are forgotten before the next read (:meth:`_estimator`)."""
        if self._source is not None:
            self._source[1].forget(signature)
        self._learned.add(signature)

    def _estimator(self) -> Any:
        """One estimator per store view and set of nodes, kept across refreshes (the simulator's fast path
        does the same: :mod:`hops_slurm.sim.knowledge`), with its answers in :attr:`estimates`; what the
        store learned since the last call is forgotten first: the estimates of each signature with new
        records, all of them when the entity factors moved. None without a store or a usable GPU node."""
        assert self.backend is not None
        nodes, memo = self.backend.snapshot.nodes, self._estimator_memo
        source = self._store_view() if self.store is not None else None
        if memo is None or memo[0] is not source or memo[1] is not nodes:
            snap, part = self.backend.snapshot, self.scope.partitions
            key = snap.gpu_nodes(part)  # the nodes of the cluster view, without working out free GPUs
            same = memo is not None and memo[0] is source and memo[2] == key
            made = memo[3] if same else (self._estimator_for(snap.cluster_view(fragment=False, partition=part))  # type: ignore[index]
                                         if key else None)
            if not same:
                self.estimates.clear()
                self._learned.clear()
            self._estimator_memo = (source, nodes, key, made)
        self._forget_learned()
        return self._estimator_memo[3]

    def _forget_learned(self) -> None:
        if not self._learned or self._source is None:
            return
        factors = self._source[1].entity_factors()
        if factors != self._factors:  # every job's estimates on those servers change
            self.estimates.clear()
        else:
            for key in [k for k in self.estimates if k[1] in self._learned]:
                del self.estimates[key]
        self._factors = factors
        self._learned.clear()

    def schedulable(self) -> list[JobState]:
        """Tracked jobs Slurm lists as pending or running, profiled (or failed), not set aside."""
        assert self.backend is not None
        return schedulable(self.tracked.values(), self.backend.listing)

    def _job_envs(self, job_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        return {j: self._job_env(j) for j in job_ids}

    def _job_env(self, job_id: str) -> dict[str, str]:
        """Recorder settings for a job about to start: its own place for runtime records (owned by its
        owner, :mod:`hops_slurm.engine.runtime_records`) and its signature (the live backend adds its GPU type)."""
        js = self.tracked.get(job_id)
        e = self.config.engine  # the notice before a planned requeue (docs/preemption.md)
        env = {"HOPS_PREEMPT_SIGNAL": e.preempt_signal, "HOPS_PREEMPT_GRACE": f"{e.preempt_grace:g}"}
        if js is not None and not self.dry_run:
            try:
                place = make_place(self.metrics_dir, job_id, self.owners(js.user))
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

    def _ensure_calibrations(self, gpu_types: set[str]) -> None:
        """Eq. 2 needs B_link and B_net per GPU type: until ``hops-slurm calibrate`` has measured a type,
        the configured defaults are stored (method says so), else every multi-GPU estimate would fail.
        The store is asked only while some type is not known to have one: the set of calibrated types
        only grows (a calibration is never deleted; records add types, never remove one), so a type seen
        calibrated stays so and refreshes do not refit every type's calibration to learn nothing.
        Then what ``hops-slurm calibrate`` wrote since the last look replaces them (:meth:`_take_measured`)."""
        if self.store is None or self.dry_run:
            return
        if not gpu_types <= self._calibrated:
            self._store_defaults(gpu_types)
        self._take_measured()

    def _take_measured(self) -> None:
        """Ingest the calibration records new in ``[paths] calibrations``, one GPU type at a time (a type that
        cannot be ingested is one warning; the others still are)."""
        from profiler.ingest import IngestError, ingest_calibration

        by_type: dict[str, list[Any]] = {}
        for record in self.calibration_files.new_records():
            by_type.setdefault(record.gpu_type, []).append(record)
        for gpu_type, records in sorted(by_type.items()):
            try:
                ingest_calibration(self.store, records)
            except IngestError as exc:
                log.warning("%s", exc)
                continue
            self._source = None  # its cached view read the calibrations before this one
            self._calibrated.add(gpu_type)
            cal = self.store.measured_calibrations()[gpu_type]
            log.info("GPU type %s: calibration measured by hops-slurm calibrate: B_link %.4g, B_net %.4g params/s",
                     gpu_type, cal.b_link, cal.b_net)

    def _store_defaults(self, gpu_types: set[str]) -> None:
        self._calibrated |= set(self.store.calibrations())
        for t in sorted(gpu_types - self._calibrated):
            e = self.config.engine
            self.store.put_calibration(t, b_link=e.default_b_link, b_net=e.default_b_net,
                                       method="default from hops.toml (not measured)", measured_at=self.now())
            self._source = None  # its cached view read the calibrations before this one
            self._calibrated.add(t)
            log.warning("GPU type %s has no calibration: using the defaults from hops.toml until "
                        "`hops-slurm calibrate` measures it", t)

    # ----- steps ----------------------------------------------------------------------------------------
    def refresh(self, listing: list[SlurmJob] | None = None, listed_at: float | None = None) -> dict[str, Any]:
        """Read Slurm (``listing``: a job listing just read, reused, read from ``listed_at`` on), hold new
        jobs, settle released ones, account, profile: the named steps of
        :class:`hops_slurm.engine.cycle.Refresh`. Returns what changed."""
        with storage_errors(self.state_dir):
            session = Refresh(self, listing, listed_at)
            if run_steps("refresh", session.steps(), self.metrics.step, session.failed):
                session.out["failed"] = dict(session.failed)
            self._publish_partitions()  # again if someone removed or changed it
            return session.out

    def round(self, *, fragment: bool = False) -> Planning | None:
        """One planning (a round plan, or a fragment plan on idle GPUs) on the last read of Slurm."""
        with storage_errors(self.state_dir):
            return self._round(fragment)

    def _round(self, fragment: bool) -> Planning | None:
        """The instant's plannings as named steps (:class:`hops_slurm.engine.cycle.Round`)."""
        session = Round(self, fragment)
        run_steps("fragment" if fragment else "round", session.steps(), self.metrics.step, session.failed)
        if "offer" in session.failed:
            session.close_offer()
        if session.first is not None:
            self.last_planning = session.first
        return session.first

    def _record(self, planning: Planning, tag: str) -> None:
        """One planning into the engine state (``hops-slurm queue``), records.sqlite, the metrics and the log."""
        if self.dry_run:
            return
        assert self.state is not None and self.backend is not None and self.journal is not None
        fragment = planning.record.plan_index > 0
        self.state.set_meta("rounds", str(self._round_no))
        self.state.set_meta("last_fragment" if fragment else "last_plan", json.dumps(plan_summary(planning), default=str))
        self.records_file.write([], [planning.record])
        self.reasons.take(planning.plan.diagnostics)
        res = self.backend.last_result
        if res is not None:  # what each requeue's notice came to, in the placement it ends
            self.state.save_all(note_stops(self.tracked, res, self.marks, self.now()))
        self.metrics.planning(planning, fragment, res)
        self.metrics.journal(self.journal)
        log.info("%s: %d jobs, placed %d, started %s, preempted %s, kept %d, refused %s (plan %.2f s, enact %.2f s)",
                 tag, len(planning.jobs), len(planning.plan.placed()), res.started if res else [],
                 res.preempted if res else [], len(res.kept) if res else 0, res.refused if res else {},
                 planning.plan_seconds, planning.enact_seconds)

    def monitor(self) -> bool:
        """Notice ended or failed jobs (their GPUs are free now) and newly submitted Hops jobs (so a job
        submitted to idle GPUs starts within a monitor interval, not at the next refresh): refresh and run
        a fragment plan. True if something ended or arrived."""
        assert self.backend is not None
        listed_at = self.api.now()  # before the listing: the time it reflects (an offer's as_of)
        jobs = self.api.jobs()
        listing = {j.job_id: j for j in jobs}
        ended = [j for j in self.tracked if listing.get(j) is None or not (listing[j].pending or listing[j].active)]
        # each new job triggers once (one the refresh then leaves untracked must not trigger every time)
        # (a job about to start on an offer is left to Slurm: it arrives when it runs, or when it did not start)
        now = self.api.now()
        arrived = [j.job_id for j in jobs if j.is_hops and (j.active or (j.pending and not starting(j, now)))
                   and j.job_id not in self.tracked and j.job_id not in self.announced]
        self.announced = {j for j in self.announced if j in listing} | set(arrived)
        if not ended and not arrived:
            return False
        if ended:
            log.info("jobs ended: %s; fragment plan for the freed GPUs", ", ".join(ended))
        if arrived:
            log.info("jobs submitted: %s; refresh and fragment plan", ", ".join(arrived))
        self.refresh(jobs, listed_at)  # this listing is the refresh's snapshot
        self.round(fragment=True)
        return True

    def full_round(self) -> Planning | None:
        """A round as the daemon runs it: read Slurm (refresh), then plan every active job and enact."""
        self.refresh()
        return self.round()

    def refresh_and_fill(self) -> None:
        """The periodic refresh: then a fragment plan if profiled jobs wait and GPUs are idle."""
        self.refresh()
        self.round(fragment=True)


def stderr_logging(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


__all__ = ["Engine", "CrashingJournal", "RoundRecord"]
