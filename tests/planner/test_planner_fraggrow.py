"""Fragment growth (planner/fraggrow.py): a round plan grows a running job into idle GPUs that no waiting
job can use, when the move saves it time; never on the reservation's type, nor when a waiting job fits."""

from __future__ import annotations

import dataclasses

import pytest

from planner.fraggrow import grow_into_fragments, idle_after
from planner.hops import HopsPolicy
from planner.params import PlannerParams, check
from planner.views import Config, JobView, freeze_config
from tests.planner.test_planner_fragfill import TWO, job
from tests.planner.rules_off import rules_off


def plan_of(jobs: tuple[JobView, ...]) -> dict[str, Config | None]:
    """Each job where it runs (waiting ones unplaced), as a plan that kept every running job in place."""
    return {j.job_id: freeze_config(j.current) if j.current else None for j in jobs}


def scene(r_reqs: tuple[int, ...] = (4, 8), w_reqs: tuple[int, ...] = (16,)) -> tuple[JobView, ...]:
    """X fills n0; R runs on 4 GPUs of n1 (accepting ``r_reqs``), 4 of n1 idle; W waits."""
    x = job("X", (8,), 500.0, 1000.0, {"n0": 8})
    r = job("R", r_reqs, 100.0, 1000.0, {"n1": 4})
    w = job("W", w_reqs, 10.0, 100.0)
    return x, r, w


def grow(jobs: tuple[JobView, ...], min_saving: float = 60.0, held_type: str = ""):
    running, queue = [j for j in jobs if j.current], [j for j in jobs if not j.current]
    return grow_into_fragments(plan_of(jobs), running, queue, TWO, {"n0": 8, "n1": 8}, 1.4, min_saving, held_type)


def test_idle_after_counts_what_the_plan_leaves() -> None:
    assert idle_after({"A": freeze_config({"n0": 3}), "B": None}, {"n0": 8, "n1": 2}) == {"n0": 5, "n1": 2}


def test_a_running_job_grows_into_gpus_no_waiting_job_fits() -> None:
    out, grown = grow(scene())
    assert out["R"] == {"n1": 8} and grown == {"R": 4}
    assert out["X"] == {"n0": 8} and out["W"] is None


def test_no_growth_when_a_waiting_job_fits_the_idle_gpus() -> None:
    out, grown = grow(scene(w_reqs=(4,)))
    assert out["R"] == {"n1": 4} and grown == {}


def test_no_growth_into_the_reservations_type() -> None:
    out, grown = grow(scene(), held_type="t")
    assert out["R"] == {"n1": 4} and grown == {}


def test_a_rigid_job_does_not_grow() -> None:
    out, grown = grow(scene(r_reqs=(4,)))
    assert out["R"] == {"n1": 4} and grown == {}


def test_no_growth_that_saves_less_than_asked() -> None:
    x, r, w = scene()
    nearly_done = dataclasses.replace(r, done_samples=0.99999 * r.total_samples, restart_cost=30.0)
    out, grown = grow((x, nearly_done, w))
    assert out["R"] == {"n1": 4} and grown == {}


def test_no_growth_when_no_job_waits() -> None:
    x, r, _ = scene()
    out, grown = grow((x, r))
    assert out["R"] == {"n1": 4} and grown == {}


def test_through_the_policy_and_on_by_default() -> None:
    assert PlannerParams().fragment_growth == 60.0
    jobs = scene()
    # a restart penalty of 0.6 prices the solve's own growth (twice the rate, 0.4 of it kept) below staying
    for value, expect in ((0.0, {"n1": 4}), (60.0, {"n1": 8})):
        params = rules_off(gap=0.0, lambda_=1.0, restart_penalty=0.6, fragment_growth=value)
        p = HopsPolicy(params).plan(TWO, jobs, 10_000.0)
        assert p.assignments["R"] == expect
        assert p.diagnostics["grown"] == ({"R": 4} if value else {})


def test_the_setting_is_validated() -> None:
    assert check("fragment_growth", 60.0) == 60.0
    with pytest.raises(ValueError):
        check("fragment_growth", -1.0)
