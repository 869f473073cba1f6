"""The live engine's jobs as the one job-view pipeline sees them (:mod:`hops_slurm.engine.jobview`).

Where it sits: each planning the engine (:mod:`hops_slurm.engine.engine`) picks its schedulable jobs
(:func:`schedulable`), describes each as a :class:`hops_slurm.engine.jobview.KnownJob` from its
bookkeeping (:func:`known_job`: :class:`hops_slurm.engine.state.JobState`, its directives and Slurm's
listing) and hands them to :func:`hops_slurm.engine.jobview.job_views` (:func:`job_views` here), which
makes the estimates and views exactly as it does for the simulator. A job whose step fails is set aside
(:func:`hops_slurm.engine.aside.per_job`). The live backend (:class:`hops_slurm.engine.backend.SlurmBackend`)
hands the views to the policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hops_slurm.directives import HopsDirectives
from hops_slurm.engine import jobview
from hops_slurm.engine.aside import per_job
from hops_slurm.engine.checkpoints import unsaved
from hops_slurm.engine.jobview import Estimate, JobEstimator, KnownJob, Memo
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_FAILED, JobState
from hops_slurm.slurm.api import SlurmJob
from planner.views import JobView


def known_job(js: JobState, seen: SlurmJob | None, now: float = 0.0) -> KnownJob:
    """What the engine knows of ``js`` (``seen``: Slurm's listing of it, for its current config; ``now``:
    Slurm's clock, for the work a requeue would lose: :func:`hops_slurm.engine.checkpoints.unsaved`)."""
    d = HopsDirectives.from_canonical(js.directives)  # parsed once per text (remembered)
    return KnownJob(
        job_id=js.job_id, user=js.user, signature=js.signature if js.profile == PROFILE_DONE else "",
        requirements=tuple(d.gpus), declared_samples=float(d.samples), submit_time=js.submit_time, ledger=js,
        current=seen.gpu_config() if seen is not None and seen.active else None,
        processed_samples=js.processed if js.run_time > 0 else 0.0, age_factor=js.age_factor,
        unsaved=unsaved(js, seen, now) if now else 0.0)


def estimate(js: JobState, estimator: JobEstimator | None, memo: Memo | None = None) -> Estimate:
    """The estimate of one job (:func:`hops_slurm.engine.jobview.estimate`); ``memo`` shared by the jobs
    of one refresh or planning."""
    if estimator is None or js.profile != PROFILE_DONE or not js.signature:
        return jobview.NO_ESTIMATE
    d = HopsDirectives.from_canonical(js.directives)
    return jobview.estimate(js.signature, float(d.samples), tuple(d.gpus), estimator, memo, job_id=js.job_id)


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


def job_views(jobs: Iterable[JobState], listing: Mapping[str, SlurmJob], estimator: JobEstimator | None, now: float,
              set_aside: Callable[[JobState, str], None]) -> tuple[JobView, ...]:
    """The planner's view of each job (``jobs``: the schedulable ones); a job whose description, estimate
    or view fails is set aside and left out."""
    states = {js.job_id: js for js in jobs}
    known = []
    for js in states.values():
        got = per_job(js, "reading its directives", lambda js=js: known_job(js, listing.get(js.job_id), now), set_aside)
        if got is not None:
            known.append(got)

    def guard(job: KnownJob, what: str, step: Callable[[], Any]) -> Any:
        return per_job(states[job.job_id], what, step, set_aside)

    return jobview.job_views(known, estimator, now, guard=guard)
