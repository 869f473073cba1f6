"""From what is known about a job to the JobView a policy plans with: one pipeline for both backends.

Where it sits: at every planning a backend describes each job it offers to the policy as a
:class:`KnownJob`: the live engine from its bookkeeping (:func:`hops_slurm.engine.known_jobs.known_job`, over
:class:`hops_slurm.engine.state.JobState` and Slurm's listing), the simulated cluster from its jobs
(:meth:`hops_slurm.sim.sim_backend.SimBackend.job_views`). Both then call :func:`job_views` with the
estimator over their throughput store (:class:`estimator.estimate.Estimator`: the engine's store live,
a temporary one fed by probes and runtime records in simulation, :mod:`hops_slurm.sim.knowledge`).
For each job this module makes

1. its estimate (:func:`estimate`): the throughput function, the eq. 9 age of its declared samples and
   its eq. 10 sensitivity, all from the estimator, asked afresh at every planning (the store learns
   between plannings); jobs of one model share one store read (``memo``);
2. its planning age: the eq. 9 age times its honesty factor (``KnownJob.age_factor``, made by
   :func:`estimator.honesty.assess`: live in :mod:`hops_slurm.engine.honesty_review`, in simulation by the
   simulated cluster), so a job past its declaration or of an owner who understated before waits longer;
3. its :class:`planner.views.JobView`: wait (its ledger's, up to ``now``), attained GPU-seconds, run
   time, processed samples, current config.

Sensitivity is eq. 10 on the GPU type with the most GPUs in the cluster that the job has data for
(the type most of its placements will be on; the order is the same for every job, so sensitivities
compare).

Fallback (a job without a signature, whose probes all failed, or whose estimate is unavailable):
throughput = the square root of the number of GPUs (the same on every type: the planner then only weighs
GPU counts, and with diminishing returns, since how the job scales is not known yet: a blind plan starts
more jobs at moderate counts rather than a few at their largest), sensitivity 1.0 (not placement sensitive), and as age the mean age of the jobs of this
planning that have one (:data:`FALLBACK_AGE` if none), so its latency ratio grows with its wait like
everyone else's and it is never stranded. Pure: no Slurm, no clock (``now`` is passed in), no I/O
beyond what the estimator reads.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from estimator.errors import EstimateUnavailable, fresh_copy
from hops_slurm.core.ledger import Ledger
from planner.views import Config, JobView, ThroughputFn, freeze_config

log = logging.getLogger(__name__)

FALLBACK_AGE = 3600.0

#: One planning's (or, in simulation, one store state's) estimator answers, by (what, signature, ...).
Memo = dict[tuple[object, ...], object]


class JobEstimator(Protocol):
    """What :func:`estimate` asks (:class:`estimator.estimate.Estimator` is one)."""

    def throughput_fn(self, signature: str) -> ThroughputFn: ...

    def expected_age(self, signature: str, total_samples: float, requirements: Sequence[int]) -> float: ...

    def sensitivity(self, signature: str, gpu_type: str | None = None) -> float: ...


@dataclass(frozen=True)
class Estimate:
    """A job's estimate; all three None when unavailable (the fallback applies)."""

    throughput: ThroughputFn | None = None
    age: float | None = None  # eq. 9, of the declared samples
    sensitivity: float | None = None  # eq. 10
    optimistic: ThroughputFn | None = None  # where nothing is measured yet (estimator.explore); None: no exploration


NO_ESTIMATE = Estimate()


@dataclass
class KnownJob:
    """What a backend knows about one job at a planning (nothing of it is ground truth)."""

    job_id: str
    user: str
    signature: str  # "" = none to estimate with (never profiled, or every probe failed): the fallback
    requirements: tuple[int, ...]
    declared_samples: float
    submit_time: float
    ledger: Ledger  # wait, run time, GPU-seconds (hops_slurm.core.ledger.account keeps it)
    current: Config | None = None  # the config it runs in now, None if pending
    processed_samples: float = 0.0  # samples processed so far, as far as the backend knows
    age_factor: float = 1.0  # honesty factor (estimator.honesty.assess); the age is multiplied by it
    restart_cost: float = 0.0  # seconds a requeue and restart cost it (measured per model; the backend's default before)
    unsaved: float = 0.0  # seconds of work a requeue now would lose (since its last checkpoint; 0: checkpoints on notice)
    time_limit: float | None = None  # seconds of its Slurm time limit, when known (a replayed export's)


def fallback_throughput(config: Config) -> float:
    """A job without an estimate: sqrt(GPUs) samples/s on any type (diminishing returns, see the module docstring)."""
    return math.sqrt(float(sum(config.values())))


def sensitivity_types(estimator: Any) -> tuple[str, ...]:
    """GPU types in the order eq. 10 is tried: most GPUs in the cluster first (ties: node order)."""
    type_gpus: Mapping[str, int] = getattr(estimator, "type_gpus", None) or {}
    return tuple(sorted(type_gpus, key=lambda t: -type_gpus[t]))


def estimate(signature: str, declared_samples: float, requirements: Sequence[int],
             estimator: JobEstimator | None, memo: Memo | None = None, *, job_id: str = "") -> Estimate:
    """Step 1 of the module docstring for one job; :data:`NO_ESTIMATE` when unavailable.
    ``memo``: shared by the jobs of one planning (or kept while the store does not change), so jobs of
    one model share one store read; failures are remembered too."""
    if estimator is None or not signature:
        return NO_ESTIMATE
    memo = memo if memo is not None else {}

    def cached(key: tuple[object, ...], make: Callable[[], object]) -> Any:
        if key not in memo:
            try:
                memo[key] = make()
            except EstimateUnavailable as exc:  # remembered too: one store read per model, not per job
                memo[key] = exc
        got = memo[key]
        if isinstance(got, EstimateUnavailable):
            raise fresh_copy(got)
        return got

    def sens() -> float:
        for gpu_type in sensitivity_types(estimator) or (None,):
            try:
                value = estimator.sensitivity(signature, gpu_type)
            except (EstimateUnavailable, ZeroDivisionError):
                continue
            if math.isfinite(value):
                return value
        return 1.0

    reqs = tuple(requirements)
    try:
        fn = cached(("fn", signature), lambda: estimator.throughput_fn(signature))
        age = cached(("age", signature, declared_samples, reqs),
                     lambda: estimator.expected_age(signature, float(declared_samples), reqs))
        optimistic = getattr(estimator, "optimistic_fn", None)
        opt = cached(("opt", signature), lambda: optimistic(signature)) if callable(optimistic) else None
        return Estimate(fn, age, cached(("sens", signature), sens), opt)
    except EstimateUnavailable as exc:  # until its records arrive (probe in place)
        tell_no_estimate(signature, job_id, str(exc))
        return NO_ESTIMATE


#: (model signature, reason) pairs already logged at INFO, least recently asked first (bounded): every
#: refresh asks again for every waiting job, and 10,000 jobs of one unprofiled model are one line, not 10,000
_TOLD: OrderedDict[tuple[str, str], None] = OrderedDict()
_TOLD_MAX = 4096


def tell_no_estimate(signature: str, job_id: str, reason: str) -> None:
    """Log that a job has no estimate: at INFO the first time its model (signature) lacks one for this
    reason, naming the job that asked; every job at DEBUG."""
    key = (signature, reason)
    if key in _TOLD:
        _TOLD.move_to_end(key)
        log.debug("job %s: no estimate (%s); using the fallback", job_id or signature, reason)
        return
    if len(_TOLD) >= _TOLD_MAX:
        _TOLD.popitem(last=False)
    _TOLD[key] = None
    log.info("model %s: no estimate (%s); its jobs use the fallback (first asked by job %s)",
             signature, reason, job_id or "-")


def wait_until(ledger: Ledger, now: float) -> float:
    """The ledger's wait brought up to ``now`` (pending since it was last accounted)."""
    return ledger.wait + (max(0.0, now - ledger.last_seen) if ledger.last_state == "PENDING" else 0.0)


def planning_age(est: Estimate, age_factor: float, fallback_age: float) -> float:
    """Step 2: the eq. 9 age (or the fallback age) times the honesty factor (never below 1)."""
    age = est.age if est.age and est.age > 0 else fallback_age
    return age * max(age_factor, 1.0)


def placed_for(ledger: Ledger, now: float) -> float:
    """Seconds the job has run in its current placement (its ledger's last open placement); 0 if pending."""
    if ledger.last_state != "RUNNING" or not ledger.placements:
        return 0.0
    last = ledger.placements[-1]
    if last.get("end") is not None:
        return 0.0
    return max(0.0, now - float(last["start"]))


#: id(placements) -> (placements, how many leading runs are counted, their preempted ones): a run's
#: ``preempted`` is written when it closes, always the last one (:func:`hops_slurm.core.ledger.account`), so
#: the runs before the last never change and each is counted once, not at every planning; bounded
_PREEMPTED: OrderedDict[int, tuple[list[dict[str, Any]], int, int]] = OrderedDict()
_PREEMPTED_MAX = 50_000


def preemptions(placements: list[dict[str, Any]]) -> int:
    """How many of a ledger's runs were preempted."""
    kept = _PREEMPTED.get(id(placements))
    upto, count = (kept[1], kept[2]) if kept is not None and kept[0] is placements and kept[1] < len(placements) else (0, 0)
    stable = len(placements) - 1
    count += sum(1 for p in placements[upto:stable] if p.get("preempted"))
    if stable > 0:
        _PREEMPTED[id(placements)] = (placements, stable, count)
        _PREEMPTED.move_to_end(id(placements))
        if len(_PREEMPTED) > _PREEMPTED_MAX:
            _PREEMPTED.popitem(last=False)
    return count + (1 if placements and placements[-1].get("preempted") else 0)


def job_view(job: KnownJob, est: Estimate, now: float, *, fallback_age: float) -> JobView:
    """Step 3 for one job."""
    return JobView(
        job_id=job.job_id,
        requirements=job.requirements,
        submit_time=job.submit_time,
        wait=wait_until(job.ledger, now),
        age=planning_age(est, job.age_factor, fallback_age),
        sensitivity=est.sensitivity if est.sensitivity is not None else 1.0,
        throughput=est.throughput if est.throughput is not None else fallback_throughput,
        total_samples=float(job.declared_samples),
        done_samples=job.processed_samples,
        attained_gpu_seconds=job.ledger.gpu_seconds,
        run_time=job.ledger.run_time,
        current=freeze_config(job.current) if job.current else None,
        user=job.user,
        restart_cost=job.restart_cost,
        unsaved=job.unsaved,
        placed_for=placed_for(job.ledger, now) if job.current else 0.0,
        preemptions=preemptions(job.ledger.placements),
        measured=est.throughput is not None,
        explore=est.optimistic,
        time_limit=job.time_limit,
    )


def fallback_age_of(estimates: Iterable[Estimate]) -> float:
    """The mean eq. 9 age of the jobs that have one; :data:`FALLBACK_AGE` if none."""
    ages = [e.age for e in estimates if e.age]
    return sum(ages) / len(ages) if ages else FALLBACK_AGE


def job_views(jobs: Iterable[KnownJob], estimator: JobEstimator | None, now: float, *, memo: Memo | None = None,
              guard: Callable[[KnownJob, str, Callable[[], Any]], Any] | None = None) -> tuple[JobView, ...]:
    """The policy's view of each job: estimates first (jobs of one model share one store read), then the
    views. ``guard(job, what, step)``: runs one job's step and returns None on a failure of that job
    (the live engine sets the job aside, :func:`hops_slurm.engine.aside.per_job`); such a job is left
    out. Without it a failure propagates."""
    run = guard or (lambda _job, _what, step: step())
    jobs = list(jobs)
    memo = memo if memo is not None else {}
    est: dict[str, Estimate] = {}
    for job in jobs:
        got = run(job, "estimating its throughput", lambda job=job: estimate(
            job.signature, job.declared_samples, job.requirements, estimator, memo, job_id=job.job_id))
        if got is not None:
            est[job.job_id] = got
    fallback_age = fallback_age_of(est.values())
    views = []
    for job in jobs:
        if job.job_id not in est:
            continue
        view = run(job, "planning", lambda job=job: job_view(job, est[job.job_id], now, fallback_age=fallback_age))
        if view is not None:
            views.append(view)
    return tuple(views)


__all__ = ["KnownJob", "Estimate", "NO_ESTIMATE", "FALLBACK_AGE", "JobEstimator", "estimate", "job_view",
           "job_views", "fallback_throughput", "fallback_age_of", "planning_age", "placed_for", "wait_until", "sensitivity_types"]
