"""The reason of every waiting Hops job, at every moment: the plannings' reasons and what only the engine sees.

Where it sits: after each planning and each refresh. A planning names why each waiting job it saw waits
(:func:`planner.reasons.plan_reasons`, in the plan's diagnostics under ``reasons``); :class:`Reasons`
keeps the latest one per job. :func:`waiting_reason` puts first what keeps a job out of any planning or
what Slurm itself waits on: set aside (with why), held by its owner (``JobHeldUser``), a dependency not
met or a ``--begin`` ahead, being profiled; then the latest planning's reason; else :data:`Code.NEW`
(tracked, not yet planned). So a pending job never has no reason. The same :class:`~planner.reasons.Why`
goes to the queue summary users read (:mod:`hops_slurm.engine.queue_summary`), the job's record
(``JobRecord.reason``), the metric ``hops_pending_jobs{reason}`` and the log (one line when a job's
reason changes: :meth:`Reasons.log_changes`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from hops_slurm.engine import queue_summary
from hops_slurm.engine.state import SCHEDULABLE_PROFILES, JobState
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.engine.forecaster import Forecaster
from hops_slurm.sim.forecast_arrivals import ArrivalHistory
from planner.forecast import Banded
from planner.reasons import Code, Why
from planner.views import ClusterView, JobView, Policy

log = logging.getLogger(__name__)

#: the reasons under which a pending job gets its forecast start shown: the planner's own
FORECAST_CODES = frozenset({Code.STARTING, Code.OUTSIDE_WINDOW, Code.NO_FIT, Code.MIN_RUN_TIME, Code.NEW,
                            Code.NOT_PLANNED})

#: reason changes logged one by one per call at most (the rest are counted on one line)
LOG_CHANGES_MAX = 20


def slurm_reason(seen: SlurmJob, now: float) -> Why | None:
    """What Slurm itself waits on for a pending job, whatever the engine plans (None: nothing)."""
    if seen.reason == "JobHeldUser":
        return Why(Code.HELD_USER, "scontrol release <job> lets it be planned")
    if seen.dependency and any("(fulfilled)" not in d for d in seen.dependency.split(",") if d):
        return Why(Code.DEPENDENCY, seen.dependency)
    if seen.eligible_time > now and seen.restart_count == 0:
        return Why(Code.BEGIN_TIME)
    return None


def waiting_reason(js: JobState, seen: SlurmJob, planned: Why | None, now: float) -> Why:
    """Why pending job ``js`` (Slurm's view: ``seen``) waits; ``planned``: the latest planning's reason."""
    if js.aside:
        return Why(Code.SET_ASIDE, js.aside)
    own = slurm_reason(seen, now)
    if own is not None:
        return own
    if js.profile not in SCHEDULABLE_PROFILES:
        return Why(Code.PROFILING, js.profile)
    return planned if planned is not None else Why(Code.NEW)


class Reasons:
    """The latest planning's reason per job, and the reasons last published (for the change log)."""

    def __init__(self) -> None:
        self.planned: dict[str, Why] = {}
        self.published: dict[str, Why] = {}
        self.order: list[str] = []  # the latest planning's queue order (waiting jobs, first = next)
        #: the forecast worker (``[engine] forecast``: :func:`start_forecast`); None until the first forecast
        self.forecaster: Forecaster | None = None
        self.forecast_inline = False  # the forecast in the engine's own process (the engine simulation)
        #: run in the forecast's child right after the fork: the engine drops its copy of the instance lock
        #: there (:meth:`hops_slurm.engine.lock.InstanceLock.drop_inherited`)
        self.after_fork: Callable[[], None] | None = None

    def first_forecast(self, job_id: str) -> float | None:
        """The first forecast start made for ``job_id`` after its submission (None: none)."""
        return self.forecaster.first_start(job_id) if self.forecaster is not None else None

    def last_name(self, job_id: str) -> str:
        """The REASON last published for ``job_id`` ("" when none)."""
        why = self.published.get(job_id)
        return why.name if why is not None else ""

    def take(self, diagnostics: Mapping[str, object]) -> None:
        """A planning's ``reasons`` (:func:`hops_slurm.core.interface.plan_once`): each job it names gets its
        reason; a placed job's (``HopsStarting``) stands until a later planning says otherwise."""
        queue = diagnostics.get("queue")
        if isinstance(queue, list):
            self.order = [str(j) for j in queue]
        got = diagnostics.get("reasons")
        if not isinstance(got, Mapping):
            return
        for job_id, data in got.items():
            why = Why.from_dict(data)
            if why is not None:
                self.planned[str(job_id)] = why

    def current(self, tracked: Mapping[str, JobState], listing: Mapping[str, SlurmJob], now: float) -> dict[str, Why]:
        """Job id -> reason for every tracked job Slurm lists as pending; the planned reasons of jobs no
        longer tracked are dropped."""
        self.planned = {j: w for j, w in self.planned.items() if j in tracked}
        out: dict[str, Why] = {}
        for job_id, js in tracked.items():
            seen = listing.get(job_id)
            if seen is not None and seen.pending:
                out[job_id] = waiting_reason(js, seen, self.planned.get(job_id), now)
        return out

    def log_changes(self, now_reasons: Mapping[str, Why]) -> list[str]:
        """Log each job whose reason code changed since the last call (at most :data:`LOG_CHANGES_MAX` lines,
        then a count); returns the ids that changed."""
        changed = [j for j, w in now_reasons.items() if (old := self.published.get(j)) is None or old.code != w.code]
        for job_id in changed[:LOG_CHANGES_MAX]:
            why = now_reasons[job_id]
            log.info("job %s waits: %s (%s)", job_id, why.name, why.text())
        if len(changed) > LOG_CHANGES_MAX:
            log.info("%d more jobs changed reason (hops-slurm queue shows them)", len(changed) - LOG_CHANGES_MAX)
        self.published = dict(now_reasons)
        return changed


class Gauges(Protocol):
    """Where the counts go (:meth:`hops_slurm.engine.exporter.EngineMetrics.pending_reasons`)."""

    def pending_reasons(self, counts: Mapping[str, int]) -> None: ...


def start_forecast(reasons: Reasons, policy: Policy, cluster: ClusterView, jobs: Sequence[JobView], now: float, *,
                   round_seconds: float, refresh_seconds: float, budget: float, arrivals: float = 0.0) -> bool:
    """Hand this round's views to the forecast worker (:class:`hops_slurm.engine.forecaster.Forecaster`,
    made on first use): it runs the round loop forward from them in the simulator, in a child process,
    within ``budget`` wall seconds, and never holds the round up; ``arrivals``: seconds of recent submissions
    it expects again (:mod:`hops_slurm.sim.forecast_arrivals`; 0: none). False: the last forecast still runs."""
    if reasons.forecaster is None:
        reasons.forecaster = Forecaster(round_seconds=round_seconds, refresh_seconds=refresh_seconds, budget=budget,
                                        inline=reasons.forecast_inline, after_fork=reasons.after_fork,
                                        arrivals=ArrivalHistory(window=arrivals))
    return reasons.forecaster.submit(policy, cluster, jobs, now)


def _forecasts(reasons: Reasons, listing: Mapping[str, SlurmJob], now_reasons: Mapping[str, Why]) -> dict[str, Banded]:
    """A finished forecast collected; the starts since measured against their forecasts (the band); the
    pending jobs' latest forecasts, only where the planner decides when the job starts."""
    f = reasons.forecaster
    if f is None:
        return {}
    f.poll()
    f.observe({j: s.start_time for j, s in listing.items() if j in f.last and s.active and s.start_time})
    return f.shown(j for j, w in now_reasons.items() if w.code in FORECAST_CODES)


def publish(reasons: Reasons, tracked: Mapping[str, JobState], listing: Mapping[str, SlurmJob], now: float, *,
            metrics: Gauges, state_dir: Path, refresh_seconds: float) -> Path:
    """Each pending job's reason now: logged where it changed, counted in ``hops_pending_jobs{reason}`` and
    written with the queue summary users read (:mod:`hops_slurm.engine.queue_summary`); its path."""
    now_reasons = reasons.current(tracked, listing, now)
    reasons.log_changes(now_reasons)
    metrics.pending_reasons(counts(now_reasons.values()))
    # a forecast only where the planner decides when the job starts (not for one Slurm or its owner holds)
    summary = queue_summary.build(tracked, listing, now_reasons, reasons.order, now, refresh_seconds,
                                  _forecasts(reasons, listing, now_reasons))
    return queue_summary.write(state_dir, summary)


def counts(reasons: Iterable[Why]) -> dict[str, int]:
    """Waiting jobs per reason code (the metric's label), every code present (0 for none)."""
    out = {c.value: 0 for c in Code}
    for why in reasons:
        out[why.code.value] += 1
    return out


__all__ = ["LOG_CHANGES_MAX", "Reasons", "counts", "publish", "start_forecast", "slurm_reason", "waiting_reason"]
