"""Moves that pay (planner/moves.py through HopsPolicy): running jobs held in place by the minimum run
time, at their declared samples or when finishing, and moves taken only when the time they save over
the job's remaining work beats its restart and lost work."""

from __future__ import annotations

import pytest

from planner.hops import HopsPolicy
from planner.moves import HELD_ENDING, HELD_FINISHING, HELD_MIN_RUN_TIME, HELD_SAMPLES, held_reason, move_price
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

from tests.planner.two_speeds import ONE_NODE, SLOW_FAST, by_node, linear
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off


def running(job_id: str = "R", *, current: dict[str, int] | None = None, placed_for: float = 10_000.0,
            total: float = 1e6, done: float = 0.0, restart: float = 0.0, unsaved: float = 0.0, thr=linear,
            reqs: tuple[int, ...] = (4,)) -> JobView:
    return JobView(job_id, reqs, 0.0, 0.0, 1000.0, 1.1, thr, total_samples=total, done_samples=done,
                   current=freeze_config(current or {"n0": 4}), placed_for=placed_for, restart_cost=restart,
                   unsaved=unsaved, run_time=placed_for)


def waiting(job_id: str, wait: float, reqs: tuple[int, ...] = (4,)) -> JobView:
    return JobView(job_id, reqs, 0.0, wait, 100.0, 1.1, linear, total_samples=1e6)


def plan(cluster: ClusterView, jobs: tuple[JobView, ...], **params: object):
    return HopsPolicy(rules_off(gap=0.0, **params)).plan(cluster, jobs, 10_000.0)  # type: ignore[arg-type]


# A waiting job with a huge latency ratio would take R's 4 GPUs (the only 4 there are) if R may be preempted.
@pytest.mark.parametrize(("placed_for", "preempted"), [(100.0, False), (700.0, True)])
def test_the_minimum_run_time_holds_a_running_job_in_place(placed_for: float, preempted: bool) -> None:
    r = running(placed_for=placed_for)
    w = waiting("W", wait=5000.0)
    p = plan(ONE_NODE, (r, w), min_run_time=600.0)
    if preempted:
        assert p.assignments["R"] is None and p.assignments["W"] == {"n0": 4}
        assert p.diagnostics["in_place"] == {}
    else:
        assert p.assignments["R"] == {"n0": 4} and p.assignments["W"] is None
        assert p.diagnostics["in_place"] == {"R": HELD_MIN_RUN_TIME}


def test_a_job_at_its_declared_samples_is_never_requeued() -> None:
    r = running(done=1e6, total=1e6)
    p = plan(ONE_NODE, (r, waiting("W", wait=1e6)), min_run_time=0.0)
    assert p.assignments["R"] == {"n0": 4}
    assert p.diagnostics["in_place"] == {"R": HELD_SAMPLES}


def test_a_job_with_less_left_than_a_restart_costs_finishes() -> None:
    # 400 samples left at 4 samples/s: 100 s, a requeue costs 120 s: let it finish
    r = running(total=1000.0, done=600.0, restart=120.0)
    assert held_reason(r, 0.0) == HELD_FINISHING
    assert plan(ONE_NODE, (r, waiting("W", wait=1e6)), min_run_time=0.0).assignments["R"] == {"n0": 4}
    # with 1000 s left it may be preempted for the waiting job
    longer = running(total=4600.0, done=600.0, restart=120.0)
    assert held_reason(longer, 0.0) == ""


def test_fragment_plans_never_touch_running_jobs_and_the_next_round_keeps_what_they_started() -> None:
    w = waiting("W", wait=10.0)
    fill = HopsPolicy(rules_off(gap=0.0)).plan(ONE_NODE, (w,), 0.0, fragment=True)
    assert fill.assignments["W"] == {"n0": 4}
    # the round 5 s later: W runs (placed 5 s ago) and a job with a far higher LR waits
    started = JobView("W", (4,), 0.0, 10.0, 100.0, 1.1, linear, total_samples=1e6, current=freeze_config({"n0": 4}),
                      placed_for=5.0)
    p = plan(ONE_NODE, (started, waiting("X", wait=1e5)))
    assert p.assignments["W"] == {"n0": 4} and p.assignments["X"] is None


@pytest.mark.parametrize("formulation", ["compact", "plain"])
@pytest.mark.parametrize(("remaining", "restart", "moves"), [
    # 4 GPUs at 4/s on the slow node; 12/s on the fast one
    (4000.0, 60.0, True),    # stay 1000 s; move 60 + 333 s: pays
    (400.0, 60.0, True),     # stay 100 s; move 60 + 33 s = 93 s: pays, just
    (400.0, 80.0, False),    # stay 100 s; move 80 + 33 s = 113 s: does not pay
])
def test_a_move_to_faster_free_gpus_is_made_when_it_pays(formulation: str, remaining: float, restart: float,
                                                          moves: bool) -> None:
    r = running(current={"slow": 4}, thr=by_node, total=remaining, restart=restart)
    p = plan(SLOW_FAST, (r,), min_run_time=0.0, formulation=formulation, restart_penalty=0.0)
    assert p.assignments["R"] == ({"fast": 4} if moves else {"slow": 4})


def test_unsaved_work_is_part_of_the_price() -> None:
    # stay 1000 s; move 60 s + (4000 + 4/s x 2000 s unsaved) / 12/s = 60 + 1000 s: does not pay
    r = running(current={"slow": 4}, thr=by_node, total=4000.0, restart=60.0, unsaved=2000.0)
    price = move_price(r, 4.0, 12.0)
    assert price.rate == 0.0 and price.saves < 0
    p = plan(SLOW_FAST, (r,), min_run_time=0.0, restart_penalty=0.0)
    assert p.assignments["R"] == {"slow": 4}
    saved = running(current={"slow": 4}, thr=by_node, total=4000.0, restart=60.0, unsaved=0.0)
    assert move_price(saved, 4.0, 12.0).rate == pytest.approx(4000.0 / (60.0 + 4000.0 / 12.0))


def test_min_run_time_is_a_checked_planner_parameter() -> None:
    assert PlannerParams().min_run_time == 300.0
    assert rules_off().with_settings("min_run_time=30").min_run_time == 30.0
    with pytest.raises(ValueError, match="min_run_time"):
        rules_off(min_run_time=-1.0)


def test_each_preemption_lengthens_the_next_exemption() -> None:
    # preempted twice: exempt for 600 s x 2^2 = 2400 s of this run
    twice = JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, linear, total_samples=1e6, current=freeze_config({"n0": 4}),
                    placed_for=2000.0, preemptions=2)
    w = waiting("W", wait=1e5)
    assert plan(ONE_NODE, (twice, w), min_run_time=600.0, min_run_growth=2.0).assignments["R"] == {"n0": 4}
    assert plan(ONE_NODE, (twice, w), min_run_time=600.0, min_run_growth=1.0).assignments["R"] is None


def test_a_job_nearly_done_is_not_preempted_but_moves_to_idle_faster_gpus_when_that_pays() -> None:
    # 320 samples left at 4/s on the slow node: 80 s, below min_run_time (120 s), above its restart (15 s)
    nearly = running(current={"slow": 4}, thr=by_node, total=320.0, restart=15.0)
    assert held_reason(nearly, 120.0) == HELD_ENDING
    # the fast node idle: 15 s + 320 / 12 s = 42 s < 80 s, the move pays and is made
    assert plan(SLOW_FAST, (nearly,), min_run_time=120.0, restart_penalty=0.0).assignments["R"] == {"fast": 4}
    # the fast node busy (another running job, itself held): R is kept, not preempted for a waiting job
    other = running("O", current={"fast": 4}, thr=by_node, placed_for=10.0)
    p = plan(SLOW_FAST, (nearly, other, waiting("W", wait=1e6)), min_run_time=120.0)
    assert p.assignments["R"] == {"slow": 4} and p.assignments["W"] is None
    assert p.diagnostics["in_place"] == {"R": HELD_ENDING, "O": HELD_MIN_RUN_TIME}


@pytest.mark.parametrize(("waiting_lr", "penalty", "evicted"),
                         [(1.5, 0.0, True), (1.5, 1.0, False), (3.0, 1.0, True)])
def test_a_waiting_job_takes_a_running_jobs_gpus_only_when_worth_the_preempt_penalty_more(
        waiting_lr: float, penalty: float, evicted: bool) -> None:
    # R runs with latency ratio 1.0 (wait 1000 s, age 1000 s) on the only 4 GPUs; W waits with a higher one.
    # Both have one config (4 GPUs, gain 1): R's placement is worth 1.0 x (1 + penalty), W's the ratio.
    r = JobView("R", (4,), 0.0, 1000.0, 1000.0, 1.1, linear, total_samples=1e6, current=freeze_config({"n0": 4}),
                placed_for=10_000.0, run_time=10_000.0)
    w = JobView("W", (4,), 0.0, 100.0 * waiting_lr, 100.0, 1.1, linear, total_samples=1e6)
    p = plan(ONE_NODE, (r, w), min_run_time=0.0, preempt_penalty=penalty)
    if evicted:
        assert p.assignments["R"] is None and p.assignments["W"] == {"n0": 4}
    else:
        assert p.assignments["R"] == {"n0": 4} and p.assignments["W"] is None


def test_the_preempt_penalty_is_a_checked_planner_parameter() -> None:
    assert rules_off().with_settings("preempt_penalty=0.5").preempt_penalty == 0.5
    with pytest.raises(ValueError, match="preempt_penalty"):
        rules_off(preempt_penalty=-1.0)
