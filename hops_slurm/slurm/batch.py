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

Changes that differ per job (each placement's ``scontrol update``, each job's reservation created or
deleted) have no list form; :func:`run_each` hands them to a backend that can run many of them in one
process (``update_job_each``, ``create_reservation_each``, ``delete_reservation_each``:
:class:`hops_slurm.slurm.cli.CliSlurm` writes them to one ``scontrol`` reading commands from its standard
input) and reads each one's outcome from what that process printed. When the outcomes cannot be
attributed (scontrol failed and did not echo its commands), each change is made again on its own, after
the reservations are read once: a reservation already made (or already gone) counts as done, since
creating or deleting one twice is refused; the same update twice succeeds.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence

from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob

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


#: per-job changes that a backend may run many of in one process (``<op>_each``), each with its own arguments
EACH = ("update_job", "create_reservation", "delete_reservation")


def run_each(api: SlurmApi, op: str, items: Mapping[str, Sequence[object]]) -> dict[str, str]:
    """Apply ``op`` (one of :data:`EACH`) once per entry of ``items`` (a key -> the arguments of the
    single-job method, e.g. job id -> ``(job_id, fields)``); key -> Slurm's message for each that failed."""
    if op not in EACH:
        raise ValueError(f"no per-job Slurm operation {op!r} (one of {', '.join(EACH)})")
    keys = list(items)
    errors: dict[str, str] = {}
    many = getattr(api, f"{op}_each", None)
    single = getattr(api, op)
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start:start + CHUNK]
        todo = chunk
        if many is not None and len(chunk) > 1:
            try:
                outcomes = many([tuple(items[k]) for k in chunk])
            except ValueError as exc:  # a value the script form does not take: nothing was run
                log.info("%s of %d: %s: each on its own", op, len(chunk), exc)
                outcomes = None
            except SlurmError as exc:  # the process failed as a whole (timeout): state unknown
                log.info("%s of %d failed (%s): each on its own", op, len(chunk), exc)
                outcomes = None
                todo = _not_done(api, op, chunk, items)
            else:
                if outcomes is None:
                    todo = _not_done(api, op, chunk, items)
            if outcomes is not None:
                errors.update({k: o for k, o in zip(chunk, outcomes) if o})
                continue
        for key in todo:
            try:
                single(*items[key])
            except SlurmError as exc:
                errors[key] = str(exc)
    return errors


def _not_done(api: SlurmApi, op: str, keys: list[str], items: Mapping[str, Sequence[object]]) -> list[str]:
    """After a script whose outcomes are unknown: the keys still to do. A reservation that exists on the
    asked nodes was made; one that no longer exists was deleted; an update is simply made again."""
    if op == "update_job":
        return keys
    try:
        now = {r.name: r for r in api.reservations()}
    except SlurmError as exc:
        log.warning("cannot read the reservations after a failed script (%s): each made again", exc)
        return keys
    if op == "create_reservation":
        return [k for k in keys if not ((r := now.get(str(items[k][0]))) is not None
                                        and set(r.nodes) == set(items[k][1]))]  # type: ignore[arg-type]
    return [k for k in keys if str(items[k][0]) in now]


def jobs_of(api: SlurmApi, job_ids: Collection[str]) -> tuple[list[SlurmJob], bool]:
    """The jobs ``job_ids`` as Slurm lists them now, in one read: the backend's ``jobs_of`` where it has
    one that answers (:meth:`hops_slurm.slurm.cli.CliSlurm.jobs_of`: ``squeue --json --jobs=..`` from
    Slurm 24.05.1 on), else the whole job listing (22.05, the simulator, the stand-ins). The flag says
    whether what came back is the whole listing (every other job's state fresh too) or just those jobs.
    How the enactment waits on the jobs it started or stopped without reading the listing of every job."""
    some = getattr(api, "jobs_of", None)
    got = some(job_ids) if some is not None else None
    if got is not None:
        return got, False
    return api.jobs(), True


def reads_some(api: SlurmApi) -> bool:
    """Whether ``api`` reads just some jobs (:func:`jobs_of` without the whole listing): its ``jobs_of``
    answers an empty ask (which runs no command) with a list, not None."""
    some = getattr(api, "jobs_of", None)
    return some is not None and some(()) is not None


def reads_back(api: SlurmApi, listed: int) -> bool:
    """Whether the enactment reads back the jobs it released (:meth:`hops_slurm.slurm.enact.Enactor.apply`)
    when the last listing held ``listed`` jobs: where ``api`` reads just those (:func:`reads_some`), or the
    whole listing is at most the backend's ``read_back_limit`` (:data:`hops_slurm.slurm.cli.READ_BACK_LIMIT`
    for Slurm's clients; a backend without one, in memory, always reads back)."""
    limit, backend = None, api
    while limit is None and backend is not None:  # through the engine's wrappers (retries, scope)
        limit, backend = getattr(backend, "read_back_limit", None), getattr(backend, "inner", None)
    return limit is None or listed <= limit or reads_some(api)
