"""Jobs in a Hops reservation the engine did not put there: found whatever Slurm syntax names it, and evicted.

Where it sits: the refresh's ``evict`` step (:mod:`hops_slurm.engine.cycle`) calls
:meth:`hops_slurm.slurm.enact.Enactor.evict_foreign` on the snapshot's jobs, which runs
:func:`evict_foreign` here. Slurm reads a job's ``Reservation`` as a comma list and skips empty names
(:func:`hops_slurm.slurm.snapshot.reservation_names`), so ``--reservation=,hops-offer`` or
``maint,hops-offer`` puts a job in ``hops-offer`` as surely as ``hops-offer`` does: every name counts.
The engine and the submit hook only ever write one name, so a field that names a Hops reservation among
others, or names one the job was not given, is foreign.

What belongs where (docs/security.md, "Reservations and edits"): the gate admits root's jobs; ``hops-j<id>``
the Hops job ``<id>``; ``hops-p<id>`` the probes of job ``<id>`` (named ``hops-probe-<id>-...``, and
with the engine's list of probe job ids, one of those); ``hops-offer`` a running Hops job the hook put
there (a pending one is detached and planned as any new job). A foreign job still pending is detached
(its field emptied); one that runs is requeue-held, and detached once pending at the next refresh.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob
from hops_slurm.slurm.snapshot import (GATE, JOB_RESERVATION_PREFIX, OFFER, hops_reservations, job_reservation,
                                      reservation_names)

log = logging.getLogger(__name__)

PROBE_RESERVATION_PREFIX = "hops-p"  # hops_slurm.engine.profiling: PROBE_RESERVATION_PREFIX
MAX_SHOWN = 200  # characters of a foreign field in the log and the journal


def given(job: SlurmJob, probes: Collection[str] | None = None) -> bool:
    """True when the job is in no Hops reservation, or in exactly the one the engine (or the hook) gave it."""
    resv = job.reservation
    if not hops_reservations(resv):
        return True
    if reservation_names(resv) != (resv,):
        return False  # several names, or empty ones around it: never the engine's writing
    if resv == GATE:
        return job.user == "root"
    if resv.startswith(JOB_RESERVATION_PREFIX):
        return job.is_hops and resv == job_reservation(job.job_id)
    if resv.startswith(PROBE_RESERVATION_PREFIX):
        owner = resv[len(PROBE_RESERVATION_PREFIX):]
        return job.name.startswith(f"hops-probe-{owner}-") and (probes is None or job.job_id in probes)
    # the offer: a Hops job the submit hook started there runs; one still pending is planned as any new job
    return resv == OFFER and job.is_hops and job.active


def evict_foreign(api: SlurmApi, journal: Journal, round_id: str, jobs: Collection[SlurmJob],
                  probes: Collection[str] | None = None) -> list[str]:
    """Detach every pending job :func:`given` says is foreign (one journaled action each); requeue-hold every
    running one (it is detached once pending). The jobs detached."""
    evicted = []
    for job in jobs:
        if not (job.pending or job.active) or given(job, probes):
            continue
        shown = job.reservation[:MAX_SHOWN]
        if job.active:
            log.error("job %s (%s) runs in Hops reservation %r it was not given: requeue-holding it",
                      job.job_id, job.user[:64], shown)
            try:
                with journal.action("foreign-requeuehold", job.job_id, {"reservation": shown}, round_id):
                    api.requeue_hold(job.job_id)
            except SlurmError as exc:  # one job Slurm will not requeue: the others go on
                log.error("job %s: cannot requeue it: %s", job.job_id, exc)
            continue
        with journal.action("detach", job.job_id, {"reservation": shown, "foreign": True}, round_id):
            api.update_job(job.job_id, {"Reservation": ""})
        evicted.append(job.job_id)
    return evicted


__all__ = ["evict_foreign", "given"]
