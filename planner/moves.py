"""Moves that pay: which running jobs a round may move or preempt, and what a move is worth.

Where it sits: :class:`planner.hops.HopsPolicy` asks this module, in every round plan, before it builds
the ILP's candidates (docs/design.md, "Moves that pay"). Pure: the job views carry what each move costs
(``JobView.restart_cost``: the requeue and restart of that job's model, measured live per model;
``JobView.unsaved``: the work a requeue now would lose, since its last checkpoint) and how long it has
run where it is (``JobView.placed_for``); nothing here reads a clock.

Two rules:

1. **Held in place** (:func:`held_reason`): a running job is not moved or preempted by a round while
   - it has run in its placement for less than ``min_run_time`` (Slurm's PreemptExemptTime, KAI's
     min-runtime), so a job a fragment fill started is kept by the next round;
   - its processed samples have reached its declaration (it is finishing: a requeue would only
     repeat work);
   - its remaining time where it runs is below what a requeue costs it (``restart_cost`` plus the
     unsaved work): stopping it can only delay it;
   - its remaining time is below ``min_run_time`` (it frees its GPUs before a job started in its place
     could be moved again), unless a move to GPUs no running job holds pays (``HELD_ENDING``: the
     policy checks that, :func:`hold_in_place`).
   A held job keeps its GPUs; the round plans the others around it. A job whose estimate where it runs
   is 0 (its records there show no progress, :mod:`estimator.progress`) is never held.
2. **A move's worth** (:func:`move_price`, for each candidate config of a running job:
   :func:`planner.hops.candidates_for`): moving a running job from its current config (rate ``r0``)
   to another (rate ``r1``) costs ``restart_cost`` seconds and re-does the unsaved work, so its
   remaining ``R`` samples take ``restart_cost + (R + unsaved * r0) / r1`` instead of ``R / r0``. A move
   pays when that is shorter; its worth to the ILP is the rate it achieves over the job's remaining
   work, ``R / (restart_cost + (R + unsaved * r0) / r1)``, so a move that saves an hour on a long job
   is taken and one that saves a minute on a nearly finished job is not. A move that does not pay is
   no candidate at all. A job that leaves the plan entirely (preempted for a waiting job) is priced
   by :func:`planner.hops.candidates_for`: every candidate of a running job is worth
   ``1 + PlannerParams.preempt_penalty`` of its gain, so a waiting job must be worth that much more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.configs import generate_configs
from planner.views import ClusterView, Config, JobView

#: why a running job is held in place (diagnostics ``held``)
HELD_MIN_RUN_TIME = "min_run_time"
HELD_SAMPLES = "reached_samples"
HELD_FINISHING = "finishing"
HELD_ENDING = "ending"  # less left than min_run_time: not preempted, but moved to idle GPUs where that pays


def rate_on(job: JobView, config: Config) -> float:
    """The job's estimated samples/s on ``config`` (0.0 when the estimate fails or is not positive)."""
    try:
        return max(float(job.throughput(config)), 0.0)
    except Exception:  # noqa: BLE001 - an estimate that fails is no rate
        return 0.0


def current_rate(job: JobView) -> float:
    """The job's estimated samples/s where it runs now (0.0 when pending or unknown; a running job whose
    estimate fails is then not held for it)."""
    return rate_on(job, job.current) if job.current else 0.0


def remaining_seconds(job: JobView, rate: float) -> float | None:
    """Seconds the job still needs where it runs: its remaining samples at ``rate`` when both are known
    and the rate is measured, else what its age says is left (age - run time); None when neither."""
    if job.measured and job.total_samples > 0.0 and rate > 0.0:
        return job.remaining_samples / rate
    if job.age > 0.0:
        return max(job.age - job.run_time, 0.0)
    return None


def exempt_time(job: JobView, min_run_time: float, growth: float = 1.0) -> float:
    """How long this run of the job is exempt from moves and preemption: ``min_run_time`` times
    ``growth`` for each earlier preemption (a job preempted twice runs 4x as long before a third)."""
    return min_run_time * growth ** min(job.preemptions, 30)


def held_reason(job: JobView, min_run_time: float, growth: float = 1.0) -> str:
    """Why a round must leave this running job where it is; "" when it may be moved or preempted."""
    if not job.current:
        return ""
    if job.measured and current_rate(job) <= 0.0:  # no progress where it runs: holding it only wastes the GPUs
        return ""
    if job.placed_for < exempt_time(job, min_run_time, growth):
        return HELD_MIN_RUN_TIME
    if job.reached_samples:
        return HELD_SAMPLES
    left = remaining_seconds(job, current_rate(job))
    if left is not None and left < job.restart_cost + job.unsaved:
        return HELD_FINISHING
    if left is not None and left < min_run_time:
        return HELD_ENDING
    return ""


@dataclass(frozen=True)
class MovePrice:
    """A running job's move, priced: the rate it achieves over the job's remaining work (0.0 when the
    move does not pay) and the seconds it saves (negative when it loses)."""

    rate: float
    saves: float


def move_price(job: JobView, rate_now: float, rate_new: float) -> MovePrice:
    """Rule 2 of the module docstring for one candidate config of a running job."""
    if rate_new <= 0.0:
        return MovePrice(0.0, float("-inf"))
    if rate_now <= 0.0:  # no estimate where it runs: any placement with a rate is worth its rate, less the restart
        return MovePrice(rate_new, 0.0)
    if job.measured and job.total_samples > 0.0:
        work = job.remaining_samples
    else:  # unknown samples: the remaining time its age gives, at the current rate
        left = remaining_seconds(job, rate_now)
        work = (left if left is not None else 0.0) * rate_now
    if work <= 0.0:
        return MovePrice(0.0, float("-inf"))
    stay = work / rate_now
    move = job.restart_cost + (work + job.unsaved * rate_now) / rate_new
    if move >= stay:
        return MovePrice(0.0, stay - move)
    return MovePrice(work / move, stay - move)


def _pays_to_move(job: JobView, idle: ClusterView, sigma: float) -> bool:
    """Whether some config of running ``job`` on the ``idle`` GPUs (no running job holds them) is a move
    that pays (:func:`planner.moves.move_price`)."""
    rate_now = current_rate(job)
    for cfg in generate_configs(job, idle, sigma, one_per_class=True):
        try:
            thr = float(job.throughput(cfg))
        except Exception:  # noqa: BLE001 - no estimate there: no move there
            continue
        if thr > 0.0 and move_price(job, rate_now, thr).saves > 0.0:
            return True
    return False


def hold_in_place(cluster: ClusterView, jobs: Sequence[JobView], min_run_time: float, growth: float = 1.0,
                  sigma: float = 1.4) -> tuple[
        ClusterView, dict[str, str]]:
    """The running jobs a round leaves where they are (:func:`planner.moves.held_reason`: job id ->
    why) and the cluster the round plans the others on: each node's free GPUs less what those jobs hold."""
    held = {j.job_id: why for j in jobs if j.current and (why := held_reason(j, min_run_time, growth))}
    ending = [j for j in jobs if held.get(j.job_id) == HELD_ENDING]
    if ending:  # nearly done: kept unless a move to GPUs no running job holds pays
        busy: dict[str, int] = {}
        for j in jobs:
            for n, g in (j.current or {}).items():
                busy[n] = busy.get(n, 0) + g
        idle = cluster.with_free(lambda n: max(0, n.free_gpus - busy.get(n.name, 0)))
        for j in ending:
            if idle.free_gpus and _pays_to_move(j, idle, sigma):
                del held[j.job_id]
    if not held:
        return cluster, {}
    taken: dict[str, int] = {}
    for j in jobs:
        if j.job_id in held and j.current:
            for n, g in j.current.items():
                taken[n] = taken.get(n, 0) + g
    return cluster.with_free(lambda n: max(0, n.free_gpus - taken.get(n.name, 0))), held


__all__ = ["HELD_MIN_RUN_TIME", "HELD_SAMPLES", "HELD_FINISHING", "HELD_ENDING", "MovePrice", "current_rate", "held_reason",
           "hold_in_place",
           "move_price", "remaining_seconds"]
