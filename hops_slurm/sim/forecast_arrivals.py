"""Expected arrivals of a forecast: the submissions of the last window, replayed ahead of now.

Where it sits: beside the forecast's simulated cluster (:class:`hops_slurm.sim.forecast_backend.ForecastBackend`,
its ``arrivals``). The daemon's forecast worker (:class:`hops_slurm.engine.forecaster.Forecaster`) and the
forecast bench keep one :class:`ArrivalHistory`: each round's job views go in (:meth:`ArrivalHistory.observe`),
and each forecast gets :meth:`ArrivalHistory.arrivals`: every job submitted in the last ``window`` seconds,
submitted again ``window`` seconds later (the daemon's: once; ``horizon`` replays it every window up to that
far ahead), fresh (never run, no wait), with its estimates as they were when it was first seen.

Why: a forecast that knows only the jobs of now is a lower bound on a waiting job's start whenever jobs
submitted later may start first. Under latency-ratio weights alone they seldom do (a new job weighs the
bias, 0.01, against a waiting job's latency ratio), but under the defaults since issue 37 (stretch weights,
remaining-time weights: docs/design.md, "The defaults: the JCT combination") a short job submitted later
weighs about as much as a long one that has waited, and starts first. On Table 4 seed 0 the forecast at
submission of the 35 jobs that waited a round was early by a median of 34 % of their wait, each passed by
0-259 jobs submitted after its forecast was made (docs/results/requeues.md, "What the defaults cost the
forecasts"). Replaying the last window assumes the next one brings the same jobs: a steady rate, the site's
own mix. Off by default (``[engine] forecast_arrivals = 0``): on the simulator's workloads it is right on
average and wrong job by job (docs/results/forecast.md, "What the error is made of", beside the forecast
that knows the run's later submissions).

Pure: views in, views out; no clock (the caller says when now is).
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from planner.views import JobView

#: the separator of a replayed job's id: ``<job id>~<k>`` for the k-th replay (a Slurm job id has no ``~``)
MARK = "~"


@dataclass
class ArrivalHistory:
    """The jobs submitted in the last ``window`` seconds, as first seen (see the module docstring)."""

    window: float = 3600.0
    #: replayed up to this many seconds ahead of now (None: one window, each job expected once more)
    horizon: float | None = None
    #: jobs remembered at most (the oldest submissions are dropped first)
    cap: int = 20_000
    _seen: OrderedDict[str, JobView] = field(default_factory=OrderedDict, repr=False)

    def __post_init__(self) -> None:
        if self.horizon is None:
            self.horizon = self.window
        if self.window < 0 or self.horizon < 0 or self.cap < 0:
            raise ValueError("expected arrivals need a window, a horizon and a cap of at least 0")

    def observe(self, views: Iterable[JobView], now: float) -> None:
        """Remember each job of ``views`` submitted in the last window and not seen before (its view
        now: the estimates it was planned with); forget those submitted before the window."""
        if self.window <= 0:
            return
        since = now - self.window
        for v in views:
            if v.job_id not in self._seen and MARK not in v.job_id and since <= v.submit_time <= now:
                self._seen[v.job_id] = v
        for job_id in [j for j, v in self._seen.items() if v.submit_time < since]:
            del self._seen[job_id]
        if len(self._seen) > self.cap:  # the oldest submissions go first (one sort, not one scan per job)
            for job_id in sorted(self._seen, key=lambda j: self._seen[j].submit_time)[:len(self._seen) - self.cap]:
                del self._seen[job_id]

    def arrivals(self, now: float) -> list[JobView]:
        """The jobs expected after ``now``: each one remembered, submitted again every window, up to the
        horizon, and at most ``cap`` in all (each job's earliest replays, as many for each); in submission
        order."""
        horizon = self.horizon or 0.0
        if self.window <= 0 or horizon <= 0:
            return []
        out: list[JobView] = []
        each = max(1, self.cap // max(1, len(self._seen)))  # replays of one job at most
        for v in self._seen.values():
            k = max(1, math.floor((now - v.submit_time) / self.window) + 1)  # its first replay after now
            for k in range(k, k + each):
                at = v.submit_time + k * self.window
                if at > now + horizon:
                    break
                if at > now:
                    out.append(fresh(v, f"{v.job_id}{MARK}{k}", at))
        out.sort(key=lambda v: (v.submit_time, v.job_id))
        return out


def fresh(view: JobView, job_id: str, submit_time: float) -> JobView:
    """``view`` as a new job submitted at ``submit_time``: never run, no wait, nothing done."""
    return dataclasses.replace(view, job_id=job_id, submit_time=submit_time, wait=0.0, done_samples=0.0,
                               attained_gpu_seconds=0.0, run_time=0.0, current=None, unsaved=0.0,
                               placed_for=0.0, preemptions=0)


def replayed(job_id: str) -> bool:
    """Whether ``job_id`` names an expected arrival (not a job of the cluster)."""
    return MARK in job_id


__all__ = ["ArrivalHistory", "MARK", "fresh", "replayed"]
