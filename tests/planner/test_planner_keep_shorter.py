"""Keep shorter (planner/keep_shorter.py through HopsPolicy, ``keep_shorter``): a running job weighs more against
a waiting job of its width with more work left, and not against one with less."""

from __future__ import annotations

import pytest

from planner.hops import HopsPolicy
from planner.keep_shorter import shorter_running
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

ONE = ClusterView((NodeView("n0", "t", "A", 8, 8),))


def linear(cfg: Config) -> float:
    return float(sum(cfg.values()))


def running(age: float) -> JobView:
    """On all 8 GPUs for 10,000 s, never waited: stretch weight 1, against 3 for a job that waited twice its age."""
    return JobView("R", (8,), 0.0, 0.0, age, 1.1, linear, total_samples=1e6, current=freeze_config({"n0": 8}),
                   placed_for=10_000.0, run_time=10_000.0)


def waiting(job_id: str, smallest: int, age: float) -> JobView:
    return JobView(job_id, (smallest,), 0.0, 2 * age, age, 1.1, linear, total_samples=1e6)


def plan(jobs: tuple[JobView, ...], **params: object) -> dict[str, Config | None]:
    policy = HopsPolicy(rules_off(gap=0.0, lambda_=1.0, explore=False, backfill=False, stretch_weights=True,
                                      preempt_penalty=0.0, **params))  # type: ignore[arg-type]
    return dict(policy.plan(ONE, jobs, 20_000.0).assignments)


def test_a_running_job_outlasted_by_every_waiting_peer_is_kept() -> None:
    jobs = (running(20_000.0), waiting("W", 8, 50_000.0))  # W (3) outweighs R (1); with the premium R weighs 4
    assert plan(jobs)["W"] == {"n0": 8}
    on = plan(jobs, keep_shorter=3.0)
    assert on["R"] == {"n0": 8} and on["W"] is None


def test_a_waiting_peer_with_less_work_left_still_displaces_it() -> None:
    jobs = (running(50_000.0), waiting("W", 8, 20_000.0))
    assert plan(jobs, keep_shorter=3.0)["W"] == {"n0": 8}


def test_only_waiting_jobs_at_least_as_wide_count() -> None:
    r = running(20_000.0)
    assert shorter_running((r, waiting("N", 4, 50_000.0)), {}) == []  # no peer of its width: not kept
    assert shorter_running((r, waiting("W", 8, 50_000.0)), {}) == ["R"]
    assert shorter_running((r, waiting("W", 8, 50_000.0), waiting("S", 8, 1000.0)), {}) == []
    assert shorter_running((r, waiting("W", 8, 50_000.0)), {"R": "min_run_time"}) == []


def test_off_by_default() -> None:
    assert PlannerParams().keep_shorter == 0.0
    with pytest.raises(ValueError):
        rules_off().with_settings("keep_shorter=-1")
