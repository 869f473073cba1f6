"""Exploration by a move only as part of a placement that starts a waiting job now (planner.explore_room)."""

from __future__ import annotations

from planner.explore import explore_idle
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

#: two 4-GPU servers of each type; single-GPU rates per GPU
SINGLE = {"a": 100.0, "b": 105.0, "v": 480.0}
FOUR = ClusterView(tuple(NodeView(f"{t}{i}", t, t, 4, 4) for t in SINGLE for i in range(2)))
ON_A = freeze_config({"a0": 4, "a1": 4})
ON_B = freeze_config({"b0": 4, "b1": 4})
ONLY_B = {n.name: (4 if n.gpu_type == "b" else 0) for n in FOUR.nodes}  # what the plan leaves idle
CAPACITY = {n.name: (0 if n.gpu_type == "v" else 4) for n in FOUR.nodes}  # the plan's GPUs: "a" (its jobs') and "b"
NOTHING = {n.name: 0 for n in FOUR.nodes}  # the previous round's plan left no GPU idle


def _type(cfg: Config) -> str:
    (t,) = {n[0] for n in cfg}
    return t


def estimate(cfg: Config) -> float:
    """Measured 400 on "a" (8 GPUs on two servers); elsewhere 90 % of the single-GPU rate per GPU."""
    return 400.0 if _type(cfg) == "a" else 0.9 * sum(cfg.values()) * SINGLE[_type(cfg)]


def optimistic(cfg: Config) -> float:
    """estimator.explore's bound: the single-GPU rate times the GPUs; 0 where measured."""
    return 0.0 if _type(cfg) == "a" else sum(cfg.values()) * SINGLE[_type(cfg)]


def running(job_id: str = "j", current: Config | None = ON_A) -> JobView:
    return JobView(job_id, (8,), 0.0, 0.0, 3600.0 * 100, 1.0, estimate, total_samples=1.0e8, done_samples=1.0e6,
                   current=current, placed_for=3600.0, restart_cost=60.0, explore=optimistic)


def waiting(job_id: str = "w", nodes: frozenset[str] | None = frozenset({"a0", "a1"})) -> JobView:
    """An 8-GPU job the plan left out; by default it may use only the "a" servers."""
    return JobView(job_id, (8,), 0.0, 600.0, 3600.0, 1.0, estimate, total_samples=1.0e8, nodes=nodes)


def test_a_running_job_is_not_moved_to_explore_when_no_waiting_job_starts_on_its_gpus() -> None:
    # without the rule the running job is moved to the idle "b" servers (its bound 840 beats 400 x 1.1)
    out, _ = explore_idle({"j": ON_A}, (running(),), FOUR, CAPACITY, 1.4, idle_before=NOTHING)
    assert out["j"] == ON_B
    # with it the job stays: nobody waits for its GPUs
    out, why = explore_idle({"j": ON_A}, (running(),), FOUR, CAPACITY, 1.4, idle_before=NOTHING, room=True)
    assert out["j"] == ON_A and why == {}
    # nor when the waiting job fits the idle GPUs already (the fragment plans start it without a move)
    anywhere = waiting(nodes=None)
    out, _ = explore_idle({"j": ON_A, "w": None}, (running(), anywhere), FOUR, CAPACITY, 1.4, idle_before=NOTHING,
                          room=True)
    assert out["j"] == ON_A


def test_the_move_is_made_with_the_waiting_job_it_starts_in_the_same_plan() -> None:
    out, why = explore_idle({"j": ON_A, "w": None}, (running(), waiting()), FOUR, CAPACITY, 1.4, idle_before=NOTHING,
                            room=True)
    assert out["j"] == ON_B and "w" in why["j"]
    assert out["w"] == ON_A  # the waiting job takes the GPUs the explore move freed, now


def test_one_move_serves_one_waiting_job_and_the_freed_gpus_are_not_counted_twice() -> None:
    jobs = (running(), waiting("w1"), waiting("w2"))
    out, _ = explore_idle({"j": ON_A, "w1": None, "w2": None}, jobs, FOUR, CAPACITY, 1.4, idle_before=NOTHING,
                          room=True)
    assert out["j"] == ON_B and out["w1"] == ON_A and out["w2"] is None


def four(job_id: str, current: Config | None) -> JobView:
    """A 4-GPU job that runs (or starts) in ``current``: measured 200 on an "a" server."""
    def est(cfg: Config) -> float:
        return 200.0 if _type(cfg) == "a" else 0.9 * sum(cfg.values()) * SINGLE[_type(cfg)]
    return JobView(job_id, (4,), 0.0, 0.0, 3600.0 * 100, 1.0, est, total_samples=1.0e8, done_samples=1.0e6,
                   current=current, placed_for=3600.0, restart_cost=60.0, explore=optimistic)


def test_two_running_jobs_are_moved_together_when_both_must_make_room() -> None:
    on_a0, on_a1 = freeze_config({"a0": 4}), freeze_config({"a1": 4})
    jobs = (four("j1", on_a0), four("j2", on_a1), waiting())
    out, why = explore_idle({"j1": on_a0, "j2": on_a1, "w": None}, jobs, FOUR, CAPACITY, 1.4, idle_before=NOTHING,
                            room=True)
    assert sorted(tuple(dict(out[j] or {})) for j in ("j1", "j2")) == [("b0",), ("b1",)]
    assert out["w"] == ON_A and set(why) == {"j1", "j2"}
    # one of them held in place (its GPUs not the plan's): moving the other alone starts nobody, so neither moves
    held = {**CAPACITY, "a1": 0}
    out, why = explore_idle({"j1": on_a0, "w": None}, (four("j1", on_a0), waiting()), FOUR, held, 1.4,
                            idle_before=NOTHING, room=True)
    assert out["j1"] == on_a0 and out["w"] is None and why == {}


def test_starts_and_gpus_idle_for_a_whole_round_are_explored_as_before() -> None:
    # a job that starts explores the idle "b" servers at no move's cost
    out, _ = explore_idle({"j": ON_A}, (running(current=None),), FOUR, CAPACITY, 1.4, room=True)
    assert out["j"] == ON_B
    # a running job still explores GPUs idle for a whole round (issue 22's case), nobody waiting
    out, _ = explore_idle({"j": ON_A}, (running(),), FOUR, CAPACITY, 1.4, idle_before=ONLY_B, room=True)
    assert out["j"] == ON_B


def test_the_rule_is_a_planner_parameter_off_by_default() -> None:
    assert PlannerParams().explore_room is False
    assert PlannerParams().with_settings("explore_room=true").explore_room is True
