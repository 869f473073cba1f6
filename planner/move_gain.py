"""A move's smallest gain: a round plan moves a running job only to a config estimated at least ``move_gain``
times as fast as where it runs (``move_gain``).

Where it sits: :class:`planner.hops.HopsPolicy`'s round plans, at the ``candidates`` stage
(:func:`drop_small_moves`), after the moves are priced (:func:`planner.moves.move_price`). Off by default
(``PlannerParams.move_gain`` 0: every move that pays is a candidate).

Why: with ``restart_penalty=0`` a move pays whenever the time it saves over the job's remaining work exceeds
its restart, so every round repacks the cluster for small estimated gains (docs/results/preemptions.md,
"Upgrade moves at their source": the median move gains 1.17x for a job placed 10 min or more, the median
preempted placement lasts 8 min, and a quarter of the restarts return to where the job was two placements
before). ``restart_penalty`` scales every move's worth down; this keeps a move's worth and drops the small
ones. Pure: candidates and job views in, candidates out.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.moves import current_rate
from planner.signatures import Candidate, signature
from planner.views import ClusterView, JobView, freeze_config


def drop_small_moves(cands: Sequence[Candidate], jobs: Sequence[JobView], cluster: ClusterView,
                     gain: float) -> list[Candidate]:
    """``cands`` less the moves of running ``jobs`` (candidates other than the current config, compact: its
    signature) estimated at less than ``gain`` times the job's current rate."""
    by_name = {n.name: n for n in cluster.nodes}
    now: dict[str, tuple[JobView, dict[str, int], object, float]] = {}
    for j in jobs:
        if j.current and all(n in by_name for n in j.current):
            cur = freeze_config(j.current)
            now[j.job_id] = (j, dict(cur), signature(cur, by_name), current_rate(j))
    out: list[Candidate] = []
    for c in cands:
        hit = now.get(c.job_id)
        if hit is None or dict(c.config) == hit[1] or (c.sig is not None and c.sig == hit[2]):
            out.append(c)
            continue
        job, _, _, rate = hit
        try:
            new = float(job.throughput(c.config))
        except Exception:  # noqa: BLE001 - no estimate: no move
            continue
        if new >= gain * rate:
            out.append(c)
    return out


__all__ = ["drop_small_moves"]
