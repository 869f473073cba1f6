"""Preemption with notice: signal the running jobs a plan requeues, then wait for their checkpoints.

Where it sits: :meth:`hops_slurm.slurm.enact.Enactor.apply` hands :meth:`Notifier.notify` every running
job the plan stops (moved or dropped) before it requeues any; it requeues those the notifier says are
still running. The protocol (docs/preemption.md; the job side is :mod:`profiler.preempt`):

1. **Notice.** Each job that listens in its current run (``listening``: the engine read its "listening"
   mark, :mod:`hops_slurm.engine.checkpoints`) gets the signal at once (:meth:`SlurmApi.signal_job`,
   journaled as ``notice``). A job that does not listen is not signalled -- the signal's default action
   would kill it, and it would not checkpoint anyway -- and is requeued without waiting; so is every job
   when the grace is 0, and a job whose signal Slurm refused.
2. **Wait,** polling cheaply (``answered``: the engine reads only what the job appended to its
   runtime-record file since the last look; one job listing per poll), until each signalled job has
   (a) answered with a checkpoint mark written after its notice, or (b) ended by itself -- it reached its
   samples, say; it is then never requeued and the engine sees it end as any job does -- or (c) the
   grace ran out (a job that ignores the notice is requeued at the grace's end).

Time is Slurm's (``SlurmApi.now``) and the pause between polls is ``pause``: the wall clock live; the
simulated slurmctld makes both virtual (:mod:`hops_slurm.sim.engine_run`).

Crash safety: the notice changes nothing Slurm records (``scancel --signal`` leaves the job's state as it
is), so a crash during the wait leaves nothing to repair: the job keeps running, and the helper lets it
train on when no requeue follows (:meth:`profiler.preempt.Preemption.await_requeue`); a later round gives
a fresh notice if it still moves the job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob
from hops_slurm.slurm.batch import jobs_of

log = logging.getLogger(__name__)

#: (job) -> whether the job listens for the notice in its current run
Listening = Callable[[SlurmJob], bool]
#: (job id, when its notice was given, Slurm's clock) -> whether a checkpoint mark has answered it
Answered = Callable[[str, float], bool]


@dataclass(frozen=True)
class NoticeSettings:
    """``signal``: the notice (a name from :data:`profiler.preempt.PREEMPT_SIGNALS`); ``grace``: seconds a
    job has to answer it (0: no notice); ``poll``: seconds between looks while waiting."""

    signal: str = "USR1"
    grace: float = 120.0
    poll: float = 1.0


@dataclass(frozen=True)
class Notice:
    """What became of one job's notice. ``given_at``: when the signal went out (Slurm's clock; None: the
    job was requeued without notice); ``answered_at``: when its checkpoint mark was seen (None: none
    was); ``ended``: it stopped running by itself meanwhile (not requeued); ``decided_at``: when the wait
    for it ended."""

    job_id: str
    given_at: float | None = None
    answered_at: float | None = None
    ended: bool = False
    decided_at: float | None = None

    @property
    def given(self) -> bool:
        return self.given_at is not None

    @property
    def answered(self) -> bool:
        return self.answered_at is not None


def _never(*_args: object) -> bool:
    return False


class Notifier:
    """Gives notice and waits (see the module docstring); journals each signal in ``journal``."""

    def __init__(self, api: SlurmApi, journal: Journal, settings: NoticeSettings = NoticeSettings(), *,
                 listening: Listening | None = None, answered: Answered | None = None,
                 pause: Callable[[float], None] = time.sleep) -> None:
        self.api = api
        self.journal = journal
        self.settings = settings
        self.listening: Listening = listening or _never
        self.answered: Answered = answered or _never
        self.pause = pause

    def _listens(self, job: SlurmJob) -> bool:
        try:
            return bool(self.listening(job))
        except Exception as exc:  # noqa: BLE001 - what a job wrote never stops the round: no notice for it
            log.warning("job %s: cannot tell whether it listens for the notice (%s): requeued without one", job.job_id, exc)
            return False

    def _has_answered(self, job_id: str, given_at: float) -> bool:
        try:
            return bool(self.answered(job_id, given_at))
        except Exception as exc:  # noqa: BLE001 - as above: its notice then runs to the grace's end
            log.warning("job %s: its checkpoint marks cannot be read (%s)", job_id, exc)
            return False

    def notify(self, jobs: Sequence[SlurmJob], round_id: str = "") -> dict[str, Notice]:
        """Give every listening job of ``jobs`` (running, about to be requeued) its notice, wait, and say
        what became of each (every job of ``jobs`` has an entry)."""
        s = self.settings
        out: dict[str, Notice] = {}
        given: dict[str, float] = {}
        for job in jobs:
            if s.grace <= 0 or not job.active or not self._listens(job):
                out[job.job_id] = Notice(job.job_id)
                continue
            try:
                with self.journal.action("notice", job.job_id, {"signal": s.signal, "grace": s.grace}, round_id):
                    self.api.signal_job(job.job_id, s.signal)
            except SlurmError as exc:  # it never heard: requeued at once, as before notices existed
                log.warning("job %s: notice not given (%s): requeued without one", job.job_id, exc)
                out[job.job_id] = Notice(job.job_id)
                continue
            given[job.job_id] = self.api.now()
        if given:
            out.update(self._wait(given))
            log.info("notice %s (grace %.0f s): %s", s.signal, s.grace, ", ".join(
                f"{j} {'ended' if n.ended else 'answered' if n.answered else 'no answer'}"
                for j, n in sorted(out.items()) if n.given))
        return out

    def _wait(self, given: dict[str, float]) -> dict[str, Notice]:
        s = self.settings
        deadline = max(given.values()) + s.grace
        waiting = set(given)
        out: dict[str, Notice] = {}
        wall_limit = time.monotonic() + s.grace + 10 * s.poll  # a clock that never moves cannot hold the round
        while True:
            now = self.api.now()
            for job_id in sorted(waiting):
                if self._has_answered(job_id, given[job_id]):
                    out[job_id] = Notice(job_id, given[job_id], answered_at=now, decided_at=now)
            waiting -= set(out)
            if waiting:
                listing = {j.job_id: j for j in jobs_of(self.api, sorted(waiting))[0]}
                for job_id in sorted(waiting):
                    seen = listing.get(job_id)
                    if seen is None or not seen.active:  # ended (or requeued by someone else): leave it be
                        out[job_id] = Notice(job_id, given[job_id], ended=True, decided_at=now)
                waiting -= set(out)
            if not waiting or now >= deadline or time.monotonic() > wall_limit:
                break
            self.pause(max(0.0, min(s.poll, deadline - now)))
        now = self.api.now()
        for job_id in waiting:  # the grace ran out
            out[job_id] = Notice(job_id, given[job_id], decided_at=now)
        return out
