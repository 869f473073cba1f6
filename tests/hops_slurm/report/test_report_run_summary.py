"""Metrics from records, against values computed by hand."""

import pytest

from hops_slurm.records import JobRecord, PlacementRecord, RoundRecord
from hops_slurm.report.metrics import cdf, summarize


def records():
    a = JobRecord(job_id="a", submit=0.0, start=100.0, end=700.0, state="COMPLETED", age_estimate=200.0,
                  ideal_time=350.0, placements=[
                      PlacementRecord(start=100.0, end=400.0, config={"n": 4}, preempted=True),
                      PlacementRecord(start=500.0, end=700.0, config={"n": 4}),
                  ])
    b = JobRecord(job_id="b", submit=50.0, start=50.0, end=250.0, state="COMPLETED", age_estimate=100.0,
                  ideal_time=100.0, placements=[PlacementRecord(start=50.0, end=250.0, config={"m": 2})])
    c = JobRecord(job_id="c", submit=10.0, state="CANCELLED")
    rounds = [
        RoundRecord(time=0.0, unassigned_jobs=1, idle_gpus_after=4, solve_seconds=0.1),
        RoundRecord(time=30.0, plan_index=1, unassigned_jobs=1, idle_gpus_after=4, solve_seconds=0.5),
        RoundRecord(time=360.0, unassigned_jobs=0, idle_gpus_after=2, solve_seconds=0.2),
        RoundRecord(time=800.0, unassigned_jobs=1, idle_gpus_after=8, solve_seconds=0.3),  # after the last end
    ]
    return [a, b, c], rounds


def test_summary_by_hand():
    jobs, rounds = records()
    m = summarize(jobs, rounds)
    assert m.jobs == 2 and m.unfinished == 1
    assert m.makespan == pytest.approx(700.0)
    assert m.avg_jct == pytest.approx((700 + 200) / 2)
    assert m.avg_wait == pytest.approx((200 + 0) / 2)  # a: 700 - 300 - 200 busy
    assert sorted(m.lr) == pytest.approx([0.0, 1.0])  # a: 200 / 200
    assert m.max_lr == pytest.approx(1.0)
    assert m.rho == pytest.approx([2.0, 2.0])
    assert m.avg_frag == pytest.approx((4 + 0) / 2)  # round plans up to the last completion only
    assert m.preemptions == 1
    assert m.planner_mean_seconds == pytest.approx((0.6 + 0.2 + 0.3) / 3)
    assert m.planner_max_seconds == pytest.approx(0.6)


def test_cdf():
    xs, ys = cdf([3.0, 1.0, float("inf"), 2.0])
    assert xs == [1.0, 2.0, 3.0] and ys == pytest.approx([1 / 3, 2 / 3, 1.0])
