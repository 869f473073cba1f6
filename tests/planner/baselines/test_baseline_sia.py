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
    assert plan.diagnostics["chosen"] == {"x": ("v100", 2, 16)}
    assert plan.assignments["x"] == freeze_config({"v0": 8, "v1": 8})


def test_type_counts_hide_fragmentation() -> None:
    # 8 free V100s in total but 4 on each node: the ILP picks (1 node, 8 GPUs), placement cannot honour it.
    view = cluster([("v0", "v100", 8), ("v1", "v100", 8)], free={"v0": 4, "v1": 4})
    j = job("x", (8,), typed_throughput(view, {"v100": 1.0}))
    plan = make_policy("sia").plan(view, (j,), 0.0)
    assert plan.diagnostics["chosen"] == {"x": ("v100", 1, 8)}
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
    assert sia._unconstrained({j.job_id: [(sia.SiaConfig("v100", 1, 8), -1.0)] for j in crowd}, {"v100": 16}) is None
    # equal terms: the job stays on its current config
    two = [(sia.SiaConfig("k80", 1, 8), -1.0), (sia.SiaConfig("v100", 1, 8), -1.0)]
    assert sia._unconstrained({"x": two}, {"k80": 8, "v100": 8}) == {"x": two[0][0]}
    assert sia._unconstrained({"x": two}, {"k80": 8, "v100": 8}, {"x": two[1][0]}) == {"x": two[1][0]}
