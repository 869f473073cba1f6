"""Fill swaps (planner/fragfill.py, ``fragment_fill``): a round plan preempts a running job for a waiting job
that puts at least as many idle GPUs to work as it takes, whatever their weights; never a held job."""

from __future__ import annotations

from planner.fragfill import fills_enough
from planner.hops import HopsPolicy
from planner.views import JobView, freeze_config
from tests.planner.test_planner_fragfill import TWO, cluster_of, linear, plan
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off


def test_fills_enough_counts_the_idle_gpus_put_to_work_against_those_taken() -> None:
    assert fills_enough({"n1": 8}, 4)  # 4 taken, 4 idle filled
    assert fills_enough({"n0": 8, "n1": 8}, 4)
    assert not fills_enough({"n1": 8}, 6)  # 6 taken, 2 filled
    assert not fills_enough({"n1": 8}, 0)


def test_a_waiting_job_worth_less_than_the_running_one_fills_the_idle_gpus() -> None:
    # W (LR 0.05) is worth less than R (LR 0.1): no value swap; on R's 4 GPUs and the 4 idle ones it puts
    # 4 idle GPUs to work for the 4 it takes
    jobs = cluster_of(4, (8,), 0.05)
    assert plan(jobs).assignments["W"] is None  # fragment_swaps alone
    on = plan(jobs, fragment_swaps=False, fragment_fill=True)
    assert on.assignments["R"] is None and on.assignments["W"] == {"n1": 8}
    assert on.assignments["X"] == {"n0": 8}
    assert on.diagnostics["swapped"] == {"W": "R"}


def test_no_fill_swap_when_the_waiting_job_takes_more_gpus_than_it_fills() -> None:
    on = plan(cluster_of(6, (8,), 0.05), fragment_swaps=False, fragment_fill=True)  # 6 taken, 2 filled
    assert on.assignments["R"] == {"n1": 6} and on.assignments["W"] is None
    assert on.diagnostics["swapped"] == {}


def test_a_job_held_in_place_is_never_displaced_by_a_fill_swap() -> None:
    x, _, w = cluster_of(4, (8,), 0.05)
    r = JobView("R", (4,), 0.0, 100.0, 1000.0, 1.1, linear, total_samples=1e6, current=freeze_config({"n1": 4}),
                placed_for=10.0, run_time=10.0)  # inside the minimum run time
    on = plan((x, r, w), fragment_swaps=False, fragment_fill=True)
    assert on.assignments["R"] == {"n1": 4} and on.assignments["W"] is None


def test_fill_swaps_are_off_by_default() -> None:
    assert PlannerParams().fragment_fill is False
    jobs = cluster_of(4, (8,), 0.05)
    assert HopsPolicy(rules_off(gap=0.0, lambda_=1.0)).plan(TWO, jobs, 10_000.0).assignments["W"] is None
