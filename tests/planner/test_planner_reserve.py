"""The queue head's reservation against the window's other waiting jobs (planner.reserve, through HopsPolicy.plan)."""

from __future__ import annotations

from planner.hops import HopsPolicy
from planner.reserve import head_reservation, hold_for_head, idle_now
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

#: a100-1: r1 (4 GPUs, ends in 600 s) and r3 (4, hours); a100-2: r2 (4, hours) and 4 idle GPUs
NODES = ClusterView((NodeView("a100-1", "a100", "a100", 8, 8), NodeView("a100-2", "a100", "a100", 8, 8)))


def per_gpu(cfg: Config) -> float:
    return 10.0 * sum(cfg.values())


def job(job_id: str, gpus: int, *, samples: float, wait: float = 0.0, current: Config | None = None) -> JobView:
    # age 1000 s: stretch weights are 1 + wait / 1000
    return JobView(job_id, (gpus,), submit_time=0.0, wait=wait, age=1000.0, sensitivity=1.0, throughput=per_gpu,
                   total_samples=samples, current=current, run_time=3600.0 if current else 0.0,
                   placed_for=3600.0 if current else 0.0)


def jobs(small_samples: float, r1_samples: float = 24_000) -> tuple[JobView, ...]:
    return (job("r1", 4, samples=r1_samples, current={"a100-1": 4}),  # 24,000 / 40 = 600 s left
            job("r3", 4, samples=1e8, current={"a100-1": 4}),
            job("r2", 4, samples=1e8, current={"a100-2": 4}),
            # the head: 8 GPUs, slowed down 2x so far; preempting r1 is worth less than keeping it (2 < 2.5)
            job("head", 8, samples=1e8, wait=1000.0),
            job("small", 4, samples=small_samples, wait=500.0))


def test_the_head_reserves_the_gpus_that_free_first_and_none_are_spare() -> None:
    js = jobs(1e8)
    running = [j for j in js if j.current]
    res = head_reservation([js[3], js[4]], idle_now(NODES, running), running, now=0.0)
    assert res is not None and (res.job_id, res.gpu_type, res.start, res.spare) == ("head", "a100", 600.0, 0)
    assert head_reservation([], idle_now(NODES, running), running, now=0.0) is None
    # the head has waited as long as it runs (latency ratio 1): none from a ratio of 1.5 on
    assert head_reservation([js[3], js[4]], idle_now(NODES, running), running, now=0.0, after=1.5) is None
    assert head_reservation([js[3], js[4]], idle_now(NODES, running), running, now=0.0, after=1.0) is not None


def test_only_configs_that_end_before_the_head_or_use_spare_gpus_are_kept_for_the_others() -> None:
    js = jobs(1e8)
    running = [j for j in js if j.current]
    res = head_reservation([js[3], js[4]], idle_now(NODES, running), running, now=0.0)
    assert res is not None
    long_small = Candidate("small", {"a100-2": 4}, 1.0)
    kept = hold_for_head(res, [long_small, Candidate("head", {"a100-2": 8}, 1.0)], js, NODES, 0.0)
    assert [c.job_id for c in kept] == ["head"]  # 4 GPUs for hours: the head's, none spare
    short = jobs(4_000)  # 4,000 / 40 = 100 s < 600 s: ends before the head starts
    assert hold_for_head(res, [long_small], short, NODES, 0.0) == [long_small]
    keep_r2 = Candidate("r2", {"a100-2": 4}, 2.5)  # a running job keeping what it holds
    assert hold_for_head(res, [keep_r2, Candidate("r2", {"a100-2": 8}, 2.0)], js, NODES, 0.0) == [keep_r2]
    assert PlannerParams().head_reservation is True


def test_in_a_round_plan_the_head_waits_for_a_near_reservation_and_starts_at_once_before_a_far_one() -> None:
    plan = HopsPolicy(rules_off(stretch_weights=True)).plan(NODES, jobs(1e8), now=0.0)
    assert plan.assignments["small"] == {"a100-2": 4} and plan.assignments["head"] is None  # the default
    params = rules_off(stretch_weights=True, head_reservation=True)
    # r1 ends in 600 s, within the head's own run time (1000 s): the GPUs are kept, nobody is preempted
    plan = HopsPolicy(params).plan(NODES, jobs(1e8), now=0.0)
    assert plan.assignments["small"] is None and plan.assignments["head"] is None
    assert plan.assignments["r1"] == {"a100-1": 4}
    # r1 ends in 1,500 s: the head outweighs the others and starts now
    plan = HopsPolicy(params).plan(NODES, jobs(1e8, r1_samples=60_000), now=0.0)
    head = plan.assignments["head"]
    assert head is not None and sum(head.values()) == 8 and plan.assignments["small"] is None
    # below the latency ratio it needs, the head gets neither
    late = rules_off(stretch_weights=True, head_reservation=True, reserve_after=1.5)
    assert HopsPolicy(late).plan(NODES, jobs(1e8, r1_samples=60_000), now=0.0).assignments["head"] is None


def test_without_the_override_a_head_behind_a_far_reservation_waits_and_keeps_its_gpus_reserved() -> None:
    # r1 ends in 1,500 s, past the head's own run time: with the override (above) it starts now by preemption;
    # without it (the default since session 28) it waits for r1's GPUs, which no other waiting job may take
    far = jobs(1e8, r1_samples=60_000)
    params = rules_off(stretch_weights=True, head_reservation=True, head_override=False)
    policy = HopsPolicy(params)
    plan = policy.plan(NODES, far, now=0.0)
    assert plan.assignments["head"] is None and plan.assignments["small"] is None
    assert plan.assignments["r1"] == {"a100-1": 4} and plan.assignments["r3"] == {"a100-1": 4}
    assert policy._protected == set()  # nobody holds the protected weight
    with_override = HopsPolicy(rules_off(stretch_weights=True, head_reservation=True)).plan(NODES, far, now=0.0)
    assert with_override.assignments["head"] is not None
    assert PlannerParams().head_override is False and PlannerParams().head_reservation is True


def test_with_the_reservation_a_running_job_does_not_grow_into_the_head_s_gpus() -> None:
    grow = JobView("grow", (4, 8), submit_time=0.0, wait=0.0, age=1000.0, sensitivity=1.0, throughput=per_gpu,
                   total_samples=1e8, current={"a100-2": 4}, run_time=3600.0, placed_for=3600.0)
    js = jobs(1e8, r1_samples=60_000)[:2] + (grow, jobs(1e8)[3])
    plan = HopsPolicy(rules_off(stretch_weights=True)).plan(NODES, js, now=0.0)
    assert plan.assignments["grow"] == {"a100-2": 8}  # the default: it takes the idle GPUs
    plan = HopsPolicy(rules_off(stretch_weights=True, head_reservation=True)).plan(NODES, js, now=0.0)
    assert plan.assignments["grow"] != {"a100-2": 8} and plan.assignments["head"] is not None


def test_a_head_started_by_the_reservation_is_not_taken_back_by_the_next_head() -> None:
    one = ClusterView((NodeView("a100-1", "a100", "a100", 8, 8),))
    policy = HopsPolicy(rules_off(stretch_weights=True, head_reservation=True))
    a_waits = job("A", 8, samples=1e8, wait=1000.0)
    b_runs = job("B", 8, samples=1e8, current={"a100-1": 8})
    assert policy.plan(one, (a_waits, b_runs), now=0.0).assignments == {"A": {"a100-1": 8}, "B": None}
    # the next round: B, preempted for A, has waited longer than A had; A keeps its GPUs
    a_runs = job("A", 8, samples=1e8, wait=1000.0, current={"a100-1": 8})
    b_waits = job("B", 8, samples=1e8, wait=1500.0)
    assert policy.plan(one, (a_runs, b_waits), now=360.0).assignments == {"A": {"a100-1": 8}, "B": None}
    # a planner that did not start A that way hands the GPUs to B
    fresh = HopsPolicy(rules_off(stretch_weights=True, head_reservation=True))
    assert fresh.plan(one, (a_runs, b_waits), now=360.0).assignments == {"A": None, "B": {"a100-1": 8}}


def test_with_a_bound_the_head_starts_once_waiting_for_its_reservation_would_pass_it() -> None:
    # the head has waited 1,500 s of a 1,000 s run (latency ratio 1.5); r1 ends in 600 s: ratio 2.1 then
    js = jobs(1e8)[:3] + (job("head", 8, samples=1e8, wait=1500.0), jobs(1e8)[4])
    late = dict(stretch_weights=True, head_reservation=True, reserve_after=1.5)
    # the run-time rule waits (600 s < 1,000 s): the head's ratio reaches 2.1
    assert HopsPolicy(rules_off(**late)).plan(NODES, js, now=0.0).assignments["head"] is None
    head = HopsPolicy(rules_off(**late, reserve_bound=2.0)).plan(NODES, js, now=0.0).assignments["head"]
    assert head is not None and sum(head.values()) == 8
    # a bound the reservation keeps (2.1 <= 2.5): the head waits for it, nobody is preempted for it
    kept = HopsPolicy(rules_off(**late, reserve_bound=2.5)).plan(NODES, js, now=0.0)
    assert kept.assignments["head"] is None and kept.assignments["r1"] == {"a100-1": 4}
    assert PlannerParams().reserve_bound == 2.0


def test_with_a_bound_a_head_shorter_than_the_minimum_run_time_preempts_nobody() -> None:
    # the head runs 200 s (age 200 < min_run_time 300) and has waited 300 s: latency ratio 1.5, 9 at r1's end
    short = JobView("head", (8,), submit_time=0.0, wait=300.0, age=200.0, sensitivity=1.0, throughput=per_gpu,
                    total_samples=1e8)
    js = jobs(1e8, r1_samples=60_000)[:3] + (short,)
    running = [j for j in js if j.current]
    assert head_reservation([short], idle_now(NODES, running), running, now=0.0, shortest=300.0) is None
    assert head_reservation([short], idle_now(NODES, running), running, now=0.0) is not None
    bound = rules_off(stretch_weights=True, head_reservation=True, reserve_after=1.5, reserve_bound=2.0)
    plan = HopsPolicy(bound).plan(NODES, js, now=0.0)
    assert plan.assignments["head"] is None and plan.assignments["r1"] == {"a100-1": 4}
    assert HopsPolicy(rules_off(stretch_weights=True)).plan(NODES, js, now=0.0).assignments["head"] is None
    # without a bound the reservation's run-time rule still serves it (the rule as it was)
    plain = rules_off(stretch_weights=True, head_reservation=True, reserve_after=1.5)
    assert HopsPolicy(plain).plan(NODES, js, now=0.0).assignments["head"] is not None


def test_a_running_job_past_protect_after_is_not_left_waiting_for_a_less_starved_head() -> None:
    one = ClusterView((NodeView("a100-1", "a100", "a100", 8, 8),))
    # A runs with latency ratio 1.6; B, the queue head, waits with 1.5 and gets the overriding weight
    a_runs = job("A", 8, samples=1e8, wait=1600.0, current={"a100-1": 8})
    b_waits = job("B", 8, samples=1e8, wait=1500.0)
    plain = rules_off(stretch_weights=True, head_reservation=True)
    assert HopsPolicy(plain).plan(one, (a_runs, b_waits), now=0.0).assignments == {"A": None, "B": {"a100-1": 8}}
    # from a ratio of 1.0 a running job keeps the protected weight: A stays, B waits
    kept = HopsPolicy(rules_off(stretch_weights=True, head_reservation=True, protect_after=1.0))
    assert kept.plan(one, (a_runs, b_waits), now=0.0).assignments == {"A": {"a100-1": 8}, "B": None}
    # A's ratio is under 1.7: not protected, B takes the GPUs as before
    under = HopsPolicy(rules_off(stretch_weights=True, head_reservation=True, protect_after=1.7))
    assert under.plan(one, (a_runs, b_waits), now=0.0).assignments == {"A": None, "B": {"a100-1": 8}}
    # a head more starved than A (ratio 2.0) still takes A's GPUs
    starved = job("B", 8, samples=1e8, wait=2000.0)
    assert kept.plan(one, (a_runs, starved), now=0.0).assignments == {"A": None, "B": {"a100-1": 8}}
    assert PlannerParams().protect_after == 0.0


def test_a_starved_head_a_fragment_plan_starts_is_not_taken_back_by_the_next_head() -> None:
    one = ClusterView((NodeView("a100-1", "a100", "a100", 8, 8),))
    bounded = dict(stretch_weights=True, head_reservation=True, reserve_after=1.75, reserve_bound=2.0)

    def rounds(params: PlannerParams, a_wait: float) -> dict[str, Config | None]:
        policy = HopsPolicy(params)
        # the node is idle: a fragment plan starts the queue head A (latency ratio a_wait / 1000)
        started = policy.plan(one, (job("A", 8, samples=1e8, wait=a_wait),), now=0.0, fragment=True)
        assert started.assignments == {"A": {"a100-1": 8}}
        # the next round: B, the queue head now, has latency ratio 2.2, past the bound: it would start by preemption
        a_runs = job("A", 8, samples=1e8, wait=a_wait, current={"a100-1": 8})
        return dict(policy.plan(one, (a_runs, job("B", 8, samples=1e8, wait=2200.0)), now=360.0).assignments)

    # A was past the bound too when the fragment plan started it (2.5): it keeps its GPUs, as a round plan's head would
    assert rounds(rules_off(**bounded), 2500.0) == {"A": {"a100-1": 8}, "B": None}
    assert PlannerParams().protect_fragment_heads is True
    # switched off, the next round's head takes them back
    assert rounds(rules_off(**bounded, protect_fragment_heads=False), 2500.0) == {"A": None, "B": {"a100-1": 8}}
    # a job started while under the reservation's threshold (1.5 < 1.75) is not protected
    assert rounds(rules_off(**bounded), 1500.0) == {"A": None, "B": {"a100-1": 8}}
