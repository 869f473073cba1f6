"""What an offered job was granted, and what becomes of one that holds anything else.

Where it sits: the refresh's ``adopt`` step (:mod:`hops_slurm.engine.cycle`) checks every Hops job Slurm
started in ``hops-offer`` with :func:`misfits` before :func:`hops_slurm.engine.offer.adopt` writes its
environment file; the jobs that do not match their grant are put right by :func:`put_right`.

The grant (what the hook wrote into the job's request, and what the engine offered): one node, in a Hops
partition, and one GPU count of the job's own ``gpus=`` list, no more than the engine offered on that node;
and one job per offer, so no two offered jobs submitted in the same second (the hook gives no second job an
offer read before the first: docs/design.md, "Offers"). A job that runs on anything else -- more GPUs or
nodes than it asked for (``--exclusive``, ``--core-spec``, a partition that gives whole nodes), a request
its owner edited while it was pending (``TresPerNode``, ``ReqNodes``, ``TresPerJob``), a GPU count its
declaration does not allow, the tasks of an array beyond the first -- is never adopted as it is: it is
requeue-held, admin-held once pending, detached from ``hops-offer`` and then planned as any pending job
(docs/security.md, "Offers"). A job never holds more GPUs than its declaration allows.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence

from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.offer_file import Published
from hops_slurm.slurm.api import SlurmError, SlurmJob
from hops_slurm.slurm.enact import Enactor

log = logging.getLogger(__name__)

def granted(job: SlurmJob) -> dict[str, int]:
    """What the hook wrote into the job's request: its one required node and its per-node GPU count
    ({} when the request is not of that shape, e.g. its owner edited it)."""
    tail = job.tres_per_node.rsplit(":", 1)[-1] if job.tres_per_node else ""
    if len(job.required_nodes) == 1 and tail.isdigit() and 0 < int(tail) <= 1024 and not job.tres_per_job:
        return {job.required_nodes[0]: int(tail)}
    return {}


def offered_on(history: Sequence[Published], node: str, submitted: float) -> int | None:
    """The most GPUs any offer open at ``submitted`` (whole seconds: published before the end of that
    second, not expired before its start) gave on ``node``; None when ``history`` does not reach back
    that far (the engine restarted since: the check is left out)."""
    if not history or history[0].at > submitted:
        return None
    best = 0
    for p in history:
        if p.at < submitted + 1.0 and p.offer.expires >= submitted:
            best = max([best, *(free for name, free, _ in p.offer.nodes if name == node)])
    return best


def misfits(jobs: Collection[SlurmJob], partitions: Collection[str], history: Sequence[Published] = ()) -> dict[str, str]:
    """Job -> why it does not hold what it was granted, for the offered running ``jobs`` (see the module
    docstring); the jobs that match are left out."""
    out: dict[str, str] = {}
    first_of_second: dict[float, str] = {}
    for job in sorted(jobs, key=lambda j: (j.submit_time, int(j.job_id) if j.job_id.isdigit() else 0, j.job_id)):
        held, asked = job.gpu_config(), granted(job)
        try:
            allowed = HopsDirectives.from_canonical(job.directives or "").gpus
        except Exception:  # noqa: BLE001 - directives that do not read back allow nothing
            allowed = ()
        count = sum(held.values())
        second = float(int(job.submit_time))
        offered = offered_on(history, next(iter(held), ""), job.submit_time) if len(held) == 1 else None
        if job.partition not in partitions:
            out[job.job_id] = f"partition {job.partition[:64]!r} is not a Hops partition"
        elif not held or held != asked or len(held) != 1:
            out[job.job_id] = f"holds {held}, the offer granted {asked or 'one node'}"
        elif count not in allowed:
            out[job.job_id] = f"holds {count} GPUs, its gpus= allows {','.join(map(str, allowed)) or 'none'}"
        elif second in first_of_second:
            out[job.job_id] = f"job {first_of_second[second]} took the offer of that second"
        elif offered is not None and count > offered:
            out[job.job_id] = f"holds {count} GPUs on {next(iter(held))}, the engine offered {offered} there"
        else:
            first_of_second[second] = job.job_id
            continue
        first_of_second.setdefault(second, job.job_id)
    return out


def put_right(enactor: Enactor, wrong: Mapping[str, str]) -> list[str]:
    """Requeue-hold each job of ``wrong`` (job -> why), admin-hold it once pending and detach it from the
    offer: it is then planned as any pending job. One job Slurm refuses is logged; the others go on. The
    jobs put right."""
    done = []
    for job_id, why in wrong.items():
        log.error("job %s started on an offer but %s: requeue-holding it, then it is planned", job_id, why[:200])
        try:
            with enactor.journal.action("offer-requeuehold", job_id, {"why": why[:200]}, enactor.round_id):
                enactor.api.requeue_hold(job_id)
        except SlurmError as exc:
            log.error("job %s: cannot requeue it: %s", job_id, exc)
            continue
        done.append(job_id)
    if done:
        enactor._hold_requeued(done)  # noqa: SLF001 - the enactor's own wait-then-admin-hold
        failed = enactor.batched("detach", {j: {"reservation": "hops-offer"} for j in done}, "update_job",
                                 {"Reservation": ""})
        for job_id, error in failed.items():
            log.warning("job %s: not detached from the offer yet (%s): the next refresh does it", job_id, error)
    return done


__all__ = ["granted", "misfits", "offered_on", "put_right"]
