"""The placement ILP (eq. 11-13): the paper's Table 1 example, λ = 0 and λ → ∞, brute force, and the
compact formulation against the plain one, with CBC and HiGHS."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from planner.configs import generate_configs
from planner.greedy import fill_leftovers, greedy_plan
from planner.ilp import Candidate, signature, solve_compact, solve_plain
from planner.priorities import weights
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

SOLVERS = ("CBC", "HiGHS")

# Table 1 of the paper (G per job and config), with placements chosen here on two 4-GPU nodes A, B.
TABLE1: dict[str, list[tuple[dict[str, int], float]]] = {
    "job1": [({"A": 1}, 1.0), ({"A": 2}, 1.8), ({"A": 2, "B": 2}, 2.6)],
    "job2": [({"B": 2}, 2.0), ({"A": 1}, 1.0), ({"B": 3}, 3.0), ({"A": 2, "B": 2}, 4.1)],
    "job3": [({"A": 1}, 1.2), ({"B": 1}, 1.6), ({"A": 2}, 1.0)],
    "job4": [({"B": 1}, 1.0), ({"B": 2}, 1.8), ({"A": 4}, 3.2)],
}
CAPACITY = {"A": 4, "B": 4}


def table1() -> list[Candidate]:
    return [Candidate(j, freeze_config(cfg), g) for j, rows in TABLE1.items() for cfg, g in rows]


def chosen_index(assignments: dict[str, Config | None]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for j, rows in TABLE1.items():
        cfg = assignments.get(j)
        out[j] = None if not cfg else 1 + [freeze_config(c) for c, _ in rows].index(cfg)
    return out


@pytest.mark.parametrize("solver", SOLVERS)
def test_table1_lambda0_maximises_total_gain(solver: str) -> None:
    # λ = 0: every weight 1. By hand: job2 takes its best config 4 ({A:2,B:2}, 4.1), leaving A:2, B:2;
    # job1 config 2 ({A:2}, 1.8), job3 config 2 ({B:1}, 1.6), job4 config 1 ({B:1}, 1.0):
    # 4.1 + 1.8 + 1.6 + 1.0 = 8.5. The alternative with job4 on A:4 (3.2) leaves only B for the rest:
    # job2 {B:3} 3.0 + job3 {B:1} 1.6 = 7.8 < 8.5.
    w = weights({"job1": 4, "job2": 3, "job3": 2, "job4": 1}, 0.0)
    sol = solve_plain(table1(), w, CAPACITY, solver=solver, gap=0.0)
    assert sol.objective == pytest.approx(8.5)
    assert chosen_index(sol.assignments) == {"job1": 2, "job2": 4, "job3": 2, "job4": 1}


@pytest.mark.parametrize("solver", SOLVERS)
def test_table1_priorities_change_the_answer(solver: str) -> None:
    # priorities job4 > job3 > job2 > job1 (4, 3, 2, 1), λ = 1: job4 takes A:4 (4 · 3.2 = 12.8),
    # job3 B:1 (3 · 1.6 = 4.8), job2 B:3 (2 · 3 = 6); job1 finds no room: 23.6 (scaled by 1/4 here).
    # The λ = 0 optimum is worth 1·1.8 + 2·4.1 + 3·1.6 + 4·1.0 = 18.8 under these weights.
    w = weights({"job1": 1, "job2": 2, "job3": 3, "job4": 4}, 1.0)
    sol = solve_plain(table1(), w, CAPACITY, solver=solver, gap=0.0)
    assert sol.objective == pytest.approx(23.6 / 4)
    assert chosen_index(sol.assignments) == {"job1": None, "job2": 3, "job3": 2, "job4": 3}


def test_table1_large_lambda_is_the_greedy_priority_order() -> None:
    # greedy by hand: job4 takes its best, A:4 (3.2); job3 its best that fits, B:1 (1.6); job2 B:3 (3.0);
    # job1 finds A full. λ = 10 already makes each weight outweigh everything below it.
    prios = {"job1": 1, "job2": 2, "job3": 3, "job4": 4}
    order = ["job4", "job3", "job2", "job1"]
    greedy = greedy_plan(order, table1(), CAPACITY)
    assert chosen_index(greedy) == {"job1": None, "job2": 3, "job3": 2, "job4": 3}
    sol = solve_plain(table1(), weights(prios, 10.0), CAPACITY, gap=0.0)
    assert sol.assignments == greedy
    # at λ = 30 job1's and job2's weights (≤ 2^-30) are below solver tolerances: the solver may drop
    # them, and the leftover fill the policy applies restores the greedy answer
    sol = solve_plain(table1(), weights(prios, 30.0), CAPACITY, gap=0.0)
    assert fill_leftovers(sol.assignments, order, table1(), CAPACITY) == greedy


# ------------------------------------------------------------- random instances


def class_throughput(speeds: dict[str, float], classes: dict[str, str], penalty: float):
    def thr(cfg: Config) -> float:
        gpus = sum(cfg.values())
        rate = min(speeds[classes[n]] for n in cfg)
        return rate * gpus ** 0.9 * (penalty if len(cfg) > 1 else 1.0)
    return thr


def instance(seed: int, n_nodes: int, n_jobs: int) -> tuple[ClusterView, list[JobView]]:
    rng = random.Random(seed)
    classes = ["a", "b"]
    nodes = tuple(NodeView(f"n{i}", "t" + classes[i % 2], classes[i % 2], 4, rng.choice((0, 1, 2, 3, 4, 4)))
                  for i in range(n_nodes))
    by_class = {n.name: n.server_class for n in nodes}
    jobs = []
    for i in range(n_jobs):
        r1 = rng.choice((1, 1, 2, 3, 4, 6))
        reqs = tuple(sorted({r1, min(8, r1 * 2)}))
        sens = rng.choice((1.1, 1.3, 1.6))
        speeds = {"a": rng.uniform(1, 2), "b": rng.uniform(1, 3)}
        jobs.append(JobView(f"j{i}", reqs, 0.0, rng.uniform(0, 10), 1.0, sens,
                            class_throughput(speeds, by_class, 1 / sens)))
    return ClusterView(nodes), jobs


def gains(job: JobView, configs: list[Config]) -> list[Candidate]:
    rated = [(c, job.throughput(c)) for c in configs]
    low = min(t for _, t in rated)
    return [Candidate(job.job_id, c, t / low) for c, t in rated]


def closure(cluster: ClusterView, cfg: Config) -> list[Config]:
    """Every config with the same signature (the same pieces on other interchangeable nodes)."""
    by_name = {n.name: n for n in cluster.nodes}
    sig = signature(cfg, by_name)
    if len(cfg) == 1:
        (_, g), = cfg.items()
        (t, c, _), _ = sig[0]
        return [freeze_config({n.name: g}) for n in cluster.nodes if n.server_class == c and n.free_gpus >= g]
    pieces = defaultdict(list)
    for key, g in sig:
        pieces[key].append(g)
    per_key = []
    for key, gs in pieces.items():
        names = [n.name for n in cluster.nodes if (n.gpu_type, n.server_class, n.free_gpus) == key]
        per_key.append([dict(zip(perm, gs)) for perm in itertools.permutations(names, len(gs))])
    out = []
    for combo in itertools.product(*per_key):
        merged: dict[str, int] = {}
        for part in combo:
            merged.update(part)
        out.append(freeze_config(merged))
    return out


def brute_force(cands: list[Candidate], w: dict[str, float], capacity: dict[str, int]) -> float:
    by_job = defaultdict(list)
    for c in cands:
        by_job[c.job_id].append(c)
    jobs = list(by_job)
    best = 0.0
    for choice in itertools.product(*[[None, *by_job[j]] for j in jobs]):
        used: dict[str, int] = defaultdict(int)
        for c in choice:
            for n, g in (c.config.items() if c else ()):
                used[n] += g
        if all(used[n] <= capacity[n] for n in used):
            best = max(best, sum(w[c.job_id] * c.gain for c in choice if c))
    return best


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), lam=st.sampled_from([0.0, 1.0, 2.0]))
@example(seed=2348, lam=2.0)
@example(seed=4144, lam=2.0)
def test_plain_matches_brute_force(seed: int, lam: float) -> None:
    cluster, jobs = instance(seed, n_nodes=3, n_jobs=3)
    cands = [c for j in jobs if (cfgs := generate_configs(j, cluster, 1.4)) for c in gains(j, cfgs)]
    w = weights({j.job_id: j.wait for j in jobs}, lam)
    capacity = {n.name: n.free_gpus for n in cluster.nodes}
    sol = solve_plain(cands, w, capacity, gap=0.0)
    # abs=1e-4, not tighter: with λ = 2 a job's weight can fall to ~1e-5 of the top one, and CBC (its cutoff
    # increment and integrality tolerances) may then leave that job out at gap 0 - seed 2348 and 4144 with
    # λ = 2 stop 5.9e-5 and 1.4e-5 below the brute-force optimum (HiGHS finds it); a plan worse by more than
    # that is a real fault of the formulation
    assert sol.objective == pytest.approx(brute_force(cands, w, capacity), abs=1e-4)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), solver=st.sampled_from(SOLVERS), rounding=st.booleans())
def test_compact_optimum_equals_plain_over_interchangeable_nodes(seed: int, solver: str, rounding: bool) -> None:
    cluster, jobs = instance(seed, n_nodes=5, n_jobs=5)
    by_name = {n.name: n for n in cluster.nodes}
    plain_cands: list[Candidate] = []
    compact_cands: list[Candidate] = []
    for j in jobs:
        cfgs = generate_configs(j, cluster, 1.4)
        if not cfgs:
            continue
        closed = list({tuple(c.items()): c for cfg in cfgs for c in closure(cluster, cfg)}.values())
        plain_cands += gains(j, closed)
        compact_cands += gains(j, cfgs)
    w = weights({j.job_id: j.wait for j in jobs}, 1.0)
    capacity = {n.name: n.free_gpus for n in cluster.nodes}
    plain = solve_plain(plain_cands, w, capacity, solver=solver, gap=0.0)
    compact = solve_compact(compact_cands, w, cluster.nodes, solver=solver, gap=0.0, lp_rounding=rounding)
    assert compact.objective == pytest.approx(plain.objective, rel=1e-6, abs=1e-7)
    # the compact plan, mapped back to nodes, is valid and worth what the solver said
    used: dict[str, int] = defaultdict(int)
    realised = 0.0
    gain = {(c.job_id, signature(c.config, by_name)): c.gain for c in compact_cands}
    for job_id, cfg in compact.assignments.items():
        if cfg:
            for n, g in cfg.items():
                used[n] += g
            realised += w[job_id] * gain[(job_id, signature(cfg, by_name))]
    assert all(used[n] <= capacity[n] for n in used)
    assert realised == pytest.approx(compact.objective, rel=1e-6, abs=1e-7)


def test_cbc_and_highs_agree_on_a_larger_instance() -> None:
    cluster, jobs = instance(7, n_nodes=12, n_jobs=14)
    cands = [c for j in jobs if (cfgs := generate_configs(j, cluster, 1.4)) for c in gains(j, cfgs)]
    w = weights({j.job_id: j.wait for j in jobs}, 1.0)
    capacity = {n.name: n.free_gpus for n in cluster.nodes}
    a = solve_plain(cands, w, capacity, solver="CBC", gap=0.0)
    b = solve_plain(cands, w, capacity, solver="HiGHS", gap=0.0)
    assert a.status == b.status == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-6)
    # within the 1% gap the compact model is no worse than 1% below the plain optimum
    c = solve_compact(cands, w, cluster.nodes, gap=0.01)
    assert c.objective >= 0.99 * a.objective - 1e-9
    assert c.gap is not None and c.gap <= 0.01 + 1e-9
