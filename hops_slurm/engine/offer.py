"""Offers: idle GPUs a new Hops job takes without being held (docs/design.md, "Offers: new jobs start at
Slurm's next pass").

Where it sits: after every round and fragment plan (the ``offer`` step of
:class:`hops_slurm.engine.cycle.Round`) the engine writes what it offers to the file the submit hook
reads (``[engine] offer_file``, ``hops-offer`` beside the hook: :mod:`hops_slurm.engine.offer_file`,
which says the format); while a planning enacts the offer is closed (:func:`close_while_enacting`).
The hook's offers (``hooks/hops_offer.lua``) give a new job its largest acceptable GPU count on the first
offered node of its partition that has that many free, in the ``hops-offer`` reservation, and do not hold
it, so slurmctld starts it at its next scheduling pass. The refresh's ``adopt`` step then checks the job
against what it was granted (:mod:`hops_slurm.engine.offer_grant`), writes its environment file
(:func:`adopt`) and the rounds plan it as any running job.

Why: a held job starts only after the engine has seen it (a monitor interval: 5 s at a site), refreshed
and released it, and then at slurmctld's next scheduling pass (once a second: docs/results/moves.md);
an unheld job on idle GPUs starts at that pass directly. An offer to a partition is open only while no
Hops job that could start waits there (:func:`waiting_jobs`; a waiting job is the planner's to place
first; one parked by its own ``--begin``, dependency or limits waits for that, not for GPUs) and GPUs
are idle; it names nodes in the engine's order (fastest first, by the running jobs' own estimates),
expires unless the engine renews it, and serves one job: its ``as_of`` is the time *before* the read of
Slurm it reflects, and the hook gives no second job an offer older than its last handout. GPUs already
handed out are never offered again: those of running jobs, of placed jobs not yet started, and of every
job the hook put in ``hops-offer`` that has not started (:func:`offered_requests`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from hops_slurm.engine.offer_file import (FILE_NAME, HEADER, MAX_BYTES, MAX_NODES, NODE_NAME, TRES_PREFIXES,  # noqa: F401
                                          Offer, OfferWriter, closed, parse, publish, read)
from hops_slurm.slurm.api import SlurmApi, SlurmJob, SlurmReservation
from hops_slurm.slurm.scope import HopsScope
from hops_slurm.slurm.placement import hops_job_env, write_job_env
from hops_slurm.slurm.snapshot import OFFER as RESERVATION
from hops_slurm.slurm.snapshot import Snapshot
from planner.views import JobView, freeze_config

if TYPE_CHECKING:
    from pathlib import Path

    from hops_slurm.slurm.enact import Enactor

#: seconds after its submission an offered job may stay pending before the engine holds it: Slurm starts an
#: unheld job at its next scheduling pass (once a second, and backfill every bf_interval)
START_GRACE = 5.0
#: the one user the offer reservation leaves out (Slurm: a reservation that denies users admits every other)
EXCLUDED_USER = "daemon"  # on every Linux; Slurm 26.05 refuses "nobody" in a reservation
#: throughput estimates spent on ranking the nodes (jobs x nodes)
RANK_BUDGET = 4096


def parked(job: SlurmJob, now: float, limited: Collection[str] = ()) -> str | None:
    """Why a pending job cannot start whatever GPUs are idle (None: it could): a ``--begin`` still ahead
    (a requeue's own delay is not the owner's: jobs that ran once are not parked by it), a dependency
    not yet met, or its own association's or QOS's limits (``limited``: the last planning's jobs held
    back by governance)."""
    if job.eligible_time > now and job.restart_count == 0:
        return "begins later"
    if job.dependency and any("(fulfilled)" not in d for d in job.dependency.split(",") if d):
        return "dependency"
    if job.job_id in limited:
        return "at its limits"
    return None


def waiting_jobs(jobs: Collection[SlurmJob], partitions: str | Collection[str], aside: Collection[str], now: float,
                 limited: Collection[str] = ()) -> list[str]:
    """The Hops jobs of ``partitions`` that wait for GPUs (pending, not set aside, not :func:`starting` on
    an offer, not :func:`parked`): while one does, its partitions get no offer."""
    scope = HopsScope((partitions,) if isinstance(partitions, str) else tuple(partitions))
    return [j.job_id for j in jobs if j.is_hops and j.pending and scope.inside(j) and j.job_id not in aside
            and not starting(j, now) and parked(j, now, limited) is None]


def rank_nodes(names: Sequence[str], views: Sequence[JobView]) -> list[str]:
    """``names`` best first: by the mean over the jobs' views of the log of each node's one-GPU throughput
    against the job's best node (a node a job cannot use scores nothing for it); ties and nodes no job
    has an estimate for keep their given order. At most :data:`RANK_BUDGET` estimates."""
    if not names or not views:
        return list(names)
    probes = list(views)[: max(1, RANK_BUDGET // len(names))]
    score = {n: 0.0 for n in names}
    for view in probes:
        if not view.measured:  # the fallback estimate is the same on every node: it ranks nothing
            continue
        rates = {}
        for n in names:
            try:
                t = float(view.throughput(freeze_config({n: 1})))
            except (KeyError, ValueError, ArithmeticError):
                continue
            if t > 0.0 and math.isfinite(t):
                rates[n] = t
        if not rates:
            continue
        best = max(rates.values())
        for n in names:
            score[n] += math.log(rates[n] / best) if n in rates else math.log(1e-6)
    position = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (-score[n], position[n]))


def make_offer(snap: Snapshot, *, partitions: str | Sequence[str], waiting: Collection[str],
               promised: Mapping[str, Mapping[str, int]], views: Sequence[JobView], now: float, ttl: float,
               tres: str) -> Offer | None:
    """The offer of one read of Slurm, or None (closed): the idle GPUs of the usable nodes of the Hops
    ``partitions`` none of whose jobs waits (``waiting``: job ids, their partitions read from the
    snapshot), less those ``promised`` and those of every job the hook put on an offer that has not
    started; each node with the offered partitions it is in. ``as_of`` is the snapshot's ``taken``, the
    time before its reads (no read time known: closed)."""
    parts = (partitions,) if isinstance(partitions, str) else tuple(partitions)
    listing = snap.listing
    busy = {p for j in waiting for p in (listing[j].partition.split(",") if j in listing else [""])}
    open_parts = [p for p in parts if p not in busy] if "" not in busy else []  # a job not listed: all closed
    if not open_parts or tres not in TRES_PREFIXES or snap.taken <= 0.0:
        return None
    free = snap.free_gpus(promised={**offered_requests(snap.jobs), **promised})
    offered: dict[str, tuple[str, ...]] = {}
    for n in snap.nodes:
        on = tuple(p for p in open_parts if p in n.partitions)
        if on and n.usable and n.gpus_total and free.get(n.name, 0) > 0 and NODE_NAME.fullmatch(n.name):
            offered[n.name] = on
    if not offered:
        return None
    ranked = rank_nodes(list(offered), views)
    return Offer(as_of=min(snap.taken, now), expires=now + ttl, tres=tres,
                 nodes=tuple((n, free[n], offered[n]) for n in ranked))


def close_while_enacting(writer: OfferWriter | None) -> None:
    """Before a planning enacts: close the offer (the plan may hand out the GPUs it offers; the next
    ``offer`` step opens it again on the read after enactment)."""
    if writer is not None:
        writer.close()


def offered_config(job: SlurmJob) -> dict[str, int]:
    """The GPUs an offered job runs on: Slurm's allocation, else (its GPU indices not listed yet) the one
    node and the per-node count the hook wrote into its request."""
    config = job.gpu_config()
    if config:
        return config
    return requested_config(job)


def requested_config(job: SlurmJob) -> dict[str, int]:
    """What an offered job asks for: its one required (or allocated) node and the per-node GPU count the
    hook wrote into its request; {} when the request is not of that shape."""
    tail = job.tres_per_node.rsplit(":", 1)[-1] if job.tres_per_node else ""
    nodes = job.nodes or job.required_nodes  # running: where it runs; pending: the node the hook named
    if len(nodes) == 1 and tail.isdigit() and 0 < int(tail) <= 1024 and not job.tres_per_job:
        return {nodes[0]: int(tail)}
    return {}


def starting(job: SlurmJob, now: float) -> bool:
    """A Hops job the hook put on an offer that Slurm has not started yet: pending, not held, in the offer
    reservation, submitted at most :data:`START_GRACE` s ago. The engine leaves it alone (no detach, no
    hold, not tracked, not planned) and counts the GPUs it asked for as promised; after the grace a
    refresh detaches and holds it, and it is planned as any new job."""
    return job.is_hops and job.pending and not job.held and job.reservation == RESERVATION \
        and 0.0 <= now - job.submit_time <= START_GRACE


def starting_requests(jobs: Collection[SlurmJob], now: float) -> dict[str, dict[str, int]]:
    """Job -> the GPUs it asked for, for the jobs :func:`starting` (the GPUs they are about to take)."""
    return {j.job_id: offered_config(j) for j in jobs if starting(j, now) and offered_config(j)}


def offered_requests(jobs: Collection[SlurmJob]) -> dict[str, dict[str, int]]:
    """Job -> the GPUs it asked for, for every pending, unheld job in the offer reservation, whatever its
    age: Slurm may start any of them at its next pass, so no offer gives their GPUs again."""
    return {j.job_id: cfg for j in jobs if j.pending and not j.held and RESERVATION in j.reservation.split(",")
            and (cfg := requested_config(j))}


def adoptable(job: SlurmJob) -> bool:
    """A Hops job Slurm started on an offer (running in the offer reservation)."""
    return job.is_hops and job.active and job.reservation == RESERVATION


def tres_prefix(api: SlurmApi) -> str:
    """How this Slurm writes a GPU request inside slurmctld: ``gres:gpu:`` (22.05), ``gres/gpu:`` (23.02 on)."""
    dialect = getattr(getattr(api, "inner", api), "dialect", None)  # through the engine's RetryingReads
    return "gres/gpu:" if dialect is not None and getattr(dialect, "structured", False) else "gres:gpu:"


def ensure_reservation(enactor: Enactor, reservations: Collection[SlurmReservation]) -> bool:
    """Create the offer reservation over the gate's nodes if it is missing (True if it was created):
    every user but :data:`EXCLUDED_USER` may run in it, and only the submit hook puts jobs there (it
    refuses ``--reservation`` naming ``hops-*`` from users)."""
    if any(r.name == RESERVATION for r in reservations):
        return False
    nodes = enactor.gate_nodes()
    with enactor.journal.action("offer-gate", "", {"nodes": nodes}, enactor.round_id):
        enactor.api.create_reservation(RESERVATION, nodes, ["-" + EXCLUDED_USER], ["OVERLAP", "IGNORE_JOBS"])
    return True


def adopt(jobs: Collection[SlurmJob], snap: Snapshot, env_dir: Path, extra: Mapping[str, Mapping[str, str]],
          failed: Callable[[str, Exception], None] | None = None) -> list[str]:
    """Write the environment file of each offered job that has none yet (what a release writes,
    :func:`hops_slurm.slurm.placement.hops_job_env`, with HOPS_GPU_TYPE and ``extra[job]``: the recorder and
    notice settings); the job waits for it (``profiler.jobenv``). Each job alone: one whose file cannot be made (its ``lr=`` table has no
    rate for the GPUs it runs on, its directives do not read back) goes to ``failed(job, error)`` and the
    others go on; without ``failed`` the error is raised after the others were written. The jobs written."""
    done: list[str] = []
    errors: list[tuple[str, Exception]] = []
    for job in jobs:
        if not adoptable(job) or job.job_id not in extra or (env_dir / f"{job.job_id}.env").exists():
            continue
        config = offered_config(job)
        if not config:
            continue
        try:
            values = hops_job_env(job.directives, config, {"HOPS_GPU_TYPE": snap.gpu_type_of(config),
                                                           **extra[job.job_id]})
            write_job_env(env_dir, job.job_id, values)
        except Exception as exc:  # noqa: BLE001 - this job's own failure; the caller decides what is per job
            errors.append((job.job_id, exc))
            continue
        done.append(job.job_id)
    for job_id, exc in errors:
        if failed is None:
            raise exc
        failed(job_id, exc)
    return done


__all__ = ["EXCLUDED_USER", "FILE_NAME", "HEADER", "Offer", "OfferWriter", "RESERVATION", "START_GRACE", "adopt",
           "adoptable", "close_while_enacting", "closed", "ensure_reservation", "make_offer", "offered_config",
           "offered_requests", "parked", "parse", "publish", "rank_nodes", "read", "requested_config", "starting",
           "starting_requests", "tres_prefix", "waiting_jobs"]
