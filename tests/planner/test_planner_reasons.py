"""planner.reasons: every waiting job a planning saw has a reason, in the one vocabulary (issue 35)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.governance import Cap, Limits, governed_plan
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.reasons import DESCRIPTIONS, DETAIL_MAX, Code, Why, plan_reasons
from planner.views import ClusterView, Config, JobView, NodeView

from tests.planner.test_planner_hops import scenarios


def _job(job_id: str, reqs: tuple[int, ...], wait: float = 10.0, current: Config | None = None,
         placed_for: float = 0.0) -> JobView:
    return JobView(job_id, reqs, submit_time=0.0, wait=wait, age=100.0, sensitivity=1.0,
                   throughput=lambda cfg: float(sum(cfg.values())), total_samples=1e6, current=current,
                   placed_for=placed_for)


def _cluster(*free: int) -> ClusterView:
    return ClusterView(tuple(NodeView(f"n{i}", "v100", "v100-a", 4, f) for i, f in enumerate(free)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans(), st.booleans())
def test_every_waiting_job_has_exactly_one_reason_and_placed_ones_start(case, fragment: bool, capped: bool) -> None:
    cluster, jobs = case
    limits = Limits(caps=(Cap("AssocGrpGRES", "account=a gres/gpu=2", frozenset(j.job_id for j in jobs[::2]), 2),)) \
        if capped else None
    plan = governed_plan(HopsPolicy(PlannerParams(time_limit=5.0)), cluster, jobs, 0.0, fragment=fragment, limits=limits)
    reasons = plan_reasons(plan.assignments, plan.diagnostics, jobs)
    assert set(reasons) == {j.job_id for j in jobs if not j.current}
    for job_id, why in reasons.items():
        assert why.code in DESCRIPTIONS and why.text() and why.name
        assert (why.code is Code.STARTING) == bool(plan.assignments.get(job_id))
        if job_id in plan.diagnostics.get("limited", {}):
            assert why.code is Code.LIMIT and why.name == "AssocGrpGRES"


def test_behind_the_window_says_how_many_are_ahead() -> None:
    cluster = _cluster(4)  # 4 free GPUs: the window is the first job (4 GPUs); the others wait behind it
    jobs = (_job("a", (4,), wait=30.0), _job("b", (4,), wait=20.0), _job("c", (4,), wait=10.0))
    plan = HopsPolicy().plan(cluster, jobs, 0.0)
    reasons = plan_reasons(plan.assignments, plan.diagnostics, jobs)
    assert reasons["a"].code is Code.STARTING
    assert reasons["b"] == Why(Code.OUTSIDE_WINDOW, "1 job(s) ahead")
    assert reasons["c"] == Why(Code.OUTSIDE_WINDOW, "2 job(s) ahead")


def test_in_the_window_but_nothing_fits() -> None:
    # 4 GPUs idle on two 8-GPU nodes; the job is rigid at 8
    cluster = ClusterView(tuple(NodeView(f"n{i}", "v100", "v100-a", 8, 2) for i in range(2)))
    jobs = (_job("a", (8,)),)
    plan = HopsPolicy().plan(cluster, jobs, 0.0, fragment=True)
    why = plan_reasons(plan.assignments, plan.diagnostics, jobs)["a"]
    assert why.code is Code.NO_FIT and "8" in why.detail


def test_waiting_for_running_jobs_minimum_run_time() -> None:
    cluster = _cluster(4)  # the running job holds all 4 GPUs and has run 10 s of a 600 s minimum
    running = _job("r", (4,), current={"n0": 4}, placed_for=10.0)
    waiting = _job("w", (4,), wait=1e6)  # a far higher latency ratio: it would take the GPUs but may not
    plan = HopsPolicy(PlannerParams(min_run_time=600.0)).plan(cluster, (running, waiting), 0.0)
    assert plan.diagnostics["in_place"] == {"r": "min_run_time"}
    why = plan_reasons(plan.assignments, plan.diagnostics, (running, waiting))["w"]
    assert why.code is Code.MIN_RUN_TIME
    assert "r" not in plan_reasons(plan.assignments, plan.diagnostics, (running, waiting))


def test_unservable_and_a_policy_that_says_nothing() -> None:
    jobs = (_job("big", (16,)), _job("x", (1,)))
    plan = HopsPolicy().plan(_cluster(4), jobs, 0.0)
    reasons = plan_reasons(plan.assignments, plan.diagnostics, jobs)
    assert reasons["big"].code is Code.UNSERVABLE and "16" in reasons["big"].detail
    # a baseline without diagnostics: still a reason for each
    silent = plan_reasons({"big": None, "x": None}, {}, jobs)
    assert {w.code for w in silent.values()} == {Code.NOT_PLANNED}


def test_a_detail_is_one_bounded_line_and_round_trips() -> None:
    why = Why(Code.SET_ASIDE, "line one\nline two\t" + "x" * 5000)
    assert "\n" not in why.detail and len(why.detail) == DETAIL_MAX
    assert Why.from_dict(why.as_dict()) == why
    assert Why.from_dict({"code": "NoSuchCode"}) is None and Why.from_dict("junk") is None
    assert Why(Code.LIMIT, "QOSMaxGRESPerUser: qos=normal").name == "QOSMaxGRESPerUser"
    assert Why(Code.LIMIT, "no name here: x").name == "HopsLimit"
