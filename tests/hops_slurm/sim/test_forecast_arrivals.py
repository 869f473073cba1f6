"""hops_slurm.sim.forecast_arrivals: a forecast expects the jobs submitted in the last window to be submitted
again every window up to its horizon, fresh; in the forecast they join the queue at their submission time and
may start before a job waiting now, which then gets a later start than a forecast of the jobs of now alone."""

from __future__ import annotations

import pytest

from hops_slurm.sim.forecast_arrivals import ArrivalHistory, replayed
from hops_slurm.sim.forecast_run import Timetable, forecast
from planner.hops import HopsPolicy
from planner.views import ClusterView, Config, JobView, NodeView

ROUND, REFRESH = 360.0, 30.0


def _job(job_id: str, gpus: int, seconds: float, *, submit: float = 0.0, wait: float = 0.0,
         current: Config | None = None, done: float = 0.0) -> JobView:
    # 10 samples/s per GPU wherever it runs; ``seconds`` of work on ``gpus`` GPUs
    return JobView(job_id, (gpus,), submit_time=submit, wait=wait, age=seconds, sensitivity=1.0,
                   throughput=lambda cfg: 10.0 * sum(cfg.values()), total_samples=10.0 * gpus * seconds,
                   done_samples=done, current=current, placed_for=100.0 if current else 0.0,
                   run_time=100.0 if current else 0.0)


def _cluster(gpus: int = 4) -> ClusterView:
    return ClusterView((NodeView("n0", "v100", "v100-a", gpus, gpus),))


def test_the_last_window_is_replayed_every_window_up_to_the_horizon_fresh() -> None:
    h = ArrivalHistory(window=1000.0, horizon=2500.0)
    running = _job("r", 2, 500.0, submit=4200.0, wait=30.0, current={"n0": 2}, done=3000.0)
    h.observe([_job("old", 1, 100.0, submit=3000.0), running, _job("w", 1, 100.0, submit=4900.0, wait=100.0)], 5000.0)
    got = h.arrivals(5000.0)
    # "old" was submitted before the window; "r" again at 5200, 6200, 7200; "w" at 5900, 6900 (7900 > 7500)
    assert [(v.job_id, v.submit_time) for v in got] == [("r~1", 5200.0), ("w~1", 5900.0), ("r~2", 6200.0),
                                                        ("w~2", 6900.0), ("r~3", 7200.0)]
    fresh = got[0]
    assert fresh.current is None and fresh.wait == 0.0 and fresh.done_samples == 0.0 and fresh.run_time == 0.0
    assert fresh.total_samples == running.total_samples and fresh.requirements == running.requirements
    assert all(replayed(v.job_id) for v in got) and not replayed("r")
    # a job is remembered as first seen; replayed views are never taken for jobs; the window moves on
    h.observe([_job("r", 2, 500.0, submit=4200.0, done=9000.0), *got], 5100.0)
    assert [v.job_id for v in h.arrivals(5100.0)] == ["r~1", "w~1", "r~2", "w~2", "r~3"]
    h.observe([], 5500.0)
    assert [v.job_id for v in h.arrivals(5500.0)] == ["w~1", "w~2", "w~3"]  # r (4200) has left the window


def test_by_default_each_job_of_the_window_is_expected_once_more() -> None:
    h = ArrivalHistory(window=1000.0)
    h.observe([_job("a", 1, 100.0, submit=4100.0), _job("b", 1, 100.0, submit=4900.0)], 5000.0)
    assert [(v.job_id, v.submit_time) for v in h.arrivals(5000.0)] == [("a~1", 5100.0), ("b~1", 5900.0)]


def test_no_window_means_no_arrivals_and_bad_settings_are_refused() -> None:
    h = ArrivalHistory(window=0.0)
    h.observe([_job("a", 1, 10.0, submit=10.0)], 20.0)
    assert h.arrivals(20.0) == []
    with pytest.raises(ValueError):
        ArrivalHistory(window=-1.0)


def test_an_expected_short_job_starts_before_the_long_one_waiting_now() -> None:
    # the running job ends at 600 s; the long job waiting now would start then, but a short job like one
    # submitted at -700 s is expected at 300 s, has waited longer when the GPUs free up, and goes first
    running = _job("r", 4, 1000.0, current={"n0": 4}, done=10.0 * 4 * 400.0)
    long = _job("long", 4, 20_000.0, submit=-10.0, wait=10.0)
    h = ArrivalHistory(window=1000.0, horizon=3000.0)
    h.observe([_job("short", 4, 300.0, submit=-700.0)], 0.0)
    arrivals = h.arrivals(0.0)
    assert [v.submit_time for v in arrivals] == [300.0, 1300.0, 2300.0]
    alone = forecast(HopsPolicy(), _cluster(), (running, long), 0.0, timetable=Timetable(ROUND, REFRESH))
    expecting = forecast(HopsPolicy(), _cluster(), (running, long), 0.0, timetable=Timetable(ROUND, REFRESH),
                         arrivals=arrivals)
    assert alone.forecasts["long"].start == pytest.approx(600.0, abs=REFRESH)
    assert expecting.forecasts["long"].start is not None
    assert expecting.forecasts["long"].start >= 600.0 + 300.0  # after the short job's run
    assert set(expecting.forecasts) == {"long"} and expecting.complete  # arrivals get no forecast of their own


def test_replays_are_bounded_by_the_cap_however_short_the_window() -> None:
    # a window of a second replayed a day ahead would be 86,400 replays of each job: at most ``cap`` in all,
    # each job's earliest first, and the history itself keeps the latest ``cap`` submissions
    h = ArrivalHistory(window=1.0, horizon=86_400.0, cap=10)
    h.observe([_job(f"j{i}", 1, 10.0, submit=4999.9 - 0.1 * i) for i in range(4)], 5000.0)
    got = h.arrivals(5000.0)
    assert len(got) <= 10 and {v.job_id.split("~")[0] for v in got} == {"j0", "j1", "j2", "j3"}
    assert len(got) == 8 and all(5000.0 < v.submit_time < 5002.0 for v in got)  # 2 each: the first two after now
    h = ArrivalHistory(window=100.0, cap=2)
    h.observe([_job(f"k{i}", 1, 10.0, submit=4950.0 + i) for i in range(5)], 5000.0)
    assert sorted(v.job_id for v in h.arrivals(5000.0)) == ["k3~1", "k4~1"]
