"""Exploration by a move only where the estimate does not predict a loss (planner.explore_floor)."""

from __future__ import annotations

from planner.explore import explore_idle
from planner.explore_floor import below_floor
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

#: two 4-GPU servers of each type; single-GPU rates: "b" 5% faster per GPU than "a", "v" 4.8x "a"
SINGLE = {"a": 100.0, "b": 105.0, "v": 480.0}
FOUR = ClusterView(tuple(NodeView(f"{t}{i}", t, t, 4, 4) for t in SINGLE for i in range(2)))
ON_A = freeze_config({"a0": 4, "a1": 4})
FREE = {n.name: 4 for n in FOUR.nodes}
ONLY_B = {**FREE, "v0": 0, "v1": 0}  # the plan leaves only "b" idle


def _type(cfg: Config) -> str:
    (t,) = {n[0] for n in cfg}
    return t


def estimate(cfg: Config) -> float:
    """The estimator: measured 400 on "a" (8 GPUs on two servers); elsewhere its model, which says the
    job keeps 30 % of its single-GPU rate across servers (252 on "b": slower than where it runs)."""
    if _type(cfg) == "a":
        return 400.0
    return 0.3 * sum(cfg.values()) * SINGLE[_type(cfg)]


def optimistic(cfg: Config) -> float:
    """estimator.explore's bound: the single-GPU rate times the GPUs (no communication); 0 where measured."""
    return 0.0 if _type(cfg) == "a" else sum(cfg.values()) * SINGLE[_type(cfg)]


def job(current: Config | None) -> JobView:
    return JobView("j", (8,), 0.0, 0.0, 3600.0 * 100, 1.0, estimate, total_samples=1.0e8, done_samples=1.0e6,
                   current=current, placed_for=3600.0, restart_cost=60.0, explore=optimistic)


def test_a_running_job_is_not_moved_to_a_spanning_config_its_estimate_says_is_slower() -> None:
    # the bound on "b" (840) beats 400 x 1.1: without the floor the job is moved there
    out, _ = explore_idle({"j": ON_A}, (job(ON_A),), FOUR, ONLY_B, 1.4, idle_before=ONLY_B)
    assert out["j"] == {"b0": 4, "b1": 4}
    # its estimate there (252) is below its rate where it runs (400): with the floor it stays
    out, why = explore_idle({"j": ON_A}, (job(ON_A),), FOUR, ONLY_B, 1.4, idle_before=ONLY_B, floor=1.0)
    assert out["j"] == ON_A and why == {}


def test_the_floor_leaves_a_config_the_estimate_does_not_call_slower_and_every_start() -> None:
    # on "v" the estimate (1152) beats 400: explored with the floor too
    out, _ = explore_idle({"j": ON_A}, (job(ON_A),), FOUR, FREE, 1.4, idle_before=FREE, floor=1.0)
    assert _type(out["j"] or {}) == "v"
    # a job that starts explores "b" at no move's cost, floor or not
    planned_on_a = {"j": ON_A}
    out, _ = explore_idle(planned_on_a, (job(None),), FOUR, ONLY_B, 1.4, floor=1.0)
    assert out["j"] == {"b0": 4, "b1": 4}
    # a lower floor lets the move through (252 >= 0.6 x 400)
    assert not below_floor(job(ON_A), freeze_config({"b0": 4, "b1": 4}), 400.0, 0.6)
    assert below_floor(job(ON_A), freeze_config({"b0": 4, "b1": 4}), 400.0, 1.0)


def test_a_config_on_one_server_is_not_held_to_the_floor() -> None:
    # a whole type's estimate may be wrong (issue 22): one server is explored by the bound alone
    assert not below_floor(job(ON_A), freeze_config({"b0": 4}), 400.0, 1.0)


def test_the_floor_is_a_planner_parameter() -> None:
    assert PlannerParams().explore_floor == 0.0
    assert PlannerParams().with_settings("explore_floor=1").explore_floor == 1.0


def test_a_move_below_the_floor_is_made_when_it_makes_room_for_a_waiting_job() -> None:
    # w may use only the "a" servers, which j holds: moving j to "b" lets w start there
    w = JobView("w", (8,), 0.0, 600.0, 3600.0, 1.0, estimate, total_samples=1.0e8, nodes=frozenset({"a0", "a1"}))
    out, why = explore_idle({"j": ON_A, "w": None}, (job(ON_A), w), FOUR, ONLY_B, 1.4, idle_before=ONLY_B, floor=1.0)
    assert out["j"] == {"b0": 4, "b1": 4} and "j" in why
    # a waiting job that fits the idle GPUs already gains nothing from the move: the floor holds
    anywhere = JobView("w", (8,), 0.0, 600.0, 3600.0, 1.0, estimate, total_samples=1.0e8)
    out, _ = explore_idle({"j": ON_A, "w": None}, (job(ON_A), anywhere), FOUR, ONLY_B, 1.4, idle_before=ONLY_B,
                          floor=1.0)
    assert out["j"] == ON_A
