"""The forecast worker: each round's forecast made beside the round, never in its way.

Where it sits: the round's ``summary`` step hands the worker what the round planned with
(:meth:`Forecaster.submit`: the round plan's cluster view, the job views, the engine's policy, now) and
goes on at once; every ``summary`` step (refresh or round) collects a finished forecast
(:meth:`Forecaster.poll`) and publishes it with the queue summary (:mod:`hops_slurm.engine.reasons`).

The forecast (:func:`hops_slurm.sim.forecast_run.forecast`: the round loop run forward in the simulator)
runs in a child process forked at submission, so it sees the round's views and a copy of the policy's
state without copying them, at the lowest CPU priority (``nice 19``: on a busy machine the daemon's own
work goes first), and stops itself at its wall-clock ``budget`` (the jobs it did not reach by then get
no start, only "later than" where it got to); a child still alive ``grace`` seconds after that is
killed. One forecast at a time: a round that finds the last one still running skips its turn. So no
input, however large or odd, makes a round wait for a forecast; what the round pays is one ``fork``.
The child sends its result back in a temporary file (at most :data:`MAX_RESULT_BYTES`), read by the
daemon only once the child has exited; it runs none of the daemon's signal handlers (a stop of the
service ends it) and leaves by ``os._exit`` (none of the daemon's exit handlers, no file of the daemon
flushed or closed).

How sure (the band, :class:`planner.forecast.ErrorBand`): each pending job's first forecast (the first
made after its submission) and its latest are kept; when the job starts, their errors against its
actual start go into the band, so the band of the next forecasts is as wide as the last ones were wrong.
Each forecast's band is that of its class: its horizon and the jobs forecast in the same run to start
before it (``ahead``), kept with the forecast for the error it gives later.
``inline``: run the forecast in the calling process instead (the engine simulation, where wall-clock
asynchrony would make results depend on the machine's speed).
"""

from __future__ import annotations

import bisect
import copy
import json
import logging
import os
import signal
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from hops_slurm.sim.forecast_arrivals import ArrivalHistory
from hops_slurm.sim.forecast_run import Outcome, Timetable, forecast, window_for
from planner.forecast import Banded, ErrorBand, Forecast
from planner.views import ClusterView, JobView, Policy

log = logging.getLogger(__name__)

#: the most a child's result may be (10,000 jobs take about 0.6 MB)
MAX_RESULT_BYTES = 32 * 1024 * 1024
#: pending jobs whose first and latest forecasts are kept at most
MAX_KEPT = 100_000


@dataclass
class _Child:
    pid: int
    out: IO[bytes]
    made: float
    deadline: float  # monotonic seconds: killed after this


def policy_copy(policy: Policy) -> Policy:
    """A copy of ``policy`` whose state (its dicts, lists and sets: leases, the previous plan, verdicts)
    the copy's plannings change without touching the original's; what they hold is immutable (configs are
    read-only mappings)."""
    clone = copy.copy(policy)
    for name, value in vars(clone).items():
        if isinstance(value, (dict, list, set)):
            setattr(clone, name, copy.copy(value))
    return clone


def solver_capped(policy: Policy, seconds: float) -> Policy:
    """A copy of ``policy`` (:func:`policy_copy`) whose ILP solves take at most ``seconds`` each."""
    clone = policy_copy(policy)
    params = getattr(clone, "params", None)
    limit = getattr(params, "time_limit", None)
    if params is not None and isinstance(limit, (int, float)):
        import dataclasses
        clone.params = dataclasses.replace(params, time_limit=max(0.05, min(float(limit), seconds)))  # type: ignore[attr-defined]
    return clone


def run_forecast(policy: Policy, cluster: ClusterView, views: Sequence[JobView], now: float, *,
                 timetable: Timetable | None, budget: float, arrivals: Sequence[JobView] = ()) -> Outcome:
    """One forecast within ``budget`` wall seconds, each solve capped at a twentieth of it; ``timetable``
    None: the engine's round and refresh, coarser for a long queue (:meth:`Timetable.for_queue`). A long
    queue is seen through a window (:func:`hops_slurm.sim.forecast_run.window_for`)."""
    deadline = time.monotonic() + budget
    waiting = sum(1 for v in views if v.current is None)
    if timetable is None:
        timetable = Timetable.for_queue(waiting)
    return forecast(solver_capped(policy, budget / 20.0), cluster, views, now, timetable=timetable,
                    stop=lambda: time.monotonic() > deadline, window=window_for(policy, waiting), arrivals=arrivals)


def _encode(o: Outcome) -> bytes:
    return json.dumps({"made": o.made, "after": o.after, "plannings": o.plannings, "complete": o.complete,
                       "jobs": {j: [f.start, f.end] for j, f in o.forecasts.items()}}).encode()


def _decode(data: bytes) -> Outcome:
    d = json.loads(data)
    jobs = {str(j): Forecast(None if v[0] is None else float(v[0]), None if v[1] is None else float(v[1]))
            for j, v in dict(d["jobs"]).items()}
    return Outcome(float(d["made"]), jobs, float(d["after"]), int(d["plannings"]), bool(d["complete"]))


class Forecaster:
    """The worker (see the module docstring)."""

    def __init__(self, *, round_seconds: float, refresh_seconds: float, budget: float, grace: float = 5.0,
                 inline: bool = False, band: ErrorBand | None = None,
                 after_fork: Callable[[], None] | None = None, arrivals: ArrivalHistory | None = None) -> None:
        self.timetable = Timetable(round_seconds=round_seconds, refresh_seconds=refresh_seconds)
        #: the jobs submitted of late, replayed ahead in each forecast (:mod:`hops_slurm.sim.forecast_arrivals`)
        self.arrivals = arrivals if arrivals is not None else ArrivalHistory(window=0.0)
        self.budget, self.grace, self.inline = budget, grace, inline
        self.after_fork = after_fork  # run first in the child (the engine drops its lock there)
        self.band = band if band is not None else ErrorBand(floor=round_seconds)
        self.child: _Child | None = None
        self.latest: dict[str, Banded] = {}  # job id -> its latest forecast with its band
        #: job id -> (made, start, jobs forecast then to start before it): its first forecast; its latest
        self.first: OrderedDict[str, tuple[float, float, int]] = OrderedDict()
        self.last: OrderedDict[str, tuple[float, float, int]] = OrderedDict()
        self.skipped = 0  # rounds that found the last forecast still running
        self.outcome: Outcome | None = None  # the latest taken

    def submit(self, policy: Policy, cluster: ClusterView, views: Sequence[JobView], now: float) -> bool:
        """Start a forecast from this round (False: the last one still runs; this round's turn is skipped)."""
        self.poll()
        self.arrivals.observe(views, now)
        if not any(v.current is None for v in views):
            return False
        expected = self.arrivals.arrivals(now)
        if self.inline:
            self.take(run_forecast(policy, cluster, views, now, timetable=self._timetable(views), budget=self.budget,
                                   arrivals=expected))
            return True
        if self.child is not None:
            self.skipped += 1
            return False
        try:
            out = tempfile.TemporaryFile()
            pid = os.fork()
        except OSError as exc:  # no process to spare: no forecast this round, the round goes on
            log.warning("forecast worker not started (%s); the queue keeps the last forecast", exc)
            return False
        if pid == 0:  # the child: never returns
            code = 1
            try:
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
                    signal.signal(sig, signal.SIG_DFL)  # never the daemon's handlers: a stop ends the child
                if self.after_fork is not None:
                    self.after_fork()
                os.nice(19)
                logging.disable(logging.WARNING)
                got = run_forecast(policy, cluster, views, now, timetable=self._timetable(views), budget=self.budget,
                                   arrivals=expected)
                out.write(_encode(got))
                out.flush()
                code = 0
            finally:
                os._exit(code)
        self.child = _Child(pid, out, now, time.monotonic() + self.budget + self.grace)
        return True

    def _timetable(self, views: Sequence[JobView]) -> Timetable:
        t = self.timetable
        return Timetable.for_queue(sum(1 for v in views if v.current is None), t.round_seconds, t.refresh_seconds)

    def poll(self) -> Outcome | None:
        """Take the child's forecast if it has ended (never waits); a child past its deadline is killed."""
        child = self.child
        if child is None:
            return None
        pid, status = os.waitpid(child.pid, os.WNOHANG)
        if pid == 0:
            if time.monotonic() <= child.deadline:
                return None
            os.kill(child.pid, signal.SIGKILL)
            os.waitpid(child.pid, 0)
            log.warning("forecast still running %.0f s after its budget: killed; the queue keeps the last one",
                        self.grace)
            self._close()
            return None
        try:
            if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                log.warning("forecast worker failed (status %d); the queue keeps the last forecast", status)
                return None
            child.out.seek(0)
            data = child.out.read(MAX_RESULT_BYTES + 1)
            if len(data) > MAX_RESULT_BYTES:
                log.warning("forecast result over %d bytes: dropped", MAX_RESULT_BYTES)
                return None
            got = _decode(data)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("forecast result unreadable (%s); the queue keeps the last forecast", exc)
            return None
        finally:
            self._close()
        self.take(got)
        return got

    def _close(self) -> None:
        if self.child is not None:
            self.child.out.close()
            self.child = None

    def take(self, o: Outcome) -> None:
        """A forecast's results become the latest, each start with its band."""
        self.outcome = o
        latest: dict[str, Banded] = {}
        starts = sorted(f.start for f in o.forecasts.values() if f.start is not None)
        for job_id, f in o.forecasts.items():
            if f.start is None:
                latest[job_id] = Banded(None, None, o.after, None)  # later than where the forecast got
                continue
            ahead = bisect.bisect_left(starts, f.start)  # the jobs forecast to start before it
            latest[job_id] = self.band.band(o.made, f, ahead)
            if job_id not in self.first:
                self.first[job_id] = (o.made, f.start, ahead)
                _cap(self.first)
            self.last[job_id] = (o.made, f.start, ahead)
            _cap(self.last)
        self.latest = latest

    def observe(self, started: Mapping[str, float]) -> None:
        """Jobs that started (job id -> actual start): their forecasts' errors go into the band."""
        for job_id, actual in started.items():
            last = self.last.pop(job_id, None)
            if last is None:
                continue
            first = self.first.get(job_id)
            if first is not None and first != last:
                self.band.add(first[0], first[1], actual, first[2])
            self.band.add(last[0], last[1], actual, last[2])

    def first_start(self, job_id: str) -> float | None:
        """The first forecast start made for ``job_id`` (None: none made, or forgotten)."""
        got = self.first.get(job_id)
        return None if got is None else got[1]

    def shown(self, pending: Iterable[str]) -> dict[str, Banded]:
        """The latest forecasts of the ``pending`` jobs."""
        return {j: self.latest[j] for j in pending if j in self.latest}

    def close(self) -> None:
        """Stop a running child (the daemon's exit)."""
        if self.child is not None:
            try:
                os.kill(self.child.pid, signal.SIGKILL)
                os.waitpid(self.child.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self._close()


def _cap(d: OrderedDict[str, tuple[float, float, int]]) -> None:
    while len(d) > MAX_KEPT:
        d.popitem(last=False)


__all__ = ["Forecaster", "MAX_RESULT_BYTES", "policy_copy", "run_forecast", "solver_capped"]
