"""The live engine: Slurm read -> bookkeeping -> profiling -> plan -> enact, one step at a time.

Where it sits: ``hops-slurm daemon`` (:mod:`hops_slurm.engine.daemon`) schedules :meth:`Engine.refresh`
(every ``queue_refresh`` s), :meth:`Engine.round` (every ``round_length`` s) and :meth:`Engine.monitor`
(every ``monitor_interval`` s); ``hops-slurm plan --once`` runs one refresh and one round. On
:meth:`Engine.open` the engine takes the single-instance lock, opens the throughput store (it is the
only writer), the journal and its own state, and reconciles the journal with Slurm
(:func:`hops_slurm.slurm.reconcile.reconcile`) before anything else, so a crash at any step loses no
job and leaves no stray hold or reservation.

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
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hops_slurm.config import SiteConfig
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.aside import COMMENT_PREFIX, check_directives, per_job, reason_text, set_aside_unservable
from hops_slurm.engine.backend import SlurmBackend
from hops_slurm.engine.checkpoints import Marks, note_stops, placement_notice
from hops_slurm.engine.crashpoints import CrashingJournal, crashing_journal
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.engine.failopen import COMMENT as FAILOPEN_COMMENT, touch_heartbeat
from hops_slurm.engine.lock import InstanceLock
from hops_slurm.engine.inplace import probe_capacity
from hops_slurm.engine.jobs import estimate, job_views, refresh_ages, schedulable
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.engine.runtime_records import RUNTIME_FILE, ingest_job
from hops_slurm.engine.restarts import RestartCosts
from hops_slurm.engine.profiling import ProbeSettings, ProfilerFlow, cancel_probes
from hops_slurm.engine.retry import RetryingReads
from hops_slurm.engine.rounds import LoopSettings, Planning, plan_instant, plan_summary
from hops_slurm.engine.state import (PROFILE_DONE, PROFILE_INPLACE, PROFILE_NEW, EngineState, JobState, account,
                                     storage_errors)
from hops_slurm.engine.userfiles import Owner, make_place, make_root, owner_of
from hops_slurm.errors import HopsError
from hops_slurm.journal import Journal
from hops_slurm.records import JobRecord, PlacementRecord, RoundRecord
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.notice import NoticeSettings
from hops_slurm.slurm.reconcile import reconcile
from hops_slurm.text import id_list
from planner.policies import make_policy

log = logging.getLogger(__name__)

class Engine:
    """See the module docstring. ``api``: the Slurm backend (default: the CLI backend with this process's
    environment); ``dry_run``: read and plan only (no lock, no Slurm change, no store or state writes)."""

    def __init__(self, config: SiteConfig, *, api: SlurmApi | None = None, env: Mapping[str, str] | None = None,
                 dry_run: bool = False, owners: Callable[[str], Owner] = owner_of) -> None:
        self.config = config
        self.env, self._governance = (dict(env) if env is not None else None), None
        if api is None:
            from hops_slurm.slurm.cli import CliSlurm
            api, self._governance = CliSlurm(self.env), SlurmBackend.read_governance(self.env)  # the site's limits
        self.api: SlurmApi = RetryingReads(api)  # a transient read failure costs a retry, not a step
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
        self.store: Any = None
        self.journal: Journal | None = None
        self.state: EngineState | None = None
        self.enactor: Enactor | None = None
        self.marks: Marks | None = None  # the jobs' checkpoint marks (not in a dry run)
        self.backend: SlurmBackend | None = None
        self.profiler: ProfilerFlow | None = None
        self.policy = make_policy("hops", config.planner)
        self.tracked: dict[str, JobState] = {}
        self.last_planning: Planning | None = None
        self.metrics = EngineMetrics(config.metrics.raqlr_window)  # served by the daemon ([metrics] port)
        self.restarts = RestartCosts(None, config.engine.restart_cost_default)  # over the store once opened
        self._round_no = 0
        self._estimator_memo: tuple[int, object, object, Any] | None = None  # (refresh, nodes, node key, estimator)
        self._source: tuple[int, Any] | None = None  # (data_version, the store's cached view)
        self._refreshes, self._record_budget = 0, RefreshBudget()  # records stored per user: one budget per refresh
        self._opened = False
        self.recover_later = False  # the daemon: a failed repair at start is retried before its first step
        self.needs_recovery = False

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
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self.store = ThroughputStore(store_path)
            # users reach their own places below (probes, runtime records) but cannot list the directory
            self.state_dir.chmod(self.state_dir.stat().st_mode & 0o7777 | 0o011)
            make_root(self.metrics_dir)
            self.journal = crashing_journal(self.config.paths.resolve(self.config.paths.journal))
            self.journal.clock = self.now  # its times on Slurm's clock: the accounting dates requeues by them
            self.metrics.count_journal_from(self.journal.last_id())  # counters start at this process's start
            self.state = EngineState(state_path)
        self.restarts = RestartCosts(self.store, self.config.engine.restart_cost_default, writes=not self.dry_run)
        self.tracked = self.state.jobs()
        self._round_no = int(self.state.meta("rounds", "0"))
        managed = [n.name for n in self.api.nodes() if self.config.slurm.partition in n.partitions] or None
        e = self.config.engine  # checkpoint marks: the notice before a planned requeue (engine/checkpoints.py)
        self.marks = None if self.dry_run else Marks(self.state, self.metrics_dir, lambda: self.tracked, self.owners, self.now)
        self.enactor = Enactor(self.api, self.journal, managed_nodes=managed, env_dir=self.env_dir,
                               settle_timeout=e.settle_timeout, notice=NoticeSettings(e.preempt_signal, e.preempt_grace),
                               listening=self.marks and self.marks.listening, answered=self.marks and self.marks.answered)
        self.backend = SlurmBackend(self.api, self.enactor, partition=self.config.slurm.partition, governance=self._governance,
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
        for thing in (self.store, self.journal, self.state):
            if thing is not None and hasattr(thing, "close"):
                try:
                    thing.close()
                except Exception as exc:  # noqa: BLE001 - closing must go on
                    log.warning("closing %s: %s", type(thing).__name__, exc)
        self.store = self.journal = self.state = None
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
        """A probe result or runtime record of ``signature`` went into the store."""
        if self._source is not None:
            self._source[1].forget(signature)

    def _estimator(self) -> Any:
        """One estimator per refresh and set of nodes (the refresh's ages and the plans after it share
        it; the store learns between refreshes); None without a store or without a usable GPU node."""
        assert self.backend is not None
        nodes, memo = self.backend.snapshot.nodes, self._estimator_memo
        if memo is None or memo[0] != self._refreshes or memo[1] is not nodes:
            cluster = self.backend.snapshot.cluster_view(fragment=False, partition=self.config.slurm.partition)
            key = tuple((n.name, n.gpu_type, n.server_class, n.total_gpus) for n in cluster.nodes)
            same = memo is not None and memo[0] == self._refreshes and memo[2] == key
            made = memo[3] if same else (self._estimator_for(cluster) if cluster.nodes else None)  # type: ignore[index]
            self._estimator_memo = (self._refreshes, nodes, key, made)
        return self._estimator_memo[3]

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
            from hops_slurm.engine.honesty import budget_env

            env.update(budget_env(js))
        return env

    def _ensure_calibrations(self, gpu_types: set[str]) -> None:
        """Eq. 2 needs B_link and B_net per GPU type: until ``hops-slurm calibrate`` has measured a type,
        the configured defaults are stored (method says so), else every multi-GPU estimate would fail."""
        if self.store is None or self.dry_run:
            return
        for t in sorted(gpu_types - set(self.store.calibrations())):
            e = self.config.engine
            self.store.put_calibration(t, b_link=e.default_b_link, b_net=e.default_b_net,
                                       method="default from hops.toml (not measured)", measured_at=self.now())
            self._source = None  # its cached view read the calibrations before this one
            log.warning("GPU type %s has no calibration: using the defaults from hops.toml until "
                        "`hops-slurm calibrate` measures it", t)

    # ----- steps ----------------------------------------------------------------------------------------
    def refresh(self, listing: list[SlurmJob] | None = None) -> dict[str, Any]:
        """Read Slurm (``listing``: a job listing just read, reused), hold new jobs, settle released ones,
        account, profile. Returns what changed."""
        with storage_errors(self.state_dir):
            return self._refresh(listing)

    def _refresh(self, listing: list[SlurmJob] | None) -> dict[str, Any]:
        assert self.backend is not None and self.enactor is not None and self.state is not None
        b = self.backend
        self._refreshes, self._record_budget = self._refreshes + 1, RefreshBudget()  # one record budget per refresh
        snap = b.read(listing)
        out: dict[str, Any] = {"held": [], "ended": [], "profiled": [], "in_place": []}
        if not self.dry_run:
            self.enactor.round_id = "refresh"
            gated = self.enactor.ensure_gate(snap.reservations)
            out["evicted"] = self.enactor.evict_foreign(snap.jobs)
            out["held"] = self.enactor.hold_new(snap.jobs)
            settled = self.enactor.settle(snapshot=snap)
            out["mismatched"] = dict(settled.mismatched)
            if settled.mismatched:
                snap = b.read()  # requeue-held again: read it all back
            elif out["held"] or out["evicted"] or settled.verified or gated:
                # the engine's own commands, which succeeded: the snapshot is brought up to date without
                # another job listing (the reservations, created or deleted, are read again)
                snap = snap.held(out["held"]).detached([*out["evicted"], *settled.verified])
                b.keep(snap.with_reservations(self.api.reservations()) if gated or settled.verified else snap)
                snap = b.snapshot
        gpu_types = sorted({n.gpu_type for n in snap.nodes if n.gpus_total and self.config.slurm.partition in n.partitions})
        self._ensure_calibrations(set(gpu_types))
        capacity = probe_capacity(snap, self.config.slurm.partition, self.config.slurm.profiler_partition, b.placed)
        now = self.now()
        listing = snap.listing
        for job in b.jobs:
            if job.is_hops and job.partition == self.config.slurm.partition and job.job_id not in self.tracked \
                    and (job.pending or job.active):
                self.tracked[job.job_id] = self._new_state(job, now)
        changed: list[JobState] = []
        for js in list(self.tracked.values()):
            seen = listing.get(js.job_id)
            if seen is None or not (seen.pending or seen.active):
                account(js, now, "ENDED", {}, started=seen.start_time if seen else None,
                        ended=seen.end_time if seen else None, ran=self.enactor.planned_config(js.job_id))
                js.ended, js.end_state = now, (seen.state if seen is not None else "COMPLETED")
                if not self.dry_run:
                    self._ingest_metrics(js)  # its last records count too
                    self._record_declaration(js)
                    cancel_probes(js, self.api)
                if self.profiler is not None:
                    self.profiler.forget(js.job_id)
                del self.tracked[js.job_id]
                out["ended"].append(js.job_id)
                changed.append(js)
                continue
            per_job(js, "reading its state from Slurm", lambda js=js, seen=seen: self._account(js, seen, now),
                    self._set_aside)
            self._review_aside(js, seen)
            if not js.aside and self.profiler is not None:
                moved = per_job(js, "profiling", lambda js=js: self.profiler.advance(js, gpu_types, listing, capacity),  # type: ignore[union-attr]
                                self._set_aside)
                if moved and js.profile in (PROFILE_DONE, PROFILE_INPLACE):
                    out["in_place" if js.profile == PROFILE_INPLACE else "profiled"].append(js.job_id)
            changed.append(js)
        out["aside"] = {js.job_id: js.aside for js in self.tracked.values() if js.aside}
        if not self.dry_run:
            for js in self.tracked.values():
                self._ingest_metrics(js)
            if self.profiler is not None:
                self.profiler.tidy(self.tracked)
            self._refresh_ages(changed)  # the ended jobs too: their records carry the age
            self._review_declarations(listing)
            self.state.save_all(changed)  # one transaction (one commit per job was 3 ms each)
            from hops_slurm.report.source import write_sqlite

            records = [self._job_record(js) for js in changed]
            write_sqlite(self.records_path, records)
            self.metrics.refresh(self.tracked.values(), [r for r in records if r.end is not None], now,
                                 self.config.paths.resolve(self.config.paths.store), self.store)
            self.metrics.journal(self.journal)
            touch_heartbeat(self.state_dir)  # hops-slurm failopen: the engine is alive
        return out

    def _new_state(self, job: SlurmJob, now: float) -> JobState:
        js = JobState(job_id=job.job_id, name=job.name, user=job.user, directives=job.directives or "",
                      submit_time=job.submit_time or now, first_seen=now, last_seen=job.submit_time or now,
                      last_state="PENDING")
        per_job(js, "not scheduled", lambda: check_directives(js), self._set_aside)
        return js

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
        """Eq. 9 ages (:func:`hops_slurm.engine.jobs.refresh_ages`): one cluster view and estimator per snapshot."""
        if self.store is not None and self.backend is not None:
            usable = self.backend.snapshot.usable_gpu_nodes(self.config.slurm.partition)
            refresh_ages(jobs, self._estimator, usable, self._set_aside)

    def _ingest_metrics(self, js: JobState) -> None:
        """New runtime records of one job, from its own place only (:mod:`hops_slurm.engine.runtime_records`),
        checked against where Slurm ran it (after this refresh's accounting); its checkpoint marks first."""
        if self.marks is not None:
            per_job(js, "its checkpoint marks", lambda: self.marks.read(js), self._set_aside)  # type: ignore[union-attr]
        if self.store is None or self.state is None or self.backend is None or not js.signature:
            return
        types = {n.name: n.gpu_type for n in self.backend.snapshot.nodes}
        report = per_job(js, "its runtime records", lambda: ingest_job(  # type: ignore[arg-type]
            self.store, self.state, self.metrics_dir, js, types, self.owners(js.user).uid, self._record_budget), self._set_aside)
        if report is not None and report.accepted:
            self._ingested(js.signature)
            if self.profiler is not None:
                self.profiler.measured(js, report.types)  # later jobs of its model have data on these types
        if report is not None:
            from hops_slurm.engine.honesty import add_records

            for seconds in add_records(js, report.windows, self.now()):
                self.restarts.observe(js, seconds, self.now())

    # ----- declared vs processed samples (issue 16: hops_slurm.engine.honesty, estimator.honesty) ------
    def _rates(self) -> Any:
        """(job, config) -> its estimated samples/s in that config (None: no config or no estimate); the
        refresh's one estimator (:meth:`_estimator`), jobs of one model share one store read."""
        memo: dict[tuple[object, ...], object] = {}

        def rate(js: JobState, config: Mapping[str, int]) -> float | None:
            if not config or self.store is None or self.backend is None:
                return None
            try:
                fn = estimate(js, self._estimator(), memo).throughput
                return float(fn(dict(config))) if fn is not None else None
            except Exception as exc:  # noqa: BLE001 - no rate: the records' own rate is used
                log.info("job %s: no throughput estimate for its config (%s)", js.job_id, exc)
                return None

        return rate

    def _review_declarations(self, listing: Mapping[str, SlurmJob]) -> None:
        """Processed vs declared samples of every job in play -> its age factor, and the site's action on
        jobs past their declaration by the margin (``[honesty]`` in hops.toml)."""
        from hops_slurm.engine.honesty import act, review

        assert self.state is not None and self.journal is not None
        h = self.config.honesty
        verdicts = review(self.tracked.values(), self.state, h.params(), self._rates(), now=self.now(),  # type: ignore[arg-type]
                          restart_of=self.restarts.of)
        for job_id, v in verdicts.items():
            js, seen = self.tracked[job_id], listing.get(job_id)
            if seen is None or not (seen.pending or seen.active):
                continue

            def write_comment(text: str, js: JobState = js, kind: str = "declaration") -> None:
                with self.journal.action(kind, js.job_id, {"comment": text}, "refresh"):  # type: ignore[union-attr]
                    self.api.update_job(js.job_id, {"Comment": text})

            def requeue_hold(js: JobState = js) -> None:
                with self.journal.action("requeuehold", js.job_id, {"reason": "declaration"}, "refresh"):  # type: ignore[union-attr]
                    self.api.requeue_hold(js.job_id)

            try:
                act(js, v, h.action, comment=seen.comment, write_comment=write_comment, requeue_hold=requeue_hold,
                    set_aside=self._set_aside)
            except SlurmError as exc:  # tried again at the next refresh
                log.warning("job %s: cannot apply [honesty] action %s: %s", job_id, h.action, exc)
            if js.aside:  # its Comment says why at once, not one refresh later
                self._review_aside(js, seen)

    def _record_declaration(self, js: JobState) -> None:
        if self.state is not None:
            from hops_slurm.engine.honesty import record_outcome

            record_outcome(self.state, js, self._rates(), self.restarts.of)

    def _job_record(self, js: JobState) -> JobRecord:
        try:
            d = HopsDirectives.from_canonical(js.directives) if js.directives else None
        except Exception:  # noqa: BLE001 - a job set aside for its directives still gets its record
            d = None
        types = {n.name: n.gpu_type for n in (self.backend.snapshot.nodes if self.backend else ())}
        placements = []
        for p in js.placements:
            ts = {types.get(n, "") for n in p["config"]}
            placements.append(PlacementRecord(start=p["start"], end=p.get("end"), config=p["config"],
                                              gpu_type=ts.pop() if len(ts) == 1 else "mixed",
                                              preempted=bool(p.get("preempted")), **placement_notice(p)))
        state = js.end_state or js.last_state
        return JobRecord(job_id=js.job_id, name=js.name, user=js.user, partition=self.config.slurm.partition,
                         submit=js.submit_time, start=js.first_start, end=js.ended, state=state,
                         requirements=list(d.gpus) if d else [], age_estimate=js.age,
                         total_samples=float(d.samples) if d else None, placements=placements,
                         processed_samples=js.processed if js.run_time > 0 else None)

    def round(self, *, fragment: bool = False) -> Planning | None:
        """One planning (a round plan, or a fragment plan on idle GPUs) on the last read of Slurm."""
        with storage_errors(self.state_dir):
            return self._round(fragment)

    def _round(self, fragment: bool) -> Planning | None:
        """The instant's plannings (:func:`hops_slurm.engine.rounds.plan_instant`, the simulator's too): a
        round plan or a fragment plan, then fragment plans while they place jobs on idle GPUs; each one
        recorded. Returns the first."""
        assert self.backend is not None and self.state is not None
        if not fragment:
            self._round_no += 1
        tag = f"round{self._round_no}"
        b = self.backend
        b.round_id = tag + ("-fragment" if fragment else "")
        b.job_env = {}

        def views() -> None:  # the job views on the current snapshot, handed to the backend
            b.views = job_views(self.schedulable(), b.listing, self._estimator(), self.now(), self._set_aside,
                                restart_cost=self.restarts.of)

        def before_enacting(plan: Any) -> None:  # the environment of the jobs this plan starts
            b.job_env = self._job_envs(plan.placed())

        def recorded(planning: Planning) -> None:
            self._record(planning, b.round_id)
            set_aside_unservable(self.tracked, {} if self.dry_run else planning.plan.diagnostics, self._set_aside)
            b.round_id = tag + "-fragment"  # what follows at this instant is a fragment plan
            views()  # on the snapshot read after enactment

        views()
        limit = LoopSettings().max_plans_per_instant + (0 if fragment else 1)
        plannings = plan_instant(b, self.policy, fragment=fragment, index=1 if fragment else 0, limit=limit,
                                 dry_run=self.dry_run, before_apply=before_enacting, on_planning=recorded)
        if not plannings:
            return None
        self.last_planning = plannings[0]
        return plannings[0]

    def _record(self, planning: Planning, tag: str) -> None:
        """One planning into the engine state (``hops-slurm queue``), records.sqlite, the metrics and the log."""
        if self.dry_run:
            return
        assert self.state is not None and self.backend is not None and self.journal is not None
        fragment = planning.record.plan_index > 0
        self.state.set_meta("rounds", str(self._round_no))
        self.state.set_meta("last_fragment" if fragment else "last_plan", json.dumps(plan_summary(planning), default=str))
        from hops_slurm.report.source import write_sqlite

        write_sqlite(self.records_path, [], [planning.record])
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
        """Notice ended or failed jobs (their GPUs are free now): refresh and run a fragment plan. True if
        something ended."""
        assert self.backend is not None
        jobs = self.api.jobs()
        listing = {j.job_id: j for j in jobs}
        ended = [j for j in self.tracked if listing.get(j) is None or not (listing[j].pending or listing[j].active)]
        if not ended:
            return False
        log.info("jobs ended: %s; fragment plan for the freed GPUs", ", ".join(ended))
        self.refresh(jobs)  # this listing is the refresh's snapshot
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
