"""No displacing upgrades of young jobs: a round plan does not move a running job placed a short while ago onto
GPUs it frees by moving or requeuing others (``young_moves``).

Where it sits: :class:`planner.hops.HopsPolicy`'s round plans, at the ``solve`` stage: after a solve,
:func:`displacers` names the running jobs placed less than ``young_moves`` seconds ago that the solution moves
to a config taking, in some node class, more GPUs than that class had idle before the plan plus the job's own;
their moves are dropped from the candidates (they keep their config or are left out, as a waiting job may still
take their GPUs) and the plan is solved again, at most :data:`PASSES` times in all. Off by default
(``PlannerParams.young_moves`` 0).

Why: under the candidate default of issue 37 a third of Table 4's preemptions are ILP moves of jobs placed less
than 10 minutes ago, most of them at the first round after ``min_run_time``, and three in four of those take
GPUs the same plan frees by moving or requeuing other running jobs (docs/results/preemptions.md, "Upgrade
moves at their source"): one upgrade costs two or more preemptions. Moves onto idle GPUs stay; so do the moves
of jobs that have run longer. Pure: a solve function, candidates and job views in, a solution out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from planner.settle import drop_moves
from planner.signatures import Candidate
from planner.solution import Solution
from planner.views import ClusterView, Config, JobView

#: solves at most, the first included
PASSES = 3

ClassKey = tuple[str, str]  # (gpu_type, server_class)


def idle_by_class(cluster: ClusterView, running: Sequence[JobView]) -> dict[ClassKey, int]:
    """GPUs per node class that no running job of ``running`` holds (``cluster``'s free GPUs count the
    running jobs being re-planned as free)."""
    cls = {n.name: (n.gpu_type, n.server_class) for n in cluster.nodes}
    idle: dict[ClassKey, int] = {}
    for n in cluster.nodes:
        idle[cls[n.name]] = idle.get(cls[n.name], 0) + n.free_gpus
    for j in running:
        for n, g in (j.current or {}).items():
            if n in cls:
                idle[cls[n]] -= g
    return idle


def _by_class(cfg: Config, cls: Mapping[str, ClassKey]) -> dict[ClassKey, int]:
    out: dict[ClassKey, int] = {}
    for n, g in cfg.items():
        key = cls.get(n, ("", n))
        out[key] = out.get(key, 0) + g
    return out


def displacers(assignments: Mapping[str, Config | None], running: Sequence[JobView], cluster: ClusterView,
               young: float) -> set[str]:
    """The running jobs placed less than ``young`` seconds ago that ``assignments`` move (another config) to
    one taking, in some node class of ``cluster``, more GPUs than the class had idle plus their own."""
    cls = {n.name: (n.gpu_type, n.server_class) for n in cluster.nodes}
    idle = idle_by_class(cluster, running)
    out: set[str] = set()
    for j in running:
        new = assignments.get(j.job_id)
        if not j.current or not new or j.placed_for >= young or dict(new) == dict(j.current):
            continue
        own = _by_class(j.current, cls)
        if any(g > max(idle.get(k, 0), 0) + own.get(k, 0) for k, g in _by_class(new, cls).items()):
            out.add(j.job_id)
    return out


def solve_without_displacing(solve: Callable[[list[Candidate]], Solution], cands: Sequence[Candidate],
                             running: Sequence[JobView], cluster: ClusterView,
                             young: float) -> tuple[Solution, list[Candidate]]:
    """``solve(cands)``, again without the moves of the young jobs its solution moves onto GPUs freed by
    others (:func:`displacers`) while there are any, :data:`PASSES` solves at most; the last solution and
    the candidates it was solved with."""
    cands = list(cands)
    sol = solve(cands)
    fixed: set[str] = set()
    for _ in range(PASSES - 1):
        if sol.status not in ("optimal", "feasible"):
            break
        found = displacers(sol.assignments, running, cluster, young) - fixed
        if not found:
            break
        fixed |= found
        cands = drop_moves(cands, [j for j in running if j.job_id in fixed], cluster, math.inf)
        sol = solve(cands)
    return sol, cands


__all__ = ["PASSES", "displacers", "idle_by_class", "solve_without_displacing"]
