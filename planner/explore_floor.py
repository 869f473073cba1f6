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

Only configs on several servers are checked: there the bound lacks exactly what the estimate models
(communication across servers), and there the bad moves were. A config on one server keeps the plain
rule, so a job whose estimate is wrong for a whole GPU type (issue 22: a model-only estimate ten times
too low on V100s) is still moved there and measured.
"""

from __future__ import annotations

from planner.views import Config, JobView


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


__all__ = ["below_floor"]
