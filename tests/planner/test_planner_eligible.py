"""Jobs allowed only some nodes (JobView.nodes: one of several Hops partitions) are planned there only."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.configs import generate_configs, iter_configs
from planner.eligible import confine, eligibility_classes
from planner.hops import HopsPolicy
from planner.servable import why_unservable
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView


def thr_of(speed: dict[str, float]):
    def thr(cfg: Config) -> float:
        return min(speed[n] for n in cfg) * sum(cfg.values()) ** 0.9
    return thr


def job(job_id: str, reqs: tuple[int, ...], nodes: frozenset[str] | None, speed: dict[str, float], *,
        current: Config | None = None, wait: float = 10.0) -> JobView:
    return JobView(job_id, reqs, submit_time=0.0, wait=wait, age=100.0, sensitivity=1.0, throughput=thr_of(speed),
                   current=current, nodes=nodes, run_time=1000.0 if current else 0.0,
                   placed_for=1000.0 if current else 0.0)


#: two partitions over one GPU type and one declared class: the compact ILP would take them as interchangeable
NEW = frozenset({"a1", "a2"})
OLD = frozenset({"b1", "b2"})
CLUSTER = ClusterView((NodeView("a1", "a100", "dgx", 4, 4), NodeView("a2", "a100", "dgx", 4, 4),
                       NodeView("b1", "a100", "dgx", 4, 4), NodeView("b2", "a100", "dgx", 4, 4)))
FAST_B = {"a1": 1.0, "a2": 1.0, "b1": 5.0, "b2": 5.0}  # every job would rather run on the b nodes


def test_a_job_gets_configs_on_its_own_nodes_only() -> None:
    j = job("1", (1, 2, 4, 8), NEW, FAST_B)
    for cfg in [*generate_configs(j, CLUSTER, 1.4), *generate_configs(j, CLUSTER, 1.4, one_per_class=True),
                *iter_configs(j, CLUSTER, 1.4)]:
        assert set(cfg) <= NEW
    assert any(len(cfg) == 2 for cfg in generate_configs(j, CLUSTER, 1.4))  # 8 GPUs: over both of its nodes
    assert confine(CLUSTER, job("2", (1,), None, FAST_B)) is CLUSTER


def test_a_job_asking_more_than_its_partition_has_is_unservable_there() -> None:
    assert "has 8" in why_unservable(job("1", (12,), NEW, FAST_B), CLUSTER, 1.4)
    assert why_unservable(job("2", (12,), None, FAST_B), CLUSTER, 1.4) == ""


def test_classes_are_split_where_jobs_are_allowed_different_nodes() -> None:
    split = eligibility_classes(CLUSTER, [job("1", (1,), NEW, FAST_B), job("2", (1,), OLD, FAST_B)])
    classes = {n.name: n.server_class for n in split.nodes}
    assert classes["a1"] == classes["a2"] != classes["b1"] == classes["b2"]
    assert eligibility_classes(CLUSTER, [job("1", (1,), None, FAST_B)]) is CLUSTER


def test_the_policy_keeps_every_job_inside_its_nodes_even_where_others_are_faster_and_idle() -> None:
    for formulation in ("compact", "plain"):
        policy = HopsPolicy(PlannerParams(formulation=formulation))
        jobs = (job("1", (4,), NEW, FAST_B), job("2", (2,), NEW, FAST_B), job("3", (1,), None, FAST_B))
        plan = policy.plan(CLUSTER, jobs, 100.0)
        assert set(plan.assignments["1"] or {}) <= NEW and plan.assignments["1"]
        assert set(plan.assignments["2"] or {}) <= NEW and plan.assignments["2"]
        assert set(plan.assignments["3"] or {}) <= OLD  # free to take the fast nodes


def test_a_node_of_the_same_class_in_another_partition_never_stands_for_a_jobs_own() -> None:
    # one class over both partitions: without the split the compact model realises j2's {n0: 1} on n1
    cluster = ClusterView((NodeView("n0", "v100", "x", 4, 4), NodeView("n1", "v100", "x", 4, 4)))
    speed = {"n0": 2.0, "n1": 2.0}
    jobs = (job("j0", (1,), frozenset({"n1"}), speed, current={"n1": 1}),
            job("j1", (4,), frozenset({"n0"}), speed, current={"n0": 4}),
            job("j2", (1,), frozenset({"n0"}), speed))
    plan = HopsPolicy(PlannerParams(min_run_time=0.0)).plan(cluster, jobs, 100.0)
    assert not plan.assignments["j2"] or set(plan.assignments["j2"]) == {"n0"}
    assert all(set(plan.assignments[j.job_id] or {}) <= (j.nodes or set()) for j in jobs)


@st.composite
def scenarios(draw):
    nodes, part = [], {}
    for i in range(draw(st.integers(2, 6))):
        gpu_type = draw(st.sampled_from(["k80", "v100"]))
        total = draw(st.sampled_from([4, 8]))
        nodes.append(NodeView(f"n{i}", gpu_type, gpu_type + "-x", total, draw(st.integers(0, total))))
        part[f"n{i}"] = draw(st.sampled_from(["p", "q"]))
    sets = {p: frozenset(n for n, q in part.items() if q == p) for p in ("p", "q")}
    speed = {n.name: draw(st.floats(0.5, 3.0)) for n in nodes}
    jobs = []
    for i in range(draw(st.integers(1, 7))):
        reqs = tuple(sorted(set(draw(st.lists(st.sampled_from([1, 2, 4, 8, 12]), min_size=1, max_size=3)))))
        allowed = draw(st.sampled_from([sets["p"], sets["q"], None]))
        current = None
        if draw(st.booleans()):  # running on one node of its own with room
            room = [n for n in nodes if (allowed is None or n.name in allowed) and n.total_gpus >= reqs[0]]
            if room:
                current = {draw(st.sampled_from(room)).name: reqs[0]}
        jobs.append(job(f"j{i}", reqs, allowed, speed, current=current, wait=draw(st.floats(0, 100))))
    return ClusterView(tuple(nodes)), tuple(jobs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["compact", "plain"]), st.booleans())
def test_no_plan_places_a_job_outside_its_nodes(scenario, formulation, fragment) -> None:
    cluster, jobs = scenario
    if not fragment:  # running jobs' GPUs count free in a round plan
        busy: dict[str, int] = {}
        for j in jobs:
            for n, g in (j.current or {}).items():
                busy[n] = busy.get(n, 0) + g
        cluster = ClusterView(tuple(NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus,
                                             min(n.total_gpus, max(n.free_gpus, busy.get(n.name, 0))))
                                    for n in cluster.nodes))
    plan = HopsPolicy(PlannerParams(formulation=formulation, min_run_time=0.0)).plan(cluster, jobs, 100.0,
                                                                                    fragment=fragment)
    for j in jobs:
        cfg = plan.assignments.get(j.job_id)
        if cfg and j.nodes is not None:
            assert set(cfg) <= j.nodes, (j.job_id, dict(cfg), sorted(j.nodes))
