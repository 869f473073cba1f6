"""The backend interface's shared rules (hops_slurm/core/interface.py)."""

from __future__ import annotations

from hops_slurm.core.interface import Enactment, cause_of, plan_once, seen_by_fragment_plan
from hops_slurm.core.rounds import plan_summary
from planner.views import ClusterView, JobView, NodeView, Plan, Policy


def test_a_fragment_plan_sees_waiting_and_running_jobs_not_promised_ones() -> None:
    """The one rule both backends' ``job_views(fragment=True)`` follow."""
    assert seen_by_fragment_plan(running=False, started=False, promised=False)  # waiting: to place
    assert seen_by_fragment_plan(running=True, started=True, promised=False)  # running: context
    assert not seen_by_fragment_plan(running=False, started=False, promised=True)  # placed, its GPUs promised
    assert not seen_by_fragment_plan(running=False, started=True, promised=False)  # started, its view not yet


class _GiveToTheWaiting(Policy):
    """Gives the one GPU to the waiting job: the running one is requeued."""

    name = "give-to-the-waiting"

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        return Plan({j.job_id: (None if j.current else {"n1": 1}) for j in jobs})


class _OneGpu:
    """One node, one GPU: job ``r`` runs on it, ``w`` waits."""

    def now(self) -> float:
        return 100.0

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        return ClusterView((NodeView("n1", "a100", "a100", 1, 0 if fragment else 1),))

    def job_views(self, *, fragment: bool) -> tuple[JobView, ...]:
        return tuple(JobView(j, (1,), 0.0, 0.0, 100.0, 1.0, throughput=lambda c: 1.0, current=cur)
                     for j, cur in (("r", {"n1": 1}), ("w", None)))

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        return Enactment(started=["w"], preempted=["r"])


def test_why_a_round_plan_preempts_is_derived_once_and_shown_everywhere() -> None:
    """The round record's counts, the job's placement (cause_of) and the planning's summary (``hops-slurm plan``,
    ``queue``) name the same cause; a job the plan did not name is ``other``."""
    planning = plan_once(_OneGpu(), _GiveToTheWaiting(), 0, fragment=False)
    assert planning is not None
    assert planning.record.preempted_by == {"requeued": 1}
    assert cause_of(planning.plan, "r") == "requeued" and cause_of(planning.plan, "x") == "other"
    assert plan_summary(planning)["changes"] == {"r": "requeued"}
