"""Settling: a running job placed a short while ago is not moved by a round plan (``settle_time``).

Where it sits: :class:`planner.hops.HopsPolicy`'s round plans, after the candidates (``candidates``
stage: :func:`drop_moves`) and before exploration (``explore`` stage: :func:`settled`). Off by default
(``PlannerParams.settle_time`` 0).

Why: on Table 4 a third of the preemptions are moves of jobs that ran under 10 minutes in their placement
(docs/results/preemptions.md, "Short moves"): mostly jobs a fragment plan started on whatever GPUs were
idle, moved by the next round plan to a faster type (the ILP) or to another unmeasured config (exploration),
and then moved again. A job placed less than ``settle_time`` seconds ago keeps its config through the round
plans in that time unless the plan leaves it out (a requeue for a waiting job stays possible: the job's
GPUs are not held, as :data:`planner.moves.HELD_MIN_RUN_TIME` holds them); after that its moves are
priced as before. Pure: job views in, candidates out.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.signatures import Candidate, Signature, signature
from planner.views import ClusterView, Config, JobView, freeze_config


def unsettled(job: JobView, settle_time: float) -> bool:
    """Whether running ``job`` was placed less than ``settle_time`` seconds ago (not moved by a round)."""
    return bool(job.current) and settle_time > 0.0 and job.placed_for < settle_time


def drop_moves(cands: Sequence[Candidate], jobs: Sequence[JobView], cluster: ClusterView,
               settle_time: float) -> list[Candidate]:
    """``cands`` less every move of an unsettled running job: its candidates other than its current
    config (compact: its current signature) on ``cluster``'s nodes."""
    by_name = {n.name: n for n in cluster.nodes}
    stay: dict[str, tuple[Config, Signature]] = {}
    for j in jobs:
        if unsettled(j, settle_time) and j.current and all(n in by_name for n in j.current):
            stay[j.job_id] = (freeze_config(j.current), signature(freeze_config(j.current), by_name))
    if not stay:
        return list(cands)
    out: list[Candidate] = []
    for c in cands:
        cur = stay.get(c.job_id)
        if cur is None or dict(c.config) == dict(cur[0]) or (c.sig is not None and c.sig == cur[1]):
            out.append(c)
    return out


def settled(jobs: Sequence[JobView], settle_time: float) -> list[JobView]:
    """``jobs`` less the unsettled running ones (exploration moves none of them)."""
    return [j for j in jobs if not unsettled(j, settle_time)]


__all__ = ["drop_moves", "settled", "unsettled"]
