"""Exploration by a move only where the estimate does not predict a loss (``explore_floor``).

Where it sits: :func:`planner.explore.explore_idle` asks :func:`below_floor` for each unmeasured
config it looks at for a *running* job (a job that starts or restarts explores for free and is not
asked). ``PlannerParams.explore_floor`` sets the floor; 0 turns the rule off. Pure: views in, a yes or
no out.

Why (docs/results/preemptions.md): a running job is moved to explore an unmeasured config when the
config's optimistic rate (:mod:`estimator.explore`: no communication in it) beats its planned rate.
On Table 4 those moves were a third of all preemptions, and per the simulator's ground truth 40 % of
the moves to another GPU type made the job slower. The estimator's own estimate for the unmeasured
config (which the optimistic rate only bounds from above) told most of them apart: of the moves it
estimated slower than the job's rate where it ran, two in three were truly slower; of the others, one
in seven. So exploring by a move is a bet on the estimate being too pessimistic, and it is taken only
where the estimate itself does not already say the job loses: the config's estimated rate must be at
least ``floor`` times the job's estimated rate in its planned config (the measured rate, once the job
has run there). The optimistic bound still ranks the configs that pass, and the move is still priced
(:func:`planner.moves.move_price`).

A move the floor would stop is still made when it makes room for a waiting job (:func:`makes_room`):
the GPUs it frees, with those still idle, then fit a job the plan left waiting that fits nowhere now.
Such moves de-fragment (the job moves onto idle GPUs and its own, often most of a server, go to a
waiting job at the next fragment plan). Measured, the floor costs Table 4 avg JCT with or without this
exception, which is why it is off by default (docs/results/preemptions.md).

Only configs on several servers are checked: there the bound lacks exactly what the estimate models
(communication across servers), and there the bad moves were. A config on one server keeps the plain
rule, so a job whose estimate is wrong for a whole GPU type (issue 22: a model-only estimate ten times
too low on V100s) is still moved there and measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.configs import generate_configs
from planner.views import ClusterView, Config, JobView

#: how many of the waiting jobs the plan left out (highest priority first) :func:`makes_room` tries
ROOM_JOBS = 8


def _rate(job: JobView, cfg: Config) -> float:
    try:
        return max(float(job.throughput(cfg)), 0.0)
    except Exception:  # noqa: BLE001 - no estimate there: nothing says the job keeps its rate there
        return 0.0


def below_floor(job: JobView, cand: Config, planned_rate: float, floor: float) -> bool:
    """Whether a running ``job`` must not be moved to explore ``cand``: ``cand`` spans servers and the
    job's estimate there is below ``floor`` times ``planned_rate`` (its estimated rate in the planned
    config). False when ``floor`` is 0 (the rule off), the job is not running or ``cand`` is on one server."""
    if floor <= 0.0 or not job.current or len([n for n, g in cand.items() if g > 0]) <= 1:
        return False
    return _rate(job, cand) < floor * planned_rate


def _fits(job: JobView, cluster: ClusterView, free: Mapping[str, int], sigma: float) -> bool:
    pool = cluster.with_free(lambda n: max(0, min(n.total_gpus, free.get(n.name, 0))))
    return bool(generate_configs(job, pool, sigma, one_per_class=True))


def makes_room(planned: Config, cand: Config, free: Mapping[str, int], waiting: Sequence[JobView],
               cluster: ClusterView, sigma: float) -> bool:
    """Whether moving a running job from ``planned`` to ``cand`` lets one of ``waiting`` (jobs the plan
    left out, highest priority first; the first :data:`ROOM_JOBS`) fit the idle GPUs where it fits none
    now: ``free`` is what the plan leaves idle, the job's ``planned`` GPUs are freed and ``cand``'s taken.
    Such a move also serves the waiting job (the fragment plans that follow can start it), so the floor
    does not hold it back."""
    after = dict(free)
    for n, g in planned.items():
        after[n] = after.get(n, 0) + g
    for n, g in cand.items():
        after[n] = after.get(n, 0) - g
    return any(not _fits(w, cluster, free, sigma) and _fits(w, cluster, after, sigma) for w in waiting[:ROOM_JOBS])


__all__ = ["ROOM_JOBS", "below_floor", "makes_room"]
