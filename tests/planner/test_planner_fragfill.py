"""Fragment swaps (planner/fragfill.py through HopsPolicy): a round plan preempts a running job for a
waiting job that also fills idle GPUs when eq. 11 without the running premium rises, and not otherwise."""

from __future__ import annotations

from planner.hops import HopsPolicy
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

#: two 8-GPU nodes of one type and class
TWO = ClusterView((NodeView("n0", "t", "A", 8, 8), NodeView("n1", "t", "A", 8, 8)))


def linear(cfg: Config) -> float:
    return float(sum(cfg.values()))


def job(job_id: str, reqs: tuple[int, ...], wait: float, age: float, current: dict[str, int] | None = None) -> JobView:
    """A job with latency ratio wait / age (its LR priority); running where ``current`` says."""
    return JobView(job_id, reqs, 0.0, wait, age, 1.1, linear, total_samples=1e6,
                   current=freeze_config(current) if current else None,
                   placed_for=10_000.0 if current else 0.0, run_time=10_000.0 if current else 0.0)


def plan(jobs: tuple[JobView, ...], **params: object):
    """A round plan with fragment swaps on (they are off by default: docs/design.md, "Fragment swaps")."""
    params = {"fragment_swaps": True, **params}
    return HopsPolicy(rules_off(gap=0.0, lambda_=1.0, **params)).plan(TWO, jobs, 10_000.0)  # type: ignore[arg-type]


def cluster_of(r_gpus: int, w_reqs: tuple[int, ...], w_lr: float) -> tuple[JobView, ...]:
    """X fills n0 and has the top priority; R (LR 0.1) holds ``r_gpus`` of n1, the rest of n1 idle;
    W waits with latency ratio ``w_lr``."""
    x = job("X", (8,), 500.0, 1000.0, {"n0": 8})
    r = job("R", (r_gpus,), 100.0, 1000.0, {"n1": r_gpus})
    w = job("W", w_reqs, w_lr * 100.0, 100.0)
    return x, r, w


def test_a_waiting_job_that_fills_the_idle_gpus_takes_a_running_jobs_place_without_the_premium() -> None:
    # W (LR 0.15) is worth more than R (LR 0.1) but less than R with the 1.5 premium: the solve keeps R
    # and leaves 4 GPUs idle while W waits; W on R's 4 GPUs and the 4 idle ones puts them to work
    jobs = cluster_of(4, (8,), 0.15)
    off = plan(jobs, fragment_swaps=False)
    assert off.assignments["R"] == {"n1": 4} and off.assignments["W"] is None
    on = plan(jobs)
    assert on.assignments["R"] is None and on.assignments["W"] == {"n1": 8}
    assert on.assignments["X"] == {"n0": 8}
    assert on.diagnostics["swapped"] == {"W": "R"}


def test_no_swap_when_the_waiting_job_is_worth_less_than_the_running_one() -> None:
    p = plan(cluster_of(4, (8,), 0.05))  # eq. 11 without the premium would fall
    assert p.assignments["R"] == {"n1": 4} and p.assignments["W"] is None
    assert p.diagnostics["swapped"] == {}


def test_no_swap_when_it_would_fill_no_idle_gpu() -> None:
    # R holds 6 of n1 (2 idle); W needs exactly 6: taking R's GPUs leaves the 2 idle, a like-for-like
    # swap the premium is there to stop
    p = plan(cluster_of(6, (6,), 0.15))
    assert p.assignments["R"] == {"n1": 6} and p.assignments["W"] is None
    assert p.diagnostics["swapped"] == {}


def test_fragment_plans_never_swap() -> None:
    x, r, w = cluster_of(4, (8,), 0.15)
    idle = ClusterView((NodeView("n0", "t", "A", 8, 0), NodeView("n1", "t", "A", 8, 4)))
    p = HopsPolicy(rules_off(gap=0.0, lambda_=1.0, fragment_swaps=True)).plan(idle, (x, r, w), 10_000.0, fragment=True)
    assert p.assignments.get("W") is None and "R" not in p.assignments


def test_no_swap_when_the_waiting_job_fits_the_idle_gpus_alone() -> None:
    # a plan that left W out though n1's 8 idle GPUs hold it: evicting R (on n0) would free nothing W needs
    from planner.fragfill import swap_for_fragments
    from planner.signatures import Candidate

    r = job("R", (4,), 100.0, 1000.0, {"n0": 4})
    w = job("W", (8,), 15.0, 100.0)
    cands = [Candidate("R", freeze_config({"n0": 4}), 2.5), Candidate("W", freeze_config({"n1": 8}), 1.0)]
    chosen: dict[str, Config | None] = {"R": freeze_config({"n0": 4}), "W": None}
    out, swaps = swap_for_fragments(chosen, (w, r), cands, {"W": 1.0, "R": 0.1}, TWO, {"n0": 8, "n1": 8}, 1.4, 1.5)
    assert swaps == {} and out == chosen


def test_swaps_are_on_by_default() -> None:
    assert PlannerParams().fragment_swaps is True
    x, r, w = cluster_of(4, (8,), 0.15)
    assert HopsPolicy(rules_off(gap=0.0, lambda_=1.0)).plan(TWO, (x, r, w), 10_000.0).diagnostics.get("swapped", {}) == {}


# ----- fragment moves: the displaced job moved to idle GPUs instead of requeued -----------------------

#: TWO plus one 8-GPU node of another type
THREE = ClusterView(TWO.nodes + (NodeView("m0", "u", "B", 8, 8),))


def moved_cluster(w_lr: float, y_gpus: int) -> tuple[JobView, ...]:
    """X fills n0, R (LR 0.1) holds 4 of n1 (4 idle there), Y (high priority) holds ``y_gpus`` of m0;
    W (8 GPUs) waits with latency ratio ``w_lr``."""
    x, r, w = cluster_of(4, (8,), w_lr)
    return x, r, w, job("Y", (y_gpus,), 5000.0, 1000.0, {"m0": y_gpus})


def plan_three(jobs: tuple[JobView, ...], **params: object):
    return HopsPolicy(rules_off(gap=0.0, lambda_=1.0, **params)).plan(THREE, jobs, 10_000.0)  # type: ignore[arg-type]


def test_a_displaced_job_moves_to_idle_gpus_of_another_type_and_the_waiting_job_fills_its_node() -> None:
    # W (LR 0.05) is worth less than R (LR 0.1): a plain swap would not be made; moved to m0's 4 idle GPUs,
    # R keeps its rate (no restart cost here), so eq. 11 without the premium rises by W's gain
    jobs = moved_cluster(0.05, 4)
    assert plan_three(jobs).assignments["W"] is None
    assert plan_three(jobs, fragment_swaps=True).assignments["W"] is None
    p = plan_three(jobs, fragment_moves=True)
    assert p.assignments["W"] == {"n1": 8} and p.assignments["R"] == {"m0": 4}
    assert p.assignments["X"] == {"n0": 8} and p.assignments["Y"] == {"m0": 4}
    assert p.diagnostics["swapped"] == {"W": "R"}


def test_no_fragment_move_when_the_displaced_job_fits_no_idle_gpus_and_no_requeue_for_it() -> None:
    # m0 is full: R has nowhere to go; W (LR 0.15) would win a plain swap, but fragment_moves alone
    # requeues nobody
    jobs = moved_cluster(0.15, 8)
    p = plan_three(jobs, fragment_moves=True)
    assert p.assignments["R"] == {"n1": 4} and p.assignments["W"] is None
    assert p.diagnostics["swapped"] == {}
    both = plan_three(jobs, fragment_moves=True, fragment_swaps=True)  # with swaps on, R is requeued
    assert both.assignments["R"] is None and both.assignments["W"] == {"n1": 8}


def test_a_move_that_costs_the_displaced_job_more_than_the_waiting_job_gains_is_not_made() -> None:
    # R's restart costs almost all of its remaining work: moving it keeps little of its gain (Y, started
    # 10 s ago, is held in place by the minimum run time)
    x, r, w, _ = moved_cluster(0.05, 4)
    y = JobView("Y", (4,), 0.0, 5000.0, 1000.0, 1.1, linear, total_samples=1e6, current=freeze_config({"m0": 4}),
                placed_for=10.0, run_time=10.0)
    r = JobView("R", (4,), 0.0, 100.0, 1000.0, 1.1, linear, total_samples=2_000.0, done_samples=1_000.0,
                current=freeze_config({"n1": 4}), placed_for=10_000.0, run_time=10_000.0, restart_cost=240.0)
    p = plan_three((x, r, w, y), fragment_moves=True)
    assert p.assignments["R"] == {"n1": 4} and p.diagnostics["swapped"] == {}


def test_fragment_moves_are_off_by_default() -> None:
    assert PlannerParams().fragment_moves is False
    assert plan_three(moved_cluster(0.05, 4)).diagnostics.get("swapped", {}) == {}


def test_no_fragment_move_to_slower_gpus() -> None:
    # on type u every job runs at half the rate: R's move there would not pay for itself, though W (LR 0.15)
    # is worth more than the half of R's gain the move would cost it
    def slow_on_u(cfg: Config) -> float:
        return sum(g * (0.5 if n.startswith("m") else 1.0) for n, g in cfg.items())

    x, _, w, y = moved_cluster(0.15, 4)
    r = JobView("R", (4,), 0.0, 100.0, 1000.0, 1.1, slow_on_u, total_samples=1e6,
                current=freeze_config({"n1": 4}), placed_for=10_000.0, run_time=10_000.0)
    y = JobView("Y", (4,), 0.0, 5000.0, 1000.0, 1.1, linear, total_samples=1e6, current=freeze_config({"m0": 4}),
                placed_for=10.0, run_time=10.0)
    p = plan_three((x, r, w, y), fragment_moves=True)
    assert p.assignments["R"] == {"n1": 4} and p.diagnostics["swapped"] == {}
