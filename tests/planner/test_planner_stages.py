"""The planner's named stages (planner.stages, planner.hops.PLAN_STAGES): run in order, each timed by the
caller's timer when there is one, the same plan with a timer as without."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from planner.hops import PLAN_STAGES, HopsPolicy, PlanState
from planner.stages import run_stages, stage_names
from planner.views import ClusterView, JobView, NodeView


class Recorder:
    """A StageTimer that records the names it was asked to time, and which of them raised."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.raised: list[str] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.names.append(name)
        try:
            yield
        except BaseException:
            self.raised.append(name)
            raise


def test_stages_run_in_order_over_one_state_each_timed() -> None:
    seen: list[str] = []
    stages = [("a", lambda s: s.append("a")), ("b", lambda s: s.append("b")), ("c", lambda s: s.append("c"))]
    timer = Recorder()
    assert run_stages(stages, seen, timer) is seen
    assert seen == ["a", "b", "c"] and timer.names == ["a", "b", "c"]
    assert run_stages(stages, [], None) == ["a", "b", "c"]  # no timer: the stages simply run


def test_a_stage_that_raises_is_timed_and_ends_the_run() -> None:
    def boom(_: list[str]) -> None:
        raise ValueError("bad")

    timer, seen = Recorder(), []
    with pytest.raises(ValueError):
        run_stages([("a", lambda s: s.append("a")), ("boom", boom), ("c", lambda s: s.append("c"))], seen, timer)
    assert seen == ["a"] and timer.names == ["a", "boom"] and timer.raised == ["boom"]


def cluster() -> ClusterView:
    return ClusterView((NodeView("n0", "v100", "v100-a", 8, 8), NodeView("n1", "v100", "v100-a", 8, 8)))


def jobs() -> tuple[JobView, ...]:
    def thr(cfg) -> float:
        return float(sum(cfg.values()))

    running = JobView("r", (2,), 0.0, 10.0, 100.0, 1.5, thr, current={"n1": 2})
    waiting = JobView("w", (4,), 5.0, 20.0, 50.0, 1.2, thr)
    return (running, waiting)


@pytest.mark.parametrize("fragment", [False, True])
def test_every_hops_planning_runs_every_named_stage_once_in_order(fragment: bool) -> None:
    timer = Recorder()
    policy = HopsPolicy(timer=timer)
    policy.plan(cluster(), jobs(), now=100.0, fragment=fragment)
    assert timer.names == list(stage_names(PLAN_STAGES))
    assert len(set(timer.names)) == len(timer.names) == 17


def test_a_timer_does_not_change_the_plan() -> None:
    timed = HopsPolicy(timer=Recorder()).plan(cluster(), jobs(), now=100.0)
    plain = HopsPolicy().plan(cluster(), jobs(), now=100.0)
    assert timed.assignments == plain.assignments and timed.placed()
    diag = {k: v for k, v in timed.diagnostics.items() if k != "solve_time"}
    assert diag == {k: v for k, v in plain.diagnostics.items() if k != "solve_time"}


def test_the_plan_state_is_what_the_stages_fill_in() -> None:
    # the running job is inside min_run_time: held on its GPUs, the planning places the other around it
    policy = HopsPolicy()
    state = run_stages(PLAN_STAGES, PlanState(policy, cluster(), jobs(), 100.0, False))
    assert list(state.held) == ["r"] and [j.job_id for j in state.keeping] == ["r"]
    assert {n.name: n.free_gpus for n in state.cluster.nodes} == {"n0": 8, "n1": 6}
    assert [j.job_id for j in state.planned] == ["w"] and state.cands
    assert state.assignments["r"] == {"n1": 2} and sum(state.assignments["w"].values()) == 4
    assert state.diagnostics["in_place"] == state.held and state.diagnostics["candidates"] == len(state.cands)
