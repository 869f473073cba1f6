"""The live :class:`hops_slurm.core.interface.Backend`: the round's reads and enactment on a real slurmctld.

Where it sits: the engine (:mod:`hops_slurm.engine.engine`) calls :meth:`SlurmBackend.read` once per
refresh: one :class:`hops_slurm.slurm.snapshot.Snapshot` (the job listing, the nodes, the reservations;
Slurm is the source of truth), from which every Slurm-derived fact of the round is computed
(:mod:`hops_slurm.slurm.snapshot`). The shared round logic (:func:`hops_slurm.core.interface.plan_once`) asks
it for the cluster and job views, plans, and hands the plan to :meth:`SlurmBackend.apply`, which enacts
it on that snapshot through :class:`hops_slurm.slurm.enact.Enactor` (journaled hold / place / reserve /
release / requeuehold) and takes the enactor's one re-read as the next snapshot.

It never calls up into the engine, and keeps nothing of a round: the engine's round session hands it
the job views of the round (built from its bookkeeping and the estimator) and the environment of the
jobs a plan starts, as arguments, through :class:`PlanningBackend`, the :class:`hops_slurm.core.interface.Backend`
one planning sees.

A job may move between GPU types from round to round: the enactor asks Slurm for untyped GPUs on
named nodes, which Slurm 22.05 lets a job change freely (a typed request changed to another type is
never started: docs/slurm-22.05-findings.md).

Fragment plans see only idle GPUs: GPUs promised to jobs released into their reservation but not yet
started are taken out, and those jobs (and running ones) are not offered again until the next round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from hops_slurm.core.interface import Enactment, seen_by_fragment_plan
from hops_slurm.engine.coexist import restore_directives
from hops_slurm.engine.offer import starting_requests
from hops_slurm.slurm.api import SlurmApi, SlurmJob
from hops_slurm.slurm.gov_source import GovernanceSource, jobs_fair_share, jobs_limits, subprocess_runner
from hops_slurm.slurm.enact import EnactResult, Enactor
from hops_slurm.slurm.scope import HopsScope
from hops_slurm.slurm.snapshot import Snapshot
from planner.governance import Limits
from planner.views import ClusterView, JobView, Plan


@dataclass
class SlurmBackend:
    """``placed``: placed-and-pending job -> its config (from the snapshot and the journal); ``governance``:
    where the site's associations and QOS are read (None: no
    limits enforced, e.g. a cluster without slurmdbd)."""

    api: SlurmApi
    enactor: Enactor
    #: the Hops partitions (one name or several, the default first): the nodes planned on, and each job's own
    partition: str | tuple[str, ...] = "hops"
    snapshot: Snapshot = field(default_factory=Snapshot)
    placed: dict[str, dict[str, int]] = field(default_factory=dict)
    last_result: EnactResult | None = None
    governance: GovernanceSource | None = None
    #: job id -> the canonical directives the engine stored when it first saw the job (its AdminComment
    #: may have been replaced since: hops_slurm.engine.coexist)
    stored: Callable[[], Mapping[str, str]] | None = None

    def read(self, jobs: list[SlurmJob] | None = None, listed_at: float | None = None) -> Snapshot:
        """Read Slurm (``jobs``: a job listing just read, reused, read from ``listed_at`` on; without it the
        snapshot's time is unknown, 0, and no offer is made of it): the round's snapshot."""
        snap = Snapshot.read(self.api, jobs, listed_at if jobs is None or listed_at is not None else 0.0)
        self.use_snapshot(snap)
        return self.snapshot

    def use_snapshot(self, snap: Snapshot) -> None:
        """Make ``snap`` the current snapshot (and work out what is placed and pending on it); tracked jobs
        whose AdminComment another tool replaced retain their stored directives (hops_slurm.engine.coexist)."""
        if self.stored is not None:
            snap = restore_directives(snap, self.stored())
        self.snapshot = snap
        # placed and pending, and about to start on an offer: GPUs no plan may give to another job
        self.placed = {**snap.placed_pending(self.enactor.journal), **starting_requests(snap.jobs, snap.taken)}

    @property
    def jobs(self) -> tuple[SlurmJob, ...]:
        return self.snapshot.jobs

    @property
    def listing(self) -> dict[str, SlurmJob]:
        return self.snapshot.listing

    @staticmethod
    def read_governance(env: Mapping[str, str] | None) -> GovernanceSource:
        """Associations and QOS read with ``sacctmgr`` in ``env`` (the CLI backend's environment)."""
        return GovernanceSource(subprocess_runner(env, timeout=15.0))

    def limits(self) -> Limits | None:
        """The site's limits over the snapshot's jobs (hops_slurm.slurm.gov_limits); None without a source."""
        types = {n.name: n.gpu_type for n in self.snapshot.nodes if n.gpu_type}  # per-GPU-type limits
        return jobs_limits(self.governance, self.jobs, self.placed, types)  # placed-and-pending jobs hold GPUs too

    def fair_share(self) -> dict[str, float]:
        """Job id -> Slurm's FairShare of its association (``sshare``; planner.fairshare); {} without."""
        return jobs_fair_share(self.governance, self.jobs)

    # ----- what one planning reads and does (PlanningBackend) -----------------------------------------
    def now(self) -> float:
        return self.api.now()

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        return self.snapshot.cluster_view(fragment=fragment, partition=self.partition, promised=self.placed)

    def job_views(self, views: tuple[JobView, ...], *, fragment: bool) -> tuple[JobView, ...]:
        """The engine's ``views``, each restricted to the nodes of its own Hops partitions (:meth:`confined`); a
        fragment plan leaves out placed-and-pending jobs (running ones are its context: the policy places
        waiting jobs only)."""
        views = self.confined(views)
        if not fragment:
            return views
        listing = self.listing
        return tuple(v for v in views if seen_by_fragment_plan(
            running=v.current is not None, started=v.job_id in listing and listing[v.job_id].active,
            promised=v.job_id in self.placed))

    def confined(self, views: tuple[JobView, ...]) -> tuple[JobView, ...]:
        """``views`` with :attr:`JobView.nodes` set for each job that may not use every Hops node: the nodes
        of the Hops partitions it lists (:meth:`hops_slurm.slurm.scope.HopsScope.nodes_of`). With one Hops
        partition, or several over the same nodes, nothing changes."""
        scope = HopsScope((self.partition,) if isinstance(self.partition, str) else tuple(self.partition))
        nodes = [n for n in self.snapshot.nodes if n.gpus_total]
        every = frozenset(scope.managed(nodes))
        if all(scope.nodes_of_partition(p, nodes) == every for p in scope.partitions):
            return views
        listing = self.listing
        memo: dict[str, frozenset[str]] = {}
        out = []
        for v in views:
            job = listing.get(v.job_id)
            if job is None:
                out.append(v)
                continue
            if job.partition not in memo:
                memo[job.partition] = scope.nodes_of(job, nodes)
            allowed = memo[job.partition]
            out.append(v if allowed == every or v.nodes == allowed else replace(v, nodes=allowed))
        return tuple(out)

    def apply(self, plan: Plan, *, fragment: bool, job_env: Mapping[str, Mapping[str, str]],
              round_id: str) -> Enactment:
        """Enact ``plan`` on the current snapshot (``job_env``: the engine's part of the environment of each
        job it starts; ``round_id``: the journal's name for this planning) and take Slurm's state after it."""
        wanted: dict[str, dict[str, int] | None]
        if fragment:
            wanted = {j: dict(c) for j, c in plan.assignments.items() if c}
        else:
            wanted = {j: (dict(c) if c else None) for j, c in plan.assignments.items()}
        env = {j: {"HOPS_GPU_TYPE": self.snapshot.gpu_type_of(c), **job_env.get(j, {})}
               for j, c in wanted.items() if c}
        result = self.enactor.apply(wanted, job_env=env, round_id=round_id, snapshot=self.snapshot)
        self.last_result = result
        if result.after is not None:
            self.use_snapshot(result.after)  # the enactor's one re-read after releasing jobs
        elif result.preempted or result.unplaced or result.refused or result.ended:
            self.read()  # nothing started, but Slurm's state changed: read it back
        return Enactment(started=list(result.started), preempted=list(result.preempted), kept=list(result.kept))


class RoundInputs(Protocol):
    """What the engine's round session hands one planning (:class:`hops_slurm.engine.cycle.RoundSession`)."""

    views: tuple[JobView, ...]  # the job views of the instant
    job_env: Mapping[str, Mapping[str, str]]  # the engine's environment of the jobs the plan starts
    round_id: str  # the journal's name for the planning


@dataclass
class PlanningBackend:
    """The :class:`hops_slurm.core.interface.Backend` one live planning sees: :class:`SlurmBackend` with the
    round's ``inputs`` as its arguments (read when the planning asks: the views and the environment
    change between the plannings of one instant)."""

    backend: SlurmBackend
    inputs: RoundInputs

    def now(self) -> float:
        return self.backend.now()

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        return self.backend.cluster_view(fragment=fragment)

    def job_views(self, *, fragment: bool) -> tuple[JobView, ...]:
        return self.backend.job_views(self.inputs.views, fragment=fragment)

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        return self.backend.apply(plan, fragment=fragment, job_env=self.inputs.job_env, round_id=self.inputs.round_id)

    def limits(self) -> Limits | None:
        return self.backend.limits()

    def fair_share(self) -> dict[str, float]:
        return self.backend.fair_share()

    def wait_until(self, t: float) -> None:
        time.sleep(max(0.0, t - self.now()))

    def next_activity(self) -> float | None:
        return self.now() + 1.0

    def done(self) -> bool:
        return False
