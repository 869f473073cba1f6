"""Why a round plan preempts a running job (planner.changes)."""

from __future__ import annotations

from planner.changes import DESCRIPTIONS, Change, plan_changes
from planner.hops import HopsPolicy
from planner.views import ClusterView, Config, JobView, NodeView
from tests.planner.rules_off import rules_off

NODES = ClusterView((NodeView("k1", "k80", "k80", 4, 4), NodeView("k2", "k80", "k80", 4, 4),
                     NodeView("v1", "v100", "v100", 4, 4)))


def job(job_id: str, current: Config | None, gpus: tuple[int, ...] = (2,)) -> JobView:
    return JobView(job_id, gpus, submit_time=0.0, wait=0.0, age=1000.0, sensitivity=1.0,
                   throughput=lambda c: float(sum(c.values())), total_samples=1e6, current=current)


def test_each_change_of_a_running_job_is_named_by_what_it_does() -> None:
    jobs = (job("same", {"k1": 2}), job("gone", {"k1": 2}), job("type", {"k2": 2}), job("count", {"v1": 2}, (2, 4)),
            job("nodes", {"k2": 2}), job("waiting", None), job("unnamed", {"v1": 2}))
    plan = {"same": {"k1": 2}, "gone": None, "type": {"v1": 2}, "count": {"v1": 4}, "nodes": {"k1": 2},
            "waiting": {"k2": 2}}
    assert plan_changes(plan, {}, jobs, NODES) == {
        "gone": Change.REQUEUED, "type": Change.MOVED_TYPE, "count": Change.MOVED_COUNT, "nodes": Change.MOVED_NODES}


def test_hops_diagnostics_name_swaps_explorations_growth_and_jobs_held_in_place() -> None:
    jobs = (job("swap", {"k1": 2}), job("expl", {"k2": 2}), job("grow", {"v1": 2}, (2, 4)), job("held", {"k1": 2}))
    plan = {"swap": None, "expl": {"v1": 2}, "grow": {"v1": 4}, "held": None}
    diag = {"swapped": {"w1": "swap"}, "explored": {"expl": "unmeasured"}, "grown": {"grow": 2},
            "in_place": {"held": "min_run_time"}}
    assert plan_changes(plan, diag, jobs, NODES) == {
        "swap": Change.SWAPPED, "expl": Change.EXPLORE, "grow": Change.GROWN}
    assert set(DESCRIPTIONS) == set(Change)


def test_a_round_plan_that_requeues_a_job_for_a_more_starved_one_names_it_requeued() -> None:
    one = ClusterView((NodeView("a1", "a100", "a100", 8, 8),))
    runs = JobView("runs", (8,), submit_time=0.0, wait=0.0, age=1000.0, sensitivity=1.0,
                   throughput=lambda c: 10.0 * sum(c.values()), total_samples=1e8, current={"a1": 8},
                   run_time=3600.0, placed_for=3600.0)
    starved = JobView("starved", (8,), submit_time=0.0, wait=50_000.0, age=1000.0, sensitivity=1.0,
                      throughput=lambda c: 10.0 * sum(c.values()), total_samples=1e8)
    plan = HopsPolicy(rules_off(stretch_weights=True, preempt_penalty=0.0, restart_penalty=0.0)).plan(
        one, (runs, starved), now=0.0)
    assert plan.assignments == {"runs": None, "starved": {"a1": 8}}
    assert plan_changes(plan.assignments, plan.diagnostics, (runs, starved), one) == {"runs": Change.REQUEUED}


def test_every_cause_is_explained_in_the_user_guide() -> None:
    """Users read the causes in ``hops-slurm queue`` and ``report --history``: each has its row there."""
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "user-guide.md").read_text()
    section = guide.split("### Why was my running job stopped", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `")}
    assert rows == {c.value for c in Change} | {"other"}
