"""Settling (planner.settle, ``settle_time``): a running job placed a short while ago is not moved by a
round plan, by the ILP or by exploration, though a waiting job may still take its GPUs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.settle import drop_moves, unsettled
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config

from tests.planner.two_speeds import ONE_NODE, SLOW_FAST, by_node, linear


def running(placed_for: float, *, current: Config | None = None, thr: Callable[[Config], float] = by_node,
            explore: Callable[[Config], float] | None = None) -> JobView:
    return JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, thr, total_samples=1e6, current=freeze_config(current or {"slow": 4}),
                   placed_for=placed_for, run_time=placed_for, restart_cost=60.0, explore=explore)


def plan(cluster: ClusterView, jobs: tuple[JobView, ...], **params: object) -> Plan:
    return HopsPolicy(PlannerParams(gap=0.0, min_run_time=300.0, **params)).plan(cluster, jobs, 10_000.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("formulation", ["compact", "plain"])
def test_a_job_placed_a_short_while_ago_is_not_moved_to_a_faster_type(formulation: str) -> None:
    r = running(400.0)  # past the minimum run time: the default plan moves it to the idle fast node (3x)
    assert plan(SLOW_FAST, (r,), formulation=formulation).assignments["R"] == {"fast": 4}
    assert plan(SLOW_FAST, (r,), formulation=formulation, settle_time=720.0).assignments["R"] == {"slow": 4}
    # once it has run there for the settle time its move is priced as before
    later = running(800.0)
    assert plan(SLOW_FAST, (later,), formulation=formulation, settle_time=720.0).assignments["R"] == {"fast": 4}


def test_a_job_placed_a_short_while_ago_may_still_be_preempted_for_a_waiting_job() -> None:
    r = running(400.0, current={"n0": 4}, thr=linear)
    w = JobView("W", (4,), 0.0, 5000.0, 100.0, 1.1, linear, total_samples=1e6)
    p = plan(ONE_NODE, (r, w), settle_time=720.0)
    assert p.assignments["R"] is None and p.assignments["W"] == {"n0": 4}
    assert p.diagnostics["in_place"] == {}  # not held: its GPUs are the plan's


def test_a_job_placed_a_short_while_ago_is_not_moved_to_explore() -> None:
    def measured_on_slow(cfg: Config) -> float:
        return 1.0 * sum(cfg.values()) if "slow" in cfg else 0.5 * sum(cfg.values())

    def optimistic(cfg: Config) -> float:  # unmeasured on the fast node
        return 0.0 if "slow" in cfg else 5.0 * sum(cfg.values())

    r = running(400.0, thr=measured_on_slow, explore=optimistic)
    p = plan(SLOW_FAST, (r,))
    assert p.assignments["R"] == {"fast": 4} and "R" in p.diagnostics["explored"]
    p = plan(SLOW_FAST, (r,), settle_time=720.0)
    assert p.assignments["R"] == {"slow": 4} and p.diagnostics["explored"] == {}


def test_drop_moves_keeps_the_current_config_and_other_jobs() -> None:
    r = running(400.0)
    w = JobView("W", (4,), 0.0, 10.0, 100.0, 1.1, by_node, total_samples=1e6)
    cands = [Candidate("R", freeze_config({"slow": 4}), 1.0), Candidate("R", freeze_config({"fast": 4}), 3.0),
             Candidate("W", freeze_config({"fast": 4}), 3.0)]
    kept = drop_moves(cands, (r, w), SLOW_FAST, 720.0)
    assert [(c.job_id, dict(c.config)) for c in kept] == [("R", {"slow": 4}), ("W", {"fast": 4})]
    assert drop_moves(cands, (r, w), SLOW_FAST, 0.0) == cands  # off
    assert unsettled(r, 720.0) and not unsettled(r, 400.0) and not unsettled(w, 720.0)


def test_settle_time_is_a_planner_parameter() -> None:
    assert PlannerParams().settle_time == 0.0
    assert PlannerParams().with_settings("settle_time=720").settle_time == 720.0
    with pytest.raises(ValueError, match="settle_time"):
        PlannerParams(settle_time=-1.0)
