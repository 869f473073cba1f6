"""The plannings of one instant (hops_slurm.core.rounds.plan_instant): fragment plans follow while the last one
placed a job and GPUs stay idle, and stop when its enactment started nothing (every placement refused by
Slurm): the same inputs would plan the same again; each instant says why it stopped (its exit reason), and the
engine's metrics count every reason; a round that holds running jobs in place plans fragment plans only."""

from __future__ import annotations

from hops_slurm.core.interface import Enactment
import pytest

from hops_slurm.core import rounds
from hops_slurm.core.rounds import EXIT_REASONS, LoopSettings, plan_instant, run_rounds
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.sim.forecast_backend import ForecastBackend
from planner.views import ClusterView, JobView, NodeView, Plan, Policy


class OneAtATime(Policy):
    """Places the first waiting job on one free GPU of the first node with one."""

    name = "one-at-a-time"
    supports_fragment_plans = True

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        free = [n for n in cluster.nodes if n.free_gpus]
        waiting = [j for j in jobs if j.current is None]
        assignments: dict[str, dict[str, int] | None] = {j.job_id: None for j in jobs}
        if free and waiting:
            assignments[waiting[0].job_id] = {free[0].name: 1}
        return Plan(assignments)  # type: ignore[arg-type]


class Cluster:
    """A backend with ``gpus`` GPUs on one node; ``refuse``: its apply starts nothing (as when Slurm would not
    split a placement as planned)."""

    def __init__(self, jobs: int, gpus: int, refuse: bool = False) -> None:
        self.waiting = [f"j{i}" for i in range(jobs)]
        self.running: list[str] = []
        self.gpus, self.refuse = gpus, refuse
        self.applied = 0

    def now(self) -> float:
        return 100.0

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        return ClusterView((NodeView("n1", "a100", "a100", self.gpus, self.gpus - len(self.running)),))

    def job_views(self, *, fragment: bool) -> tuple[JobView, ...]:
        return tuple(JobView(j, (1,), 0.0, 0.0, 100.0, 1.0, throughput=lambda c: 1.0) for j in self.waiting)

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        self.applied += 1
        if self.refuse:
            return Enactment()
        started = list(plan.placed())
        self.waiting = [j for j in self.waiting if j not in started]
        self.running += started
        return Enactment(started=started)


def test_fragment_plans_follow_while_each_starts_a_job_and_gpus_stay_idle() -> None:
    backend = Cluster(jobs=5, gpus=3)
    plannings = plan_instant(backend, OneAtATime(), fragment=True, index=1, limit=4)  # type: ignore[arg-type]
    assert len(plannings) == 3 and backend.running == ["j0", "j1", "j2"]  # the third filled the node
    assert plannings.exit == rounds.EXIT_NO_IDLE


def test_a_fragment_plan_whose_placements_were_all_refused_ends_the_instant() -> None:
    backend = Cluster(jobs=5, gpus=3, refuse=True)
    plannings = plan_instant(backend, OneAtATime(), fragment=True, index=1, limit=4)  # type: ignore[arg-type]
    assert len(plannings) == 1 and backend.applied == 1  # not three more identical plans, each refused
    assert plannings.exit == rounds.EXIT_REFUSED
    backend = Cluster(jobs=5, gpus=3, refuse=True)
    plannings = plan_instant(backend, OneAtATime(), fragment=False, limit=5)  # type: ignore[arg-type]
    assert len(plannings) == 2  # a round plan is still followed by one fragment plan, as before


class Nothing(OneAtATime):
    name = "nothing"

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        return Plan({j.job_id: None for j in jobs})


class NoFragments(OneAtATime):
    supports_fragment_plans = False


@pytest.mark.parametrize(("backend", "policy", "kw", "reason", "plans"), [
    (Cluster(jobs=0, gpus=3), OneAtATime(), {}, rounds.EXIT_NOTHING, 0),  # no job to plan
    (Cluster(jobs=5, gpus=9), OneAtATime(), {}, rounds.EXIT_LIMIT, 4),  # the instant's most plannings
    (Cluster(jobs=5, gpus=9), OneAtATime(), {"fragment": False, "follow": False}, rounds.EXIT_SINGLE, 1),  # at ticks
    (Cluster(jobs=5, gpus=9), OneAtATime(), {"dry_run": True}, rounds.EXIT_SINGLE, 1),
    (Cluster(jobs=5, gpus=9), NoFragments(), {"fragment": False}, rounds.EXIT_NO_FRAGMENTS, 1),
    (Cluster(jobs=5, gpus=9), Nothing(), {}, rounds.EXIT_PLACED_NONE, 1),
    (Cluster(jobs=5, gpus=3), OneAtATime(), {}, rounds.EXIT_NO_IDLE, 3),
    (Cluster(jobs=5, gpus=3, refuse=True), OneAtATime(), {}, rounds.EXIT_REFUSED, 1),
    (Cluster(jobs=2, gpus=9), OneAtATime(), {}, rounds.EXIT_NOTHING, 2),  # nothing left to plan
])
def test_each_instant_says_why_its_plannings_stopped(backend: Cluster, policy: Policy, kw: dict, reason: str,
                                                      plans: int) -> None:
    kw = {"fragment": True, "index": 1, "limit": 4} | kw
    plannings = plan_instant(backend, policy, **kw)  # type: ignore[arg-type]
    assert (plannings.exit, len(plannings)) == (reason, plans)


def test_the_metrics_count_every_exit_reason_and_no_other() -> None:
    """The list of exit reasons is what ``hops_planning_exits_total{reason}`` exports (each from the start)."""
    metrics = EngineMetrics()
    exported = {s.labels["reason"] for m in metrics.registry.collect() if m.name == "hops_planning_exits"
                for s in m.samples if s.name == "hops_planning_exits_total"}
    assert exported == set(EXIT_REASONS) and len(EXIT_REASONS) == 7
    metrics.planning_exit(rounds.EXIT_LIMIT)
    assert metrics.registry.get_sample_value("hops_planning_exits_total", {"reason": rounds.EXIT_LIMIT}) == 1.0


class Recording(OneAtATime):
    """Records whether each planning was a fragment plan."""

    def __init__(self) -> None:
        self.fragments: list[bool] = []

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        self.fragments.append(fragment)
        return super().plan(cluster, jobs, now, fragment=fragment)


def _forecast_backend() -> ForecastBackend:
    def job(job_id: str, current: dict[str, int] | None) -> JobView:
        return JobView(job_id, (1,), 0.0, 0.0, 10_000.0, 1.0, throughput=lambda c: 1.0, total_samples=10_000.0,
                       current=current, placed_for=100.0 if current else 0.0)
    cluster = ClusterView((NodeView("n1", "a100", "a100", 3, 3),))
    return ForecastBackend(cluster, (job("r", {"n1": 1}), job("a", None), job("b", None)), 0.0)


def test_a_round_that_holds_running_jobs_plans_only_fragment_plans() -> None:
    policy = Recording()
    run_rounds(_forecast_backend(), policy, LoopSettings(360.0, 30.0), max_rounds=1)
    assert policy.fragments[0] is False  # the round's own instant: a round plan
    policy = Recording()
    run_rounds(_forecast_backend(), policy, LoopSettings(360.0, 30.0), max_rounds=1, hold_running=True)
    assert policy.fragments and all(policy.fragments)  # running jobs stay where they are: fragment plans only
