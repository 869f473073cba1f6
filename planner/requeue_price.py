"""Requeues priced: what leaving a running job out of a round plan costs it (``requeue_price``, off by default).

Where it sits: :func:`planner.hops._candidates` asks this module, in a round plan (never a fragment plan),
for each running job that may be moved or preempted, after :mod:`planner.moves` has held the others in
place and before :func:`planner.candidates.candidates_for` prices the candidates. Pure: it reads the job
views (``restart_cost``, ``unsaved``, the estimated rate and remaining work) and nothing else.

By default every candidate of a running job is worth (1 + ``preempt_penalty``) of its gain, whatever the
requeue costs that job: a job that loses ten minutes of unsaved work and restarts, then waits an hour
for GPUs, is left out as readily as one that loses nothing and starts again at once. A move is priced
by its restart and lost work (:func:`planner.moves.move_price`); a requeue is not. With ``requeue_price``
a requeue is priced too: it costs the job

    L = restart_cost + unsaved + gap,

where ``gap`` is how long until GPUs free up for it again, estimated from what frees up
(:func:`requeue_gaps`: the running jobs' estimated ends, earliest first, until as many GPUs as the job
holds are freed by jobs other than itself). In units of the minimum run time (the shortest time a
placement lasts, so the time one round plan's choice stands for), the job's premium becomes

    keep = 1 + preempt_penalty * clamp(L / min_run_time, 1, cap)

(``cap`` is the parameter's value, e.g. 4) so a requeue is never priced below today's premium, a job whose
requeue costs several minimum run times is left out only for a waiting job worth that much more, and the
premium stays bounded (``cap``)
so a waiting job worth enough always gets in (the requeued job's loss is bounded by what the planner
knows; wide waiting jobs must not starve behind it). A job with no known end, or whose GPUs no known
ends free, gets the cap.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import accumulate

from planner.moves import current_rate, remaining_seconds
from planner.views import JobView, config_gpus

#: seconds: the unit of a requeue's cost when ``min_run_time`` is 0 (no minimum run time: one minute)
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


def requeue_keep(job: JobView, gap: float, preempt_penalty: float, min_run_time: float, cap: float) -> float:
    """The factor every candidate of running ``job`` is worth of its gain when a requeue is priced
    (module docstring): 1 + ``preempt_penalty`` times its requeue's cost in minimum run times, from 1 to ``cap``."""
    unit = max(min_run_time, SMALLEST_UNIT)
    loss = max(job.restart_cost, 0.0) + max(job.unsaved, 0.0) + max(gap, 0.0)
    return 1.0 + preempt_penalty * min(max(loss / unit, 1.0), max(cap, 1.0))


def requeue_keeps(movable: Sequence[JobView], held: Sequence[JobView], preempt_penalty: float,
                  min_run_time: float, cap: float) -> Mapping[str, float]:
    """Running job id -> :func:`requeue_keep`, for the running jobs a round plan may move or preempt
    (``movable``); the gaps count the ends of those held in place too."""
    gaps = requeue_gaps([*movable, *held])
    return {j.job_id: requeue_keep(j, gaps.get(j.job_id, float("inf")), preempt_penalty, min_run_time, cap)
            for j in movable if j.current}


__all__ = ["SMALLEST_UNIT", "requeue_gaps", "requeue_keep", "requeue_keeps"]
