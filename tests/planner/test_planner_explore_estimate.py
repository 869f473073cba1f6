"""Exploring across servers at the estimate (planner.explore_estimate, ``explore_estimate``): a running job is
moved to explore a config on several servers only where the estimator's estimate there pays the move."""

from __future__ import annotations

import pytest

from planner.explore_estimate import capped
from planner.hops import HopsPolicy
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

#: the job runs on node c (type u); a and b (type t) hold 4 GPUs only across two servers; d (type v) holds 4
SPAN = ClusterView((NodeView("a", "t", "T", 2, 2), NodeView("b", "t", "T", 2, 2), NodeView("c", "u", "U", 4, 4)))
SPAN_AND_ONE = ClusterView(SPAN.nodes + (NodeView("d", "v", "V", 4, 4),))


def measured_on_c(cfg: Config) -> float:
    """The estimate: 1 sample/s per GPU on c, 0.5 anywhere else (the formula, communication included)."""
    return (1.0 if "c" in cfg else 0.5) * sum(cfg.values())


def optimistic(cfg: Config) -> float:
    """Unmeasured everywhere but c: 5 samples/s per GPU (no communication in it)."""
    return 0.0 if "c" in cfg else 5.0 * sum(cfg.values())


def running(placed: Config | None = None) -> JobView:
    return JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, measured_on_c, total_samples=1e5,
                   current=freeze_config(placed or {"c": 4}), placed_for=400.0, run_time=400.0, restart_cost=60.0,
                   explore=optimistic)


def plan(cluster: ClusterView, jobs: tuple[JobView, ...], **params: object) -> Plan:
    return HopsPolicy(rules_off(gap=0.0, min_run_time=300.0, **params)).plan(cluster, jobs, 10_000.0)  # type: ignore[arg-type]


def test_a_running_job_is_not_moved_to_explore_across_servers_where_its_estimate_is_lower() -> None:
    p = plan(SPAN, (running(),))
    assert p.assignments["R"] == {"a": 2, "b": 2} and "R" in p.diagnostics["explored"]
    p = plan(SPAN, (running(),), explore_estimate=True)
    assert p.assignments["R"] == {"c": 4} and p.diagnostics["explored"] == {}


def test_a_single_server_config_keeps_its_optimistic_rate() -> None:
    p = plan(SPAN_AND_ONE, (running(),), explore_estimate=True)
    assert p.assignments["R"] == {"d": 4} and "R" in p.diagnostics["explored"]


def test_a_waiting_job_explores_across_servers_as_before() -> None:
    waiting = JobView("W", (4,), 0.0, 0.0, 1000.0, 1.1, measured_on_c, total_samples=1e5, explore=optimistic)
    (same,) = capped([waiting])
    assert same is waiting
    (r,) = capped([running()])
    assert r.explore is not None
    assert r.explore(freeze_config({"a": 2, "b": 2})) == 2.0 and r.explore(freeze_config({"d": 4})) == 20.0


def test_explore_estimate_is_a_planner_parameter() -> None:
    assert PlannerParams().explore_estimate is True
    assert rules_off().with_settings("explore_estimate=true").explore_estimate is True
    with pytest.raises(ValueError, match="explore_estimate"):
        rules_off(explore_estimate="maybe")  # type: ignore[arg-type]
