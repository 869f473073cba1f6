"""Queue priorities: latency ratio (eq. 8) and the ablation alternatives, behind one interface.

First step of a planning: :func:`queue_order` ranks the active jobs; the service window
(:mod:`planner.window`) cuts the head of that queue and the ILP weights (eq. 11) use the same
numbers. Higher priority = served first. Also the RAQLR busyness metric (eq. 7) used by reports.

Every priority is a function ``(job, now, ctx) -> float`` registered in :data:`PRIORITIES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from planner.views import JobView


@dataclass(frozen=True)
class PriorityContext:
    """What some priorities need beyond the job: the number of active jobs and the GPUs planned."""

    n_jobs: int
    total_gpus: int


PriorityFn = Callable[[JobView, float, PriorityContext], float]

_EPS = 1e-9


def latency_ratio(job: JobView) -> float:
    """Eq. 6/8: wait / age (age = expected run time without waiting, eq. 9); 0 while no age is known."""
    return job.wait / job.age if job.age > 0 else 0.0


def lr_priority(job: JobView, now: float, ctx: PriorityContext) -> float:
    """Latency ratio priority (eq. 8), the Hops default."""
    return latency_ratio(job)


def _remaining_fraction(job: JobView) -> float:
    if job.total_samples > 0:
        return job.remaining_samples / job.total_samples
    return 1.0


def ftf_priority(job: JobView, now: float, ctx: PriorityContext) -> float:
    """Finish-time fairness ρ = T_sh / T_id (Themis), larger = treated more unfairly = served first.

    T_sh = time since submission + expected remaining run time (age times the remaining fraction);
    T_id = run time with a 1/N share of the planned GPUs, scaling eq. 9's age (made for the mean
    requirement R_avg) linearly: age · R_avg / (total_gpus / N).
    """
    r_avg = sum(job.requirements) / len(job.requirements)
    fair_share = max(ctx.total_gpus / max(ctx.n_jobs, 1), _EPS)
    t_id = max(job.age * r_avg / fair_share, _EPS)
    t_sh = max(now - job.submit_time, 0.0) + _remaining_fraction(job) * job.age
    return t_sh / t_id


def las_priority(job: JobView, now: float, ctx: PriorityContext) -> float:
    """Least attained service: fewest GPU-seconds received first."""
    return -job.attained_gpu_seconds


def sjf_priority(job: JobView, now: float, ctx: PriorityContext) -> float:
    """Shortest job first (by expected run time, age)."""
    return -job.age


def srtf_priority(job: JobView, now: float, ctx: PriorityContext) -> float:
    """Shortest remaining time first (age times the remaining fraction of samples)."""
    return -job.age * _remaining_fraction(job)


def fifo_priority(job: JobView, now: float, ctx: PriorityContext) -> float:
    """First in, first out."""
    return -job.submit_time


PRIORITIES: dict[str, PriorityFn] = {
    "lr": lr_priority,
    "ftf": ftf_priority,
    "las": las_priority,
    "sjf": sjf_priority,
    "srtf": srtf_priority,
    "fifo": fifo_priority,
}

#: λ (eq. 11) each priority uses unless the parameters say otherwise (2 with FTF: docs/design.md, "Reading the paper").
DEFAULT_LAMBDA: dict[str, float] = {"ftf": 2.0}


def get_priority(name: str) -> PriorityFn:
    try:
        return PRIORITIES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown queue priority {name!r}; choose one of {', '.join(PRIORITIES)}") from None


def default_lambda(name: str) -> float:
    return DEFAULT_LAMBDA.get(name.lower(), 1.0)


def priorities(jobs: Sequence[JobView], now: float, name: str, total_gpus: int, *,
               fairshare_weight: float = 0.0) -> dict[str, float]:
    """Priority of every job under the named rule, plus ``fairshare_weight`` times its owner's fair-share
    factor (:mod:`planner.fairshare`; the same for every job of one owner, so their order stays the rule's)."""
    fn = get_priority(name)
    ctx = PriorityContext(n_jobs=len(jobs), total_gpus=total_gpus)
    return {j.job_id: float(fn(j, now, ctx)) + fairshare_weight * j.fair_share for j in jobs}


def queue_order(jobs: Sequence[JobView], prios: dict[str, float]) -> list[JobView]:
    """Jobs by descending priority; ties by submission time, then id (deterministic)."""
    return sorted(jobs, key=lambda j: (-prios[j.job_id], j.submit_time, j.job_id))


def weights(prios: dict[str, float], lambda_: float) -> dict[str, float]:
    """Eq. 11 weights (prior + bias)^λ, bias = |min prior| + 0.01 when any prior ≤ 0, else 0.

    Scaled so the largest weight is 1 (the argmax of eq. 11 is unchanged; keeps large λ numerically sane).
    """
    if not prios:
        return {}
    low = min(prios.values())
    bias = abs(low) + 0.01 if low <= 0 else 0.0
    # (p + bias)^λ / (max + bias)^λ computed in log space so λ → large stays finite.
    top = max(prios.values()) + bias
    out: dict[str, float] = {}
    for job_id, p in prios.items():
        base = (p + bias) / top
        out[job_id] = 1.0 if lambda_ == 0 else math.exp(lambda_ * math.log(base)) if base > 0 else 0.0
    return out


def raqlr(finished: Iterable[tuple[float, float]], now: float, horizon_s: float) -> float:
    """Eq. 7, Recent Average Queue Latency Ratio: mean latency ratio of jobs that ended in the last
    ``horizon_s`` seconds. ``finished`` holds ``(end_time, latency_ratio)`` pairs; 0.0 when none."""
    recent = [lr for end, lr in finished if now - horizon_s <= end <= now]
    return sum(recent) / len(recent) if recent else 0.0
