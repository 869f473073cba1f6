"""Enactment: turn the planner's desired assignments into Slurm state, one journaled step at a time.

Where it sits: the live engine's ``apply(plan)`` calls :meth:`Enactor.apply` with ``{job_id: Config | None}``;
it reads Slurm through a :class:`~hops_slurm.slurm.api.SlurmApi` and journals every step before taking it.

Every step is a journal phase over all the jobs it applies to (:meth:`hops_slurm.journal.Journal.phase`:
the intents in one transaction before any is carried out, the outcomes in one after), and hold, release,
requeuehold and detach are one ``scontrol`` command for all of them (:mod:`hops_slurm.slurm.batch`). The
pure placement arithmetic and the job environment files are :mod:`hops_slurm.slurm.placement`.

How a plan becomes exact placement on Slurm 22.05 (see docs in the module functions):

* **Gate.** A reservation ``hops-gate`` over every managed node, for root only (``IGNORE_JOBS``), keeps
  any job without a reservation of its own pending, so a Hops job released by its owner (the submit
  hook's hold is a user hold) cannot start outside a plan. New Hops jobs also get an admin hold at once
  (:meth:`Enactor.hold_new`), which their owner cannot release.
* **Placement** of ``{node: k}``: ``NumNodes`` + ``NodeList`` (required nodes) + a typed GPU request:
  ``TresPerNode=gres:gpu:TYPE:k`` when every node gets the same ``k``; ``TresPerJob=gres:gpu:TYPE:N`` when
  the split is uneven. Slurm splits a per-job request greedily in node order (first nodes take as many
  as they can, leaving one per remaining node), so an uneven config is enacted only when that greedy
  split of the free GPUs equals the plan (:func:`realisable`); otherwise it is refused and reported.
* **Per-job reservation** ``hops-j<id>`` on exactly the planned nodes for the job's owner (``OVERLAP``,
  ``IGNORE_JOBS``): made first, then one ``scontrol update`` writes the placement and attaches the job,
  which is released right after (an owner's edit of ``NodeList`` cannot leave the reservation's nodes).
  Once running, the job is detached and the reservation deleted (jobs attached when one ends are killed).
* **Preemption** is ``requeuehold`` (a user hold: an admin hold follows); re-placement adds ``StartTime=now``
  (requeue pushes the eligible time ~2 min ahead). A running job whose config is unchanged is kept. Every
  job to be stopped that listens first gets its notice and a grace to save a checkpoint
  (:mod:`hops_slurm.slurm.notice`); one that ends meanwhile is not requeued (nor placed).
* **Job environment.** 22.05 cannot set a pending job's environment: the engine writes
  ``<env_dir>/<job_id>.env`` (:func:`hops_job_env`) before releasing it; the job script sources it.
* **Reading back.** Once started, each job's allocation (GPU indices per node) is read back, recorded and
  compared with the plan; a mismatch is requeue-held and reported. Just those jobs are read where Slurm
  filters its JSON (24.05.1 on); else the whole listing, unless it is too long to read again
  (:func:`hops_slurm.slurm.batch.reads_back`): then the next refresh, which reads it anyway, does.
  Each phase is timed by name (:data:`ENACT_PHASES`) when the enactor has a timer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob, SlurmReservation
from hops_slurm.slurm.batch import jobs_of, reads_back, run_batch, run_each
from hops_slurm.slurm.foreign import evict_foreign
from hops_slurm.slurm.placement import (Placement, PlacementError, greedy_split, hops_job_env, ordered_config,  # noqa: F401
                                        placement_fields, read_job_env, realisable, write_job_env)
from hops_slurm.slurm.notice import Answered, Listening, Notice, NoticeSettings, Notifier
from hops_slurm.slurm.snapshot import (GATE, JOB_RESERVATION_PREFIX, OFFER, Snapshot, job_reservation, placed_config,  # noqa: F401
                                      released_config, reservation_job)
from planner.stages import StageTimer

log = logging.getLogger(__name__)


def allocated(job: SlurmJob | None) -> bool:
    return job is not None and job.active and bool(job.gpu_config())  # Slurm lists it running on its GPUs

DEFAULT_ENV_DIR = Path("/var/lib/hops-slurm/jobs")
#: settling a start: once the nodes' GPU counts have stayed short this long, read the started jobs (at most
#: once a second) in case they run anyway (another job on their nodes ended meanwhile). Slurm starts a
#: released job at its next scheduling pass, within about a second (bf_interval=1).
SETTLE_ASK_AFTER = 1.5
#: the enactor's phases, timed by name (the engine's timer: ``cycle="enact"``): the journal's kinds and the
#: waits between them (notice, requeued jobs pending again, grace, released jobs starting); none nested
ENACT_PHASES = ("gate", "hold", "notice", "requeuehold", "requeue_wait", "detach", "unreserve", "reserve",
                "place", "env", "grace", "release", "await_start", "allocations", "ungate")


# ----- enactment ----------------------------------------------------------------------------------
@dataclass
class EnactResult:
    """What :meth:`Enactor.apply` did. ``started``: released onto their planned nodes (restarts too);
    ``preempted``: requeue-held; ``kept``: unchanged running configs; ``unplaced``: pending placements
    withdrawn; ``refused``: job -> why its config was not enacted (it stays held); ``mismatched``: job ->
    the allocation Slurm gave instead of the plan (requeue-held); ``ended``: jobs the plan stopped that
    ended by themselves first (during their notice): neither requeued nor placed; ``notices``: job -> what
    became of its notice, for every running job the plan stopped."""

    started: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    mismatched: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    verified: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    ended: list[str] = field(default_factory=list)
    notices: dict[str, Notice] = field(default_factory=dict)
    #: the read after enactment (None: nothing was released, or not settled)
    after: Snapshot | None = None


class Enactor:
    """Applies assignments to Slurm through ``api``, journaling each step in ``journal``.

    ``managed_nodes``: the nodes Hops controls (the gate covers them; default: every node);
    ``env_dir``: where per-job environment files go; ``settle_timeout``: how long :meth:`apply` waits
    for released jobs to start before leaving them placed-and-pending (a later :meth:`settle` finishes);
    ``requeue_grace``: seconds between requeuing a job and releasing it again. slurmd revokes the old
    incarnation's credential with one-second resolution, and a restart inside that second is killed
    ("Job credential revoked", job FAILED) -- observed on 22.05 when re-placing right after requeuehold.
    ``notice``, ``listening``, ``answered``: the notice before a planned requeue (:class:`Notifier`; without
    ``notice`` none is given). ``timer``: times each of :data:`ENACT_PHASES` (none: untimed).
    """

    def __init__(self, api: SlurmApi, journal: Journal, *, managed_nodes: list[str] | None = None,
                 env_dir: Path = DEFAULT_ENV_DIR, settle_timeout: float = 10.0, poll: float = 0.2,
                 requeue_grace: float = 2.0, notice: NoticeSettings | None = None,
                 listening: Listening | None = None, answered: Answered | None = None,
                 timer: StageTimer | None = None) -> None:
        self.api, self.journal, self.managed_nodes, self.env_dir = api, journal, managed_nodes, env_dir
        self.settle_timeout, self.poll, self.requeue_grace = settle_timeout, poll, requeue_grace
        self.round_id = ""
        self.notifier = Notifier(api, journal, notice or NoticeSettings(grace=0.0), listening=listening, answered=answered)
        self.timer = timer

    def _timed(self, phase: str) -> AbstractContextManager[None]:
        """One of :data:`ENACT_PHASES`, timed by :attr:`timer` when there is one."""
        return self.timer.stage(phase) if self.timer is not None else nullcontext()

    @contextmanager
    def _action(self, kind: str, job_id: str, args: Mapping[str, object]) -> Iterator[None]:
        """One journaled action of ``kind`` (one job, or none: ``""``), timed as the phase of that name."""
        with self._timed(kind), self.journal.action(kind, job_id, dict(args), self.round_id):
            yield

    # ----- the gate and new jobs ------------------------------------------------------------------
    def gate_nodes(self) -> list[str]:
        return list(self.managed_nodes) if self.managed_nodes else [n.name for n in self.api.nodes()]

    def ensure_gate(self, reservations: Collection[SlurmReservation] | None = None) -> bool:
        """Create the gate reservation if it is missing; True if it was created. ``reservations``: the
        round's read of them (else they are read here)."""
        if any(r.name == GATE for r in (reservations if reservations is not None else self.api.reservations())):
            return False
        nodes = self.gate_nodes()
        with self._action("gate", "", {"nodes": nodes}):
            self.api.create_reservation(GATE, nodes, ["root"], ["IGNORE_JOBS"])
        return True

    def remove_gate(self) -> None:
        if any(r.name == GATE for r in self.api.reservations()):
            with self._action("ungate", "", {}):
                self.api.delete_reservation(GATE)

    def hold_new(self, jobs: Collection[SlurmJob] | None = None) -> list[str]:
        """Admin-hold every pending Hops job that is neither admin-held nor validly placed: fresh from the
        submit hook (user hold), released by its owner, or placed but edited by its owner since. One
        journal phase and one ``scontrol hold`` for all of them (:meth:`batched`)."""
        todo = {}
        for job in jobs if jobs is not None else self.api.jobs():
            if not (job.is_hops and job.pending) or job.reason == "JobHeldAdmin":
                continue
            if self._placed_pending(job):
                continue
            todo[job.job_id] = job.reason
        failed = self.batched("hold", {j: {"reason": r} for j, r in todo.items()}, "hold")
        for job_id, error in failed.items():
            log.warning("job %s: cannot hold it: %s", job_id, error)
        return [j for j in todo if j not in failed]

    def batched(self, kind: str, args: Mapping[str, Mapping[str, object]], op: str,
                 fields: Mapping[str, str] | None = None) -> dict[str, str]:
        """One journal phase of ``kind`` over the jobs of ``args`` (job id -> the action's args: intents in
        one transaction, outcomes in another) carried out by Slurm's list form of ``op``
        (:func:`hops_slurm.slurm.batch.run_batch`). Job id -> why, for the jobs it failed on."""
        if not args:
            return {}
        with self._timed(kind), self.journal.phase(kind, list(args.items()), self.round_id) as ph:
            for job_id, error in run_batch(self.api, op, list(args), fields).items():
                ph.failed(job_id, error)
        return dict(ph.errors)

    def scripted(self, kind: str, args: Mapping[str, Mapping[str, object]], op: str,
                 calls: Mapping[str, tuple[object, ...]]) -> dict[str, str]:
        """One journal phase of ``kind`` over the jobs of ``args``, carried out by ``op`` with each job's own
        arguments (``calls[job]``) in as few processes as the backend allows
        (:func:`hops_slurm.slurm.batch.run_each`: one ``scontrol`` reading them all from its standard
        input). Job id -> why, for the jobs it failed on."""
        if not args:
            return {}
        with self._timed(kind), self.journal.phase(kind, list(args.items()), self.round_id) as ph:
            for job_id, error in run_each(self.api, op, {j: calls[j] for j in args}).items():
                ph.failed(job_id, error)
        return dict(ph.errors)

    def _each(self, kind: str, args: Mapping[str, Mapping[str, object]], do: Callable[[str], None]) -> dict[str, str]:
        """One journal phase of ``kind`` over the jobs of ``args``, carried out job by job by ``do(job_id)``
        (an operation Slurm has no list form for). Job id -> why, for the jobs it failed on."""
        if not args:
            return {}
        with self._timed(kind), self.journal.phase(kind, list(args.items()), self.round_id) as ph:
            for job_id in args:
                try:
                    do(job_id)
                except SlurmError as exc:
                    ph.failed(job_id, str(exc))
        return dict(ph.errors)

    def evict_foreign(self, jobs: Collection[SlurmJob] | None = None, probes: Collection[str] | None = None) -> list[str]:
        """Jobs in a Hops reservation they were not given: :func:`hops_slurm.slurm.foreign.evict_foreign`."""
        return evict_foreign(self.api, self.journal, self.round_id, jobs if jobs is not None else self.api.jobs(), probes)

    def _placed_pending(self, job: SlurmJob) -> bool:
        """Placed and pending (:func:`hops_slurm.slurm.snapshot.placed_config`). The owner may edit a
        pending job (NodeList, GPUs per node or per job): an edited one is no longer placed, and
        :meth:`hold_new` puts it back on hold before it starts (one that started anyway is requeue-held
        when its allocation is read back: :meth:`settle`)."""
        return placed_config(job, self.journal) is not None

    # ----- applying a plan --------------------------------------------------------------------------
    def apply(self, assignments: Mapping[str, Mapping[str, int] | None], *,
              job_env: Mapping[str, Mapping[str, str]] | None = None, round_id: str = "",
              settle: bool = True, snapshot: Snapshot | None = None) -> EnactResult:
        """Enact ``{job_id: config or None}`` for the jobs named (others are left alone): keep unchanged
        running configs, requeue-hold changed or dropped ones, then place, gate and release the rest.
        Each started job's env file gets :func:`hops_job_env` (HOPS_GPUS, HOPS_LR, HOPS_PLACEMENT) plus ``job_env[job]``
        (e.g. runtime-recorder settings).

        ``snapshot``: the round's read of Slurm (else one is read here); the enactment acts on it and,
        when it released jobs and ``settle`` is set, waits for their GPUs to show as used on their nodes
        (the node listing, polled) and reads the job listing once more: the result's ``after``. Released
        jobs that started by then are verified (:meth:`settle`); the others stay placed and pending, and
        the next refresh settles them. A round that preempts also waits, reading the job listing, until
        the preempted jobs are pending again."""
        self.round_id = round_id
        result = EnactResult()
        snap = snapshot if snapshot is not None else Snapshot.read(self.api)
        self.ensure_gate(snap.reservations)
        snap = snap.held(self.hold_new([j for j in snap.jobs if j.job_id in assignments]))
        jobs = snap.listing
        to_place: dict[str, dict[str, int]] = {}
        stopping: list[SlurmJob] = []
        withdrawn: list[SlurmJob] = []
        for job_id, config in assignments.items():
            job = jobs.get(str(job_id))
            if job is None or not (job.pending or job.active):
                result.refused[str(job_id)] = "job is no longer pending or running"
                continue
            want = {n: int(k) for n, k in (config or {}).items() if k > 0}
            if job.active:
                if want and job.gpu_config() == want:
                    result.kept.append(job.job_id)
                    continue
                stopping.append(job)  # notice first, then requeue-held (:meth:`_stop`)
            elif self._placed_pending(job):
                if want and self.planned_config(job.job_id) == want:
                    result.kept.append(job.job_id)  # placed last time and still waiting for its GPUs
                    continue
                if not want:
                    withdrawn.append(job)
            if want:
                to_place[job.job_id] = want
        result.unplaced.extend(self._unplace_all(withdrawn, snap.reservation_map))
        pending = self._stop(stopping, result, snap)
        for job_id in result.ended:
            to_place.pop(job_id, None)
        free: dict[str, int] = {}
        if to_place:
            free = self._place_planned(to_place, result, job_env or {}, snap, pending, [*result.preempted, *result.ended])
        if settle and result.started and not reads_back(self.api, len(snap.jobs)):
            # a long listing on 22.05: the next refresh, which reads it anyway, verifies them (its ``settle`` step)
            after = snap.with_jobs(list(pending.values()), whole=False) if pending else snap
            result.after = after.released(result.started, self.journal).with_reservations(self.api.reservations())
        elif settle and result.started:
            with self._timed("await_start"):
                after = self._await_start(result.started, snap, free)
            self.settle(result.started, result, snapshot=after)
            result.after = (Snapshot.read(self.api) if result.mismatched else  # requeue-held again: read it all
                            after.detached(list(result.verified)).with_reservations(self.api.reservations()))
        return result

    def _await_start(self, started: list[str], snap: Snapshot, free_after: Mapping[str, int]) -> Snapshot:
        """Wait (up to ``settle_timeout``) until the nodes of the ``started`` jobs show their GPUs in use
        (``free_after``: free GPUs per node once they run), polling the node listing; after
        :data:`SETTLE_ASK_AFTER` also the job listing, once a second, in case another job on those nodes
        ended meanwhile; each such read is of the started jobs only where Slurm filters its JSON (24.11 on,
        :func:`hops_slurm.slurm.batch.jobs_of`), else the listing. The snapshot of both (read once more
        unless the last read is the answer)."""
        wanted = {n for j in started for n in (self.planned_config(j) or {})}
        t0 = time.monotonic()
        deadline = t0 + self.settle_timeout
        next_ask = t0 + SETTLE_ASK_AFTER
        nodes = list(snap.nodes)
        while True:
            nodes = self.api.nodes()
            short = {n.name for n in nodes if n.name in wanted and len(n.gpus_used) < n.gpus_total - free_after.get(n.name, 0)}
            if not short or time.monotonic() > deadline:
                break
            if time.monotonic() >= next_ask:
                listed_at = time.time()  # before the listing: what it reflects (an offer's as_of)
                jobs, whole = jobs_of(self.api, started)
                listing = {j.job_id: j for j in jobs}
                suspects = [j for j in started if set(self.planned_config(j) or {}) & short]
                if all(allocated(listing.get(j)) for j in suspects):
                    return snap.with_jobs(jobs, nodes, whole=whole, listed_at=listed_at)
                next_ask = time.monotonic() + 1.0
            time.sleep(self.poll)
        listed_at = time.time()
        jobs, whole = jobs_of(self.api, started)
        return snap.with_jobs(jobs, nodes, whole=whole, listed_at=listed_at)

    def _stop(self, jobs: list[SlurmJob], result: EnactResult, snap: Snapshot) -> dict[str, SlurmJob]:
        """Give the running ``jobs`` the plan stops their notice and wait (:class:`Notifier`), then
        requeue-hold those still running; a job that ended first (during its notice, or just before its
        requeue: ``requeuehold Incomplete`` leaves it alone) goes to ``result.ended``. The job listing
        read once they are pending (empty when none was requeued)."""
        if not jobs:
            return {}
        with self._timed("notice"):
            result.notices = self.notifier.notify(jobs, self.round_id)
        stop = []
        for job in jobs:
            if result.notices[job.job_id].ended:
                result.ended.append(job.job_id)
            else:
                stop.append(job)
        self._preempt_all(stop, {j.job_id for j in stop if job_reservation(j.job_id) in snap.reservation_map})
        result.preempted.extend(j.job_id for j in stop)
        pending = self._hold_requeued(result.preempted)
        for job_id in list(result.preempted):
            seen = pending.get(job_id)
            if seen is not None and not (seen.pending or seen.active):
                log.info("job %s ended before its requeue reached it: not requeued", job_id)
                result.preempted.remove(job_id)
                result.ended.append(job_id)
        return pending

    def _preempt(self, job: SlurmJob, attached: bool | None = None) -> None:
        with self._action("requeuehold", job.job_id, {"config": job.gpu_config()}):
            self.api.requeue_hold(job.job_id)
        self._drop_reservation(job.job_id, attached)

    def _preempt_all(self, jobs: list[SlurmJob], attached: Collection[str]) -> None:
        """Requeue-hold ``jobs`` (one phase, one ``scontrol requeuehold``); then the reservations of those
        ``attached`` to theirs. A refused requeue raises (the round stops; recovery repairs it)."""
        failed = self.batched("requeuehold", {j.job_id: {"config": j.gpu_config()} for j in jobs}, "requeue_hold")
        if failed:
            raise SlurmError("; ".join(f"requeuehold {j}: {e}" for j, e in failed.items()))
        self._drop_reservations([j.job_id for j in jobs if j.job_id in attached])

    def _hold_requeued(self, job_ids: list[str]) -> dict[str, SlurmJob]:
        """``requeuehold`` leaves a *user* hold (JobHeldUser: the owner could release it): once the jobs are
        pending again, make it an admin hold. The job listing it waited on (empty when none was preempted)."""
        if not job_ids:
            return {}
        with self._timed("requeue_wait"):
            jobs = self._wait_pending(job_ids)
        todo = [j for j in job_ids if (job := jobs.get(j)) is not None and job.pending and job.reason != "JobHeldAdmin"]
        failed = self.batched("hold", {j: {"reason": "after requeue"} for j in todo}, "hold")
        if failed:
            raise SlurmError("; ".join(f"hold {j}: {e}" for j, e in failed.items()))
        for job_id in todo:
            jobs[job_id] = jobs[job_id].model_copy(update={"priority": 0, "reason": "JobHeldAdmin"})
        return jobs

    def _unplace_all(self, jobs: list[SlurmJob], reservations: Collection[str]) -> list[str]:
        """Withdraw placed-and-pending ``jobs`` (one ``scontrol hold``; :meth:`_drop_reservations` of those with
        their reservation among ``reservations``). One Slurm will not hold stays placed (logged)."""
        failed = self.batched("hold", {j.job_id: {"reason": "withdrawn from plan"} for j in jobs}, "hold")
        for job_id, error in failed.items():
            log.warning("job %s: cannot hold it to withdraw its placement: %s", job_id, error)
        self._drop_reservations([j.job_id for j in jobs if j.job_id not in failed and job_reservation(j.job_id) in reservations])
        return [j.job_id for j in jobs if j.job_id not in failed]

    def _drop_reservation(self, job_id: str, attached: bool | None = None) -> None:
        """Detach the job from its reservation and delete it (``attached``: known from a fresh read,
        None: look the reservation up)."""
        name = job_reservation(job_id)
        if attached is None:
            attached = any(r.name == name for r in self.api.reservations())
        if not attached:
            return
        with self._action("detach", job_id, {"reservation": name}):
            self.api.update_job(job_id, {"Reservation": ""})
        with self._action("unreserve", job_id, {"reservation": name}):
            self.api.delete_reservation(name)

    def _drop_reservations(self, job_ids: list[str]) -> None:
        """Detach the jobs (known attached) from their own reservations and delete those: one phase and one
        ``scontrol update JobId=..,.. Reservation=`` for the detaches, one phase for the deletes (one
        command each). A refused step raises after the others were done."""
        if not job_ids:
            return
        names = {j: job_reservation(j) for j in job_ids}
        failed = self.batched("detach", {j: {"reservation": n} for j, n in names.items()}, "update_job", {"Reservation": ""})
        failed.update(self.scripted("unreserve", {j: {"reservation": n} for j, n in names.items() if j not in failed},
                                    "delete_reservation", {j: (n,) for j, n in names.items()}))
        if failed:
            raise SlurmError("; ".join(f"job {j}: {e}" for j, e in failed.items()))

    def _wait_pending(self, job_ids: list[str]) -> dict[str, SlurmJob]:
        """Requeued jobs pass through COMPLETING; wait until every named job is pending again (or has
        ended: a job that finished before its requeue is not requeued). Reads those jobs (:func:`jobs_of`)."""
        deadline = time.monotonic() + self.settle_timeout
        while True:
            jobs = {j.job_id: j for j in jobs_of(self.api, job_ids)[0]}
            if all(jobs.get(j) is None or not jobs[j].active for j in job_ids) or time.monotonic() > deadline:
                return jobs
            time.sleep(self.poll)

    def _place_planned(self, to_place: dict[str, dict[str, int]], result: EnactResult,
                       job_env: Mapping[str, Mapping[str, str]], snap: Snapshot, requeued: Mapping[str, SlurmJob],
                       preempted: list[str]) -> dict[str, int]:
        """Check each planned config of ``to_place`` (the job still pending, Slurm's split of the free GPUs
        exact, its environment buildable: else refused) and place and release the others
        (:meth:`place_and_release`); the free GPUs per node once they run. ``requeued``: the listing read
        after the preempted jobs became pending (their state now)."""
        jobs = {**snap.listing, **requeued}
        nodes = snap.node_map
        reservations = [r for r in snap.reservations if r.name not in {job_reservation(j) for j in preempted}]
        order = list(nodes)
        # free GPUs once the preempted jobs are gone (:meth:`Snapshot.free_gpus`)
        free = snap.free_gpus(freed=preempted)
        ready: list[Placement] = []
        for job_id, want in to_place.items():
            job = jobs.get(job_id)
            if job is None or not job.pending:
                result.refused[job_id] = f"job is {job.state if job else 'gone'}, not pending"
                continue
            try:
                fields = placement_fields(want, nodes, order)
                if not realisable(want, free, order):
                    raise PlacementError(f"Slurm would not split {want} exactly with free GPUs "
                                         f"{ {n: free[n] for n in want} } (greedy split in node order)")
            except PlacementError as exc:
                result.refused[job_id] = str(exc)
                log.warning("job %s not placed: %s", job_id, exc)
                continue
            try:
                env = hops_job_env(job.directives, want, job_env.get(job_id))
            except (ValueError, HopsError) as exc:  # its stored directives no longer read back: this job only
                result.refused[job_id] = f"its directives cannot be read back: {exc}"
                log.warning("job %s not placed: %s", job_id, result.refused[job_id])
                continue
            ready.append(Placement(job, want, fields, env))
            for n, k in want.items():
                free[n] -= k
        failed = self.place_and_release(ready, reservations)
        for p in ready:
            if p.job.job_id in failed:
                result.refused[p.job.job_id] = failed[p.job.job_id]
                log.error("job %s: placement failed: %s", p.job.job_id, failed[p.job.job_id])
                for n, k in p.config.items():
                    free[n] += k
            else:
                result.started.append(p.job.job_id)
        return free

    def place(self, job: SlurmJob, config: Mapping[str, int], fields: Mapping[str, str],
              env: Mapping[str, str] | None = None, reservations: list[SlurmReservation] | None = None) -> None:
        """Place one job (:meth:`place_and_release`; its environment :func:`hops_job_env` without a learning
        rate, then ``env``); a failure raises :class:`SlurmError`."""
        values = {**hops_job_env(None, config), **(env or {})}
        failed = self.place_and_release([Placement(job, dict(config), dict(fields), values)], reservations)
        if failed:
            raise SlurmError(failed[job.job_id])

    def place_and_release(self, placements: list[Placement], reservations: list[SlurmReservation] | None = None) -> dict[str, str]:
        """Hold, reserve, write the placement with its reservation, write the environment, release: each a
        journal phase over every job (its intents in one transaction before any is carried out, its
        outcomes in one after), hold and release one ``scontrol`` for all. A job whose step fails leaves
        the later phases (it stays admin-held; a reservation made for it is deleted again). Job id -> why,
        for the jobs not released. ``reservations``: a fresh read of Slurm's reservations (else read here).

        Per placement that is one ``scontrol create reservation`` and one ``scontrol update`` (the
        placement fields, ``Reservation`` and ``StartTime=now`` in one), plus the round's one hold and one
        release: the attach of earlier versions is part of the update, since the reservation is made first."""
        failed: dict[str, str] = {}
        by_id = {p.job.job_id: p for p in placements}

        def alive() -> list[Placement]:
            return [p for p in placements if p.job.job_id not in failed]

        failed.update(self.batched("hold", {p.job.job_id: {"reason": "before placement"} for p in alive()
                                            if p.job.reason != "JobHeldAdmin"}, "hold"))
        existing = {r.name: r for r in (reservations if reservations is not None else self.api.reservations())}
        reserve: dict[str, dict[str, object]] = {}
        for p in alive():
            name = job_reservation(p.job.job_id)
            old = existing.get(name)
            if old is not None and set(old.nodes) == set(p.config) and p.job.reservation == name:
                continue  # placed before on the same nodes: its reservation stays
            if old is not None:
                try:
                    self._drop_reservation(p.job.job_id)
                except SlurmError as exc:
                    failed[p.job.job_id] = str(exc)
                    continue
            reserve[p.job.job_id] = {"reservation": name, "nodes": list(p.config), "user": p.job.user}
        failed.update(self.scripted("reserve", {j: a for j, a in reserve.items() if j not in failed}, "create_reservation",
                                    {j: (job_reservation(j), list(by_id[j].config), [by_id[j].job.user or "root"],
                                         ["OVERLAP", "IGNORE_JOBS"]) for j in reserve}))
        made = [j for j in reserve if j not in failed]
        fields = {p.job.job_id: {**p.fields, "Reservation": job_reservation(p.job.job_id), "StartTime": "now"}
                  for p in alive()}
        failed.update(self.scripted("place", {j: {"config": dict(by_id[j].config), "fields": f} for j, f in fields.items()},
                                    "update_job", {j: (j, f) for j, f in fields.items()}))
        values = {p.job.job_id: p.env for p in alive()}
        failed.update(self._each("env", {j: {"values": v} for j, v in values.items()},
                                 lambda j: write_job_env(self.env_dir, j, values[j])))
        release = [p.job.job_id for p in alive()]
        waits = [self.journal.last_started(j, "requeuehold") for j in release]  # journaled: survives a restart
        last = max((w for w in waits if w is not None), default=None)
        if last is not None:
            with self._timed("grace"):
                time.sleep(max(0.0, min(self.requeue_grace, last + self.requeue_grace - time.time())))
        failed.update(self.batched("release", {j: {"config": dict(by_id[j].config)} for j in release}, "release"))
        for job_id in made:  # a reservation made for a job that was not released: deleted again
            if job_id in failed:
                try:
                    self._drop_reservation(job_id)
                except SlurmError as exc:
                    log.warning("job %s: its reservation stays until the next recovery: %s", job_id, exc)
        return failed

    # ----- after release ----------------------------------------------------------------------------
    def planned_config(self, job_id: str) -> dict[str, int] | None:
        return released_config(self.journal, job_id)

    def settle(self, job_ids: list[str] | None = None, result: EnactResult | None = None,
               timeout: float | None = None, snapshot: Snapshot | None = None) -> EnactResult:
        """Read back and record the allocation of each released job that started; detach and delete its
        reservation when it matches the plan, requeue-hold it when it does not. With ``snapshot`` that
        read is the snapshot's (no Slurm read, no waiting); else the job listing is read until every job
        started or ``timeout`` ran out. Jobs still pending stay placed (gated by their reservation).
        ``job_ids``: default every job in its own reservation."""
        result = result if result is not None else EnactResult()
        deadline = time.monotonic() + (self.settle_timeout if timeout is None else timeout)
        listing = snapshot.listing if snapshot is not None else None
        if job_ids is None:
            jobs = listing.values() if listing is not None else self.api.jobs()
            job_ids = [j.job_id for j in jobs if j.reservation == job_reservation(j.job_id)]
        waiting = set(job_ids)
        reservations = snapshot.reservation_map if snapshot is not None else None
        started: list[SlurmJob] = []
        while waiting:
            if listing is None:
                listing = {j.job_id: j for j in self.api.jobs()}  # one listing per pass
            for job_id in sorted(waiting):
                seen = listing.get(job_id)
                if seen is None or not (seen.pending or seen.active):
                    if reservations is None or job_reservation(job_id) in reservations:
                        self._drop_reservation_if_any(job_id)
                    waiting.discard(job_id)
                # right after start the record may not list GRES for every node yet
                elif seen.active and seen.gpu_alloc and all(seen.gpu_alloc.values()):
                    started.append(seen)
                    waiting.discard(job_id)
            self._verify_all(started, result)
            started = []
            if not waiting or snapshot is not None or time.monotonic() > deadline:
                break
            time.sleep(self.poll)
            listing = None
        return result

    def _drop_reservation_if_any(self, job_id: str) -> None:
        try:
            self._drop_reservation(job_id)
        except SlurmError as exc:  # the job is gone: a detach may fail, the reservation must still go
            log.info("job %s: %s", job_id, exc)
            name = job_reservation(job_id)
            if any(r.name == name for r in self.api.reservations()):
                with self._action("unreserve", job_id, {"reservation": name}):
                    self.api.delete_reservation(name)

    def _verify_all(self, jobs: list[SlurmJob], result: EnactResult) -> None:
        """Record the allocations of the started ``jobs`` (one transaction); those that match their plan are
        detached and their reservations deleted (one phase each, one ``scontrol update`` for the
        detaches), the others requeue-held (:meth:`_verify`)."""
        planned = {j.job_id: self.planned_config(j.job_id) or {} for j in jobs}
        matched = [j for j in jobs if j.gpu_config() == planned[j.job_id]]
        ok = {j.job_id for j in matched}
        with self._timed("allocations"):
            self.journal.record_allocations([(j.job_id, planned[j.job_id], j.gpu_alloc, j.job_id in ok)
                                             for j in jobs], self.round_id)
        for job in matched:
            result.verified[job.job_id] = dict(job.gpu_alloc)
        attached = [j.job_id for j in matched if j.reservation == job_reservation(j.job_id)]
        for job in matched:
            if job.job_id not in attached:  # not attached as far as this read shows: look the reservation up
                self._drop_reservation(job.job_id)
        self._drop_reservations(attached)
        for job in jobs:
            if job.job_id not in ok:
                self._mismatched(job, planned[job.job_id], result)

    def _mismatched(self, job: SlurmJob, planned: Mapping[str, int], result: EnactResult) -> None:
        log.error("job %s started on %s, plan was %s: requeue-holding it", job.job_id, job.gpu_config(), planned)
        result.mismatched[job.job_id] = dict(job.gpu_alloc)
        self._preempt(job)
        self._hold_requeued([job.job_id])
