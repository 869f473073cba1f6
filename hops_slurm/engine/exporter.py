"""Prometheus metrics of the live engine: what each step already computed, turned into metric values.

Where it sits: :class:`hops_slurm.engine.engine.Engine` owns one :class:`EngineMetrics` (its own
:class:`prometheus_client.CollectorRegistry`, never the process-global one, so tests can run several
engines) and hands it, after each step, what that step produced: the :class:`~hops_slurm.core.interface.Planning`
of a round or fragment plan (its :class:`~hops_slurm.records.RoundRecord`, phase timings and planner
diagnostics) with the :class:`~hops_slurm.slurm.enact.EnactResult`, the duration of each named step of the
cycle (:mod:`hops_slurm.engine.cycle`) and, through a :class:`CycleTimer`, of each stage of the planner
(``cycle="plan"``: :data:`planner.hops.PLAN_STAGES`) and each phase of the enactor (``cycle="enact"``:
:data:`hops_slurm.slurm.enact.ENACT_PHASES`), the refresh's job states and the
JobRecords of jobs that ended, and the journal's finished actions (holds, releases, preemptions,
failures; each counted once by id). Nothing here reads Slurm or recomputes a plan. ``hops-slurm daemon``
serves the registry over HTTP when ``[metrics] port`` is set (:func:`serve`). Names follow Prometheus
conventions: ``hops_`` prefix, base units (seconds, bytes), ``_total`` for counters; the list is in
``docs/admin-guide.md`` and ``etc/grafana/hops-slurm.json`` graphs them.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from hops_slurm.core.rounds import EXIT_REASONS
from hops_slurm.records import JobRecord
from hops_slurm.slurm.enact import ENACT_PHASES
from planner.hops import PLAN_STAGES
from planner.reasons import Code
from planner.stages import stage_names

DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, math.inf)
STEP_BUCKETS = (0.001, 0.005, *DURATION_BUCKETS)
LR_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, math.inf)
PHASES = ("read", "plan", "enact")
KINDS = ("round", "fragment")
ERROR_REASONS = ("action_failed", "refused", "mismatched")
#: the named stages each timed under their own cycle: the planner's (planner.hops.PLAN_STAGES) and the
#: enactor's phases (hops_slurm.slurm.enact.ENACT_PHASES)
STAGED: dict[str, tuple[str, ...]] = {"plan": stage_names(PLAN_STAGES), "enact": ENACT_PHASES}
MAX_ENDED = 100_000  # ended jobs kept for RAQLR (bounded memory whatever the window)


class EngineMetrics:
    """The engine's metrics; ``raqlr_window``: seconds over which ``hops_raqlr`` averages ended jobs."""

    def __init__(self, raqlr_window: float = 3600.0) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.raqlr_window = raqlr_window
        self._ended: deque[tuple[float, float]] = deque(maxlen=MAX_ENDED)  # (end, final LR)
        self._journal_id = 0
        self._failed_probes: set[tuple[str, str, str]] = set()
        self._signatures: tuple[object, int] | None = None  # (the store's version when counted, how many)
        self._steps: dict[tuple[str, str], Any] = {}  # (cycle, step) -> its series of step_seconds
        self._lock = threading.Lock()  # steps run on one thread; the HTTP thread only reads
        r = self.registry
        self.planning_seconds = Histogram("hops_planning_duration_seconds", "Wall time of one planning (read, plan, "
                                          "enact), by kind: round plan or fragment plan", ["kind"],
                                          buckets=DURATION_BUCKETS, registry=r)
        self.phase_seconds = Histogram("hops_planning_phase_duration_seconds", "Wall time of one phase of a planning",
                                       ["kind", "phase"], buckets=DURATION_BUCKETS, registry=r)
        self.solver_seconds = Histogram("hops_solver_duration_seconds", "Time the ILP solver took per planning",
                                        ["kind"], buckets=DURATION_BUCKETS, registry=r)
        self.solver_gap = Gauge("hops_solver_gap_ratio", "Relative MIP gap the solver achieved in the last planning "
                                "(NaN when a fallback plan was used)", ["kind"], registry=r)
        self.fallbacks = Counter("hops_solver_fallbacks", "Plannings that used a fallback plan (incumbent, "
                                 "previous, greedy)", ["kind", "fallback"], registry=r)
        self.last_planning = Gauge("hops_last_planning_timestamp_seconds", "Unix time of the last planning",
                                   ["kind"], registry=r)
        self.queue_length = Gauge("hops_queue_length", "Hops jobs waiting for GPUs at the last round plan", registry=r)
        self.active_jobs = Gauge("hops_active_jobs", "Active Hops jobs (queued or running) at the last round plan",
                                 registry=r)
        self.window_jobs = Gauge("hops_window_jobs", "Jobs in the service window of the last round plan", registry=r)
        self.queued_lr = Histogram("hops_queued_latency_ratio", "Latency ratio (eq. 6) of each queued job, observed "
                                   "at every round plan", buckets=LR_BUCKETS, registry=r)
        self.raqlr = Gauge("hops_raqlr", "RAQLR (eq. 7): mean final latency ratio of the jobs that ended within the "
                           "configured window (NaN when none)", registry=r)
        self.fragments = Gauge("hops_fragmented_gpus", "Idle GPUs after the last planning while a job waits "
                               "(Avg.frag's term)", registry=r)
        self.gpus = Gauge("hops_gpus", "GPUs of the Hops partition after the last planning", ["state"], registry=r)
        self.preemptions = Counter("hops_preemptions", "Running jobs requeue-held to move or stop them", registry=r)
        self.preemption_causes = Counter("hops_preemption_causes", "Preemptions the round plans enacted, per cause "
                                         "(planner.changes: requeued, swapped, explore, grown, moved-type, "
                                         "moved-count, moved-nodes, other)", ["cause"], registry=r)
        self.holds = Counter("hops_holds", "Jobs held by the engine (new jobs, after preemption, withdrawn)", registry=r)
        self.releases = Counter("hops_releases", "Jobs released onto their planned GPUs", registry=r)
        self.errors = Counter("hops_enactment_errors", "Enactment problems: a Slurm command failed, a config "
                              "refused, an allocation unlike the plan", ["reason"], registry=r)
        self.step_seconds = Histogram("hops_engine_step_duration_seconds", "Wall time of one named step of the "
                                      "engine's cycle (hops_slurm.engine.cycle): refresh, round and fragment "
                                      "steps, and the parts of each planning", ["cycle", "step"],
                                      buckets=STEP_BUCKETS, registry=r)
        self.planning_exits = Counter("hops_planning_exits", "Why an instant's plannings stopped, as Slurm counts "
                                      "bf_exit (hops_slurm.core.rounds.EXIT_REASONS)", ["reason"], registry=r)
        for reason in EXIT_REASONS:
            self.planning_exits.labels(reason)
        self.step_failures = Counter("hops_step_failures", "Daemon steps that failed (retried at their next turn)",
                                     ["step"], registry=r)
        self.probes_queued = Gauge("hops_probes_queued", "Probe jobs submitted and not finished", registry=r)
        self.probes_failed = Counter("hops_probes_failed", "Probe jobs that failed", registry=r)
        self.aside = Gauge("hops_jobs_set_aside", "Jobs set aside (not scheduled) for a problem of their own",
                           registry=r)
        self.store_bytes = Gauge("hops_store_size_bytes", "Size of the throughput store on disk (with its WAL)",
                                 registry=r)
        self.store_signatures = Gauge("hops_store_signatures", "Model signatures in the throughput store", registry=r)
        self.pending = Gauge("hops_pending_jobs", "Pending Hops jobs by why they wait (planner.reasons: HopsQueue, "
                             "HopsResources, HopsLimit, HopsSetAside, ...)", ["reason"], registry=r)
        for code in Code:  # every reason's series exists from the start
            self.pending.labels(code.value)
        for kind in KINDS:  # every series exists from the start (rate() and absent() need no first event)
            self.planning_seconds.labels(kind)
            self.solver_seconds.labels(kind)
            self.solver_gap.labels(kind).set(math.nan)
            for phase in PHASES:
                self.phase_seconds.labels(kind, phase)
        for reason in ERROR_REASONS:
            self.errors.labels(reason)
        for cycle, names in STAGED.items():
            for name in names:
                self._steps[(cycle, name)] = self.step_seconds.labels(cycle, name)
        for state in ("in_use", "idle"):
            self.gpus.labels(state)
        self.raqlr.set(math.nan)

    # ----- what the steps hand over -----------------------------------------------------------------
    def planning(self, planning: Any, fragment: bool, result: Any | None) -> None:
        """One round or fragment plan (:class:`hops_slurm.core.interface.Planning`) and what enacting it did."""
        from planner.priorities import latency_ratio

        kind = "fragment" if fragment else "round"
        rec, diag = planning.record, planning.plan.diagnostics
        with self._lock:
            phases = dict(zip(PHASES, (planning.read_seconds, planning.plan_seconds, planning.enact_seconds)))
            for phase, seconds in phases.items():
                self.phase_seconds.labels(kind, phase).observe(seconds)
            self.planning_seconds.labels(kind).observe(sum(phases.values()))
            solve = diag.get("solve_time")
            self.solver_seconds.labels(kind).observe(float(solve) if solve is not None else rec.solve_seconds)
            gap = diag.get("gap")
            self.solver_gap.labels(kind).set(float(gap) if gap is not None else math.nan)
            if rec.fallback:
                self.fallbacks.labels(kind, rec.fallback).inc()
            self.last_planning.labels(kind).set(rec.time)
            self.fragments.set(rec.fragments)
            self.gpus.labels("in_use").set(rec.gpus_in_use)
            self.gpus.labels("idle").set(rec.idle_gpus_after)
            for cause, n in rec.preempted_by.items():
                self.preemption_causes.labels(cause).inc(n)
            if not fragment:
                queued = [j for j in planning.jobs if j.current is None]
                self.queue_length.set(len(queued))
                self.active_jobs.set(rec.active_jobs)
                self.window_jobs.set(len(diag.get("window") or ()))
                for job in queued:
                    lr = latency_ratio(job)
                    if job.age > 0 and math.isfinite(lr):  # no age yet (not profiled): no ratio
                        self.queued_lr.observe(lr)
            if result is not None:
                if result.refused:
                    self.errors.labels("refused").inc(len(result.refused))
                if result.mismatched:
                    self.errors.labels("mismatched").inc(len(result.mismatched))

    def refresh(self, jobs: Iterable[Any], ended: Iterable[JobRecord], now: float, store_path: Path,
                store: Any | None) -> None:
        """After a refresh: the tracked job states, the records of jobs that ended, the store."""
        from hops_slurm.report.metrics import job_latency_ratio

        jobs = list(jobs)
        with self._lock:
            for rec in ended:
                if rec.end is None:
                    continue
                lr = job_latency_ratio(rec, rec.end)
                if lr is not None and math.isfinite(lr):
                    self._ended.append((rec.end, lr))
            recent = [lr for end, lr in self._ended if now - self.raqlr_window < end <= now]
            self.raqlr.set(sum(recent) / len(recent) if recent else math.nan)
            running = 0
            for js in jobs:
                for gpu_type, probe in dict(js.probes).items():
                    status = probe.get("status")
                    running += status == "running"
                    key = (js.job_id, str(gpu_type), str(probe.get("slurm_id", "")))
                    if status == "failed" and key not in self._failed_probes:
                        self._failed_probes.add(key)
                        self.probes_failed.inc()
            live = {js.job_id for js in jobs}
            self._failed_probes = {k for k in self._failed_probes if k[0] in live}
            self.probes_queued.set(running)
            self.aside.set(sum(1 for js in jobs if js.aside))
            self.store_bytes.set(store_size(store_path))
            if store is not None:
                self.store_signatures.set(self._signature_count(store))

    def _signature_count(self, store: Any) -> int:
        """How many signatures the store holds, counted again only when it changed: a write of the engine's
        own connection (SQLite's ``total_changes``) or of another process (``data_version``)."""
        conn = getattr(getattr(store, "db", None), "conn", None)
        version = (conn.total_changes, conn.execute("PRAGMA data_version").fetchone()[0]) if conn is not None else None
        if version is None or self._signatures is None or self._signatures[0] != version:
            self._signatures = (version, len(store.signatures()))
        return self._signatures[1]

    def count_journal_from(self, action_id: int) -> None:
        """Count only actions after ``action_id`` (the journal's newest when the engine opened)."""
        self._journal_id = action_id

    def journal(self, journal: Any) -> None:
        """Count the journal's actions finished since the last call (each once)."""
        counts, last = journal.counts_since(self._journal_id)
        with self._lock:
            self._journal_id = last
            for (kind, status), n in counts.items():
                if status == "failed":
                    self.errors.labels("action_failed").inc(n)
                    continue
                if status != "done":
                    continue
                if kind == "hold":
                    self.holds.inc(n)
                elif kind == "release":
                    self.releases.inc(n)
                elif kind == "requeuehold":
                    self.preemptions.inc(n)

    def step(self, cycle: str, step: str, seconds: float) -> None:
        """One named step of the engine's cycle took ``seconds`` (:func:`hops_slurm.engine.cycle.run_steps`)."""
        with self._lock:
            child = self._steps.get((cycle, step))
            if child is None:  # the labelled series, looked up once per (cycle, step)
                child = self._steps[(cycle, step)] = self.step_seconds.labels(cycle, step)
            child.observe(seconds)

    def planning_exit(self, reason: str) -> None:
        """An instant's plannings stopped for ``reason`` (:func:`hops_slurm.core.rounds.plan_instant`)."""
        self.planning_exits.labels(reason).inc()
    def timer(self, cycle: str) -> CycleTimer:
        """A :class:`planner.stages.StageTimer` whose stages go to :meth:`step` under ``cycle``."""
        return CycleTimer(self, cycle)

    def step_failed(self, step: str) -> None:
        self.step_failures.labels(step).inc()

    def pending_reasons(self, counts: Mapping[str, int]) -> None:
        """Pending Hops jobs per reason code (:func:`hops_slurm.engine.reasons.counts`: every code named)."""
        with self._lock:
            for code, n in counts.items():
                self.pending.labels(code).set(n)


class CycleTimer:
    """Times each stage of one cycle (``with timer.stage(name)``, also when it raises) into
    ``hops_engine_step_duration_seconds{cycle, step=name}``: the planner's stages, the enactor's phases."""

    def __init__(self, metrics: EngineMetrics, cycle: str) -> None:
        self.metrics, self.cycle = metrics, cycle

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.metrics.step(self.cycle, name, time.perf_counter() - t0)


def store_size(path: Path) -> int:
    total = 0
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            total += os.stat(p).st_size
        except OSError:
            pass
    return total


def exported_names(registry: CollectorRegistry) -> set[str]:
    """Every series name the registry can expose (a histogram's ``_bucket``, ``_sum``, ``_count``, a
    counter's ``_total``), including labelled metrics that have no sample yet."""
    suffixes: Mapping[str, tuple[str, ...]] = {"counter": ("_total", "_created"), "gauge": ("",),
                                               "histogram": ("_bucket", "_sum", "_count", "_created"),
                                               "summary": ("", "_sum", "_count", "_created")}
    names: set[str] = set()
    for family in registry.collect():
        names.update(family.name + s for s in suffixes.get(family.type, ("",)))
    return names


def serve(metrics: EngineMetrics, address: str, port: int) -> Any:
    """Serve ``/metrics`` on ``address:port`` in a daemon thread; returns the server (``shutdown()`` stops it)."""
    server, _thread = start_http_server(port, addr=address, registry=metrics.registry)
    return server
