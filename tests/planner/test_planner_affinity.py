"""Type affinity of fragment plans (planner.affinity, ``fragment_affinity``): idle GPUs go only to waiting jobs
for which they are estimated at a share of their best rate or more; round plans are unchanged."""

from __future__ import annotations

from planner.affinity import affine, best_rate, drop_slow
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config

from tests.planner.two_speeds import by_count, by_node

#: the fast node is held by a running job: a fragment plan sees the slow node's 4 GPUs idle
BUSY_FAST = ClusterView((NodeView("slow", "k80", "S", 4, 4), NodeView("fast", "v100", "F", 4, 0)))


def waiting(job_id: str, wait: float, thr: object) -> JobView:
    return JobView(job_id, (4,), 0.0, wait, 1000.0, 1.1, thr, total_samples=1e6)  # type: ignore[arg-type]


def fragment_plan(jobs: tuple[JobView, ...], **params: object) -> Plan:
    policy = HopsPolicy(PlannerParams(gap=0.0, **params))  # type: ignore[arg-type]
    return policy.plan(BUSY_FAST, jobs, 10_000.0, fragment=True)


def test_a_fragment_goes_to_the_job_it_suits_not_to_the_queue_head_it_slows_three_times() -> None:
    head, other = waiting("A", 500.0, by_node), waiting("B", 100.0, by_count)
    plain = fragment_plan((head, other))
    assert plain.assignments["A"] == {"slow": 4} and plain.assignments["B"] is None
    p = fragment_plan((head, other), fragment_affinity=0.5)
    assert p.assignments["A"] is None and p.assignments["B"] == {"slow": 4}
    assert p.diagnostics["window"] == ["B"]


def test_a_fragment_stays_idle_when_it_suits_no_waiting_job() -> None:
    p = fragment_plan((waiting("A", 500.0, by_node),), fragment_affinity=0.5)
    assert p.assignments["A"] is None
    # at a share the slow node reaches (1/3 of the best), the job takes it as before
    assert fragment_plan((waiting("A", 500.0, by_node),), fragment_affinity=0.3).assignments["A"] == {"slow": 4}


def test_round_plans_are_unchanged() -> None:
    head = waiting("A", 500.0, by_node)
    for f in (0.0, 0.5):
        policy = HopsPolicy(PlannerParams(gap=0.0, fragment_affinity=f))
        assert policy.plan(BUSY_FAST, (head,), 10_000.0).assignments["A"] == {"slow": 4}


def test_best_rate_is_over_the_whole_cluster_as_if_idle() -> None:
    assert best_rate(waiting("A", 0.0, by_node), BUSY_FAST, 1.4) == 12.0
    best: dict[str, float] = {}
    jobs = [waiting("A", 0.0, by_node), waiting("B", 0.0, by_count)]
    assert [j.job_id for j in affine(jobs, BUSY_FAST, 1.4, 0.5, best)] == ["B"]
    assert best == {"A": 12.0, "B": 4.0}


def test_drop_slow_keeps_running_jobs_and_good_enough_configs() -> None:
    a = waiting("A", 0.0, by_node)
    r = JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, by_node, total_samples=1e6, current=freeze_config({"slow": 4}))
    cands = [Candidate("A", freeze_config({"slow": 4}), 1.0), Candidate("A", freeze_config({"fast": 4}), 3.0),
             Candidate("R", freeze_config({"slow": 4}), 1.0)]
    kept = drop_slow(cands, (a, r), BUSY_FAST, 1.4, 0.5, {})
    assert [(c.job_id, dict(c.config)) for c in kept] == [("A", {"fast": 4}), ("R", {"slow": 4})]


def test_a_job_that_waited_its_run_time_takes_any_fragment() -> None:
    long_waiting = waiting("A", 1000.0, by_node)  # waited as long as its expected run time (age 1000 s)
    assert fragment_plan((long_waiting,), fragment_affinity=0.5).assignments["A"] == {"slow": 4}
