"""hops_slurm.sim.forecast_window: a forecast's planning of a long queue sees every running job and the head
of the waiting queue in the policy's order, sized by the idle GPUs; a window that starts nothing widens;
10,000 waiting jobs are forecast to the last one."""

from __future__ import annotations

import pytest

from hops_slurm.sim.forecast_backend import ForecastBackend
from hops_slurm.sim.forecast_run import LARGE_QUEUE, Timetable, forecast, window_for
from hops_slurm.sim.forecast_window import QueueWindow, policy_order
from planner.baselines import FifoGreedy
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView
from tests.planner.rules_off import rules_off

ROUND, REFRESH = 360.0, 30.0


def _job(job_id: str, gpus: int, seconds: float, *, wait: float = 0.0, current: Config | None = None,
         rate: float = 10.0) -> JobView:
    # ``rate`` samples/s per GPU wherever it runs (0: no configuration serves it)
    return JobView(job_id, (gpus,), submit_time=0.0, wait=wait, age=seconds, sensitivity=1.0,
                   throughput=lambda cfg: rate * sum(cfg.values()), total_samples=rate * gpus * seconds,
                   current=current, placed_for=100.0 if current else 0.0)


def _cluster(nodes: int = 1, gpus: int = 4) -> ClusterView:
    return ClusterView(tuple(NodeView(f"n{k}", "v100", "v100-a", gpus, gpus) for k in range(nodes)))


def _order() -> QueueWindow:
    order = policy_order(HopsPolicy())
    assert order is not None
    return QueueWindow(order, factor=2.0)


def test_the_window_holds_jobs_until_their_smallest_requests_reach_its_gpus() -> None:
    # 4 idle GPUs, factor 1: a (2) + b (1) + c (4) reach 4; the 64-GPU job is kept but never counted
    jobs = (_job("a", 2, 10.0, wait=50.0), _job("huge", 64, 10.0, wait=40.0), _job("b", 1, 10.0, wait=30.0),
            _job("c", 4, 10.0, wait=20.0), _job("d", 1, 10.0, wait=10.0))
    backend = ForecastBackend(_cluster(), jobs, 0.0, window=QueueWindow(_order().order, factor=1.0))
    assert [v.job_id for v in backend.job_views(fragment=False)] == ["a", "huge", "b", "c"]
    assert QueueWindow(_order().order, factor=4.0).gpus(3, 40) == 12.0
    assert QueueWindow(_order().order, factor=4.0, floor=1.0).gpus(3, 40) == 40.0
    with pytest.raises(ValueError):
        QueueWindow(_order().order, factor=0.5)


def test_a_planning_sees_every_running_job_and_the_head_of_the_queue_in_priority_order() -> None:
    running = _job("r", 2, 1000.0, current={"n0": 2})
    # latency ratio wait / age: w3 (3.0) > w1 (1.0) > w2 (0.5) > w0 (0.1)
    waiting = [_job("w0", 1, 100.0, wait=10.0), _job("w1", 1, 100.0, wait=100.0),
               _job("w2", 1, 100.0, wait=50.0), _job("w3", 1, 100.0, wait=300.0)]
    backend = ForecastBackend(_cluster(), (running, *waiting), 0.0, window=_order())
    # 2 GPUs idle, window factor 2: the smallest requests of the first four in the order reach 4 GPUs
    assert {v.job_id for v in backend.job_views(fragment=False)} == {"r", "w3", "w1", "w2", "w0"}
    backend = ForecastBackend(_cluster(), (running, *waiting), 0.0, window=QueueWindow(_order().order, factor=1.0))
    assert {v.job_id for v in backend.job_views(fragment=False)} == {"r", "w3", "w1"}
    assert {v.job_id for v in backend.job_views(fragment=True)} == {"r", "w3", "w1"}  # the order of the round
    whole = ForecastBackend(_cluster(), (running, *waiting), 0.0)
    assert len(whole.job_views(fragment=False)) == 5  # no window: the whole queue


def test_a_window_that_holds_the_queue_changes_no_start_and_a_narrow_one_starts_every_job() -> None:
    jobs = tuple(_job(f"w{k}", 1 + k % 3, 200.0 + 37.0 * k, wait=10.0 * k) for k in range(24))
    table = Timetable(ROUND, REFRESH)
    heads = {}
    for name, params in (("defaults", PlannerParams()), ("rules off", rules_off())):
        plain = forecast(HopsPolicy(params), _cluster(2), jobs, 0.0, timetable=table)
        wide = forecast(HopsPolicy(params), _cluster(2), jobs, 0.0, timetable=table,
                        window=QueueWindow(_order().order, factor=100.0, floor=100.0))
        assert plain.complete and wide.complete
        assert {j: f.start for j, f in wide.forecasts.items()} == {j: f.start for j, f in plain.forecasts.items()}
        narrow = forecast(HopsPolicy(params), _cluster(2), jobs, 0.0, timetable=table, window=_order())
        assert narrow.complete and narrow.widest < plain.widest == 24
        heads[name] = (narrow.forecasts["w23"].start, plain.forecasts["w23"].start)
    # with latency-ratio weights alone (the rules of the JCT combination off: shorter jobs no longer go
    # first) the head of the queue, the longest job here, starts at once with the window as without it
    assert heads["rules off"] == (0.0, 0.0)


def test_a_round_plan_that_starts_nothing_on_an_idle_cluster_widens_the_window() -> None:
    # the two jobs at the head have no configuration that serves them; the servable one is behind them
    jobs = (_job("x0", 2, 100.0, wait=500.0, rate=0.0), _job("x1", 2, 100.0, wait=400.0, rate=0.0),
            _job("ok", 2, 100.0, wait=1.0))
    got = forecast(HopsPolicy(), _cluster(), jobs, 0.0, timetable=Timetable(ROUND, REFRESH),
                   window=QueueWindow(_order().order, factor=1.0))
    assert got.forecasts["ok"].start is not None
    assert got.forecasts["x0"].start is None and got.forecasts["x1"].start is None


def test_a_long_queue_gets_a_window_in_the_policys_order_a_short_one_none() -> None:
    assert window_for(HopsPolicy(), LARGE_QUEUE) is None
    assert window_for(HopsPolicy(), LARGE_QUEUE + 1) is not None
    assert window_for(FifoGreedy(), 10 * LARGE_QUEUE) is None  # its order is not known here: the whole queue


def test_ten_thousand_waiting_jobs_are_forecast_to_the_last_one_each_planning_seeing_a_few_of_them() -> None:
    # 10,000 one-GPU jobs of 1-4 h on 512 GPUs: about 20 waves
    jobs = tuple(_job(f"j{k:05d}", 1, 3600.0 * (1 + k % 4), wait=float(k % 97)) for k in range(10_000))
    policy = HopsPolicy()
    got = forecast(policy, _cluster(64, 8), jobs, 0.0, timetable=Timetable.for_queue(len(jobs)),
                   window=window_for(policy, len(jobs)))
    assert got.complete and all(f.start is not None for f in got.forecasts.values())
    # a planning sees the running jobs (at most 512 on 512 GPUs) and a window of 4 x the idle GPUs at most
    assert 0 < got.widest <= 4 * 512 + 1
