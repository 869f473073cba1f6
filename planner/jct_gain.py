"""Gains and weights for the average JCT under saturation (``gpu_efficiency``, ``remaining_weight``: the first off, the second 0.5 by default).

Where it sits: the ``weights`` stage of :class:`planner.hops.HopsPolicy`, after the candidates
(:mod:`planner.candidates`) and the queue priorities, before the ILP. Pure: it reads the candidates' gains,
the job views (``requirements``, ``current``, ``age``, ``total_samples``, ``done_samples``) and the free GPUs
of the planning.

Eq. 11's gain G is a config's throughput over the job's smallest candidate throughput (Sia's
normalisation), so the ILP maximises the weighted sum of relative speed-ups. When every job fits that is
what the average JCT wants; when jobs wait (saturation: the planned jobs' smallest demands exceed the free
GPUs) a job on 16 GPUs at 60 % scaling holds GPUs that would run others at 100 %, and the ILP does not see
that unless the waiting jobs' weights are comparable to the wide job's. Two levers:

* ``gpu_efficiency`` = β > 0: in a saturated planning every candidate's gain is multiplied by
  e^β, e = (gain / GPUs) / the best gain per GPU among the job's candidates (1 for the job's most
  efficient configs, < 1 for configs that buy speed with poorly scaling GPUs). Unsaturated plannings keep
  eq. 11 as it is.
* ``remaining_weight`` = γ > 0: every planned job's eq. 11 weight is multiplied by (T / T_j)^γ,
  T_j = its expected remaining run time (age x the share of its samples still to do; at least
  :data:`SHORTEST` s), T = the mean T_j of the planned jobs, the factor clipped to [1/:data:`CLIP`,
  :data:`CLIP`]: shortest remaining work first within eq. 11 (the cμ rule for mean response time),
  for a running job against a waiting one as much as among waiting jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.signatures import Candidate
from planner.views import JobView, config_gpus

#: seconds: the shortest expected remaining time a job is weighed by (``remaining_weight``)
SHORTEST = 60.0
#: the largest factor ``remaining_weight`` multiplies (or divides) a weight by
CLIP = 100.0


def saturated(jobs: Sequence[JobView], free_gpus: int) -> bool:
    """Whether the jobs' smallest demands exceed ``free_gpus``: the GPUs running jobs hold now plus every
    waiting job's smallest requirement."""
    demand = sum(config_gpus(j.current) if j.current else j.requirements[0] for j in jobs)
    return demand > free_gpus


def efficiency_gains(cands: Sequence[Candidate], exponent: float) -> list[Candidate]:
    """``cands`` with each gain multiplied by (its gain per GPU / the best gain per GPU of its job's
    candidates) ** ``exponent``."""
    if exponent <= 0.0:
        return list(cands)
    best: dict[str, float] = {}
    for c in cands:
        per = c.gain / max(config_gpus(c.config), 1)
        if per > best.get(c.job_id, 0.0):
            best[c.job_id] = per
    out: list[Candidate] = []
    for c in cands:
        top = best.get(c.job_id, 0.0)
        e = c.gain / max(config_gpus(c.config), 1) / top if top > 0.0 else 1.0
        out.append(Candidate.made(c.job_id, c.config, c.gain * e ** exponent, c.sig, c.on))
    return out


def remaining_time(job: JobView) -> float:
    """Expected seconds of run time left: its age times the share of its samples still to do (all of it
    when its samples are unknown), at least :data:`SHORTEST`."""
    share = job.remaining_samples / job.total_samples if job.total_samples > 0.0 else 1.0
    return max(job.age * share, SHORTEST)


def slowest_remaining_time(job: JobView, cands: Sequence[Candidate]) -> float:
    """Expected seconds of run time left on the job's slowest candidate (the config its gains are relative
    to): remaining samples over that throughput, read off a candidate (its throughput / its gain); the
    age-based :func:`remaining_time` when the samples, the candidates or the estimate are missing."""
    mine = [c for c in cands if c.job_id == job.job_id]
    if job.total_samples <= 0.0 or not mine:
        return remaining_time(job)
    c = min(mine, key=lambda c: c.gain)
    try:
        low = float(job.throughput(c.config)) / c.gain if c.gain > 0.0 else 0.0
    except Exception:  # noqa: BLE001 - no estimate: the age-based time
        low = 0.0
    return max(job.remaining_samples / low, SHORTEST) if low > 0.0 else remaining_time(job)


def remaining_weights(w: Mapping[str, float], jobs: Sequence[JobView], exponent: float,
                      cands: Sequence[Candidate] | None = None) -> dict[str, float]:
    """``w`` with each job's weight multiplied by (mean remaining time / its remaining time) ** ``exponent``
    (clipped to [1/CLIP, CLIP]); jobs not in ``w`` are ignored. With ``cands``, remaining times are on each
    job's slowest candidate (:func:`slowest_remaining_time`: weight x gain is then the share of its remaining
    work a config does per second, the cμ rule), else age-based (:func:`remaining_time`)."""
    out = dict(w)
    if cands is not None:
        by_job: dict[str, list[Candidate]] = {}
        for c in cands:
            by_job.setdefault(c.job_id, []).append(c)
        left = {j.job_id: slowest_remaining_time(j, by_job.get(j.job_id, [])) for j in jobs if j.job_id in w}
    else:
        left = {j.job_id: remaining_time(j) for j in jobs if j.job_id in w}
    if exponent <= 0.0 or not left:
        return out
    mean = sum(left.values()) / len(left)
    for job_id, t in left.items():
        out[job_id] = w[job_id] * min(max((mean / t) ** exponent, 1.0 / CLIP), CLIP)
    return out


__all__ = ["CLIP", "SHORTEST", "efficiency_gains", "remaining_time", "remaining_weights", "saturated"]
