"""One read of Slurm per round, and every fact the engine derives from it, computed here and only here.

Where it sits: the live engine reads a :class:`Snapshot` (the job listing, the nodes, the reservations:
one ``squeue``/``sinfo``/reservation read on 22.05) at the start of a round; the enactment
(:mod:`hops_slurm.slurm.enact`) acts on that snapshot and reads the jobs it released once more
(:meth:`hops_slurm.slurm.enact.Enactor.apply`; with a long listing on 22.05 it does not, and
:meth:`Snapshot.released` stands for that read until the next refresh); crash recovery
(:mod:`hops_slurm.slurm.reconcile`) reads one too. What they all ask of it lives in this module:

* **placed and pending** (:func:`placed_config`): a pending job released into its own reservation on the
  placement the journal last recorded, untouched since (the engine promises it those GPUs, the
  enactment keeps it, recovery leaves it to start);
* **free GPUs** (:meth:`Snapshot.free_gpus`): per node, from the GPU indices in use, with the GPUs of
  named jobs counted free (running Hops jobs for a round plan, preempted ones during enactment) and
  the GPUs promised to placed-and-pending jobs taken out (a fragment plan);
* the planner's :class:`planner.views.ClusterView` (:meth:`Snapshot.cluster_view`).

The released config has one source of truth: the journal's last completed ``release`` of the job
(:func:`released_config`). ``JobState.placements`` records what Slurm then ran (the accounting), and
``records.sqlite`` is the report's copy of that. Pure apart from reading the journal.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from hops_slurm.slurm.api import SlurmApi, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.scope import PartitionSet, node_in
from planner.views import ClusterView, Config, NodeView, freeze_config

if TYPE_CHECKING:
    from hops_slurm.journal import Journal

GATE = "hops-gate"
#: the reservation of offered jobs (hops_slurm.engine.offer): over the gate's nodes, open to every user
OFFER = "hops-offer"
JOB_RESERVATION_PREFIX = "hops-j"
#: journal kinds that change a job's placement; the last of them must be a completed release
PLACEMENT_STEPS = ("place", "reserve", "attach", "release", "hold", "requeuehold")


#: every reservation the engine makes is named so (the gate, the offer, ``hops-j<id>``, ``hops-p<id>``)
HOPS_RESERVATION_PREFIX = "hops-"


def reservation_names(text: str) -> tuple[str, ...]:
    """The reservations a job's ``Reservation`` field names: Slurm reads it as a comma list and skips empty
    names (``_get_resv_list``: ``strtok_r(.., ",")``, the same in 22.05, 24.11 and 26.05), so
    ``,hops-offer`` and ``maint,hops-offer`` both name ``hops-offer``."""
    return tuple(name for name in text.split(",") if name)


def hops_reservations(text: str) -> tuple[str, ...]:
    """The Hops reservations (``hops-*``) among :func:`reservation_names`."""
    return tuple(name for name in reservation_names(text) if name.startswith(HOPS_RESERVATION_PREFIX))


def job_reservation(job_id: str) -> str:
    return f"{JOB_RESERVATION_PREFIX}{job_id}"


def reservation_job(name: str) -> str | None:
    """The job id a per-job reservation belongs to, None for other reservations."""
    rest = name[len(JOB_RESERVATION_PREFIX):] if name.startswith(JOB_RESERVATION_PREFIX) else ""
    return rest if rest.isdigit() else None


def gpu_count(tres: str) -> int:
    """The GPU count of a ``gres:gpu[:type]:N`` request (0 for none): the field's last number."""
    tail = tres.rsplit(":", 1)[-1] if tres else ""
    return int(tail) if tail.isdigit() else (0 if not tres else -1)


def released_config(journal: Journal, job_id: str) -> dict[str, int] | None:
    """The config the job was last released on (the journal's last completed ``release``)."""
    last = journal.last_done(job_id, "release")
    return {n: int(k) for n, k in last.args["config"].items()} if last else None


def placed_config(job: SlurmJob, journal: Journal, reservations: Mapping[str, SlurmReservation] | None = None) -> dict[str, int] | None:
    """The config a pending Hops job is placed on, or None when it is not placed and pending.

    Placed and pending: released (not held) into its own reservation, its last placement step in the
    journal a completed release, and Slurm still shows that placement (its required nodes and GPU
    counts as written; an owner may edit a pending job, and an edited one is no longer placed). With
    ``reservations`` (name -> reservation) the reservation must also exist on exactly those nodes."""
    if not (job.is_hops and job.pending and not job.held and job.reservation == job_reservation(job.job_id)):
        return None
    planned = released_config(journal, job.job_id)
    if planned is None or set(job.required_nodes) != set(planned):
        return None
    step = journal.last_of(job.job_id, PLACEMENT_STEPS)  # its last placement step
    if step is None or step.kind != "release" or step.status != "done":
        return None
    placed = journal.last_done(job.job_id, "place")
    fields = placed.args.get("fields", {}) if placed is not None else {}
    if gpu_count(job.tres_per_node) != gpu_count(fields.get("TresPerNode", "")) or \
            gpu_count(job.tres_per_job) != gpu_count(fields.get("TresPerJob", "")):
        return None
    if reservations is not None:
        own = reservations.get(job_reservation(job.job_id))
        if own is None or set(own.nodes) != set(planned):
            return None
    return planned


def server_class(node: SlurmNode) -> str:
    """The node's entity class: a feature other than its GPU type (the minicluster exports
    ``server_class`` as a feature), else the GPU type."""
    return next((f for f in node.features if f != node.gpu_type), node.gpu_type)


@dataclass(frozen=True)
class Snapshot:
    """What Slurm showed at one read (``taken``: epoch seconds). Updated locally only for the engine's
    own commands that succeeded (:meth:`changed`); anything else is read again."""

    jobs: tuple[SlurmJob, ...] = ()
    nodes: tuple[SlurmNode, ...] = ()
    reservations: tuple[SlurmReservation, ...] = ()
    taken: float = field(default=0.0, compare=False)

    @classmethod
    def read(cls, api: SlurmApi, jobs: Collection[SlurmJob] | None = None, listed_at: float | None = None) -> Snapshot:
        """Jobs (``jobs``: a listing read at ``listed_at``), nodes and reservations: one listing each.
        ``taken`` is the time *before* the reads, so that nothing Slurm did before ``taken`` is missing
        from them (an offer's ``as_of``: hops_slurm.engine.offer).

        The nodes are read *before* the job listing: a job that starts between the two reads (the jobs
        the last round released start within a second, while the listing of 10,000 jobs takes seconds)
        is then listed running on GPUs the nodes show free, and :meth:`free_gpus` counts the GPUs a job
        holds as used (or free for a round plan, which re-plans it) either way. Read the other way round,
        the nodes would show its GPUs in use while the listing shows it pending, held by no job: a round
        plan would see them taken and withdraw the placements it made a round ago."""
        taken = api.now() if jobs is None else (listed_at or 0.0)  # a listing of unknown time: 0, unknown
        if jobs is not None:
            return cls(tuple(jobs), tuple(api.nodes()), tuple(api.reservations()), taken)
        nodes = tuple(api.nodes())
        return cls(tuple(api.jobs()), nodes, tuple(api.reservations()), taken)

    @cached_property
    def listing(self) -> dict[str, SlurmJob]:
        return {j.job_id: j for j in self.jobs}

    @cached_property
    def reservation_map(self) -> dict[str, SlurmReservation]:
        return {r.name: r for r in self.reservations}

    @cached_property
    def node_map(self) -> dict[str, SlurmNode]:
        return {n.name: n for n in self.nodes}

    def changed(self, job_id: str, **update: object) -> Snapshot:
        """The snapshot with one job's fields changed (after a command of the engine's that succeeded)."""
        if job_id not in self.listing:
            return self
        return replace(self, jobs=tuple(j.model_copy(update=update) if j.job_id == job_id else j for j in self.jobs))

    def held(self, job_ids: Collection[str]) -> Snapshot:
        """After ``scontrol hold`` (as root) of ``job_ids``."""
        out = self
        for j in job_ids:
            out = out.changed(j, priority=0, reason="JobHeldAdmin")
        return out

    def detached(self, job_ids: Collection[str]) -> Snapshot:
        """After ``scontrol update Reservation=`` of ``job_ids``."""
        out = self
        for j in job_ids:
            out = out.changed(j, reservation="")
        return out

    def released(self, job_ids: Collection[str], journal: Journal) -> Snapshot:
        """After placing and releasing ``job_ids``, before reading them back: each as its journaled ``place``
        wrote it (required on its config's nodes, the GPU request, its own reservation) and released
        (pending, priority above 0), so placed and pending (:func:`placed_config`), its GPUs promised. The
        nodes stay as read before the release, so a job started since counts its GPUs once (promised, not
        yet in use) until the next read shows it running."""
        jobs = []
        for job_id in job_ids:
            job, config, placed = self.listing.get(job_id), released_config(journal, job_id), journal.last_done(job_id, "place")
            if job is None or config is None:
                continue
            fields = placed.args.get("fields", {}) if placed is not None else {}
            jobs.append(job.model_copy(update={
                "state": "PENDING", "priority": job.priority or 1, "reason": "", "reservation": job_reservation(job_id),
                "required_nodes": tuple(config), "node_count": len(config),
                "tres_per_node": str(fields.get("TresPerNode", "")), "tres_per_job": str(fields.get("TresPerJob", ""))}))
        return self.with_jobs(jobs, whole=False)

    def with_reservations(self, reservations: Collection[SlurmReservation]) -> Snapshot:
        return replace(self, reservations=tuple(reservations))

    def with_jobs(self, jobs: Collection[SlurmJob], nodes: Collection[SlurmNode] | None = None, *,
                  whole: bool = True, listed_at: float | None = None) -> Snapshot:
        """This snapshot with the job listing ``jobs`` (``whole``) or with just the jobs in ``jobs`` read
        again (the others as this snapshot has them; a job not in it is added), and ``nodes`` if given.
        ``taken`` moves to ``listed_at`` (the time before that listing was read) only for a whole listing:
        a partial one misses every job submitted since this snapshot's own read."""
        if not whole:
            fresh = {j.job_id: j for j in jobs}
            kept = [fresh.pop(j.job_id, j) for j in self.jobs]
            jobs = [*kept, *fresh.values()]
        taken = listed_at if whole and listed_at is not None else self.taken
        return replace(self, jobs=tuple(jobs), nodes=tuple(nodes) if nodes is not None else self.nodes, taken=taken)

    # ----- facts ---------------------------------------------------------------------------------------
    def placed_pending(self, journal: Journal) -> dict[str, dict[str, int]]:
        """Every placed-and-pending Hops job -> the config it is placed on (:func:`placed_config`)."""
        out = {}
        for j in self.jobs:
            cfg = placed_config(j, journal, self.reservation_map)
            if cfg is not None:
                out[j.job_id] = cfg
        return out

    def free_gpus(self, *, freed: Collection[str] = (), promised: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, int]:
        """Node -> GPUs free: its GPUs less the indices in use (what the node reports, and what running
        jobs hold), where the GPUs of the jobs in ``freed`` count free, and less the GPUs ``promised``
        (job -> config) to jobs placed but not yet started."""
        freed = set(freed)
        held: dict[str, set[int]] = {}
        released: dict[str, set[int]] = {}
        for job in self.jobs:
            if not job.active:
                continue
            for n, idx in job.gpu_alloc.items():
                (released if job.job_id in freed else held).setdefault(n, set()).update(idx)
        out = {}
        for n in self.nodes:
            used = (set(n.gpus_used) - released.get(n.name, set())) | held.get(n.name, set())
            out[n.name] = max(0, n.gpus_total - len(used))
        for cfg in (promised or {}).values():
            for n, k in cfg.items():
                if n in out:
                    out[n] = max(0, out[n] - int(k))
        return out

    def hops_running(self) -> list[str]:
        return [j.job_id for j in self.jobs if j.is_hops and j.active]

    def cluster_view(self, *, fragment: bool, partition: PartitionSet = "hops",
                     promised: Mapping[str, Mapping[str, int]] | None = None) -> ClusterView:
        """GPU nodes in ``partition`` (one name or several: the Hops partitions; None: all) that can run jobs, in Slurm's node order. A round plan
        (``fragment=False``) counts the running Hops jobs' GPUs free, as they are re-planned; a fragment
        plan sees only idle GPUs, less those ``promised`` to placed-and-pending jobs."""
        free = self.free_gpus(freed=() if fragment else self.hops_running(), promised=promised if fragment else None)
        views = []
        for n in self.nodes:
            if n.gpus_total == 0 or not n.usable or not node_in(n, partition):
                continue
            views.append(NodeView(name=n.name, gpu_type=n.gpu_type, server_class=server_class(n),
                                  total_gpus=n.gpus_total, free_gpus=free[n.name]))
        return ClusterView(nodes=tuple(views))

    def gpu_nodes(self, partition: PartitionSet = "hops") -> tuple[tuple[str, str, str, int], ...]:
        """(name, GPU type, entity class, GPUs) of the nodes :meth:`cluster_view` lists, in its order: what
        an estimator is made for (no free GPUs counted: cheap to compare at every refresh)."""
        return tuple((n.name, n.gpu_type, server_class(n), n.gpus_total) for n in self.nodes
                     if n.gpus_total and n.usable and node_in(n, partition))

    def gpu_type_of(self, config: Mapping[str, int]) -> str:
        """The GPU type of a config's nodes, ``mixed`` when they differ."""
        types = {n.gpu_type for n in self.nodes if n.name in config}
        return types.pop() if len(types) == 1 else "mixed"

    def usable_gpu_nodes(self, partition: PartitionSet) -> bool:
        return any(n.usable and n.gpus_total > 0 and node_in(n, partition) for n in self.nodes)


def cluster_view(nodes: Collection[SlurmNode], jobs: Collection[SlurmJob], *, fragment: bool,
                 partition: PartitionSet = "hops") -> ClusterView:
    """:meth:`Snapshot.cluster_view` of a listing of nodes and jobs."""
    return Snapshot(tuple(jobs), tuple(nodes)).cluster_view(fragment=fragment, partition=partition)


def current_configs(jobs: Collection[SlurmJob]) -> dict[str, Config]:
    """Running Hops jobs -> the config they hold now (for ``JobView.current``)."""
    return {j.job_id: freeze_config(j.gpu_config()) for j in jobs if j.is_hops and j.active and j.gpu_alloc}
