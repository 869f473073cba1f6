"""Exploration's optimistic bound with the job's own scaling carried over (``explore_scaling``).

Where it sits: :func:`planner.explore.explore_idle` calls :func:`scaled_bound` for each unmeasured
config it looks at for a running job, when ``PlannerParams.explore_scaling`` is on (off by default).
Pure: views in, a number out.

Why (docs/results/fragments.md): the optimistic rate of an unmeasured config
(:mod:`estimator.explore`) is the job's single-GPU rate per GPU times its GPUs, with no communication
in it. For a job that runs on several GPUs that beats what the job measures where it runs on nearly
every other GPU type and server, so a wide job is moved to each of them in turn (on Table 4 a third to
a half of all preemptions), most of them moves to configs no faster than the one it left.

The rule: a running job has measured its own scaling where it runs, ``e = rate / (G x r1)`` (its rate
on its current config of G GPUs over G times its estimated single-GPU rate on one of those nodes,
capped at 1). A config of the same G GPUs on at least as many servers pays at least as much for
communication, and a GPU that computes faster loses a larger share of its time to it, so ``e`` still
bounds the share of the single-GPU rate the job keeps there: the optimistic rate is multiplied by
``e``. Equivalently, the bound is the job's measured rate scaled by the ratio of the two types'
single-GPU rates (the estimator's bias on a model cancels in the ratio). Configs on fewer servers than
the current one keep the plain bound (they may communicate less), and so does every job that is not
running (nothing of its scaling is measured; exploring at a start costs no move anyway).
"""

from __future__ import annotations

from planner.views import Config, JobView, config_gpus


def _rate(job: JobView, cfg: Config) -> float:
    try:
        return max(float(job.throughput(cfg)), 0.0)
    except Exception:  # noqa: BLE001 - no estimate there: no scaling known
        return 0.0


def measured_scaling(job: JobView) -> float | None:
    """The share of ``G`` times its single-GPU rate the running job keeps on its current config of G
    GPUs (at most 1); None when the job is not running on more than one GPU or a rate is unknown."""
    cur = job.current
    if not cur or config_gpus(cur) <= 1:
        return None
    here = _rate(job, cur)
    one = max((_rate(job, {n: 1}) for n, g in cur.items() if g > 0), default=0.0)
    if here <= 0.0 or one <= 0.0:
        return None
    return min(1.0, here / (config_gpus(cur) * one))


def scaled_bound(job: JobView, cand: Config, optimistic: float, scaling: float | None) -> float:
    """``optimistic`` (the unmeasured ``cand``'s plain bound) times the job's measured ``scaling`` when
    ``cand`` spans at least as many servers as the job's current config with as many GPUs; else as is."""
    cur = job.current
    if scaling is None or not cur or len(cand) < len(cur) or config_gpus(cand) != config_gpus(cur):
        return optimistic
    return optimistic * scaling


__all__ = ["measured_scaling", "scaled_bound"]
