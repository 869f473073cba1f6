"""Crash recovery: bring Slurm back to a state the engine can plan from, guided by the journal.

Where it sits: called by the engine when it starts (:class:`hops_slurm.engine.engine.Engine`),
before the first round, after a crash at any step of :mod:`hops_slurm.slurm.enact`. Slurm is the truth;
the journal says which actions were in flight. Afterwards every Hops job is in one of three states:

* running, with no reservation attached (its per-job reservation deleted);
* pending and admin-held, with no reservation (the next round plans it);
* pending, released, attached to its own complete reservation, with a journaled ``release`` (a
  placement that finished before the crash; it starts on its planned nodes).

A half-written placement (held, maybe with new NodeList and a reservation) is rolled back to "held"; a
job its owner released outside any plan is held; reservations ``hops-j<id>`` no longer needed are
deleted; the gate is re-created if missing. Nothing is cancelled: no job is lost.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from hops_slurm.journal import Action, Journal
from hops_slurm.slurm.api import SlurmApi, SlurmError
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.snapshot import Snapshot, job_reservation, placed_config, reservation_job

log = logging.getLogger(__name__)


@dataclass
class ReconcileReport:
    interrupted: list[Action] = field(default_factory=list)  # actions in flight at the crash
    held: list[str] = field(default_factory=list)  # jobs put (back) on admin hold
    rolled_back: list[str] = field(default_factory=list)  # half-placed jobs returned to held
    kept_placed: list[str] = field(default_factory=list)  # complete placements left to start
    detached: list[str] = field(default_factory=list)  # running jobs detached from their reservation
    deleted_reservations: list[str] = field(default_factory=list)
    gate_created: bool = False


def reconcile(api: SlurmApi, journal: Journal, *, gate_nodes: list[str] | None = None, timeout: float = 15.0) -> ReconcileReport:
    report = ReconcileReport(interrupted=journal.mark_interrupted())
    for a in report.interrupted:
        log.warning("interrupted action #%d %s job=%s %s", a.id, a.kind, a.job_id, a.args)
    enactor = Enactor(api, journal, managed_nodes=gate_nodes)
    enactor.round_id = "reconcile"
    report.gate_created = enactor.ensure_gate()
    snap = _settled_snapshot(api, timeout)
    keep: set[str] = set()
    hold: dict[str, dict[str, object]] = {}
    detach: dict[str, dict[str, object]] = {}
    for job in snap.jobs:
        if not job.is_hops or not (job.pending or job.active):
            continue
        own = job_reservation(job.job_id)
        if job.active:
            if job.reservation == own:
                detach[job.job_id] = {"reservation": own}
                report.detached.append(job.job_id)
            continue
        if placed_config(job, journal, snap.reservation_map) is not None:  # complete: left to start
            keep.add(own)
            report.kept_placed.append(job.job_id)
            continue
        if job.reason != "JobHeldAdmin":  # released, user-held, or requeued (which is a user hold)
            hold[job.job_id] = {"reason": "reconcile"}
            report.held.append(job.job_id)
        if job.reservation:
            detach[job.job_id] = {"reservation": job.reservation}
            report.rolled_back.append(job.job_id)
    # one journal phase and one scontrol command each (hops_slurm.slurm.batch), holds before detaches
    failed = enactor.batched("hold", hold, "hold")
    failed.update(enactor.batched("detach", detach, "update_job", {"Reservation": ""}))
    if failed:
        raise SlurmError("; ".join(f"job {j}: {e}" for j, e in sorted(failed.items())))
    # reservations no longer needed: one phase, one scontrol reading the deletes from its standard input
    stale = {job_id: r.name for r in api.reservations() if (job_id := reservation_job(r.name)) is not None
             and r.name not in keep}
    failed = enactor.scripted("unreserve", {j: {"reservation": n} for j, n in stale.items()}, "delete_reservation",
                              {j: (n,) for j, n in stale.items()})
    report.deleted_reservations.extend(n for j, n in stale.items() if j not in failed)
    if failed:
        raise SlurmError("; ".join(f"reservation {stale[j]}: {e}" for j, e in sorted(failed.items())))
    return report


def _settled_snapshot(api: SlurmApi, timeout: float, poll: float = 0.2) -> Snapshot:
    """A job requeued just before the crash passes through COMPLETING before it is pending (user-held):
    read Slurm until (up to ``timeout``) no Hops job is completing, so it is repaired as the pending job it
    becomes. The last read."""
    deadline = time.monotonic() + timeout
    while True:
        snap = Snapshot.read(api)
        if not any(j.is_hops and j.state == "COMPLETING" for j in snap.jobs) or time.monotonic() >= deadline:
            return snap
        time.sleep(poll)
