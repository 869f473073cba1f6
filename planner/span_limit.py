"""Wide jobs not started on scraps: a fragment plan gives a waiting job a config over at most ``k`` servers
(``fragment_span_limit``, off by default).

Where it sits: :class:`planner.hops.HopsPolicy`'s fragment plans only, at the ``window`` stage (:func:`narrow`:
the window is cut from the waiting jobs that fit on the idle GPUs of k servers or are exempt, so a wide job
kept out does not hold the window's room from narrower ones) and the ``candidates`` stage (:func:`drop_wide`).
Round plans are unchanged.

Why: under the JCT combination with ``explore_estimate`` a few dozen jobs of 9-16 GPUs hold half of Table 4's
preemptions (docs/results/preemptions.md, "Wide jobs on scraps"): a fragment plan starts such a job on
whatever GPUs are idle, scattered over 2-6 servers; the next round plan leaves it out once its minimum run
time has passed, a fragment plan starts it on scraps again, and so on. A config over more than ``k`` servers
is not a candidate of a waiting job in a fragment plan, so such a job waits for a round plan, unless it has
waited as long as its expected run time (:func:`planner.affinity.exempt`: then it takes any config, so its
latency ratio cannot grow without bound). With ``fragment_span_after`` m only jobs preempted m times or more
(:attr:`planner.views.JobView.preemptions`) are held to it. Pure: candidates and job views in, candidates out.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.affinity import exempt
from planner.signatures import Candidate
from planner.views import ClusterView, JobView


def limited(job: JobView, after: int) -> bool:
    """Whether waiting ``job`` is held to the span limit: preempted ``after`` times or more and not exempt."""
    return not job.current and job.preemptions >= after and not exempt(job)


def drop_wide(cands: Sequence[Candidate], jobs: Sequence[JobView], k: int, after: int = 0) -> list[Candidate]:
    """``cands`` less the configs over more than ``k`` servers of the waiting jobs of ``jobs`` preempted ``after``
    times or more that have not waited their expected run time (running jobs and other jobs' candidates are
    kept)."""
    held = {j.job_id for j in jobs if limited(j, after)}
    return [c for c in cands if c.job_id not in held or len(c.config) <= k]


def room(cluster: ClusterView, k: int) -> int:
    """The most free GPUs of one GPU type on ``k`` servers of ``cluster``."""
    by_type: dict[str, list[int]] = {}
    for n in cluster.nodes:
        by_type.setdefault(n.gpu_type, []).append(n.free_gpus)
    return max((sum(sorted(free, reverse=True)[:k]) for free in by_type.values()), default=0)


def narrow(queue: Sequence[JobView], cluster: ClusterView, k: int, after: int = 0) -> list[JobView]:
    """The waiting jobs of ``queue`` (in its order) whose smallest GPU count fits on the free GPUs of one type on
    ``k`` servers of ``cluster``, or that are not held to the limit (:func:`limited`)."""
    most = room(cluster, k)
    return [j for j in queue if not limited(j, after) or min(j.requirements, default=0) <= most]


__all__ = ["drop_wide", "limited", "narrow", "room"]
