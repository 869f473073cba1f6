"""planner.fairshare and the fair-share term of the queue priority (issue 23)."""

from __future__ import annotations

import math

import pytest

from planner.fairshare import decayed_gpu_seconds, decayed_usage, factors
from planner.params import PlannerParams
from planner.priorities import priorities, queue_order
from planner.views import JobView


def view(job_id: str, user: str, wait: float, fair: float) -> JobView:
    return JobView(job_id, (1,), submit_time=0.0, wait=wait, age=100.0, sensitivity=1.0,
                   throughput=lambda c: 1.0, user=user, fair_share=fair)


def test_decay_integral_and_classic_factor() -> None:
    # an hour of 4 GPUs that ended one half-life ago counts half of an hour ending now
    h = 3600.0
    now_end = decayed_gpu_seconds(4, 0.0, h, h, half_life=h)
    earlier = decayed_gpu_seconds(4, 0.0, h, 2 * h, half_life=h)
    assert earlier == pytest.approx(now_end / 2)
    assert now_end == pytest.approx(4 * h * 0.5 / math.log(2))
    usage = decayed_usage([("a", 4, 0.0, h), ("b", 0, 0.0, h)], h, h)
    f = factors(usage, users=["c"])
    assert f["b"] == f["c"] == 1.0  # used nothing
    assert f["a"] == pytest.approx(2.0 ** (-1.0 / (1 / 3)))  # all the usage, a third of the shares
    assert factors({}) == {}
    assert factors({"a": 0.0, "b": 0.0}) == {"a": 1.0, "b": 1.0}


def test_the_weight_moves_users_but_not_the_order_within_one() -> None:
    jobs = [view("h1", "heavy", 300.0, 0.1), view("h2", "heavy", 200.0, 0.1), view("l1", "light", 50.0, 1.0)]
    plain = priorities(jobs, 0.0, "lr", 8)
    assert [j.job_id for j in queue_order(jobs, plain)] == ["h1", "h2", "l1"]
    fair = priorities(jobs, 0.0, "lr", 8, fairshare_weight=10.0)
    order = [j.job_id for j in queue_order(jobs, fair)]
    assert order == ["l1", "h1", "h2"]  # the light user first; the heavy user's own jobs by LR as before
    assert fair["h1"] - fair["h2"] == pytest.approx(plain["h1"] - plain["h2"])


def test_the_weight_is_bounded_and_named() -> None:
    assert PlannerParams(fairshare_weight=2.5).fairshare_weight == 2.5
    with pytest.raises(ValueError, match="planner fairshare_weight = -1: must be a number in \\[0, 1000\\]"):
        PlannerParams(fairshare_weight=-1)
    assert PlannerParams().with_settings("fairshare_weight=4").fairshare_weight == 4.0
