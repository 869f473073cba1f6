"""HopsPolicy end to end: properties of every plan (hypothesis), fragment plans, fallbacks."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.hops import HopsPolicy
from planner.ilp import Solution
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, Policy


def thr_model(speed: dict[str, float], penalty: float, classes: dict[str, str]):
    def thr(cfg: Config) -> float:
        rate = min(speed[classes[n]] for n in cfg)
        return rate * sum(cfg.values()) ** 0.9 * (penalty if len(cfg) > 1 else 1.0)
    return thr


@st.composite
def scenarios(draw):
    n_nodes = draw(st.integers(2, 7))
    nodes = []
    for i in range(n_nodes):
        gpu_type = draw(st.sampled_from(["k80", "v100"]))
        cls = gpu_type + draw(st.sampled_from(["-a", "-b"]))
        total = draw(st.sampled_from([4, 8]))
        nodes.append(NodeView(f"n{i}", gpu_type, cls, total, draw(st.integers(0, total))))
    cluster = ClusterView(tuple(nodes))
    classes = {n.name: n.server_class for n in nodes}
    jobs = []
    for i in range(draw(st.integers(1, 9))):
        reqs = tuple(sorted(set(draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]), min_size=1, max_size=3)))))
        sens = draw(st.sampled_from([1.0, 1.2, 1.5, 2.0]))
        speed = {n.server_class: draw(st.floats(0.5, 3.0)) for n in nodes}
        jobs.append(JobView(f"j{i}", reqs, submit_time=float(i), wait=draw(st.floats(0, 100)),
                            age=draw(st.floats(1, 100)), sensitivity=sens,
                            throughput=thr_model(speed, 1 / sens, classes)))
    return cluster, tuple(jobs)


def check_plan(cluster: ClusterView, jobs: tuple[JobView, ...], plan, sigma: float, fragment: bool) -> None:
    d = plan.diagnostics
    assert set(plan.assignments) == {j.job_id for j in jobs}
    used: dict[str, int] = defaultdict(int)
    by_id = {j.job_id: j for j in jobs}
    window = set(d["window"])
    queue = d["queue"]
    size = d["window_size"]
    assert set(queue[:size]) | set(d["fillers"]) == window
    if not fragment:
        assert d["fillers"] == []
    # the window is the shortest queue prefix whose minimum requirements reach the free GPUs
    mins = [by_id[j].requirements[0] for j in queue]
    free = cluster.free_gpus
    assert size == len(queue) or (free <= sum(mins[:size]) and (size == 1 or sum(mins[: size - 1]) < free))
    if d["backfilled"]:
        assert any(plan.assignments[j] is None for j in d["window"])
        assert not set(d["backfilled"]) & window
    for job_id, cfg in plan.placed().items():
        job = by_id[job_id]
        # only window jobs (and fillers) are placed, and jobs backfilled behind a window job that could
        # not be placed (planner.backfill)
        assert job_id in window or job_id in d["backfilled"]
        assert all(g > 0 for g in cfg.values())
        assert sum(cfg.values()) in job.requirements  # the config is one of the job's requirements
        types = {cluster.node(n).gpu_type for n in cfg}
        assert len(types) == 1  # a config stays within one GPU type
        if len(cfg) > 1 and job.sensitivity > sigma:  # a sensitive job spans nodes only when it must
            largest = max(n.total_gpus for n in cluster.nodes_of_type(types.pop()))
            assert job.requirements[0] > largest
        for n, g in cfg.items():
            used[n] += g
    for n in cluster.nodes:  # no node over-allocated
        assert used[n.name] <= n.free_gpus


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenarios(), formulation=st.sampled_from(["compact", "plain"]), fragment=st.booleans(),
       lam=st.sampled_from([0.0, 1.0, 4.0]))
def test_every_plan_is_valid(case, formulation: str, fragment: bool, lam: float) -> None:
    cluster, jobs = case
    params = PlannerParams(formulation=formulation, lambda_=lam)
    plan = HopsPolicy(params).plan(cluster, jobs, now=0.0, fragment=fragment)
    check_plan(cluster, jobs, plan, params.sigma, fragment)
    assert plan.diagnostics["fallback"] is None


def node(name: str, free: int, total: int = 8, cls: str = "v100-a") -> NodeView:
    return NodeView(name, "v100", cls, total, free)


def simple_job(job_id: str, reqs, sens: float, wait: float, current=None) -> JobView:
    classes = defaultdict(lambda: "v100-a")
    return JobView(job_id, tuple(reqs), 0.0, wait, 10.0, sens,
                   thr_model(defaultdict(lambda: 1.0), 1 / sens, classes), current=current)


def test_fragment_plan_admits_low_sensitivity_fillers() -> None:
    # 2 + 2 idle GPUs on two nodes. The head job is sensitive and needs 4 on one node: it cannot run.
    # Behind it (lower LR) a low-sensitivity 4-GPU job could span both nodes.
    cluster = ClusterView((node("n0", 2), node("n1", 2)))
    head = simple_job("head", (4,), sens=2.0, wait=50.0)
    filler = simple_job("filler", (4,), sens=1.1, wait=10.0)
    policy = HopsPolicy()
    round_plan = policy.plan(cluster, (head, filler), now=0.0)
    assert round_plan.placed() == {}  # the round plan's window is just the head job
    assert round_plan.diagnostics["window"] == ["head"]
    frag = policy.plan(cluster, (head, filler), now=10.0, fragment=True)
    assert frag.diagnostics["fillers"] == ["filler"]
    assert frag.placed() == {"filler": {"n0": 2, "n1": 2}}
    assert frag.diagnostics["plan_of_round"] == 1
    assert policy.plan(cluster, (head, filler), now=20.0, fragment=True).diagnostics["plan_of_round"] == 2
    assert policy.plan(cluster, (head, filler), now=30.0).diagnostics["plan_of_round"] == 0


def test_running_job_keeps_its_nodes_when_its_config_is_unchanged() -> None:
    cluster = ClusterView((node("n0", 8), node("n1", 8), node("n2", 8)))
    running = simple_job("r", (2,), sens=2.0, wait=1.0, current={"n2": 2})
    plan = HopsPolicy().plan(cluster, (running,), now=0.0)
    assert plan.placed() == {"r": {"n2": 2}}


def test_priority_is_selectable_by_name() -> None:
    cluster = ClusterView((node("n0", 4),))
    old = JobView("old", (4,), submit_time=0.0, wait=1.0, age=100.0, sensitivity=1.0, throughput=lambda c: 1.0)
    new = JobView("new", (4,), submit_time=5.0, wait=50.0, age=10.0, sensitivity=1.0, throughput=lambda c: 1.0)
    lr = HopsPolicy(PlannerParams(priority="lr")).plan(cluster, (old, new), now=10.0)
    fifo = HopsPolicy(PlannerParams(priority="fifo")).plan(cluster, (old, new), now=10.0)
    assert lr.placed() == {"new": {"n0": 4}} and lr.diagnostics["queue"] == ["new", "old"]
    assert fifo.placed() == {"old": {"n0": 4}} and fifo.diagnostics["queue"] == ["old", "new"]
    assert HopsPolicy(PlannerParams(priority="ftf")).lambda_ == 2.0


class FailingSolver(HopsPolicy):
    """A policy whose solver returns nothing (as on a timeout without incumbent) after ``ok`` calls."""

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.ok = ok

    def _solve(self, cands, w, cluster, current):
        if self.ok > 0:
            self.ok -= 1
            return super()._solve(cands, w, cluster, current)
        return Solution({}, None, None, None, "none", 0.0, 0, 0, 0, "compact", "CBC")


def test_no_solution_falls_back_to_previous_then_greedy() -> None:
    cluster = ClusterView((node("n0", 8), node("n1", 8)))
    jobs = (simple_job("a", (4, 8), 1.0, 30.0), simple_job("b", (8,), 1.0, 20.0), simple_job("c", (2,), 1.0, 10.0))
    greedy_only = FailingSolver(ok=0).plan(cluster, jobs, now=0.0)
    assert greedy_only.diagnostics["fallback"] == "greedy"
    # greedy by LR order a, b, c: a takes 8 GPUs (its best G), b the other node, c nothing
    assert sorted(sum(c.values()) for c in greedy_only.placed().values()) == [8, 8]
    assert "c" not in greedy_only.placed()
    policy = FailingSolver(ok=1)
    first = policy.plan(cluster, jobs, now=0.0)
    assert first.diagnostics["fallback"] is None
    second = policy.plan(cluster, jobs, now=360.0)
    assert second.diagnostics["fallback"] == "previous"
    assert second.placed() == first.placed()


def test_a_fallback_round_with_a_job_held_in_place_keeps_it_and_values_the_rest() -> None:
    # h runs inside its minimum run time (held in place); the solver returns nothing: the greedy plan
    # places w beside it, and the plan's objective is that of the jobs it planned (held ones are not)
    cluster = ClusterView((node("n0", 8), node("n1", 8)))
    held = simple_job("h", (8,), 1.0, 5.0, current={"n0": 8})
    plan = FailingSolver(ok=0).plan(cluster, (held, simple_job("w", (8,), 1.0, 30.0)), now=0.0)
    assert plan.diagnostics["fallback"] == "greedy" and plan.diagnostics["in_place"] == {"h": "min_run_time"}
    assert dict(plan.assignments["h"] or {}) == {"n0": 8} and dict(plan.assignments["w"] or {}) == {"n1": 8}
    assert plan.diagnostics["objective"] > 0.0


def test_hops_is_a_policy_and_params_are_checked() -> None:
    policy = HopsPolicy()
    assert isinstance(policy, Policy) and policy.name == "hops" and policy.supports_fragment_plans
    with pytest.raises(ValueError, match="CBC, HiGHS"):
        PlannerParams(solver="gurobi")
    with pytest.raises(ValueError, match="gap"):
        PlannerParams(gap=1.5)


def test_empty_queue_and_full_cluster_give_empty_plans() -> None:
    cluster = ClusterView((node("n0", 0), node("n1", 0)))
    assert HopsPolicy().plan(cluster, (), now=0.0).assignments == {}
    waiting = simple_job("w", (1,), 1.0, 5.0)
    plan = HopsPolicy().plan(cluster, (waiting,), now=0.0)
    assert plan.assignments == {"w": None} and plan.diagnostics["fallback"] is None


def test_wait_offset_is_added_to_every_wait_the_planner_reads():
    """``wait_offset`` (a measurement of the planner's own noise) shifts every job's wait, and only that."""
    cluster = ClusterView((NodeView("n0", "v100", "v100-a", 4, 4),))
    jobs = tuple(JobView(f"j{i}", (4,), submit_time=float(i), wait=w, age=100.0, sensitivity=1.0,
                         throughput=lambda cfg: float(sum(cfg.values())))
                 for i, w in enumerate((10.0, 30.0)))
    plain = HopsPolicy(PlannerParams()).plan(cluster, jobs, 100.0)
    offset = HopsPolicy(PlannerParams(wait_offset=0.5)).plan(cluster, jobs, 100.0)
    assert plain.diagnostics["priorities"] == pytest.approx({"j0": 0.1, "j1": 0.3})
    assert offset.diagnostics["priorities"] == pytest.approx({"j0": 0.105, "j1": 0.305})
    assert plain.assignments == offset.assignments == {"j0": None, "j1": {"n0": 4}}
    with pytest.raises(ValueError, match="wait_offset"):
        PlannerParams(wait_offset=2.0)
