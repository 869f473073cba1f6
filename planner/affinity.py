"""Type affinity of fragment plans: idle GPUs go to waiting jobs for which they are nearly as good as their best
(``fragment_affinity``).

Where it sits: :class:`planner.hops.HopsPolicy`'s fragment plans only, at the ``window`` stage
(:func:`affine`: which waiting jobs the window is cut from) and the ``candidates`` stage (:func:`drop_slow`:
which of their configs stay). Off by default (``PlannerParams.fragment_affinity`` 0).

Why: under the candidate default of issue 37 half of Table 4's preemptions are of jobs a fragment plan
started (docs/results/preemptions.md, "Upgrade moves at their source"): a fragment plan starts a waiting job
on whatever GPUs are idle, often a type or a GPU count its estimate puts well below its best, and the next
round plan moves it (an *upgrade move*, often onto GPUs freed by moving or requeuing others) or requeues it.
The paper fills fragments with jobs of low placement sensitivity; this extends that to GPU type and count:
a fragment's config of a waiting job is a candidate only when its estimated rate is at least ``f`` times the
job's best estimated rate on the whole cluster (every config it could run on, as if idle), and the fragment
plan's window is cut from the waiting jobs that have such a config on its idle GPUs (the queue order and the
head's reservation are unchanged). A job with no such config waits for a round plan, unless it has waited
as long as its expected run time (:func:`exempt`: then it takes any config, so no job waits for its best type
indefinitely; Table 3 seed 0's Max.LR went 1.57 -> 4.81 without that). Pure: job views in, jobs and
candidates out.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.configs import generate_configs
from planner.moves import rate_on
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView


def exempt(job: JobView) -> bool:
    """Whether waiting ``job`` has waited as long as its expected run time (``age``) or longer: it takes any
    config, as without the rule (no job waits for its best type indefinitely)."""
    return job.age > 0.0 and job.wait >= job.age


def best_rate(job: JobView, cluster: ClusterView, sigma: float) -> float:
    """The job's best estimated rate over every config it could run on ``cluster`` as if idle (one config per
    server class and GPU count: interchangeable nodes give the same estimate)."""
    configs = generate_configs(job, cluster.idle(), sigma, one_per_class=True, spans="bucketed")
    return max((rate_on(job, cfg) for cfg in configs), default=0.0)


def good_enough(job: JobView, cluster: ClusterView, sigma: float, f: float,
                best: dict[str, float]) -> list[Config]:
    """The configs of waiting ``job`` on ``cluster``'s free GPUs estimated at ``f`` times its best rate or
    more (``best`` caches the best rate per job id)."""
    if job.job_id not in best:
        best[job.job_id] = best_rate(job, cluster, sigma)
    floor = 0.0 if exempt(job) else f * best[job.job_id]
    return [cfg for cfg in generate_configs(job, cluster, sigma, one_per_class=True, spans="bucketed")
            if (r := rate_on(job, cfg)) > 0.0 and r >= floor]


def affine(queue: Sequence[JobView], cluster: ClusterView, sigma: float, f: float,
           best: dict[str, float]) -> list[JobView]:
    """The waiting jobs of ``queue`` (in its order) that have a config on the fragment's free GPUs at ``f``
    times their best rate or more."""
    return [j for j in queue if good_enough(j, cluster, sigma, f, best)]


def drop_slow(cands: Sequence[Candidate], jobs: Sequence[JobView], cluster: ClusterView, sigma: float, f: float,
              best: dict[str, float]) -> list[Candidate]:
    """``cands`` less the configs of the waiting jobs of ``jobs`` estimated below ``f`` times their best rate
    on ``cluster`` (``best`` caches it per job id)."""
    for j in jobs:
        if not j.current and j.job_id not in best:
            best[j.job_id] = best_rate(j, cluster, sigma)
    floors = {j.job_id: (j, f * best[j.job_id]) for j in jobs if not j.current and not exempt(j)}
    out: list[Candidate] = []
    for c in cands:
        hit = floors.get(c.job_id)
        if hit is None or rate_on(hit[0], c.config) >= hit[1]:
            out.append(c)
    return out


__all__ = ["affine", "best_rate", "drop_slow", "exempt", "good_enough"]
