"""Wide jobs not started on scraps (planner.span_limit, ``fragment_span_limit``): a fragment plan gives a waiting
job a config over more than k servers only once it has waited its expected run time; round plans unchanged."""

from __future__ import annotations

import pytest

from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.signatures import Candidate
from planner.span_limit import drop_wide
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config

#: 2 idle GPUs on each of four servers: a job of 8 GPUs fits only over all four
SCRAPS = ClusterView(tuple(NodeView(f"n{i}", "v100", "V", 4, 2) for i in range(4)))


def per_gpu(cfg: Config) -> float:
    return float(sum(cfg.values()))


def waiting(job_id: str, gpus: int, wait: float) -> JobView:
    return JobView(job_id, (gpus,), 0.0, wait, 1000.0, 1.1, per_gpu, total_samples=1e6)  # type: ignore[arg-type]


def plan(jobs: tuple[JobView, ...], *, fragment: bool = True, **params: object) -> Plan:
    policy = HopsPolicy(PlannerParams(gap=0.0, **params))  # type: ignore[arg-type]
    return policy.plan(SCRAPS, jobs, 10_000.0, fragment=fragment)


def test_a_wide_job_is_not_started_over_more_servers_than_the_limit() -> None:
    wide = waiting("W", 8, 100.0)
    assert len(plan((wide,)).assignments["W"] or {}) == 4  # without the rule: over all four servers
    assert plan((wide,), fragment_span_limit=2).assignments["W"] is None
    assert len(plan((wide,), fragment_span_limit=4).assignments["W"] or {}) == 4


def test_a_narrow_job_takes_the_scraps_as_before() -> None:
    p = plan((waiting("W", 8, 100.0), waiting("N", 2, 50.0)), fragment_span_limit=2)
    assert p.assignments["W"] is None and sum((p.assignments["N"] or {}).values()) == 2


def test_a_job_that_waited_its_run_time_takes_any_config() -> None:
    assert len(plan((waiting("W", 8, 1000.0),), fragment_span_limit=2).assignments["W"] or {}) == 4


def test_round_plans_are_unchanged() -> None:
    assert len(plan((waiting("W", 8, 100.0),), fragment=False, fragment_span_limit=2).assignments["W"] or {}) == 4


def test_with_span_after_only_jobs_preempted_that_often_are_held() -> None:
    once = JobView("W", (8,), 0.0, 100.0, 1000.0, 1.1, per_gpu, total_samples=1e6,  # type: ignore[arg-type]
                   preemptions=1)
    assert plan((once,), fragment_span_limit=2, fragment_span_after=1).assignments["W"] is None
    assert len(plan((once,), fragment_span_limit=2, fragment_span_after=2).assignments["W"] or {}) == 4


def test_drop_wide_keeps_running_jobs_and_narrow_configs() -> None:
    w = waiting("W", 4, 0.0)
    r = JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, per_gpu, total_samples=1e6,  # type: ignore[arg-type]
                current=freeze_config({"n0": 2, "n1": 2}))
    cands = [Candidate("W", freeze_config({"n0": 2, "n1": 2}), 1.0), Candidate("W", freeze_config({"n2": 4}), 1.0),
             Candidate("R", freeze_config({"n0": 2, "n1": 2}), 1.0)]
    kept = drop_wide(cands, (w, r), 1)
    assert [(c.job_id, dict(c.config)) for c in kept] == [("W", {"n2": 4}), ("R", {"n0": 2, "n1": 2})]


def test_the_limit_is_a_non_negative_integer() -> None:
    assert PlannerParams().fragment_span_limit == 0
    assert PlannerParams().with_settings("fragment_span_limit=3").fragment_span_limit == 3
    for bad in (-1, 1.5):
        with pytest.raises(ValueError):
            PlannerParams(fragment_span_limit=bad)  # type: ignore[arg-type]
