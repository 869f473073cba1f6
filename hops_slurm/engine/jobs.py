"""Job views for the planner from the engine's bookkeeping and the estimator (live side of JobView).

Where it sits: the engine builds the job views of a planning with :func:`job_views` (one
:func:`job_view` per schedulable Hops job) and hands them to the live backend
(:attr:`hops_slurm.engine.backend.SlurmBackend.views`). Throughput, eq. 9 age and eq. 10 sensitivity come from
:class:`estimator.estimate.Estimator` over the throughput store; wait, run time and GPU-seconds from
:class:`hops_slurm.engine.state.JobState`.

Fallback (a job whose probes all failed, or whose estimate is unavailable): throughput = number of GPUs
(one sample/s per GPU, the same on every type: the planner then only weighs GPU counts), sensitivity 1.0
(not placement sensitive), and as age the mean age of the profiled jobs (3600 s if there are none), so
the job's latency ratio grows with its wait like everyone else's and it is never stranded.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping

from estimator.errors import EstimateUnavailable
from estimator.estimate import Estimator
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.aside import per_job
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_FAILED, JobState
from hops_slurm.slurm.api import SlurmJob
from planner.views import Config, JobView, freeze_config

log = logging.getLogger(__name__)

FALLBACK_AGE = 3600.0


def fallback_throughput(config: Config) -> float:
    return float(sum(config.values()))


def estimate(job: JobState, estimator: Estimator | None,
             cache: dict[tuple[object, ...], object] | None = None) -> tuple[object, float | None, float | None]:
    """(throughput fn, age, sensitivity) for a profiled job; (None, None, None) when unavailable.
    ``cache``: shared by the jobs of one planning, so jobs of one model share one snapshot read."""
    if estimator is None or job.profile != PROFILE_DONE or not job.signature:
        return None, None, None
    d = HopsDirectives.from_canonical(job.directives)  # parsed once per text (remembered)
    memo = cache if cache is not None else {}

    def cached(key: tuple[object, ...], make: object) -> object:
        if key not in memo:
            try:
                memo[key] = make()  # type: ignore[operator]
            except EstimateUnavailable as exc:  # remembered too: one store read per model, not per job
                memo[key] = exc
        got = memo[key]
        if isinstance(got, EstimateUnavailable):
            raise got
        return got

    sig = job.signature
    try:
        fn = cached(("fn", sig), lambda: estimator.throughput_fn(sig))
        age = cached(("age", sig, d.samples, d.gpus), lambda: estimator.expected_age(sig, float(d.samples), d.gpus))

        def _sens() -> float:
            try:
                value = estimator.sensitivity(sig)
            except EstimateUnavailable:
                return 1.0
            return value if math.isfinite(value) else 1.0

        sens = cached(("sens", sig), _sens)
        return fn, age, sens  # type: ignore[return-value]
    except EstimateUnavailable as exc:
        log.warning("job %s: no estimate (%s); using the fallback", job.job_id, exc)
        return None, None, None


def job_view(job: JobState, now: float, *, throughput: object | None, age: float | None,
             sensitivity: float | None, fallback_age: float, current: Config | None) -> JobView:
    d = HopsDirectives.from_canonical(job.directives)  # parsed once per text (remembered)
    wait = job.wait + (max(0.0, now - job.last_seen) if job.last_state == "PENDING" else 0.0)
    return JobView(
        job_id=job.job_id,
        requirements=tuple(d.gpus),
        submit_time=job.submit_time,
        wait=wait,
        age=(age if age and age > 0 else fallback_age) * max(job.age_factor, 1.0),  # issue 16: engine.honesty
        sensitivity=sensitivity if sensitivity is not None else 1.0,
        throughput=throughput if throughput is not None else fallback_throughput,  # type: ignore[arg-type]
        total_samples=float(d.samples),
        attained_gpu_seconds=job.gpu_seconds,
        run_time=job.run_time,
        current=freeze_config(current) if current else None,
        user=job.user,
    )


def schedulable(tracked: Iterable[JobState], listing: Mapping[str, SlurmJob]) -> list[JobState]:
    """Tracked jobs Slurm lists as pending or running, profiled (or failed), not set aside."""
    out = []
    for js in tracked:
        seen = listing.get(js.job_id)
        if seen is None or not (seen.pending or seen.active) or js.profile not in (PROFILE_DONE, PROFILE_FAILED) \
                or js.aside:
            continue
        out.append(js)
    return out


def job_views(jobs: Iterable[JobState], listing: Mapping[str, SlurmJob], estimator: Estimator | None, now: float,
              set_aside: Callable[[JobState, str], None]) -> tuple[JobView, ...]:
    """The planner's view of each job (``jobs``: the schedulable ones): estimates first (jobs of one model
    share one store read), then the views; a job whose estimate or view fails is set aside and left out."""
    jobs = list(jobs)
    memo: dict[tuple[object, ...], object] = {}
    est = {}
    for js in jobs:
        got = per_job(js, "estimating its throughput", lambda js=js: estimate(js, estimator, memo), set_aside)
        if got is not None:
            est[js.job_id] = got
    ages = [a for _f, a, _s in est.values() if a]
    fallback_age = sum(ages) / len(ages) if ages else FALLBACK_AGE
    views = []
    for js in jobs:
        if js.job_id not in est:
            continue
        seen = listing[js.job_id]
        fn, age, sens = est[js.job_id]
        view = per_job(js, "planning", lambda js=js, seen=seen, fn=fn, age=age, sens=sens: job_view(
            js, now, throughput=fn, age=age, sensitivity=sens, fallback_age=fallback_age,
            current=seen.gpu_config() if seen.active else None), set_aside)
        if view is not None:
            views.append(view)
    return tuple(views)
