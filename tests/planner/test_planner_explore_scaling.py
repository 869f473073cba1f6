"""Exploration's bound with the job's measured scaling carried over (planner.explore_scaling)."""

from __future__ import annotations

from planner.explore import explore_idle
from planner.explore_scaling import measured_scaling, scaled_bound
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

#: two 4-GPU servers of each type; single-GPU rates: "b" 5% faster per GPU than "a", "v" 4.8x "a"
SINGLE = {"a": 100.0, "b": 105.0, "v": 480.0}
FOUR = ClusterView(tuple(NodeView(f"{t}{i}", t, t, 4, 4) for t in SINGLE for i in range(2)))
ON_A = freeze_config({"a0": 4, "a1": 4})
FREE = {n.name: 4 for n in FOUR.nodes}


def _type(cfg: Config) -> str:
    (t,) = {n[0] for n in cfg}
    return t


def measured(cfg: Config) -> float:
    """The estimate: one GPU at its single rate; on "a" the 8-GPU config is measured (half of 8 x 100)."""
    gpus = sum(cfg.values())
    if gpus == 1:
        return SINGLE[_type(cfg)]
    return 400.0 if _type(cfg) == "a" else 0.3 * gpus * SINGLE[_type(cfg)]  # pessimistic model elsewhere


def optimistic(cfg: Config) -> float:
    """estimator.explore's plain bound: the single-GPU rate times the GPUs; nothing where measured."""
    return 0.0 if _type(cfg) == "a" else sum(cfg.values()) * SINGLE[_type(cfg)]


def job(current: Config | None) -> JobView:
    return JobView("j", (8,), 0.0, 0.0, 3600.0 * 100, 1.0, measured, total_samples=1.0e8, done_samples=1.0e6,
                   current=current, placed_for=3600.0, restart_cost=60.0, explore=optimistic)


def test_the_measured_scaling_is_the_share_of_the_single_gpu_rate_kept() -> None:
    assert measured_scaling(job(ON_A)) == 0.5  # 400 / (8 x 100)
    assert measured_scaling(job(None)) is None  # nothing measured of a waiting job
    assert scaled_bound(job(ON_A), freeze_config({"b0": 4, "b1": 4}), 840.0, 0.5) == 420.0
    # on fewer servers than where it runs the plain bound stays (it may communicate less there)
    assert scaled_bound(job(ON_A), freeze_config({"b0": 8}), 840.0, 0.5) == 840.0
    assert scaled_bound(job(ON_A), freeze_config({"b0": 4, "b1": 4}), 840.0, None) == 840.0


def test_with_scaling_a_running_job_is_not_moved_to_a_type_that_cannot_beat_its_measured_rate() -> None:
    # plain bound on "b": 8 x 105 = 840 > 400 x 1.1, a move; with "a"'s scaling (0.5): 420 < 440, it stays
    out, _ = explore_idle({"j": ON_A}, (job(ON_A),), FOUR, FREE, 1.4, idle_before=FREE)
    assert _type(out["j"] or {}) != "a"  # the default: it is moved (to the highest plain bound, "v")
    busy_v = {**FREE, "v0": 0, "v1": 0}  # only "b" is idle
    out, _ = explore_idle({"j": ON_A}, (job(ON_A),), FOUR, busy_v, 1.4, idle_before=busy_v)
    assert out["j"] == {"b0": 4, "b1": 4}
    out, why = explore_idle({"j": ON_A}, (job(ON_A),), FOUR, busy_v, 1.4, idle_before=busy_v, scaling=True)
    assert out["j"] == ON_A and why == {}


def test_with_scaling_a_type_that_can_pay_is_still_explored_and_a_start_is_unchanged() -> None:
    # "v": 8 x 480 x 0.5 = 1920 beats 440: still tried
    out, why = explore_idle({"j": ON_A}, (job(ON_A),), FOUR, FREE, 1.4, idle_before=FREE, scaling=True)
    assert out["j"] == {"v0": 4, "v1": 4} and "1920" in why["j"]
    # a job starting has no scaling measured: the plain bound ("b" only idle beside "a")
    busy_v = {**FREE, "v0": 0, "v1": 0}
    out, _ = explore_idle({"j": ON_A}, (job(None),), FOUR, busy_v, 1.4, scaling=True)
    assert out["j"] == {"b0": 4, "b1": 4}
    assert PlannerParams().explore_scaling is False
