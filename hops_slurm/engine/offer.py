"""Offers: idle GPUs a new Hops job takes without being held (docs/design.md, "Offers: new jobs start at
Slurm's next pass").

Where it sits: after every round and fragment plan (the ``offer`` step of
:class:`hops_slurm.engine.cycle.Round`) the engine writes what it offers to the file the submit hook
reads (``[engine] offer_file``, ``hops-offer`` beside ``job_submit.lua``); the hook's offers
(``hooks/hops_offer.lua``, which ``job_submit.lua`` loads from beside itself: ``take_offer``) give a
new job its largest acceptable GPU count on the first offered node that has that many free, in the
``hops-offer`` reservation, and do not hold it, so slurmctld starts it at its next scheduling pass, as it starts any job on idle nodes. The refresh's
``adopt`` step then writes the job's environment file (:func:`adopt`) and the rounds plan it as any
running job.

Why: a held job starts only after the engine has seen it (a monitor interval: 5 s at a site), refreshed
and released it, and then at slurmctld's next scheduling pass (once a second: docs/results/moves.md);
an unheld job on idle GPUs starts at that pass directly, as under Slurm's own scheduling. An offer is
open only while no Hops job waits (a waiting job is the planner's to place first) and GPUs are idle; it
names nodes in the engine's order (fastest first, by the running jobs' own estimates), expires unless
the engine renews it, and serves one job: the hook gives no second job an offer the engine wrote before
it saw the first (a burst of submissions is the planner's to share out). A job on an offer that Slurm
has not started yet is left alone for :data:`START_GRACE` s, its GPUs promised to it.

The file (ASCII, one item per line; the hook reads at most :data:`MAX_BYTES`)::

    hops-offer 1
    as_of <the read of Slurm it reflects, whole seconds>
    expires <whole seconds; the hook holds jobs as usual after it>
    tres <gres:gpu: on 22.05, gres/gpu: from 23.02: how slurmctld writes a GPU request>
    node <name> <free GPUs>          (zero or more, best first)

A closed offer is the first line alone. Pure but for :func:`publish` (one atomic write).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hops_slurm.slurm.api import SlurmApi, SlurmJob, SlurmReservation
from hops_slurm.slurm.scope import HopsScope, PartitionSet, node_in
from hops_slurm.slurm.placement import hops_job_env, write_job_env
from hops_slurm.slurm.snapshot import OFFER as RESERVATION
from hops_slurm.slurm.snapshot import Snapshot
from planner.views import JobView, freeze_config

if TYPE_CHECKING:
    from hops_slurm.slurm.enact import Enactor
FILE_NAME = "hops-offer"  # beside job_submit.lua: the hook looks for it in its own directory
HEADER = "hops-offer 1"
MAX_BYTES = 65536  # the hook reads no more than this (hooks/hops_offer.lua: MAX_OFFER_BYTES)
MAX_NODES = 4096  # node lines the hook reads (hooks/hops_offer.lua: MAX_OFFER_NODES)
TRES_PREFIXES = ("gres:gpu:", "gres/gpu:")
#: node names the hook accepts (hooks/hops_offer.lua: the same class, the same length)
NODE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: seconds after its submission an offered job may stay pending before the engine holds it: Slurm starts an
#: unheld job at its next scheduling pass (once a second, and backfill every bf_interval)
START_GRACE = 5.0
#: the one user the offer reservation leaves out (Slurm: a reservation that denies users admits every other)
EXCLUDED_USER = "daemon"  # on every Linux; Slurm 26.05 refuses "nobody" in a reservation
#: throughput estimates spent on ranking the nodes (jobs x nodes)
RANK_BUDGET = 4096


@dataclass(frozen=True)
class Offer:
    """Idle GPUs per node, best first, as of one read of Slurm."""

    as_of: float
    expires: float
    tres: str
    nodes: tuple[tuple[str, int], ...]

    def render(self) -> str:
        lines = [HEADER, f"as_of {math.floor(self.as_of)}", f"expires {math.floor(self.expires)}", f"tres {self.tres}"]
        lines += [f"node {name} {free}" for name, free in self.nodes[:MAX_NODES]]
        return "\n".join(lines) + "\n"


def closed() -> str:
    return HEADER + "\n"


def waiting_jobs(jobs: Collection[SlurmJob], partition: str | Sequence[str], aside: Collection[str], now: float) -> list[str]:
    """The Hops jobs of ``partition`` (one Hops partition or several) that wait (pending, not set aside, not
    :func:`starting` on an offer): while any does, nothing is offered."""
    scope = HopsScope((partition,) if isinstance(partition, str) else tuple(partition))
    return [j.job_id for j in jobs if j.is_hops and j.pending and scope.inside(j) and j.job_id not in aside
            and not starting(j, now)]


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


def make_offer(snap: Snapshot, *, partition: PartitionSet, waiting: Collection[str], promised: Mapping[str, Mapping[str, int]],
               views: Sequence[JobView], now: float, ttl: float, tres: str) -> Offer | None:
    """The offer of one read of Slurm, or None (closed) while a Hops job waits or no GPU is idle."""
    if waiting or tres not in TRES_PREFIXES:
        return None
    free = snap.free_gpus(promised=promised)
    nodes = [n.name for n in snap.nodes if n.usable and n.gpus_total and node_in(n, partition)
             and free.get(n.name, 0) > 0 and NODE_NAME.fullmatch(n.name)]
    if not nodes:
        return None
    ranked = rank_nodes(nodes, views)
    # as of the read (the hook counts off what it handed out since): never later than what Slurm showed
    return Offer(as_of=min(snap.taken or now, now), expires=now + ttl, tres=tres, nodes=tuple((n, free[n]) for n in ranked))


def publish(path: Path, offer: Offer | None) -> None:
    """Write the offer (or a closed one) atomically, readable by slurmctld's user."""
    text = offer.render() if offer is not None else closed()
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def read(path: Path) -> Offer | None:
    """The offer a file holds (None: closed, missing or not an offer); the hook's reading, in Python."""
    try:
        text = path.read_bytes()[:MAX_BYTES].decode("ascii")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if not lines or lines[0] != HEADER:
        return None
    fields: dict[str, str] = {}
    nodes: list[tuple[str, int]] = []
    for line in lines[1:]:
        words = line.split()
        if len(words) == 3 and words[0] == "node" and NODE_NAME.fullmatch(words[1]) and words[2].isdigit():
            nodes.append((words[1], int(words[2])))
        elif len(words) == 2:
            fields[words[0]] = words[1]
    try:
        return Offer(as_of=float(fields["as_of"]), expires=float(fields["expires"]), tres=fields["tres"],
                     nodes=tuple(nodes[:MAX_NODES]))
    except (KeyError, ValueError):
        return None


def offered_config(job: SlurmJob) -> dict[str, int]:
    """The GPUs an offered job runs on: Slurm's allocation, else (its GPU indices not listed yet) the one
    node and the per-node count the hook wrote into its request."""
    config = job.gpu_config()
    if config:
        return config
    tail = job.tres_per_node.rsplit(":", 1)[-1] if job.tres_per_node else ""
    nodes = job.nodes or job.required_nodes  # running: where it runs; pending: the node the hook named
    if len(nodes) == 1 and tail.isdigit() and int(tail) > 0:
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
    refuses ``--reservation=hops-*`` from users)."""
    if any(r.name == RESERVATION for r in reservations):
        return False
    nodes = enactor.gate_nodes()
    with enactor.journal.action("offer-gate", "", {"nodes": nodes}, enactor.round_id):
        enactor.api.create_reservation(RESERVATION, nodes, ["-" + EXCLUDED_USER], ["OVERLAP", "IGNORE_JOBS"])
    return True


def adopt(jobs: Collection[SlurmJob], snap: Snapshot, env_dir: Path, extra: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Write the environment file of each offered job that has none yet (what a release writes: HOPS_GPUS,
    HOPS_LR, HOPS_CONFIG, HOPS_GPU_TYPE and ``extra[job]``, the recorder and notice settings); the job waits
    for it (``profiler.jobenv``). The jobs written."""
    done = []
    for job in jobs:
        if not adoptable(job) or job.job_id not in extra or (env_dir / f"{job.job_id}.env").exists():
            continue
        config = offered_config(job)
        if not config:
            continue
        values = hops_job_env(job.directives, config, {
            "HOPS_CONFIG": ",".join(f"{n}:{k}" for n, k in config.items()),
            "HOPS_GPU_TYPE": snap.gpu_type_of(config), **extra[job.job_id]})
        write_job_env(env_dir, job.job_id, values)
        done.append(job.job_id)
    return done


__all__ = ["EXCLUDED_USER", "FILE_NAME", "HEADER", "Offer", "RESERVATION", "START_GRACE", "adopt", "adoptable",
           "closed", "ensure_reservation", "make_offer", "offered_config", "publish", "rank_nodes", "read", "starting",
           "starting_requests", "tres_prefix", "waiting_jobs"]
