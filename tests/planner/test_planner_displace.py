"""No displacing upgrades of young jobs (planner.displace, ``young_moves``): a round plan does not move a running
job placed a short while ago onto GPUs it frees by requeuing or moving others; moves onto idle GPUs stay."""

from __future__ import annotations

import pytest

from planner.displace import displacers, idle_by_class
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config

from tests.planner.two_speeds import SLOW_FAST, by_count, by_node


def running(job_id: str, node: str, placed_for: float, thr: object, wait: float = 0.0) -> JobView:
    return JobView(job_id, (4,), 0.0, wait, 1000.0, 1.1, thr, total_samples=1e6,  # type: ignore[arg-type]
                   current=freeze_config({node: 4}), placed_for=placed_for, run_time=placed_for, restart_cost=60.0)


def plan(jobs: tuple[JobView, ...], cluster: ClusterView = SLOW_FAST, **params: object) -> Plan:
    p = PlannerParams(gap=0.0, min_run_time=300.0, restart_penalty=0.0, preempt_penalty=0.0, **params)  # type: ignore[arg-type]
    return HopsPolicy(p).plan(cluster, jobs, 10_000.0)


@pytest.mark.parametrize("young", [0.0, 720.0])
def test_a_young_job_still_moves_onto_idle_gpus(young: float) -> None:
    y = running("Y", "slow", 400.0, by_node)
    assert plan((y,), young_moves=young).assignments["Y"] == {"fast": 4}


def test_a_young_job_does_not_requeue_another_to_take_its_gpus() -> None:
    # Y (on the slow node, 3x faster on the fast one) outweighs O, which runs as fast on either node
    y, o = running("Y", "slow", 400.0, by_node, wait=3000.0), running("O", "fast", 5000.0, by_count)
    default = plan((y, o))
    assert default.assignments["Y"] == {"fast": 4}  # an upgrade that preempts O: two preemptions
    p = plan((y, o), young_moves=720.0)
    assert p.assignments["Y"] == {"slow": 4} and p.assignments["O"] == {"fast": 4}
    # once Y has run there for longer, the displacing move is priced as before
    older = running("Y", "slow", 800.0, by_node, wait=3000.0)
    assert plan((older, o), young_moves=720.0).assignments["Y"] == {"fast": 4}


def test_displacers_compare_by_node_class_with_the_job_own_gpus() -> None:
    y, o = running("Y", "slow", 400.0, by_node), running("O", "fast", 5000.0, by_count)
    assert idle_by_class(SLOW_FAST, (y, o)) == {("k80", "S"): 0, ("v100", "F"): 0}
    moved = {"Y": freeze_config({"fast": 4}), "O": None}
    assert displacers(moved, (y, o), SLOW_FAST, 720.0) == {"Y"}
    assert displacers(moved, (y, o), SLOW_FAST, 300.0) == set()  # not young
    assert displacers({"Y": freeze_config({"slow": 4})}, (y, o), SLOW_FAST, 720.0) == set()  # not moved
    assert displacers(moved, (y,), SLOW_FAST, 720.0) == set()  # the fast node was idle
