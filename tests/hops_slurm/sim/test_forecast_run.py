"""hops_slurm.sim.forecast_run: the round loop run forward in the simulator from the jobs of now gives each
waiting job a start (at the refresh tick its GPUs come back), an end, and stops when told to; after its
planned rounds it holds running jobs in place and skips fragment plans that would plan the same again."""

from __future__ import annotations

import pytest

from hops_slurm.sim.forecast_backend import ForecastBackend
from hops_slurm.sim.forecast_run import LARGE_QUEUE, Timetable, forecast
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, Plan

ROUND, REFRESH = 360.0, 30.0


def _job(job_id: str, gpus: int, samples: float, *, wait: float = 0.0, current: Config | None = None,
         done: float = 0.0, restart: float = 0.0) -> JobView:
    # 10 samples/s per GPU wherever it runs
    return JobView(job_id, (gpus,), submit_time=0.0, wait=wait, age=samples / (10.0 * gpus), sensitivity=1.0,
                   throughput=lambda cfg: 10.0 * sum(cfg.values()), total_samples=samples, done_samples=done,
                   current=current, restart_cost=restart, placed_for=100.0 if current else 0.0)


def _cluster(gpus: int = 4) -> ClusterView:
    return ClusterView((NodeView("n0", "v100", "v100-a", gpus, gpus),))


def _held() -> HopsPolicy:  # inside their minimum run time, running jobs are never preempted
    return HopsPolicy(PlannerParams(min_run_time=864000.0))


def test_a_queued_job_starts_at_the_refresh_tick_after_the_running_one_ends() -> None:
    # the running job holds all 4 GPUs and needs 40,000 samples more at 40/s: it ends at 1000 s
    running = _job("r", 4, 80_000.0, done=40_000.0, current={"n0": 4})
    queued = _job("q", 4, 4_000.0, wait=1.0, restart=20.0)
    got = forecast(_held(), _cluster(), (running, queued), 0.0, timetable=Timetable(ROUND, REFRESH))
    assert set(got.forecasts) == {"q"} and got.complete
    assert got.forecasts["q"].start == 1020.0  # the first refresh tick after 1000 s (a fragment plan)
    assert got.forecasts["q"].end == pytest.approx(1020.0 + 20.0 + 100.0)  # its restart, then 4000 samples at 40/s


def test_the_queue_is_served_in_order_and_a_job_that_fits_now_starts_now() -> None:
    jobs = (_job("a", 4, 4_000.0, wait=300.0), _job("b", 4, 4_000.0, wait=200.0), _job("c", 4, 4_000.0, wait=100.0))
    got = forecast(_held(), _cluster(), jobs, 50.0, timetable=Timetable(ROUND, REFRESH)).forecasts
    assert got["a"].start == 50.0
    assert got["a"].start < got["b"].start < got["c"].start  # type: ignore[operator]
    assert got["b"].start == pytest.approx(50.0 + 100.0 + 10.0, abs=REFRESH)  # a's 100 s, then the next tick


def test_a_stop_leaves_the_jobs_not_reached_without_a_start() -> None:
    running = _job("r", 4, 4_000_000.0, current={"n0": 4})  # 100,000 s at 40/s
    queued = _job("q", 4, 4_000.0, wait=1.0)
    calls = iter(range(1000))
    got = forecast(_held(), _cluster(), (running, queued), 0.0, timetable=Timetable(ROUND, REFRESH),
                   stop=lambda: next(calls) >= 3)
    assert got.forecasts["q"].start is None and not got.complete
    assert got.after < 100_000.0


def test_a_job_that_never_fits_gets_no_start_and_the_forecast_ends() -> None:
    got = forecast(HopsPolicy(), _cluster(4), (_job("big", 8, 1000.0),), 0.0, timetable=Timetable(ROUND, REFRESH))
    assert got.forecasts["big"].start is None and not got.complete


def test_the_timetable_stretches_after_the_exact_rounds() -> None:
    # one job ahead holds the GPUs for 20 h: the queued job's start is resolved to a stretched refresh tick
    running = _job("r", 4, 40.0 * 72_000.0, current={"n0": 4})
    queued = _job("q", 4, 4_000.0, wait=1.0)
    table = Timetable(ROUND, REFRESH, exact_rounds=2, max_stretch=4.0)
    got = forecast(_held(), _cluster(), (running, queued), 0.0, timetable=table)
    start = got.forecasts["q"].start
    assert start is not None and 72_000.0 <= start <= 72_000.0 + 4 * REFRESH
    assert got.plannings < 72_000.0 / ROUND  # fewer rounds than the engine's own timetable would take
    with pytest.raises(ValueError):
        Timetable(round_seconds=0.0)


def test_a_long_queue_gets_the_coarser_timetable() -> None:
    assert Timetable.for_queue(10) == Timetable()
    long = Timetable.for_queue(10_000, 300.0, 20.0)
    assert (long.round_seconds, long.refresh_seconds) == (300.0, 20.0)
    assert long.exact_rounds < Timetable().exact_rounds and long.stretch_rounds == 1 and long.max_stretch > 16.0
    # past its exact rounds each round is twice the one before, its ticks too up to 32 x 20 s: the queued
    # job starts at the first tick after the GPUs come back
    running = _job("r", 4, 40.0 * 20_000.0, current={"n0": 4})
    got = forecast(_held(), _cluster(), (running, _job("q", 4, 4_000.0, wait=1.0)), 0.0, timetable=long)
    start = got.forecasts["q"].start
    # rounds of 300 s x2, then 600, 1200, ..., 9600 (to 19,200 s), then 38,400 s with ticks every 640 s:
    # the GPUs come back at 20,000 s, the next tick is at 20,480 s
    assert start == 20_480.0
    # a round plan at each doubling and a fragment plan at the ticks with GPUs idle: tens, not the
    # hundreds of the engine's own timetable
    assert got.plannings < 20
    with pytest.raises(ValueError):
        Timetable(stretch_rounds=0)
    with pytest.raises(ValueError):
        Timetable(max_tick_stretch=0.5)


class Recording(HopsPolicy):
    """The Hops policy, recording when it made a round plan."""

    def __init__(self, params: PlannerParams) -> None:
        super().__init__(params)
        self.round_plans: list[float] = []

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        if not fragment:
            self.round_plans.append(now)
        return super().plan(cluster, jobs, now, fragment=fragment)


def test_after_its_planned_rounds_a_forecast_holds_running_jobs_and_still_starts_the_queue() -> None:
    running = _job("r", 4, 40.0 * 20_000.0, current={"n0": 4})
    queued = _job("q", 4, 4_000.0, wait=1.0)
    plain, held = Timetable(ROUND, REFRESH, exact_rounds=2, max_stretch=4.0), \
        Timetable(ROUND, REFRESH, exact_rounds=2, max_stretch=4.0, planned_rounds=2)
    policies = Recording(PlannerParams(min_run_time=864000.0)), Recording(PlannerParams(min_run_time=864000.0))
    got = [forecast(p, _cluster(), (running, queued), 0.0, timetable=t) for p, t in zip(policies, (plain, held))]
    assert max(policies[0].round_plans) > 2 * ROUND  # a round plan at every round
    assert policies[1].round_plans == [0.0, ROUND]  # only in the first two; fragment plans after them
    assert got[1].forecasts["q"] == got[0].forecasts["q"]  # the same start: the first tick after 20,000 s
    assert got[1].plannings < got[0].plannings
    with pytest.raises(ValueError):
        Timetable(planned_rounds=0)
    assert Timetable.for_queue(LARGE_QUEUE).planned_rounds is None  # a short queue: every round planned
    assert Timetable.for_queue(LARGE_QUEUE + 1).planned_rounds is not None


def test_a_held_fragment_plan_that_placed_nothing_is_not_made_again_until_a_job_ends() -> None:
    # 6 GPUs: the running job holds 4 until 1000 s; the queued one needs 4
    running = _job("r", 4, 80_000.0, done=40_000.0, current={"n0": 4})
    cluster = ClusterView((NodeView("n0", "v100", "v100-a", 6, 6),))
    for hold in (False, True):
        backend = ForecastBackend(cluster, (running, _job("q", 4, 4_000.0, wait=1.0)), 0.0)
        backend.hold = hold
        assert {v.job_id for v in backend.job_views(fragment=True)} == {"r", "q"}
        backend.apply(Plan({"r": {"n0": 4}, "q": None}), fragment=True)  # it placed nothing
        backend.wait_until(500.0)
        assert bool(backend.job_views(fragment=True)) is not hold  # held: the same plan again: not made
        assert backend.job_views(fragment=False)  # a round plan sees them
        backend.wait_until(1000.0)  # r ends: its GPUs are idle
        assert {v.job_id for v in backend.job_views(fragment=True)} == {"q"}
