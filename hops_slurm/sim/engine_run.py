"""The production engine on a simulated cluster: :class:`hops_slurm.engine.engine.Engine` against
:class:`hops_slurm.sim.slurmctld.SimSlurmctld`, on the simulator's virtual clock.

Where it sits: ``hops-slurm simulate --engine`` and the engine's in-process tests. The engine is the one
``hops-slurm daemon`` runs (its state, journal, throughput store, records and metrics files in a state
directory of its own); only Slurm is simulated. The timing is the timetable the fast simulator and the
daemon follow (:mod:`hops_slurm.core.timetable`, the same :class:`~hops_slurm.core.timetable.LoopSettings`
from ``Options``): a full round (refresh, round plan, fragment plans at its instant) every ``round_seconds``,
a refresh with fragment plans every ``refresh_seconds`` in between (and at each event with
``plan_on_events``); while no job is in play the clock jumps to the next arrival. The stall rule is the
fast path's (:class:`hops_slurm.sim.sim_aside.StallRule`).

The store starts with the calibrations ``hops-slurm calibrate`` would measure on this cluster
(:func:`hops_slurm.sim.measure.calibration`, as the :class:`hops_slurm.sim.sim_backend.SimBackend` path
uses) and nothing else: every new model is probed through probe jobs on the profiler's dedicated GPUs
(beside its job, measured in place, when GPUs are idle: :mod:`hops_slurm.engine.inplace`) whose records
the engine reads from files, and learns from the runtime records its jobs write.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.config import SiteConfig, parse_config
from hops_slurm.core.rounds import EXIT_REASONS
from hops_slurm.core.timetable import Instant, Kind, LoopSettings, round_instants
from hops_slurm.engine.engine import Engine
from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, RoundRecord
from hops_slurm.report.metrics import summarize
from hops_slurm.report.source import SqliteSource
from hops_slurm.sim.sim_aside import StallRule
from hops_slurm.sim.sim_backend import SimSettings
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.groundtruth import GroundTruth, ideal_time
from hops_slurm.sim.measure import calibration
from hops_slurm.sim.runner import Options, RunResult
from hops_slurm.sim.slurmctld import EPOCH, SimCtlSettings, SimSlurmctld
from hops_slurm.sim.workload import JobSpec
from planner.policies import make_policy

log = logging.getLogger(__name__)
STALL_SECONDS = SimSettings().stall_seconds
#: the ``[engine]`` settings of a site's configuration an engine simulation takes (``engine_simulation(site=)``);
#: the others name the site's files and directories, which a simulation keeps apart
SITE_ENGINE_KEYS = ("monitor_interval", "probe_size", "probe_iterations", "probe_time_limit", "probe_retries",
                    "probe_in_place", "default_b_link", "default_b_net", "restart_cost_default", "preempt_signal",
                    "preempt_grace")


@dataclass
class EngineSim:
    """A running engine simulation: the simulated slurmctld, the engine, its state directory."""

    ctl: SimSlurmctld
    engine: Engine | None  # None until started (``engine_simulation(start=False)``)
    config: SiteConfig
    policy_name: str
    options: Options

    @property
    def state_dir(self) -> Path:
        return self.config.paths.state_dir

    def restart(self) -> None:
        """A new engine process on the same state directory and cluster (after a crash; or the first, when
        the simulation was made with ``start=False``): it reconciles its journal with (simulated) Slurm on
        opening, as the daemon does."""
        try:
            if self.engine is not None:
                self.engine.close()
        finally:
            self.engine = None
            self.engine = _open_engine(self.config, self.ctl, self.policy_name)
            self.engine.loop = self.loop()

    def loop(self) -> LoopSettings:
        """The timetable's settings (:mod:`hops_slurm.core.timetable`), from the simulation's options."""
        o = self.options
        return LoopSettings(o.round_seconds, o.refresh_seconds, fragment_at_once=o.fragment_at_once,
                            plan_on_events=o.plan_on_events, event_gap=o.event_gap or 0.0)

    def run(self, *, on_round: Callable[[float, int], None] | None = None, max_seconds: float = 90 * 86400.0,
            on_instant: Callable[[Instant], None] | None = None) -> None:
        """Rounds on the timetable until every job of the workload has ended; ``on_instant`` sees each
        instant of the timetable as the engine reaches it."""
        o, ctl, engine = self.options, self.ctl, self.engine
        assert engine is not None, "start the engine first (restart)"
        stall = StallRule(STALL_SECONDS)
        while not ctl.done():
            if ctl.t > max_seconds:
                raise HopsError(f"engine simulation passed {max_seconds / 86400:.0f} days of virtual time with jobs left")
            stall.check(ctl, ctl.t)
            if ctl.done():
                break
            engine.refresh()
            if not engine.schedulable():
                event = ctl.next_event()
                nxt = [t for t in (self._seen_at(event), ctl.t + o.refresh_seconds if engine.tracked else None)
                       if t is not None]
                if not nxt:
                    break
                ctl.advance(max(min(nxt), ctl.t))
                continue
            for instant in round_instants(engine.loop, ctl.t, _CtlClock(ctl)):
                self._at(instant)
                if on_instant is not None:
                    on_instant(instant)
            if on_round:
                on_round(ctl.t, ctl.ended)
        engine.refresh()  # the jobs that ended since the last refresh get their end recorded

    def _at(self, instant: Instant) -> None:
        """What the engine does at an instant of the timetable (the daemon's steps, on the virtual clock):
        at a round, the round plan (the refresh came first); at a tick or an event, a refresh and fragment
        plans; at the round's end, the clock moves there (unless the workload ended: then the last refresh
        comes at once, before Slurm forgets the ended jobs)."""
        engine = self.engine
        assert engine is not None
        if instant.kind is Kind.ROUND:
            engine.round()
        elif instant.kind is Kind.END:
            if not self.ctl.done():
                self._advance(instant.at)
        else:
            self._advance(instant.at)
            engine.refresh()
            if engine.policy.supports_fragment_plans:
                engine.round(fragment=True)

    def _seen_at(self, event: float | None) -> float | None:
        """When the engine notices something that happens at ``event``: at once without a monitor step, else
        at the first monitor instant at or after it (the daemon's monitor timer runs on a fixed grid)."""
        m = self.options.monitor_seconds
        if event is None or not m:
            return event
        return max(math.ceil(event / m - 1e-9) * m, self.ctl.t)

    def _advance(self, until: float) -> None:
        """Move the clock to ``until``; with a monitor step (``Options.monitor_seconds``), stop at each monitor
        instant that follows an event (a job's end, an arrival, a probe's end) and run the daemon's monitor
        step there (:meth:`hops_slurm.engine.engine.Engine.monitor`: refresh and fragment plan when a job
        ended or arrived); the instants in between find nothing, as the daemon's would."""
        ctl, engine = self.ctl, self.engine
        assert engine is not None
        last = -math.inf
        while self.options.monitor_seconds and not ctl.done():
            at = self._seen_at(ctl.next_event())
            if at is not None and at <= last + 1e-9:  # something still due at the last instant: the next one
                at = last + self.options.monitor_seconds
            if at is None or at >= until - 1e-9:
                break
            ctl.advance(at)
            engine.monitor()
            last = at
        ctl.advance(until)

    def exits(self) -> dict[str, int]:
        """Why each planning instant stopped, counted (the engine's ``hops_planning_exits_total``)."""
        assert self.engine is not None
        registry = self.engine.metrics.registry
        counts = {r: registry.get_sample_value("hops_planning_exits_total", {"reason": r}) or 0.0 for r in EXIT_REASONS}
        return {r: int(n) for r, n in sorted(counts.items()) if n}

    def records(self) -> tuple[list[JobRecord], list[RoundRecord]]:
        got = SqliteSource(self.state_dir / "records.sqlite").load()
        return list(got.jobs), list(got.rounds)


@contextmanager
def engine_simulation(cluster: ClusterSpec, jobs: tuple[JobSpec, ...], policy_name: str = "hops",
                      options: Options = Options(), state_dir: Path | None = None,
                      start: bool = True, site: SiteConfig | None = None) -> Iterator[EngineSim]:
    """An opened :class:`EngineSim` (closed, and its temporary state directory removed, on exit). ``site``:
    a site's configuration whose planner, honesty and engine settings (:data:`SITE_ENGINE_KEYS`) the engine
    runs with (its paths, partitions, offers and metrics are the simulation's own); the round and refresh
    are ``options``'s."""
    tmp = None
    if state_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="hops-engine-sim-"))
        state_dir = tmp / "state"
    state_dir.mkdir(parents=True, exist_ok=True)
    state_dir.chmod(0o755)
    planner = (site or parse_config({}, "defaults")).planner_section
    solve = min(planner.time_limit, options.round_seconds / 2)  # type: ignore[attr-defined]
    config = parse_config({
        "paths": {"state_dir": str(state_dir)},
        "scheduler": {"round_length": options.round_seconds, "queue_refresh": options.refresh_seconds},
        "engine": {"settle_timeout": 0.1},
        "planner": {"time_limit": solve},  # a solve shorter than the round, as the configuration requires
    }, "engine simulation")
    if site is not None:
        engine_cfg = config.engine.model_copy(update={k: getattr(site.engine, k) for k in SITE_ENGINE_KEYS})
        config = config.model_copy(update={"planner_section": site.planner_section.model_copy(update={"time_limit": solve}),
                                           "honesty": site.honesty, "engine": engine_cfg})
    ctl = SimSlurmctld(cluster, jobs, config.paths.resolve(config.engine.env_dir),
                       SimCtlSettings(costs=options.costs))
    _calibrate(config.paths.resolve(config.paths.store), cluster)
    if options.honesty is not None:
        log.info("engine simulation: [honesty] of the engine's config applies, not Options.honesty")
    sim = None
    try:
        sim = EngineSim(ctl, None, config, policy_name, options)
        if start:
            sim.restart()
        yield sim
    finally:
        if sim is not None and sim.engine is not None:
            sim.engine.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


class _CtlClock:
    """The timetable's clock on the simulated slurmctld's virtual one."""

    def __init__(self, ctl: SimSlurmctld) -> None:
        self.ctl = ctl

    def now(self) -> float:
        return self.ctl.t

    def done(self) -> bool:
        return self.ctl.done()

    def next_event(self) -> float | None:
        return self.ctl.next_event()


def _open_engine(config: SiteConfig, ctl: SimSlurmctld, policy_name: str) -> Engine:
    """The engine, opened on the simulated slurmctld: no waiting in virtual time (a released job starts
    at the next read, so the enactor's polls and grace periods would only cost wall time)."""
    engine = Engine(config, api=ctl, owners=ctl.owner).open()
    assert engine.enactor is not None and engine.state is not None and engine.journal is not None
    for db in (engine.store.db, engine.state.db, engine.journal.db, engine.records_file.db):  # a simulation's files need not survive a power cut
        db.execute("PRAGMA synchronous=OFF")
    engine.records_file.db.execute("PRAGMA journal_mode=MEMORY")  # not a journal file made and deleted per write
    engine.enactor.settle_timeout, engine.enactor.poll, engine.enactor.requeue_grace = 0.0, 0.0, 0.0
    engine.enactor.notifier.pause = ctl.sleep  # a notice's grace passes in virtual time
    engine.reasons.forecast_inline = True  # a forecast in virtual time: made at its round, not at wall-clock pace
    hops = policy_name == "hops" or policy_name.startswith(("hops:", "hops-"))
    engine.policy = make_policy(policy_name, config.planner) if hops else make_policy(policy_name)
    return engine


def _calibrate(store_path: Path, cluster: ClusterSpec) -> None:
    """What ``hops-slurm calibrate`` would store for each GPU type of the cluster (measured from ground truth)."""
    from estimator.store import ThroughputStore

    truth = GroundTruth()
    store = ThroughputStore(store_path)
    try:
        for gpu_type in cluster.gpu_types:
            b_link, b_net = calibration(truth, gpu_type)
            store.put_calibration(gpu_type, b_link=b_link, b_net=b_net, method="simulated calibrate", measured_at=EPOCH)
    finally:
        store.close()


def simulate_engine(cluster: ClusterSpec, jobs: tuple[JobSpec, ...], policy_name: str = "hops", seed: int = 0,
                    options: Options = Options(), on_round: Callable[[float, int], None] | None = None,
                    site: SiteConfig | None = None) -> RunResult:
    """Like :func:`hops_slurm.sim.runner.simulate`, through the production engine (see the module docstring;
    ``site``: :func:`engine_simulation`)."""
    start = time.perf_counter()
    with engine_simulation(cluster, jobs, policy_name, options, site=site) as sim:
        sim.run(on_round=on_round, max_seconds=options.max_days * 86400.0)
        job_records, rounds = sim.records()
        exits = sim.exits()
        specs = dict(sim.ctl.specs)
    shifted = with_ideal_times([_shift(r) for r in job_records], specs, cluster)
    rounds = [r.model_copy(update={"time": r.time - EPOCH}) for r in rounds]
    return RunResult(policy_name, seed, shifted, rounds, [], summarize(shifted, rounds), time.perf_counter() - start,
                     exits=exits)


def with_ideal_times(records: list[JobRecord], specs: Mapping[str, JobSpec], cluster: ClusterSpec) -> list[JobRecord]:
    """Each ended job's Themis ideal time (:func:`hops_slurm.sim.groundtruth.ideal_time`, the fast path's
    formula), N = the time-averaged number of jobs submitted and not ended over its life, from the records."""
    truth = GroundTruth()
    gpus_per_type: dict[str, int] = {}
    for kind in cluster.server_kind:
        gpus_per_type[kind.gpu_type] = gpus_per_type.get(kind.gpu_type, 0) + kind.gpus * kind.count
    spans = [(r.submit, r.end if r.end is not None else math.inf) for r in records]
    out = []
    for r in records:
        spec = specs.get(r.job_id)
        if r.end is None or spec is None or r.end <= r.submit:
            out.append(r)
            continue
        overlap = sum(max(0.0, min(e, r.end) - max(s, r.submit)) for s, e in spans)
        t_id = ideal_time(truth, gpus_per_type, spec.model, spec.requirements, spec.total_samples,
                          overlap / (r.end - r.submit))
        out.append(r.model_copy(update={"ideal_time": t_id}))
    return out


def _shift(r: JobRecord) -> JobRecord:
    """Times from the engine's epoch to simulated seconds (as the simulator's records are)."""
    def s(t: float | None) -> float | None:
        return None if t is None else t - EPOCH

    placements = [p.model_copy(update={"start": p.start - EPOCH, "end": s(p.end)}) for p in r.placements]
    return r.model_copy(update={"submit": r.submit - EPOCH, "start": s(r.start), "end": s(r.end), "placements": placements})


__all__ = ["EngineSim", "engine_simulation", "simulate_engine"]
