"""Requeues priced: what leaving a running job out of a round plan costs it (``requeue_price``, off by default).

Where it sits: :func:`planner.hops._weights` asks this module, in a round plan (never a fragment plan), with
the ``lr`` priority, for the priors of the running jobs that may be moved or preempted, after
:mod:`planner.moves` has held the others in place and before eq. 11's weights are made of the priors. Pure:
it reads the job views (``wait``, ``age``, ``restart_cost``, ``unsaved``, the estimated rate and remaining
work) and nothing else.

By default a running job is weighed by its latency ratio (wait / expected run time, eq. 8), which stops
growing while it runs, times the premium (1 + ``preempt_penalty``). A job that started soon after it
arrived has a latency ratio near 0, so the premium multiplies nearly nothing: any waiting job takes its
GPUs, however much the requeue costs it. A move is priced by its restart and lost work
(:func:`planner.moves.move_price`); a requeue is not. With ``requeue_price`` a requeue is priced in the
unit eq. 11 already uses: the job is weighed by the latency ratio it would have once requeued,

    prior = (wait + L) / age,   L = min(restart_cost + unsaved + gap, requeue_price * min_run_time),

where ``gap`` is how long until GPUs free up for it again, estimated from what frees up
(:func:`requeue_gaps`: the running jobs' estimated ends, earliest first, until as many GPUs as the job
holds are freed by jobs other than itself; ``inf`` when no known ends do). The bound (``requeue_price``
minimum run times) keeps a waiting job worth enough always able to get in: the gap is only what the
planner's estimates say, and wide waiting jobs must not starve behind the running ones.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import accumulate

from planner.moves import current_rate, remaining_seconds
from planner.views import JobView, config_gpus

#: seconds: the unit of the bound when ``min_run_time`` is 0 (no minimum run time: one minute)
SMALLEST_UNIT = 60.0


def requeue_gaps(running: Sequence[JobView]) -> dict[str, float]:
    """Running job id -> seconds until the other running jobs' estimated ends free as many GPUs as it holds
    (``inf`` when the known ends never do). Each job's end is its remaining work at its estimated rate
    (:func:`planner.moves.remaining_seconds`); jobs with no estimate free nothing here."""
    ends = sorted((left, config_gpus(j.current)) for j in running if j.current
                  and (left := remaining_seconds(j, current_rate(j))) is not None)
    times = [t for t, _ in ends]
    freed = list(accumulate(g for _, g in ends))
    out: dict[str, float] = {}
    for j in running:
        if not j.current:
            continue
        need = config_gpus(j.current)
        i = bisect_left(freed, need)
        left = remaining_seconds(j, current_rate(j))
        if i < len(ends) and left is not None and bisect_left(times, left) <= i:
            i = bisect_left(freed, need + need)  # its own end is among those counted: count it out
        out[j.job_id] = times[i] if i < len(ends) else float("inf")
    return out


def requeue_loss(job: JobView, gap: float, min_run_time: float, bound: float) -> float:
    """Seconds a requeue now costs running ``job``: restart, unsaved work and ``gap``, at most ``bound``
    minimum run times (module docstring)."""
    loss = max(job.restart_cost, 0.0) + max(job.unsaved, 0.0) + max(gap, 0.0)
    return min(loss, bound * max(min_run_time, SMALLEST_UNIT))


def requeue_priors(prior: Mapping[str, float], movable: Sequence[JobView], held: Sequence[JobView],
                   min_run_time: float, bound: float) -> dict[str, float]:
    """``prior`` (latency ratios) with each running job of ``movable`` (those the round may move or preempt)
    at the latency ratio it would have once requeued: (wait + :func:`requeue_loss`) / age. The gaps count
    the ends of the jobs ``held`` in place too."""
    gaps = requeue_gaps([*movable, *held])
    out = dict(prior)
    for j in movable:
        if j.current and j.job_id in out and j.age > 0.0:
            loss = requeue_loss(j, gaps.get(j.job_id, float("inf")), min_run_time, bound)
            out[j.job_id] = (j.wait + loss) / j.age
    return out


__all__ = ["SMALLEST_UNIT", "requeue_gaps", "requeue_loss", "requeue_priors"]
