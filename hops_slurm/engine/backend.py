"""The live :class:`hops_slurm.backend.Backend`: the round loop's six methods on a real slurmctld.

Where it sits: the engine (:mod:`hops_slurm.engine.engine`) calls :meth:`SlurmBackend.read` once per
refresh (one job listing + one node listing, in the release's commands; Slurm is the source of truth), then the shared
round logic (:func:`hops_slurm.engine.rounds.plan_once`) asks it for the cluster and job views, plans,
and hands the plan to :meth:`SlurmBackend.apply`, which enacts it through
:class:`hops_slurm.slurm.enact.Enactor` (journaled hold / place / reserve / release / requeuehold).

A job may move between GPU types from round to round: the enactor asks Slurm for untyped GPUs on
named nodes, which Slurm 22.05 lets a job change freely (a typed request changed to another type is
never started: docs/slurm-22.05-findings.md).

Fragment plans see only idle GPUs: GPUs promised to jobs released into their reservation but not yet
started are taken out, and those jobs are not offered again until the next round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from estimator.estimate import Estimator
from hops_slurm.backend import Enactment
from hops_slurm.engine.aside import per_job
from hops_slurm.engine.jobs import FALLBACK_AGE, estimate, fallback_throughput, job_view
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_FAILED, JobState
from hops_slurm.slurm.api import SlurmApi, SlurmJob, SlurmNode
from hops_slurm.slurm.enact import EnactResult, Enactor, job_reservation
from hops_slurm.slurm.views import cluster_view
from planner.views import ClusterView, Config, JobView, NodeView, Plan


@dataclass
class SlurmBackend:
    """``tracked``: the engine's live bookkeeping (job id -> :class:`JobState`), shared with the engine;
    ``estimator_for``: builds an :class:`Estimator` for a cluster view (None: every job uses the fallback);
    ``job_env``: extra environment per job id for the env files (recorder settings); ``set_aside``: called
    with a job whose estimate or view fails (:mod:`hops_slurm.engine.aside`): it is left out of the plan."""

    api: SlurmApi
    enactor: Enactor
    tracked: dict[str, JobState]
    partition: str = "hops"
    estimator_for: Callable[[ClusterView], Estimator | None] = lambda _c: None
    job_env: Callable[[str, Mapping[str, int]], dict[str, str]] = lambda _j, _c: {}
    set_aside: Callable[[JobState, str], None] = lambda _j, _r: None
    round_id: str = ""
    jobs: list[SlurmJob] = field(default_factory=list)
    nodes: list[SlurmNode] = field(default_factory=list)
    last_result: EnactResult | None = None

    def read(self) -> None:
        self.jobs = self.api.jobs()
        self.nodes = self.api.nodes()

    # ----- Backend protocol -------------------------------------------------------------------------
    def now(self) -> float:
        return time.time()

    def _listing(self) -> dict[str, SlurmJob]:
        return {j.job_id: j for j in self.jobs}

    def _placed_pending(self) -> dict[str, dict[str, int]]:
        """Pending jobs released into their own reservation: GPUs already promised to them."""
        out = {}
        for j in self.jobs:
            if j.is_hops and j.pending and not j.held and j.reservation == job_reservation(j.job_id):
                planned = self.enactor.planned_config(j.job_id)
                if planned:
                    out[j.job_id] = planned
        return out

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        view = cluster_view(self.nodes, self.jobs, fragment=fragment, partition=self.partition)
        if not fragment:
            return view
        promised: dict[str, int] = {}
        for cfg in self._placed_pending().values():
            for n, k in cfg.items():
                promised[n] = promised.get(n, 0) + k
        return ClusterView(nodes=tuple(
            NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus, max(0, n.free_gpus - promised.get(n.name, 0)))
            for n in view.nodes))

    def schedulable(self) -> list[JobState]:
        """Tracked jobs Slurm lists as pending or running in the Hops partition, profiled (or failed)."""
        listing = self._listing()
        out = []
        for js in self.tracked.values():
            seen = listing.get(js.job_id)
            if seen is None or not (seen.pending or seen.active) or js.profile not in (PROFILE_DONE, PROFILE_FAILED) \
                    or js.aside:
                continue
            out.append(js)
        return out

    def job_views(self, *, fragment: bool) -> tuple[JobView, ...]:
        listing = self._listing()
        placed = self._placed_pending()
        now = self.now()
        cluster = cluster_view(self.nodes, self.jobs, fragment=False, partition=self.partition)
        estimator = self.estimator_for(cluster) if cluster.nodes else None
        memo: dict[tuple[object, ...], object] = {}
        est = {}
        for js in self.schedulable():
            got = per_job(js, "estimating its throughput", lambda js=js: estimate(js, estimator, memo), self.set_aside)
            if got is not None:
                est[js.job_id] = got
        ages = [a for _f, a, _s in est.values() if a]
        fallback_age = sum(ages) / len(ages) if ages else FALLBACK_AGE
        views = []
        for js in self.schedulable():
            seen = listing[js.job_id]
            if js.job_id not in est or (fragment and (seen.active or js.job_id in placed)):
                continue
            fn, age, sens = est[js.job_id]
            view = per_job(js, "planning", lambda js=js, seen=seen, fn=fn, age=age, sens=sens: job_view(
                js, now, throughput=fn, age=age, sensitivity=sens, fallback_age=fallback_age,
                current=seen.gpu_config() if seen.active else None), self.set_aside)
            if view is not None:
                views.append(view)
        return tuple(views)

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        if fragment:
            wanted = {j: dict(c) for j, c in plan.assignments.items() if c}
        else:
            wanted = {j: (dict(c) if c else None) for j, c in plan.assignments.items()}
        env = {j: self.job_env(j, c) for j, c in wanted.items() if c}
        result = self.enactor.apply(wanted, job_env=env, round_id=self.round_id)
        self.last_result = result
        self.read()
        return Enactment(started=list(result.started), preempted=list(result.preempted), kept=list(result.kept))

    def wait_until(self, t: float) -> None:
        time.sleep(max(0.0, t - self.now()))

    def next_activity(self) -> float | None:
        return self.now() + 1.0

    def done(self) -> bool:
        return False
