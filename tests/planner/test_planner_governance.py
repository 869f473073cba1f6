"""planner.governance: caps over groups of jobs and per-job maxima around any policy (issue 23)."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.baselines import SlurmBackfillPolicy
from planner.governance import Cap, Limits, governed_plan, over_caps, trim
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, Plan


def thr(cfg: Config) -> float:
    return float(sum(cfg.values())) ** 0.9


def job(i: int, reqs: tuple[int, ...], *, wait: float = 10.0, current: dict[str, int] | None = None) -> JobView:
    return JobView(f"j{i}", reqs, submit_time=float(i), wait=wait, age=100.0, sensitivity=1.0, throughput=thr,
                   current=current)


def cluster(n: int = 2, gpus: int = 8) -> ClusterView:
    return ClusterView(tuple(NodeView(f"n{i}", "a100", "a100", gpus, gpus) for i in range(n)))


def gpus_of(plan: Plan, ids: set[str]) -> int:
    return sum(sum(c.values()) for j, c in plan.placed().items() if j in ids)


def test_an_account_capped_at_8_gets_at_most_8_and_the_others_are_limited() -> None:
    jobs = tuple(job(i, (4,), wait=100.0 - i) for i in range(4)) + (job(9, (4,), wait=1.0),)
    capped = {"j0", "j1", "j2", "j3"}
    limits = Limits(caps=(Cap("AssocGrpGRES", "account=physics gres/gpu=8", frozenset(capped), 8),))
    plan = governed_plan(HopsPolicy(), cluster(), jobs, 0.0, fragment=False, limits=limits)
    assert gpus_of(plan, capped) == 8
    limited = plan.diagnostics["limited"]
    assert len([j for j in capped if plan.assignments[j] is None]) == 2
    assert all(limited[j] == "AssocGrpGRES: account=physics gres/gpu=8" for j in capped if plan.assignments[j] is None)
    # the GPUs the cap leaves are given to a job outside it (the plan is made again without the cut jobs)
    assert plan.assignments["j9"] is not None


def test_without_limits_the_same_jobs_take_more_than_the_cap() -> None:
    """The test above can fail: unlimited, the policy places 12+ GPUs of the capped account."""
    jobs = tuple(job(i, (4,), wait=100.0 - i) for i in range(4)) + (job(9, (4,), wait=1.0),)
    plan = governed_plan(HopsPolicy(), cluster(), jobs, 0.0, fragment=False, limits=None)
    assert gpus_of(plan, {"j0", "j1", "j2", "j3"}) > 8
    assert "limited" not in plan.diagnostics


def test_gpus_held_outside_the_planning_count_against_the_cap() -> None:
    # a non-Hops job of the account holds 6 GPUs: 2 are left, so only a 2-GPU choice fits
    limits = Limits(caps=(Cap("AssocGrpGRES", "account=a gres/gpu=8", frozenset({"j0", "j1", "x"}), 8,
                              held=MappingProxyType({"x": 6})),))
    jobs = (job(0, (1, 2, 4)), job(1, (4,)))
    kept, blocked = trim(jobs, limits)
    assert [j.requirements for j in kept] == [(1, 2)]
    assert blocked == {"j1": "AssocGrpGRES: account=a gres/gpu=8"}
    plan = governed_plan(HopsPolicy(), cluster(), jobs, 0.0, fragment=False, limits=limits)
    assert gpus_of(plan, {"j0", "j1"}) <= 2 and plan.assignments["j1"] is None


def test_a_job_count_cap_and_a_per_job_maximum() -> None:
    ids = frozenset({"j0", "j1", "j2"})
    limits = Limits(caps=(Cap("QOSMaxJobsPerUserLimit", "qos=q user=u MaxJobsPU=2", ids, 2, unit="jobs"),),
                    per_job=MappingProxyType({"j0": (2, "QOSMaxGRESPerJob: qos=q gres/gpu=2 per job")}))
    jobs = (job(0, (1, 2, 4, 8), wait=50.0), job(1, (1,), wait=40.0), job(2, (1,), wait=30.0))
    plan = governed_plan(HopsPolicy(), cluster(), jobs, 0.0, fragment=False, limits=limits)
    assert sum(1 for j in ids if plan.assignments[j]) == 2
    assert plan.assignments["j0"] is not None and sum(plan.assignments["j0"].values()) <= 2
    assert plan.diagnostics["limited"] == {"j2": "QOSMaxJobsPerUserLimit: qos=q user=u MaxJobsPU=2"}
    only = Limits(per_job=MappingProxyType({"j0": (0, "QOSMaxGRESPerJob: qos=q gres/gpu=0 per job")}))
    assert trim(jobs, only)[1] == {"j0": "QOSMaxGRESPerJob: qos=q gres/gpu=0 per job"}


def test_a_running_job_is_never_cut_and_counts_first() -> None:
    running = job(0, (8,), wait=0.0, current={"n0": 8})
    waiting = job(1, (4,), wait=500.0)
    limits = Limits(caps=(Cap("AssocGrpGRES", "account=a gres/gpu=8", frozenset({"j0", "j1"}), 8),))
    plan = Plan({"j0": MappingProxyType({"n0": 8}), "j1": MappingProxyType({"n1": 4})},
                {"priorities": {"j0": 0.0, "j1": 5.0}})
    assert over_caps(plan, (running, waiting), limits) == {"j1": "AssocGrpGRES: account=a gres/gpu=8"}


def test_blocked_jobs_are_never_placed_and_named() -> None:
    limits = Limits(blocked=MappingProxyType({"j1": "AssocMaxJobsLimit: account=a user=u MaxJobs=1"}))
    plan = governed_plan(SlurmBackfillPolicy(), cluster(), (job(0, (2,)), job(1, (2,))), 0.0, fragment=False,
                         limits=limits)
    assert plan.assignments["j1"] is None and plan.assignments["j0"] is not None
    assert plan.diagnostics["limited"] == {"j1": "AssocMaxJobsLimit: account=a user=u MaxJobs=1"}


def test_bad_caps_are_refused_with_the_field() -> None:
    with pytest.raises(ValueError, match="unit must be one of gpus, jobs"):
        Cap("X", "s", frozenset(), 1, unit="nodes")
    with pytest.raises(ValueError, match="limit must be 0 or more"):
        Cap("X", "s", frozenset(), -1)


@st.composite
def capped(draw):
    n_jobs = draw(st.integers(1, 9))
    jobs = tuple(job(i, tuple(sorted(set(draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3))))),
                     wait=draw(st.floats(0, 100))) for i in range(n_jobs))
    caps = []
    for k in range(draw(st.integers(1, 3))):
        members = frozenset(j.job_id for j in jobs if draw(st.booleans()))
        unit = draw(st.sampled_from(["gpus", "jobs"]))
        caps.append(Cap("AssocGrpGRES", f"cap{k}", members, draw(st.integers(0, 12)), unit))
    return jobs, Limits(caps=tuple(caps))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capped(), st.sampled_from(["hops", "backfill"]))
def test_no_plan_ever_exceeds_a_cap(case, which: str) -> None:
    jobs, limits = case
    policy = HopsPolicy(PlannerParams(time_limit=5.0)) if which == "hops" else SlurmBackfillPolicy()
    plan = governed_plan(policy, cluster(), jobs, 0.0, fragment=False, limits=limits)
    placed = plan.placed()
    for cap in limits.caps:
        total = sum(cap.amount(c) for j, c in placed.items() if j in cap.jobs)
        assert total <= cap.limit
    assert set(plan.assignments) == {j.job_id for j in jobs}
    for j in jobs:  # placed jobs keep to their own requirement sets
        if placed.get(j.job_id):
            assert sum(placed[j.job_id].values()) in j.requirements
