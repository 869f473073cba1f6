"""Per-job accounting, one function for the live engine and the simulator.

Where it sits: the live engine (:mod:`hops_slurm.engine.engine`) calls :func:`account` at every refresh
with what Slurm says of each Hops job; the simulated cluster (:mod:`hops_slurm.sim.sim_backend`) calls it
whenever its virtual clock moves or a job starts, stops or ends. Either way the same rules turn
"the job is PENDING / RUNNING in this config / ENDED at time t" into wait, run time, GPU-seconds and
placements (one per run; a preemption ends one). Pure bookkeeping: no Slurm, no clock, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol


class Ledger(Protocol):
    """What :func:`account` reads and writes (:class:`hops_slurm.engine.state.JobState` is one)."""

    last_seen: float
    last_state: str
    wait: float
    run_time: float
    gpu_seconds: float
    first_start: float | None
    config: dict[str, int]
    placements: list[dict[str, Any]]


@dataclass
class JobLedger:
    """A plain :class:`Ledger` (the simulator's): starts PENDING at ``last_seen`` (the submission)."""

    last_seen: float
    last_state: str = "PENDING"
    wait: float = 0.0
    run_time: float = 0.0
    gpu_seconds: float = 0.0
    first_start: float | None = None
    config: dict[str, int] = field(default_factory=dict)
    placements: list[dict[str, Any]] = field(default_factory=list)


def slurm_time(t: float | None, last_seen: float, now: float) -> float:
    """A start or end time Slurm reported (whole seconds, truncated) for a change seen between the
    refresh at ``last_seen`` and ``now``: kept as Slurm gives it when it lies in (last_seen - 1, now]
    (the truncation can put it up to a second before ``last_seen``), so every start and end of every
    job is in the same whole seconds and a job starting on GPUs another job freed never overlaps it;
    anything else is clamped into [last_seen, now]; ``now`` without a time."""
    if not t:
        return now
    if last_seen - 1.0 < t <= now:
        return t
    return min(now, max(last_seen, t))


def account(job: Ledger, now: float, state: str, config: dict[str, int], *, started: float | None = None,
            ended: float | None = None, ran: dict[str, int] | None = None, stopped: float | None = None) -> None:
    """Bring ``job`` from its last refresh (``job.last_seen``) up to ``now``, when Slurm says ``state``
    ("PENDING", "RUNNING" or "ENDED") and, running, ``config`` (GPUs per node). Pure bookkeeping.

    Refreshes are seconds apart, so what happened in between is dated with Slurm's own times where it
    has them: ``started`` (the job's start_time: when its current or last run began) and ``ended`` (its
    end_time once ended), each clamped into (last_seen, now]. Without them the change is dated ``now``.
    Wait is pending time, summed over preemptions; run time and GPU-seconds count the runs; each run is
    one placement (start, end, config, preempted). A run Slurm restarted between two refreshes (a later
    start_time, or another config) ends the previous placement as preempted. ``ran``: the config of a run
    that began and ended between two refreshes (the engine passes the config it released the job on).
    ``stopped``: when the scheduler itself stopped the job's run (the engine's last requeue of it), the
    end of a run it requeued: Slurm keeps none, and the refresh that sees the job pending or running
    again comes seconds later, after another job may have started on those GPUs. It counts only when
    it falls inside the current run (after its start, by ``now``).

    A job holds GPUs in one placement at a time: a placement's end is never after the next one's start,
    so GPUs in use summed over jobs never count a moving job twice."""

    seen = _Seen(job, now, started, ended, ran, stopped)
    if job.last_state == "RUNNING":
        seen.after_running(state, config)
    else:
        seen.after_waiting(state, config)
    job.config = dict(config) if state == "RUNNING" else {}
    job.last_state = "RUNNING" if state == "RUNNING" else "PENDING"
    job.last_seen = now


@dataclass
class _Seen:
    """One call of :func:`account`: the job, what Slurm says of it now, and the named parts of the rules."""

    job: Ledger
    now: float
    started: float | None
    ended: float | None
    ran: dict[str, int] | None
    stopped: float | None

    def at(self, t: float | None) -> float:
        return self.now if not t else min(self.now, max(self.job.last_seen, t))

    def exact(self, t: float | None) -> float:
        return slurm_time(t, self.job.last_seen, self.now)

    def open_run(self, t: float, cfg: dict[str, int]) -> None:
        job = self.job
        if job.first_start is None or t < job.first_start:
            job.first_start = t
        job.placements.append({"start": t, "end": None, "config": dict(cfg)})

    def close_run(self, t: float, preempted: bool) -> None:
        placements = self.job.placements
        if placements and placements[-1].get("end") is None:
            placements[-1]["end"] = t
            placements[-1]["preempted"] = preempted

    def add_run(self, t0: float, t1: float, cfg: dict[str, int]) -> None:
        self.job.run_time += t1 - t0
        self.job.gpu_seconds += (t1 - t0) * sum(cfg.values())

    def stop_of(self, current: dict[str, Any] | None, restart: float) -> float:
        """When the current run stopped, given that the job was seen queued or restarted by ``restart``
        (``stopped`` to Slurm's whole second, as its start times are, and never before the run began)."""
        stopped = self.stopped
        if stopped is None or current is None or not float(current["start"]) - 1.0 <= stopped <= self.now:
            return restart
        return min(max(float(current["start"]), float(math.floor(stopped))), restart)

    def after_running(self, state: str, config: dict[str, int]) -> None:
        """The job was running at the last refresh: it still runs (here or, restarted, elsewhere), ended,
        or was requeued."""
        job, now, last, started = self.job, self.now, self.job.last_seen, self.started
        current = job.placements[-1] if job.placements and job.placements[-1].get("end") is None else None
        if state == "RUNNING":
            restarted = bool(started) and current is not None and started > float(current["start"]) + 1.0
            if restarted or config != job.config:
                t = self.at(started) if restarted else now
                t_stop = self.stop_of(current, t)
                self.add_run(last, t_stop, job.config)
                self.close_run(t_stop, preempted=True)
                job.wait += t - t_stop
                self.open_run(t, config)
                self.add_run(t, now, config)
            else:
                self.add_run(last, now, config)
        elif state == "ENDED":
            t = self.exact(self.ended)  # Slurm's whole second, as the starts are: never after the next job's start
            if current is not None:
                t = max(t, float(current["start"]))
            self.add_run(last, t, job.config)
            self.close_run(t, preempted=False)
        else:  # requeued: preempted (Slurm keeps no end time of the run it requeued: ``stopped`` or now)
            t_stop = self.stop_of(current, now)
            self.add_run(last, t_stop, job.config)
            self.close_run(t_stop, preempted=True)
            job.wait += now - t_stop

    def after_waiting(self, state: str, config: dict[str, int]) -> None:
        """The job was pending at the last refresh: it started, ran and ended in between, or still waits."""
        job, now, last, started, ended, ran = self.job, self.now, self.job.last_seen, self.started, self.ended, self.ran
        if state == "RUNNING":
            # Slurm's start time, whole seconds, even up to a second before the refresh that last saw the
            # job pending (released just after it): waits are then counted as sacct counts them, start
            # minus submit in Slurm's own seconds, whichever scheduler started the job
            t = self.exact(started)
            if job.placements and job.placements[-1].get("end") is not None:  # never before the last run ended
                t = max(t, float(job.placements[-1]["end"]))
            job.wait = max(job.wait + t - last, 0.0)
            self.open_run(t, config)
            self.add_run(t, now, config)
        # Slurm's times are whole seconds: a run released just after the last refresh (last_seen 1000.4)
        # may carry start 1000, so a start up to a second before last_seen is this run's, not an older one
        elif state == "ENDED" and ran and started and ended and started > last - 1.0 and ended > started:
            t0 = self.at(started)
            t1 = max(t0, self.at(ended))
            job.wait += t0 - last
            self.open_run(t0, ran)
            self.add_run(t0, t1, ran)
            self.close_run(t1, preempted=False)
        else:
            job.wait += now - last
