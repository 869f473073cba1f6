"""Exploration with a bounded cost: a job tries a config no record has measured when its GPUs sit idle.

Where it sits: :meth:`planner.hops.HopsPolicy.plan` calls :func:`explore_idle` on every plan, after the
ILP (and its fallbacks) chose the configs. The Hops paper faults Sia because "initial crude guidance
can prevent the scheduler from ever obtaining opportunities to run in certain configurations": a job
measured on a slow type whose estimate on a fast type is too pessimistic (eq. 2's bandwidths wrong for
that model) would never run on the fast type, and nothing would correct the estimate. Here:

- each job view may carry :attr:`planner.views.JobView.explore`: an optimistic samples/s for configs
  no record measured yet (:mod:`estimator.explore`: the single-GPU rate per GPU, an upper bound of
  data parallelism), 0.0 where everything is measured;
- after the plan, for each placed job in priority order, the configs of the same GPU count that fit on
  the GPUs the plan leaves idle (plus the job's own) are looked at; the one with the highest optimistic
  rate is taken when it beats the rate the job has in its planned config by :data:`EXPLORE_MARGIN` and,
  for a running job, when the move pays at that optimistic rate (:func:`planner.moves.move_price`: the
  restart and the lost work against the time it would save), like any other move;
- a config that only spreads the planned GPUs of the same type over more servers is never tried: it
  cannot be faster (in-server bandwidth is at least cross-server), though its optimistic rate, which
  ignores communication, beats any measured multi-GPU rate (on Table 4's workload such tries were moves
  undone by the next round: docs/results/moves.md);
- a running job explores while it has never been preempted or moved: exploring at a (re)start
  costs nothing, a move of a running job costs a restart (on Table 4's workload, exploring on every round
  doubled Hops' preemptions per job: docs/results/moves.md). After that, only onto GPUs that were idle
  after the previous round's plan too (``idle_before``: idle for a whole round, the issue-22 case of a
  job held on a slow type while a faster one it could use sits idle; on Gavel's workload a rigid LM job
  preempted twice in its first hours otherwise ran 780 h on K80s with V100s idle);
- the job runs there, its first runtime record measures the config, and the config is never explored
  again for that model (it is measured): a model has finitely many config signatures, so a wrong
  pessimistic estimate is corrected within that many rounds on a cluster where the GPUs are idle, and
  a wrong optimistic one costs one move (the priced move back, if it pays).

The GPU count stays the plan's: exploring decides where a job runs, not how many GPUs it takes (that
is the ILP's, with the leftovers fill). Only GPUs the plan leaves idle are used: no other job loses a
GPU to exploration. Pure: views in, configs out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.configs import generate_configs
from planner.explore_floor import below_floor, makes_room
from planner.explore_room import room_moves
from planner.explore_scaling import measured_scaling, scaled_bound
from planner.moves import move_price
from planner.views import ClusterView, Config, JobView, config_gpus, freeze_config

#: an unmeasured config is tried only when its optimistic rate beats the planned one by this factor
EXPLORE_MARGIN = 1.1


def _rate(fn: object, cfg: Config) -> float:
    try:
        return max(float(fn(cfg)), 0.0)  # type: ignore[operator]
    except Exception:  # noqa: BLE001 - no estimate there: nothing to explore there
        return 0.0


def _spreads(cand: Config, cfg: Config, types: Mapping[str, str]) -> bool:
    """Whether ``cand`` holds the GPUs of ``cfg``'s one GPU type on more servers: never faster (the
    calibration keeps in-server bandwidth at or above cross-server, :mod:`estimator.calibration`), so not
    worth a try, though its optimistic bound (no communication at all) beats a measured consolidated rate."""
    kinds = {types.get(n) for n in cfg} | {types.get(n) for n in cand}
    return len(kinds) == 1 and len(cand) > len(cfg)


def explore_idle(chosen: Mapping[str, Config | None], jobs: Sequence[JobView], cluster: ClusterView,
                 capacity: Mapping[str, int], sigma: float, idle_before: Mapping[str, int] | None = None,
                 move_running: bool = True, move_spanning: bool = True,
                 scaling: bool = False, floor: float = 0.0,
                 room: bool = False) -> tuple[dict[str, Config | None], dict[str, str]]:
    """``chosen`` with explored configs swapped in (module docstring) and, per explored job, why.
    ``idle_before``: GPUs per node left idle by the previous round's plan (None: unknown, so a job
    preempted or moved before does not explore while it runs). ``move_running`` False
    (``PlannerParams.explore_moves``): no running job pays a move to explore, except onto GPUs idle for a
    whole round; jobs explore at their (re)starts. ``move_spanning`` False (``PlannerParams.explore_spanning``):
    a running job is never moved to explore a config on more than one server: the optimistic rate has no
    communication in it, so there it is no bound worth a restart (a job starting still tries it). ``scaling``
    (``PlannerParams.explore_scaling``): a running job's bound carries its measured scaling
    (:mod:`planner.explore_scaling`). ``floor`` (``PlannerParams.explore_floor``): a running job is moved only
    where its estimate is at least that share of its planned rate (:mod:`planner.explore_floor`). ``room``
    (``PlannerParams.explore_room``): a running job is moved to explore only as part of a placement that
    starts a waiting job now, or onto GPUs idle for a whole round (:mod:`planner.explore_room`)."""
    out: dict[str, Config | None] = dict(chosen)
    free = dict(capacity)
    for cfg in out.values():
        for n, g in (cfg or {}).items():
            free[n] = free.get(n, 0) - g
    if not any(g > 0 for g in free.values()):
        return out, {}
    why: dict[str, str] = {}
    types = {n.name: n.gpu_type for n in cluster.nodes}
    waiting = [j for j in jobs if not j.current and not out.get(j.job_id)] if floor > 0.0 else []

    def moves(job: JobView, cfg: Config, idle: Mapping[str, int], settled: bool) -> list[tuple[Config, float]]:
        """The unmeasured configs ``job`` may explore from ``cfg`` with ``idle`` GPUs left, best first."""
        rate = _rate(job.throughput, cfg)
        if rate <= 0.0:
            return []
        pool = cluster.with_free(lambda n: max(0, min(n.total_gpus, idle.get(n.name, 0) + cfg.get(n.name, 0))))
        scale = measured_scaling(job) if scaling else None
        found: list[tuple[Config, float]] = []
        for cand in generate_configs(job, pool, sigma, one_per_class=True):
            if config_gpus(cand) != config_gpus(cfg) or dict(cand) == dict(cfg) or _spreads(cand, cfg, types):
                continue
            opt = scaled_bound(job, cand, _rate(job.explore, cand), scale)
            if opt <= rate * EXPLORE_MARGIN:
                continue
            if job.current and not move_spanning and len(cand) > 1:
                continue
            if job.current and move_price(job, rate, opt).saves <= 0.0:
                continue
            if below_floor(job, cand, rate, floor) and not makes_room(cfg, cand, idle, waiting, cluster, sigma):
                continue
            if settled and any(g > (cfg.get(n, 0) + (idle_before or {}).get(n, 0)) for n, g in cand.items()):
                continue  # not idle for a whole round
            found.append((freeze_config(cand), opt))
        return sorted(found, key=lambda m: -m[1])

    if room:
        def room_candidates(job: JobView, cfg: Config, idle: Mapping[str, int]) -> list[tuple[Config, float]]:
            settled = job.preemptions > 0 or not move_running  # as below, without ``room``
            if job.explore is None or (settled and idle_before is None):
                return []
            return moves(job, cfg, idle, settled)
        out, free, why = room_moves(out, jobs, cluster, free, sigma, room_candidates)
    for job in jobs:
        cfg = out.get(job.job_id)
        # exploring is free at a (re)start; a running job pays a move for it before its first preemption,
        # and after it only onto GPUs idle for a whole round (only onto those with ``room``)
        settled = bool(job.current and (job.preemptions > 0 or not move_running or room))
        if not cfg or job.job_id in why or job.explore is None or (settled and idle_before is None):
            continue
        found = moves(job, cfg, free, settled)
        if not found:
            continue
        best, best_rate = found[0]
        for n, g in cfg.items():
            free[n] = free.get(n, 0) + g
        for n, g in best.items():
            free[n] = free.get(n, 0) - g
        out[job.job_id] = best
        planned = _rate(job.throughput, cfg)
        why[job.job_id] = f"optimistic {best_rate:.4g} samples/s unmeasured vs {planned:.4g} planned"
    return out, why


__all__ = ["EXPLORE_MARGIN", "explore_idle"]
