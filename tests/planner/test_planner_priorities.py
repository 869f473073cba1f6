"""Queue priorities (eq. 6-8), the ablation alternatives, eq. 11 weights and RAQLR (eq. 7)."""

from __future__ import annotations

import math

import pytest

from planner.priorities import (
    default_lambda,
    get_priority,
    latency_ratio,
    priorities,
    queue_order,
    raqlr,
    weights,
)
from planner.views import JobView


def job(job_id: str, *, wait: float = 0.0, age: float = 100.0, submit: float = 0.0, reqs=(1,),
        attained: float = 0.0, total: float = 0.0, done: float = 0.0) -> JobView:
    return JobView(job_id=job_id, requirements=tuple(reqs), submit_time=submit, wait=wait, age=age,
                   sensitivity=1.0, throughput=lambda c: 1.0, total_samples=total, done_samples=done,
                   attained_gpu_seconds=attained)


def test_latency_ratio_is_wait_over_age() -> None:
    # a 10-minute job that waited an hour: LR 6 (the paper's example); a 10-hour job: 0.1
    assert latency_ratio(job("a", wait=3600, age=600)) == pytest.approx(6.0)
    assert latency_ratio(job("b", wait=3600, age=36000)) == pytest.approx(0.1)


def test_lr_queue_prefers_the_more_starved_job_not_the_longer_wait() -> None:
    short = job("short", wait=600, age=300)  # LR 2
    long = job("long", wait=3000, age=6000)  # LR 0.5
    prios = priorities([long, short], now=0.0, name="lr", total_gpus=8)
    assert [j.job_id for j in queue_order([long, short], prios)] == ["short", "long"]


def test_alternative_orders() -> None:
    a = job("a", submit=10, age=50, attained=100, total=100, done=90)  # remaining 5 s
    b = job("b", submit=5, age=20, attained=300, total=100, done=0)  # remaining 20 s
    c = job("c", submit=1, age=80, attained=10, total=100, done=50)  # remaining 40 s

    def order(name: str) -> list[str]:
        jobs = [a, b, c]
        return [j.job_id for j in queue_order(jobs, priorities(jobs, 0.0, name, 8))]

    assert order("fifo") == ["c", "b", "a"]
    assert order("sjf") == ["b", "a", "c"]
    assert order("srtf") == ["a", "b", "c"]
    assert order("las") == ["c", "a", "b"]


def test_ftf_rho_hand_computed() -> None:
    # 2 jobs on 8 GPUs: fair share 4 GPUs. Job: R = (2, 4) so R_avg = 3, age 100 s (at R_avg),
    # T_id = 100 * 3 / 4 = 75 s. Submitted at 0, now 50, half done: T_sh = 50 + 0.5 * 100 = 100.
    j = job("x", submit=0, age=100, reqs=(2, 4), total=10, done=5)
    other = job("y")
    rho = priorities([j, other], now=50.0, name="ftf", total_gpus=8)["x"]
    assert rho == pytest.approx(100 / 75)
    assert default_lambda("ftf") == 2.0 and default_lambda("lr") == 1.0


def test_unknown_priority_names_the_choices() -> None:
    with pytest.raises(ValueError, match="lr, ftf, las, sjf, srtf, fifo"):
        get_priority("edf")


def test_weights_bias_and_lambda() -> None:
    # all positive: bias 0; λ = 1 -> proportional to priority (scaled so the top is 1)
    assert weights({"a": 2.0, "b": 1.0}, 1.0) == pytest.approx({"a": 1.0, "b": 0.5})
    # min prior -3 ≤ 0: bias 3.01, so a -> 5.01, b -> 0.01 (never zero), λ = 2
    w = weights({"a": 2.0, "b": -3.0}, 2.0)
    assert w["b"] == pytest.approx((0.01 / 5.01) ** 2)
    assert w["a"] == 1.0
    # λ = 0: all weights 1
    assert weights({"a": 2.0, "b": -3.0, "c": 0.0}, 0.0) == {"a": 1.0, "b": 1.0, "c": 1.0}
    # large λ stays finite and ordered
    big = weights({"a": 4.0, "b": 3.0, "c": 2.0}, 200.0)
    assert big["a"] > big["b"] > big["c"] >= 0.0 and all(math.isfinite(v) for v in big.values())


def test_raqlr_averages_recent_dead_jobs_only() -> None:
    finished = [(100.0, 1.0), (3000.0, 2.0), (3500.0, 4.0)]
    assert raqlr(finished, now=3600.0, horizon_s=1000.0) == pytest.approx(3.0)
    assert raqlr(finished, now=3600.0, horizon_s=10_000.0) == pytest.approx(7 / 3)
    assert raqlr([], now=0.0, horizon_s=10.0) == 0.0
