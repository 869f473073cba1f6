"""What the simulated cluster's jobs have processed, and their honesty factors (issue 16), as the live engine reads them.

Where it sits: a mixin of :class:`hops_slurm.sim.sim_backend.SimBackend`; its job views
(:meth:`~hops_slurm.sim.sim_backend.SimBackend.job_views`) give every job the samples it processed so far
(:func:`hops_slurm.core.processed.processed_samples` over its runtime records, not ground truth) and its
honesty factor (:func:`estimator.honesty.assess` against its declaration and its owner's history). A
planning works each job's processed samples out once (``memo``) and hands them to both.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from estimator.honesty import JobOutcome, UserHistory, assess, history_of
from hops_slurm.core import processed
from hops_slurm.core.jobview import estimate
from planner.views import freeze_config

if TYPE_CHECKING:
    from hops_slurm.sim.knowledge import Knowledge

#: a simulated job (:class:`hops_slurm.sim.sim_backend._Job`; untyped here to keep the import one way)
_Job = Any


class Declarations:
    """The declaration side of the simulated cluster (see the module docstring)."""

    t: float
    settings: Any  # hops_slurm.sim.sim_backend.SimSettings
    knowledge: Knowledge
    active: dict[str, Any]
    finished: dict[str, Any]

    def processed_samples(self, job: _Job, memo: dict[str, float] | None = None) -> float:
        """Samples the job has processed so far as the live engine estimates them
        (:func:`hops_slurm.core.processed.processed_samples` over its runtime records, which carry the job's
        own count, so work lost to a requeue and redone shows; not ground truth); an ended job's is its
        record's, made when it ended. ``memo``: values already worked out at this instant, by job id."""
        if job.finished and job.record.processed_samples is not None:
            return job.record.processed_samples
        if memo is not None and job.spec.job_id in memo:
            return memo[job.spec.job_id]

        def rate(config: dict[str, int] | object) -> float | None:
            fn = estimate(job.signature, job.spec.declared, job.spec.requirements, self.knowledge.estimator,
                          self.knowledge.memo, job_id=job.spec.job_id).throughput
            return float(fn(freeze_config(config))) if fn is not None and config else None  # type: ignore[arg-type]

        got = processed.processed_samples(job.ledger, self.t, rate=rate, restart=self.settings.costs.process_start)
        if memo is not None:
            memo[job.spec.job_id] = got
        return got

    def user_histories(self, memo: dict[str, float] | None = None) -> dict[str, UserHistory]:
        """Each user's :class:`UserHistory` over their ended jobs (in order of completion) and their
        running ones (what they processed so far). An ended job's outcome no longer changes: each is
        made once (:meth:`_ended_outcomes`), so a planning's cost grows with the active jobs only."""
        outcomes = {user: list(ended) for user, ended in self._ended_outcomes().items()}
        for job in self.active.values():
            if job.ever_ran:
                outcomes.setdefault(job.spec.user, []).append(JobOutcome(job.spec.declared,
                                                                         self.processed_samples(job, memo)))
        return {u: history_of(o, self.settings.honesty) for u, o in outcomes.items()}

    def _ended_outcomes(self) -> dict[str, list[JobOutcome]]:
        """User -> the outcomes of their ended jobs, in order of completion (``finished`` only grows, in
        that order: the outcomes of jobs ended since the last call are appended)."""
        ended: dict[str, list[JobOutcome]] = self.__dict__.setdefault("_ended", {})
        seen = self.__dict__.get("_ended_seen", 0)
        for job in islice(self.finished.values(), seen, None):
            ended.setdefault(job.spec.user, []).append(JobOutcome(job.spec.declared, self.processed_samples(job)))
        self.__dict__["_ended_seen"] = len(self.finished)
        return ended

    def age_factor(self, job: _Job, histories: dict[str, UserHistory], memo: dict[str, float] | None = None) -> float:
        """The job's honesty factor (:func:`estimator.honesty.assess`; the age it is applied to does not
        change it): its processed samples against its declaration, and its owner's history."""
        history = histories.get(job.spec.user, UserHistory())
        return assess(job.spec.declared, self.processed_samples(job, memo), 1.0, history, self.settings.honesty).factor


__all__ = ["Declarations"]
