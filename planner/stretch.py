"""Stretch weights: eq. 11's weights from a job's slowdown so far (1 + latency ratio), not its latency ratio.

Where it sits: the ``weights`` stage of :class:`planner.hops.HopsPolicy` (parameter ``stretch_weights``,
on by default), between the queue priorities (:mod:`planner.priorities`) and the ILP. Only the weights
change; the queue order, the service window and the sensitivity adjustment still follow the latency
ratio. Pure.

Why (docs/results/fragments.md): with the latency ratio LR = wait / age as the prior, a job that has
never waited weighs ``bias`` = 0.01 and one that waited a tenth of its age weighs 0.11, eleven times
more; a running job's premium (``1 + preempt_penalty``, :mod:`planner.moves`) cannot protect it against
such ratios, so every job that starts waiting soon preempts a running one, which then waits in turn.
1 + LR = (wait + age) / age is the job's expected slowdown (stretch) if it ran from now on: the same
order as LR, but the ratio of two jobs' weights is the ratio of their slowdowns, bounded by the
slowdowns the cluster actually imposes. No constant is chosen: 1 is the slowdown of a job that never
waits. Applies to the latency-ratio priority only (other priorities are left as they are).
"""

from __future__ import annotations

from collections.abc import Mapping


def stretch_priors(prios: Mapping[str, float]) -> dict[str, float]:
    """Each job's prior as its slowdown so far: 1 + its latency ratio (never below 1)."""
    return {job_id: 1.0 + max(p, 0.0) for job_id, p in prios.items()}


__all__ = ["stretch_priors"]
