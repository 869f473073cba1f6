"""Requeues priced (planner/requeue_price.py through HopsPolicy, ``requeue_price``): a running job whose
requeue costs it a long restart, lost work or a long wait for GPUs is left out only for a waiting job worth
that much more; the gap is estimated from the running jobs' ends."""

from __future__ import annotations

import math

import pytest

from planner.hops import HopsPolicy
from planner.requeue_price import requeue_gaps, requeue_loss, requeue_priors
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from tests.planner.rules_off import rules_off

ONE_NODE = ClusterView((NodeView("n0", "t", "A", 4, 4),))


def linear(cfg: Config) -> float:
    return float(sum(cfg.values()))


def running(job_id: str = "R", *, node: str = "n0", gpus: int = 4, total: float = 1e6, done: float = 0.0,
            restart: float = 0.0, unsaved: float = 0.0, wait: float = 500.0) -> JobView:
    return JobView(job_id, (gpus,), 0.0, wait, 1000.0, 1.1, linear, total_samples=total, done_samples=done,
                   current=freeze_config({node: gpus}), placed_for=10_000.0, restart_cost=restart,
                   unsaved=unsaved, run_time=10_000.0, measured=True)


def waiting(job_id: str, wait: float) -> JobView:
    return JobView(job_id, (4,), 0.0, wait, 100.0, 1.1, linear, total_samples=1e6)


def plan(jobs: tuple[JobView, ...], **params: object):
    return HopsPolicy(rules_off(gap=0.0, **params)).plan(ONE_NODE, jobs, 10_000.0)  # type: ignore[arg-type]


def test_the_gap_is_when_other_jobs_ends_free_as_many_gpus() -> None:
    # rates 4 samples/s (4 GPUs, linear) or 2 (2 GPUs): ends at 100 s, 200 s, 1000 s
    a = running("A", node="a", gpus=2, total=200.0)
    b = running("B", node="b", gpus=2, total=400.0)
    c = running("C", node="c", gpus=4, total=4000.0)
    gaps = requeue_gaps([a, b, c])
    assert gaps["C"] == 200.0  # A and B free 4 GPUs at 200 s
    assert gaps["A"] == 200.0  # B frees 2 at 200 s (A's own end does not count)
    assert gaps["B"] == 100.0  # A frees 2 at 100 s
    assert math.isinf(requeue_gaps([c])["C"])  # nothing else frees GPUs


def test_a_running_job_is_weighed_by_the_latency_ratio_a_requeue_would_give_it() -> None:
    job = running(restart=100.0, unsaved=200.0, wait=500.0)  # age 1000 s: latency ratio 0.5
    assert requeue_loss(job, 0.0, 300.0, 4.0) == 300.0  # restart and unsaved work
    assert requeue_loss(job, 600.0, 300.0, 4.0) == 900.0
    assert requeue_loss(job, float("inf"), 300.0, 4.0) == 1200.0  # at most 4 minimum run times
    other = running("O", node="m", total=1600.0)  # ends in 400 s and frees 4 GPUs
    priors = requeue_priors({"R": 0.5, "W": 3.0}, [job], [other], 300.0, 4.0)
    assert priors == {"R": (500.0 + 300.0 + 400.0) / 1000.0, "W": 3.0}


# R started at once (latency ratio 0): any waiting job outweighs it by default, whatever its requeue costs.
# Priced, R weighs as if requeued: no other running job frees GPUs for it, so it would wait the bound
# (4 minimum run times: 1200 s of a 1000 s expected run), a latency ratio of 1.2; with the premium (2.5x)
# that outweighs W's 2 (wait 200 s, expected run 100 s).
@pytest.mark.parametrize(("priced", "requeued"), [(False, True), (True, False)])
def test_a_costly_requeue_keeps_the_running_job(priced: bool, requeued: bool) -> None:
    p = plan((running(restart=60.0, unsaved=300.0, wait=0.0), waiting("W", wait=200.0)), requeue_price=4.0 if priced else 0.0)
    assert (p.assignments["R"] is None) is requeued
    assert (p.assignments["W"] == {"n0": 4}) is requeued


def test_a_waiting_job_worth_more_than_the_cap_still_gets_in() -> None:
    p = plan((running(restart=60.0, unsaved=300.0, wait=0.0), waiting("W", wait=100_000.0)), requeue_price=4.0)
    assert p.assignments["R"] is None and p.assignments["W"] == {"n0": 4}
