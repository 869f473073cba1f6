"""A toll on jobs moved before: each earlier preemption makes a running job's next move and requeue dearer
(``move_toll``, ``requeue_toll``, off by default).

Where it sits: :class:`planner.hops.HopsPolicy`'s round plans, in the ``candidates`` stage (:func:`tolled`
before :func:`planner.candidates.candidates_for` prices the moves, :func:`weigh_kept` after it) and the
``explore`` stage (:func:`tolled` before :func:`planner.explore.explore_idle` prices its moves). The count is
:attr:`planner.views.JobView.preemptions` (times a round preempted or moved the job so far): the job view
carries it, so the live engine's plans see the same toll as the simulator's, with no policy memory.

- ``move_toll`` t: a running job preempted k times pays its move (:func:`planner.moves.move_price`, for the
  ILP's candidates and for exploration) as if its restart cost were (1 + t k) times its own. A first move
  costs what it did; a job moved back and forth pays more for each further move, so only a move that saves
  more than the dearer restart is taken.
- ``requeue_toll`` t: every candidate of a running job preempted k times is worth (1 + t k) times its gain
  (eq. 11's weight of that job), so a waiting job must be worth that much more to take its GPUs; its moves
  compete with staying as before (all its candidates scale alike).

Why: under the JCT combination (docs/results/preemptions.md, "Explore and repeated moves under the JCT
combination") a few jobs take most of the preemptions: on Table 4 seed 0, 35 of the 325 jobs ever preempted
were preempted 8 times or more and hold 467 of the 969 preemptions, and 164 of the 288 requeues were a job's
fifth or later. Pure: views in,
views and candidates out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from planner.signatures import Candidate
from planner.views import JobView


def toll_factor(job: JobView, toll: float) -> float:
    """1 + ``toll`` times the job's earlier preemptions, for a running job; 1 otherwise."""
    if not job.current or toll <= 0.0 or job.preemptions <= 0:
        return 1.0
    return 1.0 + toll * job.preemptions


def tolled(jobs: Sequence[JobView], toll: float) -> list[JobView]:
    """``jobs`` with each running job's restart cost scaled by :func:`toll_factor` (its moves dearer)."""
    out: list[JobView] = []
    for j in jobs:
        f = toll_factor(j, toll)
        out.append(j if f == 1.0 else dataclasses.replace(j, restart_cost=j.restart_cost * f))
    return out


def weigh_kept(cands: Sequence[Candidate], jobs: Sequence[JobView], toll: float) -> list[Candidate]:
    """``cands`` with each running job's candidates worth :func:`toll_factor` times their gain."""
    factor = {j.job_id: f for j in jobs if (f := toll_factor(j, toll)) != 1.0}
    if not factor:
        return list(cands)
    return [c if c.job_id not in factor else dataclasses.replace(c, gain=c.gain * factor[c.job_id])
            for c in cands]


__all__ = ["toll_factor", "tolled", "weigh_kept"]
