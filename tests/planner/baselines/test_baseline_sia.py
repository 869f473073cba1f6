"""Sia: its config space (the counts in sia-notes.md), the goodput^p ILP and the placement step."""

from __future__ import annotations

import pytest
from baseline_helpers import check_plan, cluster, job, run_rounds, typed_throughput

from planner.baselines import sia_config_space
from planner.baselines.sia import job_configs, requirement_config_space
from planner.policies import make_policy
from planner.views import freeze_config


def test_config_space_counts_from_sia() -> None:
    # sia-notes.md: "8-GPU nodes give 11 configs up to (8,64); 4-GPU nodes 18 configs up to (16,64)".
    eight = sia_config_space(8, 8)
    assert len(eight) == 11 and eight[-1] == (8, 64)
    assert eight[:5] == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16)]
    four = sia_config_space(4, 16)
    assert len(four) == 18 and four[-1] == (16, 64)
    assert four[:4] == [(1, 1), (1, 2), (1, 4), (2, 8)]


def test_requirement_configs_of_the_hops_paper() -> None:
    assert requirement_config_space((3, 6, 12), 8, 2) == [(1, 3), (1, 6), (2, 12)]
    assert requirement_config_space((3, 6, 12, 24), 8, 2) == [(1, 3), (1, 6), (2, 12)]  # 24 needs 3 nodes


def test_power_of_two_space_can_miss_user_requirements() -> None:
    # The Hops paper (§4 Baseline Settings): Sia's power-of-two space "may lead to empty configurations".
    view = cluster([("a", "v100", 8), ("b", "v100", 8)])
    j = job("x", (3, 6), typed_throughput(view, {"v100": 1.0}))
    assert job_configs(view, j, per_requirement=False) == []
    assert [(c.nodes, c.gpus) for c in job_configs(view, j, per_requirement=True)] == [(1, 3), (1, 6)]
    assert make_policy("sia").plan(view, (j,), 0.0).placed() == {}
    assert make_policy("sia-lr").plan(view, (j,), 0.0).placed() == {"x": freeze_config({"a": 6})}


def test_objective_prefers_goodput_over_allocating_everyone() -> None:
    # One 4-GPU node. A scales linearly (normalised goodput 1, 2, 4 at 1, 2, 4 GPUs), B does not (1, 1, 1).
    # Minimise Σ g^-0.5 + 1.1·(unallocated): A4 alone = 0.5 + 1.1 = 1.6; A2+B2 (or B1) = 0.7071 + 1 = 1.7071;
    # A1+B1 = 2.0; so Sia gives A all four GPUs and leaves B waiting.
    view = cluster([("a", "v100", 4)])
    lin = job("A", (1, 2, 4), typed_throughput(view, {"v100": 1.0}))
    flat = job("B", (1, 2, 4), lambda c: 5.0)
    plan = make_policy("sia").plan(view, (lin, flat), 0.0)
    check_plan(view, (lin, flat), plan)
    assert plan.assignments == {"A": freeze_config({"a": 4}), "B": None}
    assert plan.diagnostics["objective"] == pytest.approx(1.6, abs=1e-6)


def test_lr_weights_let_the_starving_job_in() -> None:
    # Same as above, but B has waited as long as it runs (LR 1) and A just arrived (LR 0):
    # weights 0.01 and 1.01 make leaving B out cost 1.01·1.1, so B gets GPUs.
    view = cluster([("a", "v100", 4)])
    lin = job("A", (1, 2, 4), typed_throughput(view, {"v100": 1.0}), wait=0.0)
    flat = job("B", (1, 2, 4), lambda c: 5.0, wait=3600.0, age=3600.0)
    plan = make_policy("sia-lr").plan(view, (lin, flat), 0.0)
    assert plan.assignments["B"] is not None
    assert plan.assignments["A"] is not None


def test_type_level_choice_uses_fastest_type_and_multi_node_placement() -> None:
    view = cluster([("k0", "k80", 8), ("v0", "v100", 8), ("v1", "v100", 8)])
    j = job("x", (16,), typed_throughput(view, {"v100": 4.0, "k80": 1.0}))
    plan = make_policy("sia").plan(view, (j,), 0.0)
    assert plan.diagnostics["chosen"] == {"x": ("v100", 2, 16, 8)}
    assert plan.assignments["x"] == freeze_config({"v0": 8, "v1": 8})


def test_type_counts_hide_fragmentation() -> None:
    # 8 free V100s in total but 4 on each node: the ILP picks (1 node, 8 GPUs), placement cannot honour it.
    view = cluster([("v0", "v100", 8), ("v1", "v100", 8)], free={"v0": 4, "v1": 4})
    j = job("x", (8,), typed_throughput(view, {"v100": 1.0}))
    plan = make_policy("sia").plan(view, (j,), 0.0)
    assert plan.diagnostics["chosen"] == {"x": ("v100", 1, 8, 8)}
    assert plan.diagnostics["unplaced"] == ["x"]
    assert plan.assignments["x"] is None


def test_unchanged_config_keeps_its_nodes() -> None:
    view = cluster([("v0", "v100", 8), ("v1", "v100", 8)])
    j = job("x", (4,), typed_throughput(view, {"v100": 1.0}), current=freeze_config({"v1": 4}))
    plan = make_policy("sia").plan(view, (j,), 0.0)
    assert plan.assignments["x"] == freeze_config({"v1": 4})


def test_round_loop_finishes_all_jobs() -> None:
    view = cluster([("v0", "v100", 4), ("p0", "p100", 4), ("k0", "k80", 4)])
    jobs = [job(f"j{i}", (1, 2, 4), typed_throughput(view, {"v100": 3.0, "p100": 2.0, "k80": 1.0}), total=3000.0 * (i + 1))
            for i in range(8)]
    for name in ("sia", "sia-lr"):
        done = run_rounds(make_policy(name), view, list(jobs), rounds=60)
        assert set(done) == {j.job_id for j in jobs}, name


def test_when_every_job_s_best_config_fits_the_plan_is_the_ilp_s_without_a_solver(monkeypatch) -> None:  # noqa: ANN001
    """Capacity rows that do not bind: each job on its own best config is the ILP's optimum; the policy
    takes it without CBC, and the solver, asked anyway, chooses the same configs at the same objective."""
    from planner.baselines import sia

    view = cluster([("k0", "k80", 8), ("v0", "v100", 8), ("v1", "v100", 8)])
    jobs = (job("x", (1, 2, 4), typed_throughput(view, {"v100": 4.0, "k80": 1.0})),
            job("y", (2, 8), typed_throughput(view, {"v100": 2.0, "k80": 1.5})),
            job("z", (1,), lambda c: 3.0))
    policy = make_policy("sia-lr")
    fast = policy.plan(view, jobs, 0.0)
    solved: list[int] = []
    real = sia.SiaPolicy._solve

    def counting(self, offers, free_type, n_configs):  # noqa: ANN001, ANN202
        solved.append(n_configs)
        return real(self, offers, free_type, n_configs)

    monkeypatch.setattr(sia.SiaPolicy, "_solve", counting)
    assert policy.plan(view, jobs, 0.0).assignments == fast.assignments and solved == []
    monkeypatch.setattr(sia, "_unconstrained", lambda *args: None)
    ilp = policy.plan(view, jobs, 0.0)
    assert solved and ilp.diagnostics["chosen"] == fast.diagnostics["chosen"]
    assert ilp.diagnostics["objective"] == pytest.approx(fast.diagnostics["objective"], abs=1e-6)
    check_plan(view, jobs, fast)
    # more demand than GPUs: the rows bind, the solver decides
    crowd = tuple(job(f"c{i}", (8,), typed_throughput(view, {"v100": 4.0, "k80": 1.0})) for i in range(4))
    monkeypatch.undo()
    assert sia._unconstrained({j.job_id: [(sia.SiaConfig("v100", 1, 8, 8), -1.0)] for j in crowd}, {("v100", 8): 16}) is None
    # equal terms: the job stays on its current config
    two = [(sia.SiaConfig("k80", 1, 8, 8), -1.0), (sia.SiaConfig("v100", 1, 8, 8), -1.0)]
    pools = {("k80", 8): 8, ("v100", 8): 8}
    assert sia._unconstrained({"x": two}, pools) == {"x": two[0][0]}
    assert sia._unconstrained({"x": two}, pools, {"x": two[1][0]}) == {"x": two[1][0]}


# --- rigid requests and mixed node sizes (issue 38: Sia's Saturn workloads, the Alibaba fleet) ---


def test_rigid_request_outside_the_power_of_two_space_gets_sia_s_rigid_config() -> None:
    # Saturn's rigid 6-, 10-, 12- and 14-GPU jobs: Sia's artifact gives a rigid job one variable per GPU
    # type, its request on ceil(r / node size) nodes, whether or not r is in the adaptive config space.
    view = cluster([("k0", "k80", 4), ("k1", "k80", 4), ("k2", "k80", 4), ("v0", "v100", 8), ("v1", "v100", 8)])
    j = job("x", (12,), typed_throughput(view, {"v100": 4.0, "k80": 1.0}))
    assert [(c.gpu_type, c.nodes, c.gpus) for c in job_configs(view, j, per_requirement=False)] == [
        ("k80", 3, 12), ("v100", 2, 12)]
    plan = make_policy("sia").plan(view, (j,), 0.0)
    check_plan(view, (j,), plan)
    assert plan.diagnostics["chosen"] == {"x": ("v100", 2, 12, 8)}
    assert plan.assignments["x"] == freeze_config({"v0": 8, "v1": 4})
    six = job("y", (6,), typed_throughput(view, {"v100": 4.0, "k80": 1.0}))
    assert make_policy("sia").plan(view, (six,), 0.0).assignments["y"] == freeze_config({"v0": 6})


def test_rigid_goodput_is_scaled_so_its_slowest_config_is_its_request() -> None:
    # The artifact scales a rigid job's goodputs so its slowest type has goodput = its GPU count: one
    # 4-GPU job (objective term 4^-0.5 = 0.5 on the only type) beats two 1-GPU jobs (1 + 1 + 1.1 for
    # the 4-GPU job left out = 3.1 against 0.5 + 2.2 = 2.7); normalised to 1 it would lose (2.1 + 1.0 < 3.2).
    view = cluster([("a", "v100", 4)])
    big = job("big", (4,), typed_throughput(view, {"v100": 1.0}))
    smalls = tuple(job(f"s{i}", (1,), typed_throughput(view, {"v100": 1.0})) for i in range(2))
    plan = make_policy("sia").plan(view, (big,) + smalls, 0.0)
    assert plan.assignments["big"] == freeze_config({"a": 4})
    assert plan.diagnostics["objective"] == pytest.approx(0.5 + 2.2, abs=1e-6)


def test_mixed_node_sizes_of_one_type_are_pools() -> None:
    # One GPU type on nodes of 1, 2 and 8 GPUs, the smallest first in cluster order (as on Alibaba's
    # fleet): an 8-GPU rigid job has a config in each pool that holds 8 GPUs and lands on the 8-GPU node
    # (one node runs faster than a spread), and a 2-GPU job still finds a config.
    view = cluster([("one0", "v100", 1), ("two0", "v100", 2), ("two1", "v100", 2), ("two2", "v100", 2),
                    ("two3", "v100", 2), ("big0", "v100", 8)])
    thr = typed_throughput(view, {"v100": 1.0}, spread_penalty=0.5)
    eight = job("e", (8,), thr)
    assert [(c.nodes, c.gpus, c.node_gpus) for c in job_configs(view, eight, per_requirement=False)] == [
        (1, 8, 8), (4, 8, 2)]
    for name in ("sia", "sia-lr"):
        plan = make_policy(name).plan(view, (eight, job("t", (2,), thr)), 0.0)
        assert plan.assignments["e"] == freeze_config({"big0": 8}), name
        assert plan.assignments["t"] is not None and sum(plan.assignments["t"].values()) == 2, name
        assert plan.diagnostics["unplaced"] == [], name


def test_rigid_multi_node_request_evicts_single_node_jobs_as_sia_s_placer_does() -> None:
    # Two 8-GPU nodes, each holding a running 4-GPU job: 8 GPUs are free in the pool, but no whole node.
    # The ILP keeps both (unchanged configs) and adds the 8-GPU job; Sia's placer evicts the single-node
    # jobs of one node for it and places them again on the other.
    view = cluster([("v0", "v100", 8), ("v1", "v100", 8), ("v2", "v100", 8)], free={"v2": 0})
    thr = typed_throughput(view, {"v100": 1.0})
    a = job("a", (4,), thr, current=freeze_config({"v0": 4}))
    b = job("b", (4,), thr, current=freeze_config({"v1": 4}))
    c = job("c", (8,), thr)
    plan = make_policy("sia").plan(view, (a, b, c), 0.0)
    check_plan(view, (a, b, c), plan)
    assert plan.diagnostics["unplaced"] == []
    assert plan.diagnostics["evicted"] == ["a"]
    assert plan.assignments == {"a": freeze_config({"v1": 4}), "b": freeze_config({"v1": 4}), "c": freeze_config({"v0": 8})}


def test_equal_configs_in_another_pool_of_the_type_spare_the_solver() -> None:
    # Three one-GPU jobs, equally fast on a 1-GPU node or an 8-GPU node of one type: the 1-GPU pool (first
    # in order) holds one, the others take the 8-GPU pool; every job is at its best term, so that is the
    # ILP's optimum without CBC.
    from planner.baselines import sia

    ones = [(sia.SiaConfig("v100", 1, 1, 1), -0.1), (sia.SiaConfig("v100", 1, 1, 8), -0.1)]
    got = sia._unconstrained({f"j{i}": ones for i in range(3)}, {("v100", 1): 1, ("v100", 8): 8})
    assert got == {"j0": ones[0][0], "j1": ones[1][0], "j2": ones[1][0]}
    assert sia._unconstrained({f"j{i}": ones for i in range(10)}, {("v100", 1): 1, ("v100", 8): 8}) is None
