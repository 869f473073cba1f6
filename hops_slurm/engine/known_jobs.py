"""The live engine's jobs as the one job-view pipeline sees them (:mod:`hops_slurm.core.jobview`).

Where it sits: each planning the engine (:mod:`hops_slurm.engine.engine`) picks its schedulable jobs
(:func:`schedulable`), describes each as a :class:`hops_slurm.core.jobview.KnownJob` from its
bookkeeping (:func:`known_job`: :class:`hops_slurm.engine.state.JobState`, its directives and Slurm's
listing) and hands them to :func:`hops_slurm.core.jobview.job_views` (:func:`job_views` here), which
makes the estimates and views exactly as it does for the simulator. A job whose step fails is set aside
(:func:`hops_slurm.engine.aside.per_job`). The live backend (:class:`hops_slurm.engine.live_backend.SlurmBackend`)
hands the views to the policy. A round keeps its views in a :class:`ViewCache`: after an enactment (the
fragment plans at the round's instant) only the views of jobs whose inputs changed are made again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hops_slurm.directives import HopsDirectives
from hops_slurm.core import jobview
from hops_slurm.engine.aside import per_job
from hops_slurm.engine.checkpoints import unsaved
from hops_slurm.core.jobview import Estimate, JobEstimator, KnownJob, Memo, fallback_age_of, job_view
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_INPLACE, SCHEDULABLE_PROFILES, JobState
from hops_slurm.slurm.api import SlurmJob
from planner.views import JobView

log = logging.getLogger(__name__)


#: profile states whose signature is estimated with (a job measured in place has none of its data until its
#: first runtime records: the fallback view, ``JobView.measured`` False, until then)
MEASURED = frozenset({PROFILE_DONE, PROFILE_INPLACE})


def known_job(js: JobState, seen: SlurmJob | None, restart_cost: float = 0.0, now: float = 0.0) -> KnownJob:
    """What the engine knows of ``js`` (``seen``: Slurm's listing of it, for its current config;
    ``restart_cost``: seconds a restart costs it, :class:`hops_slurm.engine.restarts.RestartCosts`; ``now``:
    Slurm's clock, for the work a requeue would lose: :func:`hops_slurm.engine.checkpoints.unsaved`)."""
    d = HopsDirectives.from_canonical(js.directives)  # parsed once per text (remembered)
    return KnownJob(
        job_id=js.job_id, user=js.user, signature=js.signature if js.profile in MEASURED else "",
        requirements=tuple(d.gpus), declared_samples=float(d.samples), submit_time=js.submit_time, ledger=js,
        current=seen.gpu_config() if seen is not None and seen.active else None,
        processed_samples=js.processed if js.run_time > 0 else 0.0, age_factor=js.age_factor,
        restart_cost=restart_cost, unsaved=unsaved(js, seen, now) if now else 0.0)


def estimate(js: JobState, estimator: JobEstimator | None, memo: Memo | None = None) -> Estimate:
    """The estimate of one job (:func:`hops_slurm.core.jobview.estimate`); ``memo`` shared by the jobs
    of one refresh or planning."""
    if estimator is None or js.profile not in MEASURED or not js.signature:
        return jobview.NO_ESTIMATE
    d = HopsDirectives.from_canonical(js.directives)
    return jobview.estimate(js.signature, float(d.samples), tuple(d.gpus), estimator, memo, job_id=js.job_id)


def schedulable(tracked: Iterable[JobState], listing: Mapping[str, SlurmJob]) -> list[JobState]:
    """Tracked jobs Slurm lists as pending or running, not set aside, and profiled, measured in place or
    failed (:data:`hops_slurm.engine.state.SCHEDULABLE_PROFILES`): every job but those waiting for probes
    (:mod:`hops_slurm.engine.inplace` says which wait)."""
    out = []
    for js in tracked:
        seen = listing.get(js.job_id)
        if seen is None or not (seen.pending or seen.active) or js.profile not in SCHEDULABLE_PROFILES or js.aside:
            continue
        out.append(js)
    return out


def refresh_ages(jobs: Iterable[JobState], estimator: Callable[[], JobEstimator | None], usable: bool,
                 set_aside: Callable[[JobState, str], None]) -> None:
    """The eq. 9 age of each job (``jobs``: those of one refresh, tracked and just ended) that has data and
    none yet: profiled, or measured in place once its probes or runtime records gave the store some; kept
    in its state for the queue view and its JobRecord (``age_estimate``, the latency ratio's denominator).
    ``estimator``: the refresh's one (asked only when some job needs it); ``usable``: whether the snapshot
    has a usable GPU node (else the ages wait for a later refresh: a condition of the cluster, nobody is set
    aside). A job that ended without any age (no data ever: it ended before its first runtime record, or
    had no recorder and no probe) keeps the one it was planned with: the fallback's, the mean age of the
    others (:func:`hops_slurm.core.jobview.fallback_age_of`)."""
    jobs = list(jobs)
    todo = [js for js in jobs if js.profile in MEASURED and js.age is None and js.signature and not js.aside]
    if todo and not usable:
        log.info("no usable GPU nodes at this refresh: job ages wait for the next one")
        return
    if todo:
        est = estimator()
        memo: Memo = {}  # jobs of one model share one store read
        for js in todo:
            got = per_job(js, "estimating its run time", lambda js=js: estimate(js, est, memo), set_aside)
            if got is not None:
                js.age, js.sensitivity = got.age, got.sensitivity
    ended = [js for js in jobs if js.ended is not None and js.age is None and not js.aside]
    if ended:
        planned_with = jobview.fallback_age_of(jobview.Estimate(age=js.age) for js in jobs if js.age)
        for js in ended:
            js.age = planned_with


def job_views(jobs: Iterable[JobState], listing: Mapping[str, SlurmJob], estimator: JobEstimator | None, now: float,
              set_aside: Callable[[JobState, str], None], *,
              restart_cost: Callable[[JobState], float] = lambda _js: 0.0) -> tuple[JobView, ...]:
    """The planner's view of each job (``jobs``: the schedulable ones); a job whose description, estimate
    or view fails is set aside and left out. ``restart_cost(job)``: seconds a restart costs it."""
    states = {js.job_id: js for js in jobs}
    known = []
    for js in states.values():
        got = per_job(js, "reading its directives",
                      lambda js=js: known_job(js, listing.get(js.job_id), restart_cost(js), now), set_aside)
        if got is not None:
            known.append(got)

    def guard(job: KnownJob, what: str, step: Callable[[], Any]) -> Any:
        return per_job(states[job.job_id], what, step, set_aside)

    return jobview.job_views(known, estimator, now, guard=guard)


class ViewCache:
    """The job views of one instant (a round plan and the fragment plans after it), kept by job: a job's
    known facts, estimate and view are made again only when their inputs changed (its bookkeeping, Slurm's
    listing of it, its restart cost, the estimator, the instant ``now``, or the fallback age), so the
    plannings after an enactment remake the views of the jobs it started or stopped, not all of them.
    :attr:`made`: views made by the last :meth:`update` (the rest were kept)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple[object, ...], KnownJob, Estimate]] = {}
        self._views: dict[str, tuple[tuple[object, ...], float, JobView]] = {}
        self._memo: tuple[object, float, Memo] | None = None  # (estimator, now, its answers)
        self.made = 0

    def update(self, jobs: Iterable[JobState], listing: Mapping[str, SlurmJob], estimator: JobEstimator | None,
               now: float, set_aside: Callable[[JobState, str], None], *,
               restart_cost: Callable[[JobState], float] = lambda _js: 0.0, memo: Memo | None = None) -> tuple[JobView, ...]:
        """The views of ``jobs`` (the schedulable ones), as :func:`job_views` makes them. ``memo``: the
        estimates the caller keeps while the store does not change (else one per estimator and instant)."""
        if memo is None:
            if self._memo is None or self._memo[0] is not estimator or self._memo[1] != now:
                self._memo = (estimator, now, {})
            memo = self._memo[2]
        states = {js.job_id: js for js in jobs}
        kept: dict[str, tuple[tuple[object, ...], KnownJob, Estimate]] = {}
        for js in states.values():
            seen = listing.get(js.job_id)
            cost = restart_cost(js)
            key = _inputs(js, seen, cost, estimator, now)
            old = self._kept.get(js.job_id)
            if old is not None and old[0] == key:
                kept[js.job_id] = old
                continue
            known = per_job(js, "reading its directives", lambda js=js, seen=seen, cost=cost: known_job(js, seen, cost, now),
                            set_aside)
            if known is None:
                continue
            est = per_job(js, "estimating its throughput", lambda js=js: estimate(js, estimator, memo), set_aside)
            if est is not None:
                kept[js.job_id] = (key, known, est)
        self._kept = kept
        fallback = fallback_age_of(e for _k, _j, e in kept.values())
        views: dict[str, tuple[tuple[object, ...], float, JobView]] = {}
        out = []
        self.made = 0
        for job_id, (key, known, est) in kept.items():
            old_view = self._views.get(job_id)
            if old_view is not None and old_view[0] == key and old_view[1] == fallback:
                view: JobView | None = old_view[2]
            else:
                view = per_job(states[job_id], "planning", lambda known=known, est=est: job_view(
                    known, est, now, fallback_age=fallback), set_aside)
                self.made += 1
            if view is not None:
                views[job_id] = (key, fallback, view)
                out.append(view)
        self._views = views
        return tuple(out)


def _inputs(js: JobState, seen: SlurmJob | None, restart_cost: float, estimator: object, now: float) -> tuple[object, ...]:
    """What a job's view is made of (:func:`known_job`, :func:`estimate`, :func:`hops_slurm.core.jobview.job_view`)."""
    current = tuple(sorted(seen.gpu_config().items())) if seen is not None and seen.active else None
    last = repr(js.placements[-1]) if js.placements else ""
    return (now, id(estimator), js.profile, js.signature, js.directives, js.age_factor, js.aside, js.wait,
            js.last_seen, js.last_state, js.gpu_seconds, js.run_time, js.processed, len(js.placements), last,
            restart_cost, current, seen.state if seen is not None else "", seen.start_time if seen is not None else None,
            seen.restart_count if seen is not None else 0, js.listen_run, js.checkpoint_at, js.answer_at, js.notice_at)
