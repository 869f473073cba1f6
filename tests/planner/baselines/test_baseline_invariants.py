"""Properties every baseline keeps on random clusters and queues: valid, non-overcommitting placements
with GPU counts the policy's rules allow (checked for every policy by name)."""

from __future__ import annotations

from dataclasses import replace

from baseline_helpers import check_plan, cluster, job, typed_throughput
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.baselines.common import median_requirement
from planner.policies import BASELINES, make_policy
from planner.views import ClusterView, JobView

TYPES = ("v100", "p100", "k80")


@st.composite
def scenarios(draw) -> tuple[ClusterView, tuple[JobView, ...]]:
    sizes = draw(st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=5))
    spec = [(f"n{i}", TYPES[draw(st.integers(0, 2))], g) for i, g in enumerate(sizes)]
    view = cluster(spec)
    rates = {t: draw(st.floats(0.5, 4.0)) for t in TYPES}
    penalty = draw(st.floats(0.5, 1.0))
    thr = typed_throughput(view, rates, spread_penalty=penalty)
    free = {name: g for name, _t, g in spec}
    jobs = []
    for i in range(draw(st.integers(1, 8))):
        reqs = tuple(sorted(set(draw(st.lists(st.sampled_from([1, 2, 3, 4, 8, 16]), min_size=1, max_size=4)))))
        current = None
        if draw(st.booleans()):  # running somewhere it fits, with one of its counts, on one node
            want = reqs[0]
            spot = next((n for n, f in free.items() if f >= want), None)
            if spot is not None:
                free[spot] -= want
                current = {spot: want}
        jobs.append(job(f"j{i}", reqs, thr, submit=float(i), wait=draw(st.floats(0, 5000)),
                        age=draw(st.floats(100, 10000)), total=draw(st.floats(1e3, 1e6)),
                        current=current, run_time=100.0 if current else 0.0))
    return view, tuple(jobs)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_policy_places_validly(scenario) -> None:
    view, jobs = scenario
    by_id = {j.job_id: j for j in jobs}
    for name in BASELINES:
        policy = make_policy(name)
        for now in (0.0, 360.0):  # two rounds: the second exercises kept state (counters, leases)
            plan = policy.plan(view, jobs, now)
            check_plan(view, jobs, plan)
            for jid, config in plan.placed().items():
                j = by_id[jid]
                gpus = sum(config.values())
                types = {view.node(n).gpu_type for n in config}
                assert len(types) == 1, (name, jid, config)
                if name.startswith("gavel"):
                    assert gpus == median_requirement(j), (name, jid, config)
                elif name in ("slurm-backfill", "slurm-multifactor"):
                    assert config == j.current or gpus == j.requirements[-1], (name, jid, config)
                else:
                    assert gpus in j.requirements, (name, jid, config)
            if name in ("slurm-backfill", "slurm-multifactor"):  # never preempt
                assert all(plan.assignments[j.job_id] == j.current for j in jobs if j.current)
        if policy.supports_fragment_plans:  # a fragment plan: pending jobs only, idle GPUs only
            held = {n.name: 0 for n in view.nodes}
            for j in jobs:
                for n, g in (j.current or {}).items():
                    held[n] += g
            idle = ClusterView(tuple(replace(n, free_gpus=n.free_gpus - held[n.name]) for n in view.nodes))
            pending = tuple(j for j in jobs if not j.current)
            plan = policy.plan(idle, pending, 400.0, fragment=True)
            check_plan(idle, pending, plan)
