"""Backfill behind the service window: idle GPUs go to jobs that do not delay the window's blocked head.

Where it sits: a step of :meth:`planner.hops.HopsPolicy.plan`, after the service window
(:mod:`planner.window`) and the window's candidate configs, before the ILP. This goes beyond the paper
(docs/design.md, "Backfill behind the service window"): the paper's window keeps every job behind it
out of the planning, so when the window's first job cannot be placed on the GPUs a planning distributes
(say an 8-GPU job with 6 GPUs idle) those GPUs stay idle until enough free up, while a job behind it
that would have finished meanwhile waits too. Slurm's own scheduler avoids that with backfill (EASY,
Lifka 1995): reserve for the blocked job the GPUs it needs at the earliest time they free up, and start
a later job now only if it does not take them. Read here:

* the **head** is the first window job, in queue order, with no candidate config on this planning's
  GPUs;
* its **shadow time** is the earliest time, over the GPU types it can run on (a positive estimate for
  its smallest GPU count), at which that type's free GPUs plus those released by the jobs that keep
  theirs (``running``: their remaining work at their estimated rate, :func:`planner.moves.remaining_seconds`)
  reach its smallest count; the GPUs of that type left over at that time are the **spare** ones;
* a job behind the window, in queue order, may take a candidate config if that config ends before the
  shadow time (its remaining work at that config's estimated rate, plus its restart cost) or takes no
  more of the reserved type's GPUs than are still spare; a job with such configs becomes a filler with
  only those configs, and the spare GPUs its longest-running configs could take are no longer spare.

When no type ever frees enough GPUs for the head (jobs outside the planning whose end is unknown hold
them), there is no reservation to keep and every job behind the window may fill. At most
:data:`MAX_SCAN` jobs behind the window are looked at per planning, and the scan stops once the idle
GPUs are spoken for by fillers' smallest counts. Pure: the clock is ``now``, passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from planner.moves import remaining_seconds
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, freeze_config

#: jobs behind the window looked at per planning at most (a long queue is not scanned whole)
MAX_SCAN = 256


@dataclass(frozen=True)
class Reservation:
    """The blocked head's reservation: GPU type, when it can start, GPUs of that type spare then."""

    job_id: str
    gpu_type: str
    start: float  # math.inf: never, from what is known
    spare: int


def _rate(job: JobView, config: Config) -> float:
    try:
        return max(float(job.throughput(config)), 0.0)
    except Exception:  # noqa: BLE001 - an estimate that fails is no rate
        return 0.0


def _probe_config(cluster: ClusterView, gpu_type: str, gpus: int) -> Config | None:
    """A config of ``gpus`` GPUs on the largest nodes of ``gpu_type`` (None when the type has too few)."""
    out: dict[str, int] = {}
    left = gpus
    for node in sorted(cluster.nodes_of_type(gpu_type), key=lambda n: (-n.total_gpus, n.name)):
        if left <= 0:
            break
        take = min(node.total_gpus, left)
        out[node.name] = take
        left -= take
    return freeze_config(out) if left <= 0 else None


def expected_end(job: JobView, now: float) -> float:
    """When a running job is expected to release its GPUs (math.inf when unknown)."""
    if not job.current:
        return math.inf
    left = remaining_seconds(job, _rate(job, job.current))
    return math.inf if left is None else now + left


def reservation(head: JobView, cluster: ClusterView, running: Sequence[JobView], now: float) -> Reservation | None:
    """The head's earliest start over the GPU types it can run on (see the module docstring); None when
    no type can serve its smallest count."""
    need = head.requirements[0]
    type_of = {n.name: n.gpu_type for n in cluster.nodes}
    best: Reservation | None = None
    for gpu_type in cluster.gpu_types:
        probe = _probe_config(cluster, gpu_type, need)
        if probe is None or _rate(head, probe) <= 0.0:
            continue
        have = sum(n.free_gpus for n in cluster.nodes_of_type(gpu_type))
        releases = sorted((expected_end(j, now), sum(g for n, g in (j.current or {}).items()
                                                       if type_of.get(n) == gpu_type)) for j in running)
        start = now
        for end, gpus in releases:
            if have >= need:
                break
            if gpus:
                have, start = have + gpus, end
        if have < need:
            start = math.inf
        found = Reservation(head.job_id, gpu_type, start, max(have - need, 0))
        if best is None or (found.start, -found.spare) < (best.start, -best.spare):
            best = found
    return best


def fillers(queue_rest: Sequence[JobView], res: Reservation | None, cluster: ClusterView, now: float,
            candidates: Callable[[JobView], list[Candidate]]) -> dict[str, list[Candidate]]:
    """Jobs behind the window that may fill idle GPUs without delaying ``res`` -> the candidates they
    may take (``candidates``: a job's candidate configs on this planning's GPUs, as the window's)."""
    idle = cluster.free_gpus
    type_of = {n.name: n.gpu_type for n in cluster.nodes}
    spare = res.spare if res is not None else 0
    out: dict[str, list[Candidate]] = {}
    for job in queue_rest[:MAX_SCAN]:
        if idle <= 0:
            break
        if job.requirements[0] > idle:
            continue
        kept: list[Candidate] = []
        takes = 0  # reserved-type GPUs this filler's long configs may hold past the head's start
        for cand in candidates(job):
            if res is None or math.isinf(res.start):
                kept.append(cand)
                continue
            left = remaining_seconds(job, _rate(job, cand.config))
            ends = now + (left if left is not None else math.inf) + job.restart_cost
            on_reserved = sum(g for n, g in cand.config.items() if type_of.get(n) == res.gpu_type)
            if ends <= res.start:
                kept.append(cand)
            elif on_reserved <= spare:
                kept.append(cand)
                takes = max(takes, on_reserved)
        if kept:
            out[job.job_id] = kept
            spare -= takes
            idle -= job.requirements[0]
    return out


__all__ = ["MAX_SCAN", "Reservation", "expected_end", "reservation", "fillers"]
