"""The growth discount (planner/growth.py through HopsPolicy, ``growth_discount``): under saturation an elastic
job's GPUs above its smallest count no longer outweigh starting a waiting job."""

from __future__ import annotations

import pytest

from planner.growth import discount_growth
from planner.hops import HopsPolicy
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

ONE = ClusterView((NodeView("n0", "t", "A", 8, 8),))


def linear(cfg: Config) -> float:
    return float(sum(cfg.values()))


def job(job_id: str, requirements: tuple[int, ...]) -> JobView:
    """Every job waited as long relative to its age: equal eq. 11 weights."""
    return JobView(job_id, requirements, 0.0, 1000.0, 1000.0, 1.1, linear, total_samples=1e6)


def plan(jobs: tuple[JobView, ...], **params: object) -> dict[str, Config | None]:
    policy = HopsPolicy(rules_off(gap=0.0, lambda_=1.0, explore=False, backfill=False, **params))  # type: ignore[arg-type]
    return dict(policy.plan(ONE, jobs, 20_000.0).assignments)


def test_the_gain_above_the_smallest_count_of_the_same_type_is_discounted() -> None:
    two, six = freeze_config({"n0": 2}), freeze_config({"n0": 6})
    other = freeze_config({"m0": 6})
    types = {"n0": "t", "m0": "u"}
    cands = [Candidate("E", two, 1.0), Candidate("E", six, 3.0), Candidate("E", other, 4.0),
             Candidate("W", freeze_config({"n0": 4}), 1.0)]
    out = [c.gain for c in discount_growth(cands, types, 0.75)]
    # 6 GPUs of type t: 1 + 0.25 x 2; type u's only count is its smallest: its whole gain kept (the type's worth)
    assert out == [1.0, pytest.approx(1.5), 4.0, 1.0]
    assert [c.gain for c in discount_growth(cands, types, 0.0)] == [1.0, 3.0, 4.0, 1.0]


def test_a_start_outweighs_an_elastic_jobs_extra_gpus_when_jobs_wait() -> None:
    jobs = (job("E", (2, 6)), job("W", (4,)), job("X", (4,)))  # 2 + 4 + 4 > 8: saturated
    before = plan(jobs)  # eq. 11: E on 6 GPUs (3) beats two starts (1 + 1)
    assert before["E"] == {"n0": 6} and before["W"] is None and before["X"] is None
    on = plan(jobs, growth_discount=0.75)  # E on 6 is worth 1.5 now: two jobs start
    assert sum(1 for j in ("E", "W", "X") if on[j]) == 2


def test_unsaturated_plannings_keep_eq_11() -> None:
    jobs = (job("E", (2, 4)), job("W", (4,)))  # 2 + 4 fit
    assert plan(jobs, growth_discount=0.75) == plan(jobs)


def test_on_by_default_and_below_one() -> None:
    assert PlannerParams().growth_discount == 0.5
    assert rules_off().with_settings("growth_discount=0.5").growth_discount == 0.5
    with pytest.raises(ValueError):
        rules_off(growth_discount=1.0)
    with pytest.raises(ValueError):
        rules_off().with_settings("growth_discount=-0.1")
