"""Every baseline keeps a job on the nodes it is allowed (``JobView.nodes``: its own partition's, or the
GPU types an imported trace's constraint names), as Hops does (planner/eligible.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.policies import BASELINES, make_policy
from planner.views import ClusterView, Config, JobView, NodeView

#: the fast, idle nodes come first in cluster order: a policy that ignored ``nodes`` would take them
FAST = frozenset({"f1", "f2"})
SLOW = frozenset({"s1", "s2"})
CLUSTER = ClusterView((NodeView("f1", "v100", "v100", 4, 4), NodeView("f2", "v100", "v100", 4, 4),
                       NodeView("s1", "k80", "k80", 4, 4), NodeView("s2", "k80", "k80", 4, 4)))
SPEED = {"f1": 4.0, "f2": 4.0, "s1": 1.0, "s2": 1.0}


def thr(cfg: Config) -> float:
    return min(SPEED[n] for n in cfg) * sum(cfg.values())


def job(job_id: str, reqs: tuple[int, ...], nodes: frozenset[str] | None, *, submit: float = 0.0,
        current: Config | None = None) -> JobView:
    return JobView(job_id, reqs, submit_time=submit, wait=10.0, age=1000.0, sensitivity=1.0, throughput=thr,
                   total_samples=1e6, current=current, nodes=nodes, run_time=100.0 if current else 0.0)


def test_each_baseline_runs_a_confined_job_on_its_own_nodes_though_faster_ones_are_idle() -> None:
    for name in BASELINES:
        jobs = (job("slow-only", (2,), SLOW), job("free", (2,), None, submit=1.0))
        plan = make_policy(name).plan(CLUSTER, jobs, 0.0)
        got = plan.assignments["slow-only"]
        assert got, (name, plan.assignments)  # room on its own nodes: it runs
        assert set(got) <= SLOW, (name, dict(got))


def test_a_job_whose_nodes_are_all_busy_waits_instead_of_taking_others() -> None:
    busy = ClusterView(tuple(NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus,
                                      0 if n.name in SLOW else n.total_gpus) for n in CLUSTER.nodes))
    for name in BASELINES:
        plan = make_policy(name).plan(busy, (job("slow-only", (1, 2), SLOW),), 0.0)
        assert not plan.assignments.get("slow-only"), (name, dict(plan.assignments["slow-only"] or {}))


def test_backfill_reserves_a_confined_job_on_its_own_nodes_and_backfills_the_rest() -> None:
    # s1, s2 held until t=600 by a running job (a round plan counts its GPUs as free and takes them back);
    # the confined job reserves there, and a free job of any length still starts on the idle fast nodes
    # (they are not in the reservation)
    for name in ("slurm-backfill", "slurm-multifactor"):
        holder = JobView("holder", (8,), submit_time=0.0, wait=0.0, age=600.0, sensitivity=1.0, throughput=thr,
                         total_samples=1e6, current={"s1": 4, "s2": 4}, run_time=100.0, time_limit=600.0)
        waiting = job("slow-only", (8,), SLOW, submit=1.0)
        long = JobView("long", (4,), submit_time=2.0, wait=0.0, age=1e5, sensitivity=1.0, throughput=thr,
                       total_samples=1e6, time_limit=1e5)
        plan = make_policy(name).plan(CLUSTER, (holder, waiting, long), 100.0)
        reservation = plan.diagnostics["reservation"]
        assert reservation and reservation["job"] == "slow-only", (name, reservation)
        assert set(reservation["config"]) <= SLOW, (name, reservation)
        assert plan.assignments["long"] and set(plan.assignments["long"]) <= FAST, (name, plan.assignments)


@st.composite
def scenarios(draw) -> tuple[ClusterView, tuple[JobView, ...]]:
    nodes, part = [], {}
    for i in range(draw(st.integers(2, 6))):
        gpu_type = draw(st.sampled_from(["k80", "v100"]))
        total = draw(st.sampled_from([2, 4, 8]))
        nodes.append(NodeView(f"n{i}", gpu_type, gpu_type, total, total))
        part[f"n{i}"] = draw(st.sampled_from(["p", "q"]))
    sets = {p: frozenset(n for n, q in part.items() if q == p) for p in ("p", "q")}
    jobs = []
    for i in range(draw(st.integers(1, 7))):
        reqs = tuple(sorted(set(draw(st.lists(st.sampled_from([1, 2, 4, 8, 12]), min_size=1, max_size=3)))))
        jobs.append(JobView(f"j{i}", reqs, submit_time=float(i), wait=draw(st.floats(0, 100)), age=1000.0,
                            sensitivity=1.0, throughput=lambda c: float(sum(c.values())), total_samples=1e6,
                            nodes=draw(st.sampled_from([sets["p"], sets["q"], None]))))
    return ClusterView(tuple(nodes)), tuple(jobs)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(sorted(BASELINES)))
def test_no_baseline_places_a_job_outside_its_nodes(scenario, name) -> None:
    cluster, jobs = scenario
    policy = make_policy(name)
    for now in (0.0, 360.0):
        plan = policy.plan(cluster, jobs, now)
        for j in jobs:
            cfg = plan.assignments.get(j.job_id)
            if cfg and j.nodes is not None:
                assert set(cfg) <= j.nodes, (name, j.job_id, dict(cfg), sorted(j.nodes))
