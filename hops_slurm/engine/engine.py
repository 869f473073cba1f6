"""The live engine: Slurm read -> bookkeeping -> profiling -> plan -> enact, one step at a time.

Where it sits: ``hops-slurm daemon`` (:mod:`hops_slurm.engine.daemon`) schedules :meth:`Engine.refresh`
(every ``queue_refresh`` s), :meth:`Engine.round` (every ``round_length`` s) and :meth:`Engine.monitor`
(every ``monitor_interval`` s); ``hops-slurm plan --once`` runs one refresh and one round. On
:meth:`Engine.open` the engine takes the single-instance lock, opens the throughput store (it is the
only writer), the journal and its own state, and reconciles the journal with Slurm
(:func:`hops_slurm.slurm.reconcile.reconcile`) before anything else, so a crash at any step loses no
job and leaves no stray hold or reservation.

The refresh and the round are ordered lists of named steps (:mod:`hops_slurm.engine.refresh`,
:mod:`hops_slurm.engine.round`), each a plain function of the cycle's session and the engine's long-lived
resources (:class:`hops_slurm.engine.bookkeeping.Resources`, made whole by :meth:`Engine.open`), timed and
logged by one loop (:mod:`hops_slurm.engine.cycle`, whose docstring lists them); the per-job bookkeeping
they call is beside the resources.

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

import logging
import subprocess
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hops_slurm.config import SiteConfig
from hops_slurm.engine import refresh as refresh_steps
from hops_slurm.engine import round as round_steps
from hops_slurm.engine.live_backend import SlurmBackend
from hops_slurm.engine.checkpoints import Marks
from hops_slurm.engine.crashpoints import crashing_journal
from hops_slurm.engine.cycle import RefreshSession, RoundSession, run_steps
from hops_slurm.engine.estimates import StoreReader
from hops_slurm.engine.offer import starting
from hops_slurm.engine.offer_file import OfferWriter
from hops_slurm.engine import partition_file
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.engine.known_jobs import ViewCache
from hops_slurm.engine.lock import InstanceLock
from hops_slurm.engine.reasons import Reasons
from hops_slurm.engine.bookkeeping import Counters, Places, Resources
from hops_slurm.engine.restarts import RestartCosts
from hops_slurm.engine.profiling import ProbeSettings, ProfilerFlow
from hops_slurm.engine.retry import RetryingReads
from hops_slurm.core.rounds import Planning
from hops_slurm.core.timetable import LoopSettings
from hops_slurm.engine.runtime_records import SeenFiles
from hops_slurm.engine.state import EngineState, JobState, storage_errors
from hops_slurm.engine.userfiles import Owner, make_root, owner_of
from hops_slurm.engine.written import Written
from hops_slurm.errors import HopsError
from hops_slurm.rootfile import UnsafeDirectory, own_state_dir
from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob, SlurmNode
from hops_slurm.slurm.partitions import PARTITION_ARGV, parse_partitions
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.notice import NoticeSettings
from hops_slurm.slurm.reconcile import reconcile
from hops_slurm.slurm.scope import HopsScope, ScopedSlurm
from hops_slurm.text import id_list
from planner.policies import make_policy
from planner.views import Policy

log = logging.getLogger(__name__)


class Engine:
    """See the module docstring. ``api``: the Slurm backend (default: the CLI backend with this process's
    environment); ``dry_run``: read and plan only (no lock, no Slurm change, no store or state writes).
    What lives as long as the process is made here; what :meth:`open` opens is in :attr:`res`."""

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
        self.places = Places(self.state_dir, self.state_dir / "metrics", paths.resolve(config.engine.probe_dir))
        self.lock = InstanceLock(self.state_dir / "engine.lock")
        self.env_dir = paths.resolve(config.engine.env_dir)
        self.records_path = paths.resolve(paths.records)
        self._res: Resources | None = None  # what open() opened (None before)
        self._closing: list[Any] = []  # what open() opened, closed by close()
        self._policy: Policy = make_policy("hops", config.planner)
        self.announced: set[str] = set()  # pending Hops jobs the monitor has already refreshed for
        self.reasons = Reasons()  # why each pending job waits (hops_slurm.engine.reasons; the queue summary)
        self.reasons.after_fork = self.lock.drop_inherited  # a forecast's child never keeps the engine's lock
        #: the offer file's one writer (``[engine] offer_file``; None: no offers)
        self.offers = OfferWriter(config.engine.offer_file) if config.engine.offer_file is not None else None
        self.views = ViewCache()  # the job views of the round's instant, remade only where their inputs changed
        self.metrics = EngineMetrics(config.metrics.raqlr_window)  # served by the daemon ([metrics] port)
        self._policy.timer = self.metrics.timer("plan")  # each planner stage timed (cycle="plan")
        self._loop = LoopSettings(config.scheduler.round_length, config.scheduler.queue_refresh)
        self.seen_files = SeenFiles()  # the runtime files as last read to their end (unchanged: not read again)
        self.written = Written(config.scheduler.round_length)  # the job rows and records the refresh last wrote
        self._opened = False
        self.recover_later = False  # the daemon: a failed repair at start is retried before its first step
        self.needs_recovery = False
        self._partition_problem = ""  # the last problem writing the partition file (logged once)

    @property
    def res(self) -> Resources:
        """The engine's long-lived resources (open the engine first)."""
        if self._res is None:
            raise HopsError("the engine is not open")
        return self._res

    # what tests, tools and the simulation read of an open engine
    @property
    def tracked(self) -> dict[str, JobState]:
        return self._res.tracked if self._res is not None else {}

    @property
    def backend(self) -> SlurmBackend:
        return self.res.backend

    @property
    def enactor(self) -> Enactor:
        return self.res.enactor

    @property
    def journal(self) -> Journal:
        return self.res.journal

    @property
    def state(self) -> EngineState:
        return self.res.state

    @property
    def store(self) -> Any:
        return self.res.store

    @property
    def records_file(self) -> Any:
        return self.res.records_file

    @property
    def profiler(self) -> ProfilerFlow | None:
        return self.res.profiler

    @property
    def restarts(self) -> RestartCosts:
        return self.res.restarts

    @property
    def last_planning(self) -> Planning | None:
        return self._res.last_planning if self._res is not None else None

    @property
    def policy(self) -> Policy:
        return self._policy

    @policy.setter
    def policy(self, policy: Policy) -> None:  # the simulation plans with another policy
        policy.timer = self.metrics.timer("plan")  # its stages timed as the default policy's are
        self._policy = policy
        if self._res is not None:
            self._res.policy = policy

    @property
    def loop(self) -> LoopSettings:
        """The timetable's settings (:mod:`hops_slurm.core.timetable`): the instants the daemon and the
        simulation drive, and how many plannings each makes."""
        return self._loop

    @loop.setter
    def loop(self, loop: LoopSettings) -> None:  # the simulation runs its own loop settings
        self._loop = loop
        if self._res is not None:
            self._res.loop = loop

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
        store, journal, state, records_file = self._open_files()
        tracked = state.jobs()
        nodes = self.api.nodes()
        managed = self.scope.managed(nodes) or None  # the Hops partitions' nodes
        self._check_partitions(nodes)
        self._publish_partitions()
        e = self.config.engine  # checkpoint marks: the notice before a planned requeue (engine/checkpoints.py)
        marks = None if self.dry_run else Marks(state, self.places.metrics_dir, lambda: tracked, self.owners,
                                                self.now, self.seen_files)
        enactor = Enactor(self.api, journal, managed_nodes=managed, env_dir=self.env_dir,
                          settle_timeout=e.settle_timeout, notice=NoticeSettings(e.preempt_signal, e.preempt_grace),
                          listening=marks.listening if marks else None, answered=marks.answered if marks else None,
                          timer=self.metrics.timer("enact"))  # each phase timed (cycle="enact")
        backend = SlurmBackend(self.api, enactor, partition=self.scope.partitions, governance=self._governance,
                               stored=lambda: {j: s.directives for j, s in tracked.items() if s.directives})
        reader = StoreReader(store, self.config, self.scope.partitions, self.now, dry_run=self.dry_run)
        profiler = None
        if store is not None and not self.dry_run:
            profiler = ProfilerFlow(
                ProbeSettings(self.places.probe_dir, self.config.slurm.profiler_partition, e.probe_python, e.probe_size,
                              e.probe_iterations, e.probe_time_limit, e.probe_device, e.probe_retries,
                              in_place=e.probe_in_place, data_parallel=tuple(e.probe_data_parallel)), state,
                store, api=self.api, journal=journal, nodes=enactor.gate_nodes, owners=self.owners,
                ingested=reader.ingested)
            profiler.adopt(tracked.values())
        self._res = Resources(
            config=self.config, scope=self.scope, api=self.api, now=self.now, owners=self.owners, dry_run=self.dry_run,
            places=self.places, store=store, reader=reader, journal=journal, state=state, records_file=records_file,
            enactor=enactor, backend=backend, profiler=profiler, marks=marks, offers=self.offers, policy=self._policy,
            restarts=RestartCosts(store, e.restart_cost_default, writes=not self.dry_run), tracked=tracked,
            seen_files=self.seen_files, written=self.written, metrics=self.metrics, views=self.views,
            reasons=self.reasons, loop=self._loop, counters=Counters(round_no=int(state.meta("rounds", "0"))))
        if not self.dry_run:
            self._reconcile(managed)
        self._opened = True

    def _open_files(self) -> tuple[Any, Journal, EngineState, Any]:
        """The throughput store, the journal, the engine state and the records file (a dry run reads only
        and creates nothing: no records file, the store None when there is none)."""
        from estimator.store import ThroughputStore
        paths = self.config.paths
        store_path, state_path = (paths.resolve(p) for p in (paths.store, paths.engine_db))
        if self.dry_run:  # reads only, creates nothing
            store = ThroughputStore(store_path, read_only=True, momentary=True) if store_path.exists() else None
            jpath = paths.resolve(paths.journal)  # read for placed jobs only
            journal = Journal(jpath, read_only=True) if jpath.exists() else Journal(":memory:")
            state = EngineState.read_only(state_path) if state_path.exists() else EngineState(":memory:")
            self._closing = [store, journal, state]
            return store, journal, state, None
        # root's own, writable by no one else (else one line, nothing written); users reach their own
        # places below (probes, runtime records) but cannot list the directory
        try:
            own_state_dir(self.state_dir)
        except UnsafeDirectory as exc:
            raise HopsError(f"[paths] state_dir: {exc}: the engine writes nothing there") from None
        store = ThroughputStore(store_path)
        self._closing = [store]
        make_root(self.places.metrics_dir)
        cjournal = crashing_journal(paths.resolve(paths.journal))
        self._closing.append(cjournal)
        cjournal.clock = self.now  # its times on Slurm's clock: the accounting dates requeues by them
        self.metrics.count_journal_from(cjournal.last_id())  # counters start at this process's start
        state = EngineState(state_path)
        self._closing.append(state)
        from hops_slurm.report.source import RecordsFile
        records_file = RecordsFile(self.records_path)
        self._closing.append(records_file)
        return store, cjournal, state, records_file

    def _reconcile(self, managed: list[str] | None) -> None:
        """Slurm's state repaired from the journal before anything else (a crash loses no job)."""
        try:
            report = reconcile(self.api, self.res.journal, gate_nodes=managed)
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
        if self.dry_run:
            return
        r = self.res
        report = reconcile(self.api, r.journal, gate_nodes=r.enactor.managed_nodes)
        log.info("recovered after a failed step: held %s, rolled back %s, deleted reservations %s",
                 id_list(report.held), id_list(report.rolled_back), report.deleted_reservations)

    def close(self) -> None:
        if self.offers is not None and not self.dry_run and self._opened:
            try:  # no daemon, no offers: new jobs are held until it is back
                self.offers.publish(None)
            except OSError as exc:
                log.warning("cannot close the offer file %s: %s", self.offers.path, exc)
        for thing in [self.reasons.forecaster, *getattr(self, "_closing", [])]:
            if thing is not None and hasattr(thing, "close"):
                try:
                    thing.close()
                except Exception as exc:  # noqa: BLE001 - closing must go on
                    log.warning("closing %s: %s", type(thing).__name__, exc)
        self._closing = []
        self.lock.release()
        self._opened = False

    def __enter__(self) -> Engine:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- the cycle ------------------------------------------------------------------------------------
    def refresh(self, listing: list[SlurmJob] | None = None, listed_at: float | None = None) -> dict[str, Any]:
        """Read Slurm (``listing``: a job listing just read, reused, read from ``listed_at`` on), hold new
        jobs, settle released ones, account, profile: the named steps of :mod:`hops_slurm.engine.refresh`.
        Returns what changed."""
        with storage_errors(self.state_dir):
            r = self.res
            session = RefreshSession("refresh", r.set_aside, r.now(), given=listing, listed_at=listed_at)
            cycle = refresh_steps.CYCLE
            if run_steps(cycle.name, cycle.bound(session, r, dry_run=self.dry_run), self.metrics.step, session.failed):
                session.out["failed"] = dict(session.failed)
            self._publish_partitions()  # again if someone removed or changed it
            return session.out

    def round(self, *, fragment: bool = False) -> Planning | None:
        """One planning (a round plan, or a fragment plan on idle GPUs) on the last read of Slurm: the
        instant's plannings as the named steps of :mod:`hops_slurm.engine.round`."""
        with storage_errors(self.state_dir):
            r = self.res
            if not fragment:
                r.counters.round_no += 1
            tag = f"round{r.counters.round_no}"
            # the instant: every planning of this round sees the jobs as of it
            session = RoundSession("round", r.set_aside, r.now(), snapshot=r.backend.snapshot, fragment=fragment,
                                   tag=tag, round_id=tag + ("-fragment" if fragment else ""))
            cycle = round_steps.CYCLE
            run_steps("fragment" if fragment else cycle.name, cycle.bound(session, r), self.metrics.step,
                      session.failed)
            if "offer" in session.failed:
                round_steps.close_offer(r)
            if session.first is not None:
                r.last_planning = session.first
            return session.first

    def schedulable(self) -> list[JobState]:
        """Tracked jobs Slurm lists as pending or running, profiled (or failed), not set aside."""
        return round_steps.schedulable_jobs(self.res)

    def monitor(self) -> bool:
        """Notice ended or failed jobs (their GPUs are free now) and newly submitted Hops jobs (so a job
        submitted to idle GPUs starts within a monitor interval, not at the next refresh): refresh and run
        a fragment plan. True if something ended or arrived."""
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


__all__ = ["Engine"]
