"""Spans Slurm splits as planned (planner/fragsplit.py, ``split_spans``): an uneven placement Slurm's greedy
split would not make is kept in place, split as Slurm splits it, or left out; every other placement stays."""

from __future__ import annotations

from planner.fragsplit import greedy_split, keep_splittable, split_as_planned
from planner.hops import HopsPolicy
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

#: three 8-GPU nodes of one type, in Slurm's node order a, b, c
ABC = ClusterView((NodeView("a", "t", "A", 8, 8), NodeView("b", "t", "A", 8, 8), NodeView("c", "t", "A", 8, 8)))
CAP = {"a": 8, "b": 8, "c": 8}


def linear(cfg: Config) -> float:
    return float(sum(cfg.values()))


def test_greedy_split_is_slurms() -> None:
    assert greedy_split(6, ["a", "b"], {"a": 8, "b": 8}) == {"a": 5, "b": 1}
    assert greedy_split(8, ["a", "b"], {"a": 2, "b": 8}) == {"a": 2, "b": 6}
    assert greedy_split(9, ["a", "b"], {"a": 2, "b": 6}) is None
    assert split_as_planned({"a": 2, "b": 6}, {"a": 2, "b": 8}, {"a": 0, "b": 1})
    assert not split_as_planned({"a": 2, "b": 6}, {"a": 8, "b": 8}, {"a": 0, "b": 1})
    assert split_as_planned({"a": 4, "b": 4}, {"a": 0, "b": 0}, {"a": 0, "b": 1})  # even: waits for its GPUs


def test_a_waiting_jobs_uneven_span_is_split_as_slurm_splits_it() -> None:
    # W planned {a: 2, b: 6} on idle nodes: Slurm would give a 7 and b 1 and refuse the plan
    out, changed = keep_splittable({"W": freeze_config({"a": 2, "b": 6})}, ["W"], CAP, {}, {"W": linear}, ABC)
    assert out["W"] == {"a": 7, "b": 1} and changed == {"W": "resplit"}


def test_a_running_job_whose_move_slurm_would_refuse_stays_where_it_runs() -> None:
    cur = freeze_config({"c": 4})
    out, changed = keep_splittable({"R": freeze_config({"a": 2, "b": 6})}, ["R"], CAP, {"R": cur}, {"R": linear}, ABC)
    assert out["R"] == cur and changed == {"R": "kept"}


def test_the_split_never_takes_gpus_another_placement_uses() -> None:
    # X takes 6 of a after W in the plan's order: W's Slurm split (7 of a) would need them, so W is left out
    chosen = {"W": freeze_config({"a": 2, "b": 6}), "X": freeze_config({"a": 6})}
    out, changed = keep_splittable(chosen, ["W", "X"], CAP, {}, {"W": linear, "X": linear}, ABC)
    assert out == {"W": None, "X": {"a": 6}} and changed == {"W": "left out"}


def test_placements_slurm_splits_as_planned_are_untouched() -> None:
    # a holds 6 of a running job kept in place: W's {a: 2, b: 6} is exactly Slurm's split of 8 then
    chosen = {"K": freeze_config({"a": 6}), "W": freeze_config({"a": 2, "b": 6}), "E": freeze_config({"b": 1, "c": 1})}
    out, changed = keep_splittable(chosen, ["K", "W", "E"], CAP, {"K": chosen["K"]}, {}, ABC)
    assert out == chosen and changed == {}


def test_split_spans_is_on_by_default_and_a_plan_on_idle_nodes_is_unchanged_with_it() -> None:
    assert PlannerParams().split_spans is True
    w = JobView("W", (8,), 0.0, 100.0, 1000.0, 1.1, linear, total_samples=1e6)
    on = HopsPolicy(rules_off(gap=0.0, lambda_=1.0, split_spans=True)).plan(ABC, (w,), 10_000.0)
    off = HopsPolicy(rules_off(gap=0.0, lambda_=1.0)).plan(ABC, (w,), 10_000.0)
    assert on.assignments == off.assignments and sum((on.assignments["W"] or {}).values()) == 8
