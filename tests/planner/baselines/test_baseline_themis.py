"""Themis: the finish-time-fairness bid table of its §4.3.3 example, leases, filtering and the auction."""

from __future__ import annotations

import pytest
from baseline_helpers import check_plan, cluster, job, run_rounds, typed_throughput

from planner.baselines.themis import finish_time_fairness, phase_time, successive_halving_shared_time
from planner.policies import make_policy
from planner.views import freeze_config

# Themis NSDI '20 §4.3.3 (themis-nsdi20.md; digest §1.5): a 4-job successive-halving app, serial iteration
# times 80, 100, 100, 120 s; phases of 4, 2, 1 jobs with 8, 16, 36 iterations per job; future phases use
# the median job (100 s); B = 10,000 GPU-s; job_demand_max = 8; 16-GPU cluster; N_avg = 4.
PHASES = [[80.0, 100.0, 100.0, 120.0], [100.0, 100.0], [100.0]]
ITERS = [8, 16, 36]
T_CLUSTER = 10_000 / 16  # B / min(R_C, app_demand_max): T_id = 625 · 4 = 2500 s


def _rho(gpus: int) -> float:
    return finish_time_fairness(successive_halving_shared_time(PHASES, ITERS, gpus, 8), T_CLUSTER, 4)


def test_example_phase_times_on_two_gpus() -> None:
    # "T_sh(1) = 120×8 + 80×8 = 1600", T_sh(2) = 100×16 = 1600, T_sh(3) = 100×36/2 = 1800, total 5000.
    assert phase_time(8, PHASES[0], 2, 8) == 1600
    assert phase_time(16, PHASES[1], 2, 8) == 1600
    assert phase_time(36, PHASES[2], 2, 8) == 1800


def test_bid_table_rho_4_and_2_at_1_and_2_gpus() -> None:
    # Table 3 of §4.3.3: ρ = 4 at 1 GPU and 2 at 2 GPUs (exactly).
    assert _rho(1) == pytest.approx(4.0, abs=1e-12)
    assert _rho(2) == pytest.approx(2.0, abs=1e-12)


def test_bid_table_larger_counts_match_the_rounded_table() -> None:
    # Table 3 prints 1, 0.5, 0.34 at 4, 8, 16 GPUs; the stated model gives 2660/2500, 1330/2500, 890/2500.
    assert _rho(4) == pytest.approx(2660 / 2500)
    assert _rho(8) == pytest.approx(1330 / 2500)
    assert _rho(16) == pytest.approx(890 / 2500)
    assert [round(_rho(g), 1) for g in (4, 8)] == [1.1, 0.5]


def _one_type(nodes: int, gpus: int):
    view = cluster([(f"n{i}", "v100", gpus) for i in range(nodes)])
    return view, typed_throughput(view, {"v100": 1.0})


def test_single_bidder_pays_nothing_and_gets_a_lease() -> None:
    view, thr = _one_type(1, 4)
    j = job("a", (2, 4), thr, total=10_000.0)
    policy = make_policy("themis")
    plan = policy.plan(view, (j,), 0.0)
    assert plan.diagnostics["bidders"] == ["a"]
    assert plan.diagnostics["winners"] == {"a": 1.0}  # empty product over j != i: c = 1
    assert plan.assignments["a"] == freeze_config({"n0": 4})  # lowest ρ: all four GPUs


def test_filter_keeps_the_worst_fifth_of_apps() -> None:
    view, thr = _one_type(2, 4)
    # ten pending jobs; earlier submission = longer elapsed = larger ρ_old
    jobs = tuple(job(f"j{i}", (1,), thr, submit=float(i), total=3600.0) for i in range(10))
    plan = make_policy("themis").plan(view, jobs, 100.0)
    check_plan(view, jobs, plan)
    assert plan.diagnostics["bidders"] == ["j0", "j1"]  # ceil(0.2 · 10) = 2
    # the other six GPUs are the leftover, handed out at random to non-bidders: work conserving
    assert len(plan.placed()) == 8
    assert set(plan.diagnostics["leftover"]) <= {f"j{i}" for i in range(2, 10)}
    assert len(plan.diagnostics["leftover"]) == 6


def test_lease_holds_until_expiry() -> None:
    view, thr = _one_type(1, 2)
    policy = make_policy("themis")
    a = job("a", (2,), thr, submit=0.0, total=1e6)
    plan = policy.plan(view, (a,), 0.0)
    assert plan.assignments["a"] == freeze_config({"n0": 2})
    a = job("a", (2,), thr, submit=0.0, total=1e6, done=720.0, current=plan.assignments["a"], run_time=360.0)
    b = job("b", (2,), thr, submit=0.0, wait=360.0, total=1e6)  # starving, but a's lease runs to 600
    plan = policy.plan(view, (a, b), 360.0)
    assert plan.assignments == {"a": freeze_config({"n0": 2}), "b": None}
    assert plan.diagnostics["held"] == ["a"]
    # at 720 the lease has expired: ceil(0.2·2) = 1 bidder, the one with the larger ρ — b, which has
    # waited, not a, which is nearly done — and a gets nothing from the (empty) leftover.
    # ρ_a = (720 + 60/2) / (1500/2 · N_avg 1.5) = 0.67; ρ_b = (720 + 600 + 1500/2) / (1500/2 · 2) = 1.38.
    a = job("a", (2,), thr, submit=0.0, total=1500.0, done=1440.0, current=plan.assignments["a"], run_time=720.0)
    b = job("b", (2,), thr, submit=0.0, wait=720.0, total=1500.0)
    plan = policy.plan(view, (a, b), 720.0)
    assert plan.diagnostics["held"] == []
    assert plan.diagnostics["rho"]["a"] == pytest.approx(2 / 3)
    assert plan.diagnostics["rho"]["b"] == pytest.approx(2070 / 1500)
    assert plan.diagnostics["bidders"] == ["b"]
    assert plan.assignments == {"a": None, "b": freeze_config({"n0": 2})}


def test_hidden_payment_of_a_contested_auction() -> None:
    # f = 0: both apps bid for one 2-GPU node, each accepting only 2 GPUs; N_avg = 2, 1 sample/s per GPU.
    # x: T_cluster = 3600/2, ρ_x(G) = 1800/3600 = 1/2, ρ_old = (600 + 1800)/3600 = 2/3, gain log(4/3).
    # y: T_cluster = 7200/2, ρ_y(G) = 3600/7200 = 1/2, ρ_old = (600 + 3600)/7200 = 7/12, gain log(7/6).
    # PF gives the node to x; without x it goes to y, so c_x = ρ_y(G^-x) / ρ_y(G_pf) = (1/2)/(7/12) = 6/7.
    view, thr = _one_type(1, 2)
    x = job("x", (2,), thr, total=3600.0)
    y = job("y", (2,), thr, total=7200.0)
    plan = make_policy("themis", f=0.0).plan(view, (x, y), 0.0)
    assert sorted(plan.diagnostics["bidders"]) == ["x", "y"]
    assert plan.diagnostics["winners"] == {"x": pytest.approx(6 / 7)}
    assert plan.assignments["y"] is None
    kept = plan.assignments["x"] is not None
    assert kept != (plan.diagnostics["paid"] == ["x"])


def test_fragment_plan_auctions_idle_gpus_to_pending_jobs() -> None:
    view = cluster([("n0", "v100", 4)], free={"n0": 2})
    thr = typed_throughput(view, {"v100": 1.0})
    plan = make_policy("themis").plan(view, (job("p", (1, 2), thr),), 50.0, fragment=True)
    assert plan.assignments == {"p": freeze_config({"n0": 2})}


def test_same_seed_same_plans() -> None:
    view, thr = _one_type(3, 4)
    jobs = tuple(job(f"j{i}", (1, 2, 4), thr, submit=float(i), total=5000.0 * (1 + i % 3)) for i in range(12))
    a = make_policy("themis", seed=7).plan(view, jobs, 10.0)
    b = make_policy("themis", seed=7).plan(view, jobs, 10.0)
    assert a.assignments == b.assignments


def test_round_loop_finishes_all_jobs() -> None:
    view = cluster([("v0", "v100", 4), ("p0", "p100", 4), ("k0", "k80", 4)])
    jobs = [job(f"j{i}", (1, 2, 4), typed_throughput(view, {"v100": 3.0, "p100": 2.0, "k80": 1.0}), total=3000.0 * (i + 1))
            for i in range(8)]
    done = run_rounds(make_policy("themis"), view, jobs, rounds=60)
    assert set(done) == {j.job_id for j in jobs}


def test_bids_that_all_fit_are_the_auction_s_optimum_without_the_solver(monkeypatch) -> None:  # noqa: ANN001
    """The proportional-fair step: when every app's best bid fits beside the others, the ILP's answer is
    those bids; without the shortcut CBC finds the same value. When they do not fit, CBC decides."""
    from planner.baselines import themis

    a1, a2, b2 = freeze_config({"a": 1}), freeze_config({"a": 2}), freeze_config({"b": 2})
    gains = {"x": [(a1, 0.5), (a2, 0.9)], "y": [(b2, 0.7), (a1, 0.2)], "z": [(a1, -0.1)]}
    pool = {"a": 2, "b": 2}
    fast, value = themis._proportional_fair(gains, pool)
    assert fast == {"x": (a2, 0.9), "y": (b2, 0.7)} and value == pytest.approx(1.6)
    monkeypatch.setattr(themis, "_each_best", lambda gains, pool: None)
    solved, solved_value = themis._proportional_fair(gains, pool)
    assert solved == fast and solved_value == pytest.approx(value)
    monkeypatch.undo()
    tight = {"a": 2, "b": 1}  # y's best bid no longer fits; x on a2 alone (0.9) beats x and y on a (0.5 + 0.2)
    assert themis._each_best(gains, tight) is None
    chosen, v = themis._proportional_fair(gains, tight)
    assert v == pytest.approx(0.9) and chosen == {"x": (a2, 0.9)}
