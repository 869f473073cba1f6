"""No quick move back (planner.move_back, ``return_time``): a running job is not moved back onto a GPU type it
left less than ``return_time`` ago unless its estimate there is RETURN_GAIN times its current one."""

from __future__ import annotations

import pytest

from planner.hops import HopsPolicy
from planner.move_back import RETURN_GAIN, Departures, drop_returns, no_return_explore, observe
from planner.params import PlannerParams
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

from tests.planner.two_speeds import SLOW_FAST


def by_node(cfg: Config) -> float:
    """1 sample/s per GPU on the slow node, 1.3 on the fast one (below RETURN_GAIN); single-node configs only."""
    if len(cfg) != 1:
        return 0.0
    (n, g), = cfg.items()
    return g * (1.3 if n == "fast" else 1.0)


def on(node: str, **kw: object) -> JobView:
    return JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, by_node, total_samples=1e6, current=freeze_config({node: 4}),  # type: ignore[arg-type]
                   placed_for=400.0, run_time=400.0, restart_cost=60.0, **kw)


def where_after_leaving_fast(later: float, **params: object) -> dict[str, int]:
    """Where a round plan ``later`` seconds after the job left the fast node for the slow one puts it."""
    policy = HopsPolicy(PlannerParams(gap=0.0, min_run_time=300.0, restart_penalty=0.0, **params))  # type: ignore[arg-type]
    policy.plan(SLOW_FAST, (on("fast"),), 10_000.0)
    policy.plan(SLOW_FAST, (on("slow"),), 10_360.0, fragment=True)  # it was moved: seen on the slow node
    return dict(policy.plan(SLOW_FAST, (on("slow"),), 10_360.0 + later).assignments["R"] or {})


@pytest.mark.parametrize("formulation", ["compact", "plain"])
def test_a_job_is_not_moved_back_soon_to_a_type_it_left(formulation: str) -> None:
    assert where_after_leaving_fast(360.0, formulation=formulation) == {"fast": 4}  # the 1.3x move pays
    assert where_after_leaving_fast(360.0, formulation=formulation, return_time=3600.0) == {"slow": 4}
    assert where_after_leaving_fast(3700.0, formulation=formulation, return_time=3600.0) == {"fast": 4}


def test_a_large_gain_still_moves_it_back() -> None:
    job = on("slow")
    cands = [Candidate("R", freeze_config({"slow": 4}), 1.0), Candidate("R", freeze_config({"fast": 4}), 1.3)]
    memory: Departures = {"R": (frozenset({"k80"}), {frozenset({"v100"}): 100.0})}
    kept = drop_returns(cands, [job], SLOW_FAST, memory, 200.0, 3600.0)
    assert [dict(c.config) for c in kept] == [{"slow": 4}]
    fast = JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, lambda c: 4.0 * RETURN_GAIN if "fast" in c else 4.0,
                   total_samples=1e6, current=freeze_config({"slow": 4}), placed_for=400.0)
    assert drop_returns(cands, [fast], SLOW_FAST, memory, 200.0, 3600.0) == cands


def test_observe_notes_departures_and_forgets_ended_jobs() -> None:
    memory: Departures = {}
    observe(memory, [on("fast")], SLOW_FAST, 0.0, prune=True)
    assert memory == {"R": (frozenset({"v100"}), {})}
    pending = JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, by_node)
    observe(memory, [pending], SLOW_FAST, 50.0, prune=False)
    assert memory == {"R": (None, {frozenset({"v100"}): 50.0})}
    observe(memory, [], SLOW_FAST, 60.0, prune=True)
    assert memory == {}


def test_no_optimistic_rate_on_a_type_left_recently() -> None:
    memory: Departures = {"R": (frozenset({"k80"}), {frozenset({"v100"}): 100.0})}
    (r,) = no_return_explore([on("slow", explore=lambda c: 9.0)], SLOW_FAST, memory, 200.0, 3600.0)
    assert r.explore is not None
    assert r.explore(freeze_config({"fast": 4})) == 0.0 and r.explore(freeze_config({"slow": 2})) == 9.0
    (r,) = no_return_explore([on("slow", explore=lambda c: 9.0)], SLOW_FAST, memory, 4000.0, 3600.0)
    assert r.explore is not None and r.explore(freeze_config({"fast": 4})) == 9.0


def test_return_time_is_a_planner_parameter() -> None:
    assert PlannerParams().return_time == 0.0
    assert PlannerParams().with_settings("return_time=3600").return_time == 3600.0
    with pytest.raises(ValueError, match="return_time"):
        PlannerParams(return_time=-1.0)
