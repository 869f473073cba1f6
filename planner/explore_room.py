"""Exploration by a move only as part of a placement that starts a waiting job now (``explore_room``).

Where it sits: :func:`planner.explore.explore_idle` calls :func:`room_moves` first, when
``PlannerParams.explore_room`` is on, with the explore moves each running job could make (the configs
the plain rule accepts for it, best first); after it, the plain rule runs for the jobs that start or
restart (free) and for running jobs only onto GPUs idle for a whole round (issue 22's case, as
``explore_moves=false``; limiting those to one server cost Table 4 avg JCT +6 %,
docs/results/preemptions.md). Pure: job views and free GPUs in, configs out.

Why (docs/results/preemptions.md): on Table 4 a third of all preemptions were explore moves of running
jobs, and half of them bought nothing for the job moved; yet cutting them by the job's own estimate
(``explore_floor``) cost avg JCT, because many also freed GPUs (often most of a server) that the
waiting jobs of the fragment plans that follow then took. The move of a running job is therefore kept
only where it serves a particular waiting job, and that job is placed in the same plan. The choice is
joint, as a fragment plan's: for the waiting jobs the plan left out, highest priority first (the first
:data:`ROOM_JOBS`), that fit the GPUs the plan leaves idle nowhere, and for each GPU type in turn, the
running jobs on that type's servers (those the waiting job may use) are taken in priority order and
each is given its best explore move that leaves more of those GPUs idle, up to :data:`MAX_MOVES` jobs,
until the GPUs idle then hold a config of the waiting job. Then those moves are made and the waiting
job gets its config of highest estimated rate there (fewest servers on a tie); the GPUs they take are
no longer idle for the next waiting job. Where no type gets there, no move is made for that job. Every
other running job stays where it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from planner.configs import generate_configs
from planner.moves import rate_on
from planner.views import ClusterView, Config, JobView, freeze_config

#: how many of the waiting jobs the plan left out (highest priority first) moves may be made for
ROOM_JOBS = 8
#: at most this many running jobs are moved together to start one waiting job
MAX_MOVES = 3


def _configs(job: JobView, cluster: ClusterView, free: Mapping[str, int], sigma: float) -> list[Config]:
    pool = cluster.with_free(lambda n: max(0, min(n.total_gpus, free.get(n.name, 0))))
    return list(generate_configs(job, pool, sigma, one_per_class=True))


def _start_config(job: JobView, configs: Sequence[Config]) -> Config | None:
    """The config of highest estimated rate (fewest servers on a tie); None where none has a rate."""
    best = max(configs, key=lambda c: (rate_on(job, c), -len(c)), default=None)
    return freeze_config(best) if best is not None and rate_on(job, best) > 0.0 else None


def _frees(cfg: Config, cand: Config, nodes: Sequence[str]) -> bool:
    """Whether moving from ``cfg`` to ``cand`` leaves more GPUs idle on ``nodes``."""
    return sum(cfg.get(n, 0) - cand.get(n, 0) for n in nodes) > 0


def room_moves(chosen: Mapping[str, Config | None], jobs: Sequence[JobView], cluster: ClusterView,
               free: Mapping[str, int], sigma: float,
               moves: Callable[[JobView, Config, Mapping[str, int]], Sequence[tuple[Config, float]]],
               ) -> tuple[dict[str, Config | None], dict[str, int], dict[str, str]]:
    """``chosen`` with the running jobs' explore moves that start a waiting job and those waiting jobs placed
    (module docstring), the GPUs per node still idle, and why per moved job. ``free``: GPUs per node the
    plan leaves idle; ``jobs`` in priority order; ``moves(job, planned, free)``: a running job's explore
    moves from its planned config, best first, each with its optimistic rate."""
    out: dict[str, Config | None] = dict(chosen)
    idle = dict(free)
    why: dict[str, str] = {}
    waiting = [j for j in jobs if not j.current and not out.get(j.job_id)][:ROOM_JOBS]
    by_type: dict[str, list[str]] = {}
    for n in cluster.nodes:
        by_type.setdefault(n.gpu_type, []).append(n.name)
    for w in waiting:
        if _configs(w, cluster, idle, sigma):
            continue  # it fits the idle GPUs already: the fragment plans start it, no move needed
        for gpu_type in sorted(by_type):
            nodes = [n for n in by_type[gpu_type] if w.nodes is None or n in w.nodes]
            trial, made = dict(idle), dict[str, tuple[Config, float]]()
            start: Config | None = None
            for job in jobs:
                cfg = out.get(job.job_id)
                if len(made) >= MAX_MOVES or start is not None:
                    break
                if not job.current or not cfg or job.job_id in why or not any(cfg.get(n, 0) for n in nodes):
                    continue
                for cand, opt in moves(job, cfg, trial):
                    if _frees(cfg, cand, nodes):
                        for n, g in cfg.items():
                            trial[n] = trial.get(n, 0) + g
                        for n, g in cand.items():
                            trial[n] = trial.get(n, 0) - g
                        made[job.job_id] = (freeze_config(cand), opt)
                        start = _start_config(w, _configs(w, cluster, trial, sigma))
                        break
            if start is None:
                continue
            for job_id, (cand, opt) in made.items():
                out[job_id] = cand
                why[job_id] = f"optimistic {opt:.4g} samples/s unmeasured, making room for {w.job_id}"
            for n, g in start.items():
                trial[n] = trial.get(n, 0) - g
            out[w.job_id], idle = start, trial
            break
    return out, idle, why


__all__ = ["MAX_MOVES", "ROOM_JOBS", "room_moves"]
