"""Slurm changes for many jobs in one command where Slurm takes a list, one job at a time where it does not.

Where it sits: the enactment (:mod:`hops_slurm.slurm.enact`) and crash recovery
(:mod:`hops_slurm.slurm.reconcile`) hand :func:`run_batch` an operation and the jobs it applies to. A
backend that has the list form of an operation (``hold_all``, ``release_all``, ``requeue_hold_all``,
``update_job_all``: :class:`hops_slurm.slurm.cli.CliSlurm` runs ``scontrol hold|release|requeuehold
ID,ID,...`` and one ``scontrol update JobId=ID,ID,... K=V`` for an identical change) gets one call;
any other backend gets one call per job (:class:`hops_slurm.slurm.api.SlurmApi`'s single-job methods).
When Slurm refuses a list (one job gone or refused: on 22.05 the other jobs of the list are changed and
the command exits 1 naming the bad one) each job is tried again on its own, so every job gets its own
outcome; the operations batched are idempotent (a second hold of a held job, release of a released
one, requeuehold of a pending one, the same update again all succeed on 22.05).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from hops_slurm.slurm.api import SlurmApi, SlurmError

log = logging.getLogger(__name__)

#: the operations with a list form, and the single-job method each falls back on
OPERATIONS = ("hold", "release", "requeue_hold", "update_job")
#: ids per command (an argv of a few kB; slurmctld handles each list as one RPC per job anyway)
CHUNK = 500


def run_batch(api: SlurmApi, op: str, job_ids: Iterable[str], fields: Mapping[str, str] | None = None) -> dict[str, str]:
    """Apply ``op`` (one of :data:`OPERATIONS`; ``fields`` for ``update_job``) to every job of ``job_ids``;
    job id -> Slurm's message for each job it failed on (empty: all done)."""
    if op not in OPERATIONS:
        raise ValueError(f"no batched Slurm operation {op!r} (one of {', '.join(OPERATIONS)})")
    ids = [str(j) for j in job_ids]
    errors: dict[str, str] = {}
    many = getattr(api, f"{op}_all", None)
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        if many is not None and len(chunk) > 1:
            try:
                many(chunk) if fields is None else many(chunk, dict(fields))
                continue
            except SlurmError as exc:
                log.info("%s of %d jobs refused (%s): each job on its own", op, len(chunk), exc)
        single = getattr(api, op)
        for job_id in chunk:
            try:
                single(job_id) if fields is None else single(job_id, dict(fields))
            except SlurmError as exc:
                errors[job_id] = str(exc)
    return errors
