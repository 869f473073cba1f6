"""planner.forecast: the policy replayed forward on the estimates gives each waiting job a start and a band."""

from __future__ import annotations

import pytest

from planner.forecast import band, replay
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView

ROUND = 360.0


def _job(job_id: str, gpus: int, samples: float, *, wait: float = 0.0, current: Config | None = None,
         done: float = 0.0) -> JobView:
    # 10 samples/s per GPU wherever it runs
    return JobView(job_id, (gpus,), submit_time=0.0, wait=wait, age=samples / (10.0 * gpus), sensitivity=1.0,
                   throughput=lambda cfg: 10.0 * sum(cfg.values()), total_samples=samples, done_samples=done,
                   current=current)


def _cluster(gpus: int = 4) -> ClusterView:
    return ClusterView((NodeView("n0", "v100", "v100-a", gpus, gpus),))


def test_a_queued_job_starts_when_the_running_one_ends() -> None:
    # the running job holds all 4 GPUs and needs 40 s x 25 = 1000 s more: it ends in round 3 (720..1080 s)
    running = _job("r", 4, 40_000.0 * 2, done=40_000.0, current={"n0": 4})
    queued = _job("q", 4, 4_000.0, wait=1.0)
    # inside its minimum run time: the round may not preempt it for the queued one
    got = replay(HopsPolicy(PlannerParams(min_run_time=1e5)), _cluster(), (running, queued), 0.0, round_seconds=ROUND)
    assert set(got) == {"q"}
    assert got["q"].start == 3 * ROUND  # the round after the GPUs came back
    assert got["q"].end == pytest.approx(3 * ROUND + 100.0)  # 4000 samples at 40/s


def test_a_job_that_fits_now_starts_now_and_the_queue_is_served_in_order() -> None:
    jobs = (_job("a", 4, 4_000.0, wait=300.0), _job("b", 4, 4_000.0, wait=200.0), _job("c", 4, 4_000.0, wait=100.0))
    got = replay(HopsPolicy(), _cluster(), jobs, 0.0, round_seconds=ROUND)
    assert [got[j].start for j in "abc"] == [0.0, ROUND, 2 * ROUND]


def test_the_band_holds_the_forecast_and_a_stop_leaves_the_rest_unknown() -> None:
    running = _job("r", 4, 400_000.0, done=0.0, current={"n0": 4})  # 10,000 s at 40/s
    queued = _job("q", 4, 4_000.0, wait=1.0)
    held = lambda: HopsPolicy(PlannerParams(min_run_time=1e5))  # noqa: E731
    got = band(held, _cluster(), (running, queued), 0.0, round_seconds=ROUND)["q"]
    assert got.early is not None and got.late is not None and got.start is not None
    assert got.early <= got.start <= got.late and got.early < got.late
    calls = iter(range(100))
    cut = replay(held(), _cluster(), (running, queued), 0.0, round_seconds=ROUND, stop=lambda: next(calls) >= 2)
    assert cut["q"].start is None  # two rounds were all it had: not started within them
    with pytest.raises(ValueError):
        replay(HopsPolicy(), _cluster(), (queued,), 0.0, round_seconds=0.0)
