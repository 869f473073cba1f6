"""Explore a GPU type once (planner.explore_types, ``explore_types_once``): a running job is moved to
explore an unmeasured config only onto a GPU type it has not run on."""

from __future__ import annotations

import pytest

from planner.explore_types import masked, remember
from planner.hops import HopsPolicy
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from tests.planner.rules_off import rules_off

#: two 4-GPU servers of type "a", one 8-GPU server of type "v"
CLUSTER = ClusterView((NodeView("a0", "a", "a", 4, 4), NodeView("a1", "a", "a", 4, 4),
                       NodeView("v0", "v", "v", 8, 8)))
ON_V = freeze_config({"v0": 8})  # measured: 400 samples/s
ON_A = {"a0": 4, "a1": 4}


def estimate(cfg: Config) -> float:
    return 400.0 if dict(cfg) == dict(ON_V) else 200.0


def optimistic(cfg: Config) -> float:
    """Unmeasured everywhere but where it runs: 8 GPUs of "a" at 100 each (no communication)."""
    return 0.0 if dict(cfg) == dict(ON_V) else 100.0 * sum(cfg.values())


def job(current: Config | None) -> JobView:
    return JobView("j", (8,), 0.0, 0.0, 3600.0 * 100, 1.0, estimate, total_samples=1.0e8, done_samples=1.0e6,
                   current=current, placed_for=3600.0, run_time=3600.0, restart_cost=60.0, explore=optimistic)


def plan(policy: HopsPolicy, current: Config | None) -> dict[str, Config | None]:
    return policy.plan(CLUSTER, (job(current),), 10_000.0).assignments


@pytest.mark.parametrize("once", [False, True])
def test_a_running_job_is_not_moved_back_to_explore_a_type_it_ran_on(once: bool) -> None:
    policy = HopsPolicy(rules_off(gap=0.0, explore_types_once=once))
    # it starts on "a" (explored at its start: 800 optimistic against 200 estimated) ...
    first = plan(policy, None)
    assert first["j"] == ON_A
    plan(policy, ON_A)  # ... the next planning sees it run there ...
    # ... and now it runs on "v" (400 measured): "a" across two servers is still unmeasured (800 optimistic)
    again = plan(policy, ON_V)
    assert again["j"] == ({"v0": 8} if once else {"a0": 4, "a1": 4})


def test_a_type_the_job_never_ran_on_is_still_explored_by_a_move() -> None:
    policy = HopsPolicy(rules_off(gap=0.0, explore_types_once=True))
    assert plan(policy, ON_V)["j"] == {"a0": 4, "a1": 4}  # never ran on "a": moved there to explore


def test_masked_zeroes_the_bound_on_types_run_on_only_for_running_jobs() -> None:
    seen: dict[str, frozenset[str]] = {}
    remember(seen, (job(ON_V),), CLUSTER, prune=True)
    assert seen == {"j": frozenset({"v"})}
    seen["j"] = frozenset({"a", "v"})
    (running,) = masked((job(ON_V),), seen, CLUSTER)
    assert running.explore is not None and running.explore({"a0": 4, "a1": 4}) == 0.0
    (starting,) = masked((job(None),), seen, CLUSTER)
    assert starting.explore is not None and starting.explore({"a0": 4, "a1": 4}) == 800.0
    remember(seen, (), CLUSTER, prune=True)
    assert seen == {}


def test_explore_types_once_is_a_planner_parameter() -> None:
    assert not rules_off().explore_types_once
    assert rules_off().with_settings("explore_types_once=true").explore_types_once
