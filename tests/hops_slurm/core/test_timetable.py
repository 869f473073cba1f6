"""The one timetable (hops_slurm.core.timetable) and the instants each of its three drivers sees: the fast
simulator (run_rounds), the engine simulation (EngineSim.run) and the daemon (daemon.Driver, here on the
simulated slurmctld's virtual clock), for a few loop settings, fragment plans at ticks included."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.core.rounds import EXIT_SINGLE, run_rounds
from hops_slurm.core.timetable import Instant, Kind, LoopSettings, round_instants
from hops_slurm.engine.daemon import Driver, Steps
from hops_slurm.sim.cluster_spec import ClusterSpec, load_cluster
from hops_slurm.sim.engine_run import engine_simulation
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.runner import Options
from hops_slurm.sim.sim_backend import SimBackend
from hops_slurm.sim.workload import JobSpec
from planner.policies import make_policy

R50 = "ResNet-50 (batch size 64)"
THR4 = GroundTruth().samples_per_second(R50, "v100", 4, False)
SETTINGS = [LoopSettings(360.0, 30.0), LoopSettings(360.0, 30.0, fragment_at_once=False),
            LoopSettings(100.0, 40.0, fragment_at_once=False)]


class Clock:
    def __init__(self, now: float = 0.0, events: tuple[float, ...] = ()) -> None:
        self.t, self.events = now, list(events)

    def now(self) -> float:
        return self.t

    def done(self) -> bool:
        return False

    def next_event(self) -> float | None:
        later = [e for e in self.events if e > self.t]
        return min(later) if later else None


def _walk(settings: LoopSettings, clock: Clock, start: float = 0.0, **kw: bool) -> list[tuple[str, float]]:
    out = []
    for i in round_instants(settings, start, clock, **kw):
        clock.t = max(clock.t, i.at)
        out.append((i.kind.value, i.at))
    return out


def test_a_round_is_its_start_its_ticks_and_its_end() -> None:
    assert _walk(LoopSettings(100.0, 40.0), Clock()) == [("round", 0.0), ("tick", 40.0), ("tick", 80.0), ("end", 100.0)]
    # a tick on the round's end is the next round's start
    assert _walk(LoopSettings(90.0, 30.0), Clock()) == [("round", 0.0), ("tick", 30.0), ("tick", 60.0), ("end", 90.0)]


def test_events_between_ticks_are_instants_only_when_planning_on_events() -> None:
    on = LoopSettings(100.0, 40.0, plan_on_events=True)
    assert _walk(on, Clock(events=(10.0, 40.0, 55.0))) == [("round", 0.0), ("event", 10.0), ("tick", 40.0),
                                                           ("event", 55.0), ("tick", 80.0), ("end", 100.0)]
    assert _walk(LoopSettings(100.0, 40.0), Clock(events=(10.0,))) == [("round", 0.0), ("tick", 40.0),
                                                                      ("tick", 80.0), ("end", 100.0)]


def test_events_sooner_than_the_gap_after_an_instant_are_one_instant_at_the_gaps_end() -> None:
    """slurmctld's rate limit (batch_sched_delay): the events at 11 and 12 s come within 5 s of the instant at
    10 s and are planned together at 15 s; 20 s is 5 s after that; 41 s comes 1 s after the tick at 40 s."""
    gap = LoopSettings(100.0, 40.0, plan_on_events=True, event_gap=5.0)
    assert _walk(gap, Clock(events=(10.0, 11.0, 12.0, 20.0, 41.0))) == [
        ("round", 0.0), ("event", 10.0), ("event", 15.0), ("event", 20.0), ("tick", 40.0), ("event", 45.0),
        ("tick", 80.0), ("end", 100.0)]
    # the gap counts from the round's start too
    assert _walk(gap, Clock(events=(2.0,))) == [("round", 0.0), ("event", 5.0), ("tick", 40.0), ("tick", 80.0),
                                                ("end", 100.0)]
    assert _walk(LoopSettings(100.0, 40.0, plan_on_events=True), Clock(events=(10.0, 11.0, 12.0))) == [
        ("round", 0.0), ("event", 10.0), ("event", 11.0), ("event", 12.0), ("tick", 40.0), ("tick", 80.0),
        ("end", 100.0)]


def test_an_event_whose_gap_reaches_the_tick_is_planned_at_the_tick() -> None:
    gap = LoopSettings(100.0, 40.0, plan_on_events=True, event_gap=5.0)
    assert _walk(gap, Clock(events=(36.0, 38.0))) == [("round", 0.0), ("event", 36.0), ("tick", 40.0),
                                                      ("tick", 80.0), ("end", 100.0)]


def test_a_negative_event_gap_is_refused() -> None:
    with pytest.raises(ValueError, match="event_gap"):
        LoopSettings(event_gap=-1.0)


def test_a_late_driver_runs_the_ticks_it_missed_once() -> None:
    clock = Clock(now=75.0)  # the round's step took 75 s: the ticks at 30 and 60 are one tick, late
    assert _walk(LoopSettings(100.0, 30.0), clock, coalesce=True) == [("round", 0.0), ("tick", 60.0),
                                                                      ("tick", 90.0), ("end", 100.0)]


@pytest.mark.parametrize("at_once", [True, False])
def test_how_many_plannings_each_instant_makes(at_once: bool) -> None:
    s = LoopSettings(max_plans_per_instant=4, fragment_at_once=at_once)
    assert s.plannings(Kind.ROUND) == (5, at_once)
    assert s.plannings(Kind.TICK) == s.plannings(Kind.EVENT) == ((4, True) if at_once else (1, True))


# ----- the three drivers ---------------------------------------------------------------------------------
ROUNDS = 2  # instants seen: two whole rounds


class Enough(Exception):
    pass


def _cluster(tmp_path: Path) -> ClusterSpec:
    path = tmp_path / "tiny.toml"
    path.write_text('name = "tiny"\n[profiler]\ngpus_per_type = 2\nprobe_seconds = 60.0\n'
                    '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 2\nspeed = 1.0\n')
    return load_cluster(path)


# three jobs on 8 GPUs: one waits while the others run (planned at every instant), busy for both rounds
JOBS = tuple(JobSpec(name, 0.0, R50, (4,), THR4 * 4000.0) for name in ("a", "b", "c"))


def _recorder(seen: list[tuple[str, float]], first: list[float]):
    def on_instant(i: Instant) -> None:
        if not first:
            first.append(i.at)
        seen.append((i.kind.value, i.at - first[0]))
        if sum(1 for k, _ in seen if k == "end") >= ROUNDS:
            raise Enough

    return on_instant


def _expected(settings: LoopSettings) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for n in range(ROUNDS):
        out += _walk(settings, Clock(), start=n * settings.round_seconds)
    return out


def _options(s: LoopSettings) -> Options:
    return Options(round_seconds=s.round_seconds, refresh_seconds=s.refresh_seconds, fragment_at_once=s.fragment_at_once)


def _single_plan_exits(engine) -> float:  # noqa: ANN001
    return engine.metrics.registry.get_sample_value("hops_planning_exits_total", {"reason": EXIT_SINGLE})


@pytest.mark.parametrize("settings", SETTINGS, ids=["360-30-at-once", "360-30-at-ticks", "100-40-at-ticks"])
def test_every_driver_sees_the_timetables_instants(tmp_path: Path, settings: LoopSettings) -> None:
    cluster, expected = _cluster(tmp_path), _expected(settings)
    single = not settings.fragment_at_once  # at ticks: a round plan is the round instant's one planning

    seen: list[tuple[str, float]] = []
    exits: dict[str, int] = {}
    backend = SimBackend(cluster, JOBS)
    with pytest.raises(Enough):
        run_rounds(backend, make_policy("hops"), settings, on_instant=_recorder(seen, []), exits=exits)
    assert seen == expected, "fast simulator"
    assert (exits.get(EXIT_SINGLE, 0) > 0) == single
    backend.close()

    seen = []
    with engine_simulation(cluster, JOBS, options=_options(settings), state_dir=tmp_path / "engine") as sim:
        with pytest.raises(Enough):
            sim.run(on_instant=_recorder(seen, []))
        assert seen == expected, "engine simulation"
        assert (_single_plan_exits(sim.engine) > 0) == single  # the engine simulation follows --fragment-plans

    seen = []
    with engine_simulation(cluster, JOBS, options=_options(settings), state_dir=tmp_path / "daemon") as sim:
        engine, ctl = sim.engine, sim.ctl

        class VirtualClock:
            def now(self) -> float:
                return ctl.t

            def done(self) -> bool:
                return False

            def next_event(self) -> float | None:
                return None

            def sleep(self, seconds: float) -> None:
                ctl.advance(ctl.t + seconds)

        steps = Steps(engine.full_round, engine.refresh_and_fill, engine.monitor, engine.recover)
        with pytest.raises(Enough):
            Driver(engine.loop, VirtualClock(), steps, 10.0, on_instant=_recorder(seen, [])).run()
        assert seen == expected, "daemon"
        assert (_single_plan_exits(engine) > 0) == single


def test_the_engine_simulation_plans_events_with_the_runs_event_gap(tmp_path: Path) -> None:
    """One rule for both backends: ``--event-gap`` reaches the engine path's timetable as it reaches the fast one."""
    options = Options(round_seconds=360.0, refresh_seconds=30.0, plan_on_events=True, event_gap=3.0)
    with engine_simulation(_cluster(tmp_path), JOBS, options=options, state_dir=tmp_path / "engine") as sim:
        assert sim.loop() == LoopSettings(360.0, 30.0, plan_on_events=True, event_gap=3.0)
    with engine_simulation(_cluster(tmp_path), JOBS, options=Options(plan_on_events=True),
                           state_dir=tmp_path / "engine0") as sim:
        assert sim.loop().event_gap == 0.0  # no gap asked for: every event, as before
