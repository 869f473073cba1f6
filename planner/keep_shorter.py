"""Keep shorter: a running job weighs more against waiting jobs of its width that have more work left.

Where it sits: the ``weights`` stage of :class:`planner.hops.HopsPolicy` (parameter ``keep_shorter`` = P, off
by default: 0), after the eq. 11 weights, before the head reservation's. Pure: it reads the job views'
requirements, current configs, ages and samples.

Why (docs/results/requeues.md, "Where the wait is"): under saturation most of Table 4's avg wait is jobs of
9-16 GPUs, and a third of their requeue gaps on two seeds are rotation among long jobs: a waiting wide job's
weight grows until it displaces a running one of its width, which then waits in turn. Rotating two jobs
of equal width instead of running the one with less work left first adds to both jobs' wait (shortest
remaining first is what minimises the number waiting). With ``keep_shorter`` = P a running job's weight is
multiplied by 1 + P (all its candidates, its moves included) when there are waiting jobs whose smallest count
is at least the GPUs it holds (the jobs that would take its GPUs whole) and every one of them has more expected
run time left than it (:func:`planner.jct_gain.remaining_time`). Holding such jobs in place instead (no moves
either) cost Table 4 6 % avg JCT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.jct_gain import remaining_time
from planner.views import JobView, config_gpus


def shorter_running(jobs: Sequence[JobView], held: Mapping[str, str]) -> list[str]:
    """The running jobs of ``jobs`` (not already ``held``) that every waiting job of at least their GPU count
    outlasts; a running job with no such waiting job is not among them."""
    waiting = [(j.requirements[0], remaining_time(j)) for j in jobs if not j.current and j.requirements]
    out: list[str] = []
    for j in jobs:
        if not j.current or j.job_id in held:
            continue
        gpus = config_gpus(j.current)
        peers = [left for smallest, left in waiting if smallest >= gpus]
        if peers and remaining_time(j) < min(peers):
            out.append(j.job_id)
    return out


def premium_shorter(w: Mapping[str, float], jobs: Sequence[JobView], held: Mapping[str, str],
                    premium: float) -> dict[str, float]:
    """``w`` with the weight of each job of :func:`shorter_running` multiplied by 1 + ``premium``: every candidate
    of it, its moves included, so it may still move where that pays but is left out only for much more."""
    out = dict(w)
    if premium <= 0.0:
        return out
    for job_id in shorter_running(jobs, held):
        if job_id in out:
            out[job_id] *= 1.0 + premium
    return out


__all__ = ["premium_shorter", "shorter_running"]
