"""The toll on jobs moved before (planner.move_toll, ``move_toll`` and ``requeue_toll``): each earlier
preemption of a running job (``JobView.preemptions``) makes its next move and its requeue dearer."""

from __future__ import annotations

import pytest

from planner.hops import HopsPolicy
from planner.move_toll import toll_factor, tolled, weigh_kept
from planner.params import PlannerParams
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config

from tests.planner.two_speeds import ONE_NODE, SLOW_FAST, by_node, linear


def on_slow(preemptions: int, **kw: object) -> JobView:
    """A running job on the slow node with 2000 samples left: 500 s there, 167 s on the fast node."""
    return JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, kw.pop("thr", by_node), total_samples=2000.0,  # type: ignore[arg-type]
                   current=freeze_config({"slow": 4}), placed_for=400.0, run_time=400.0, restart_cost=60.0,
                   preemptions=preemptions, **kw)  # type: ignore[arg-type]


def plan(cluster: ClusterView, jobs: tuple[JobView, ...], policy: HopsPolicy | None = None, **params: object) -> Plan:
    policy = policy or HopsPolicy(PlannerParams(gap=0.0, min_run_time=300.0, **params))  # type: ignore[arg-type]
    return policy.plan(cluster, jobs, 10_000.0)


def test_the_toll_grows_with_a_running_jobs_preemptions() -> None:
    assert toll_factor(on_slow(0), 2.0) == 1.0
    assert toll_factor(on_slow(3), 2.0) == 7.0
    assert toll_factor(on_slow(3), 0.0) == 1.0  # off
    waiting = JobView("W", (4,), 0.0, 0.0, 100.0, 1.1, linear, preemptions=3)
    assert toll_factor(waiting, 2.0) == 1.0  # a waiting job pays nothing to start
    assert [j.restart_cost for j in tolled([on_slow(0), on_slow(3), waiting], 2.0)] == [60.0, 420.0, 0.0]


def test_weigh_kept_scales_only_the_tolled_jobs_candidates() -> None:
    cands = [Candidate("R", freeze_config({"slow": 4}), 1.0), Candidate("R", freeze_config({"fast": 4}), 3.0),
             Candidate("W", freeze_config({"fast": 4}), 3.0)]
    waiting = JobView("W", (4,), 0.0, 0.0, 100.0, 1.1, linear)
    assert [c.gain for c in weigh_kept(cands, [on_slow(2), waiting], 0.5)] == [2.0, 6.0, 3.0]
    assert weigh_kept(cands, [on_slow(2), waiting], 0.0) == cands


@pytest.mark.parametrize("formulation", ["compact", "plain"])
def test_a_job_moved_before_pays_a_dearer_move(formulation: str) -> None:
    # the move to the fast node saves 333 s against a 60 s restart; with a toll of 2 a job preempted 3 times
    # pays 420 s for it: it stays
    for k in (0, 3):
        assert plan(SLOW_FAST, (on_slow(k),), formulation=formulation).assignments["R"] == {"fast": 4}
    assert plan(SLOW_FAST, (on_slow(0),), formulation=formulation, move_toll=2.0).assignments["R"] == {"fast": 4}
    assert plan(SLOW_FAST, (on_slow(3),), formulation=formulation, move_toll=2.0).assignments["R"] == {"slow": 4}


def test_a_job_moved_before_pays_a_dearer_move_to_explore() -> None:
    def measured_on_slow(cfg: Config) -> float:  # the estimate puts the fast node below the slow one
        return 1.0 * sum(cfg.values()) if "slow" in cfg else 0.5 * sum(cfg.values())

    def optimistic(cfg: Config) -> float:  # unmeasured on the fast node
        return 0.0 if "slow" in cfg else 5.0 * sum(cfg.values())

    r = on_slow(3, thr=measured_on_slow, explore=optimistic)
    for toll, where in ((0.0, {"fast": 4}), (2.0, {"slow": 4})):
        policy = HopsPolicy(PlannerParams(gap=0.0, min_run_time=300.0, move_toll=toll))
        assert plan(SLOW_FAST, (r,), policy).assignments["R"] == {"slow": 4}  # preempted before: no idle_before yet
        p = plan(SLOW_FAST, (r,), policy)  # the fast node was idle for a whole round
        assert p.assignments["R"] == where and (("R" in p.diagnostics["explored"]) == (toll == 0.0))


def test_a_job_moved_before_is_dearer_to_requeue() -> None:
    def jobs(k: int) -> tuple[JobView, ...]:
        r = JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, linear, total_samples=1e6, current=freeze_config({"n0": 4}),
                    placed_for=400.0, run_time=400.0, restart_cost=60.0, preemptions=k)
        return r, JobView("W", (4,), 0.0, 100.0, 1000.0, 1.1, linear, total_samples=1e6)

    assert plan(ONE_NODE, jobs(2)).assignments["R"] is None
    assert plan(ONE_NODE, jobs(2), requeue_toll=5.0).assignments["R"] == {"n0": 4}
    assert plan(ONE_NODE, jobs(0), requeue_toll=5.0).assignments["R"] is None  # never preempted: no toll


def test_the_tolls_are_planner_parameters() -> None:
    assert PlannerParams().move_toll == 0.0 and PlannerParams().requeue_toll == 0.0
    p = PlannerParams().with_settings("move_toll=0.5,requeue_toll=1")
    assert (p.move_toll, p.requeue_toll) == (0.5, 1.0)
    for bad in ("move_toll", "requeue_toll"):
        with pytest.raises(ValueError, match=bad):
            PlannerParams(**{bad: -1.0})  # type: ignore[arg-type]
