"""The engine's side of preemption with notice: what it knows of each job's checkpoints.

Where it sits: a job that uses :mod:`profiler.preempt` writes checkpoint marks into its runtime-record
file; :class:`Marks` reads them (:func:`hops_slurm.engine.runtime_records.ingest_checkpoints`) at every
refresh and, while the enactor waits for an answer to a notice, at every poll. From them:

* :meth:`Marks.listening` and :meth:`Marks.answered` are the enactor's questions
  (:class:`hops_slurm.slurm.notice.Notifier`): does this run listen for the notice; has a checkpoint
  answered the notice given at ``t``;
* :func:`unsaved` is the work a requeue now would lose (``KnownJob.unsaved``, priced by the planner):
  seconds since its last checkpoint, or since its current run started when it has none in this run;
  0 when the job listens for the notice and has answered every notice so far with a checkpoint (it
  checkpoints on notice: none given yet counts, an unanswered one does not);
* :func:`note_stops` records, in the placement a preemption ends, why the plan preempted it
  (planner.changes) and what the notice came to: the seconds from the signal to the requeue (None: no
  notice), whether a checkpoint answered it, and the work lost (0 when one did).
  :func:`placement_notice` hands them to the job's
  :class:`hops_slurm.records.PlacementRecord`.

Times: a mark carries the job's clock, the notice Slurm's; :data:`CLOCK_SKEW` allows for the two
differing a little (the nodes and the engine's host keep time with NTP).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hops_slurm.engine.runtime_records import SeenFiles, checkpoints_key, ingest_checkpoints
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.enact import EnactResult

log = logging.getLogger(__name__)

#: seconds a mark may seem to come before the notice it answers (clocks of two hosts)
CLOCK_SKEW = 5.0


def answered(js: JobState, since: float) -> bool:
    """A checkpoint saved because of a notice, not before the notice given at ``since``."""
    return js.answer_at is not None and js.answer_at >= since - CLOCK_SKEW


def listens(js: JobState, job: SlurmJob) -> bool:
    """The job's current run said it listens for the notice."""
    return js.listen_run >= 0 and js.listen_run == job.restart_count


def run_start(js: JobState, seen: SlurmJob | None) -> float | None:
    """When the job's current run started: Slurm's start time, else its open placement's."""
    if seen is not None and seen.start_time:
        return seen.start_time
    if js.placements and js.placements[-1].get("end") is None:
        return float(js.placements[-1]["start"])
    return None


def unsaved(js: JobState, seen: SlurmJob | None, now: float) -> float:
    """Seconds of work a requeue of ``js`` at ``now`` would lose (see the module docstring); 0 unless running."""
    if seen is None or not seen.active:
        return 0.0
    if listens(js, seen) and (js.notice_at is None or answered(js, js.notice_at)):
        return 0.0  # it listens for the notice and has answered every one so far: it checkpoints on notice
    start = run_start(js, seen)
    since = max(js.checkpoint_at or 0.0, start if start is not None else now)
    return max(0.0, now - since)


@dataclass
class Marks:
    """Reads the checkpoint marks of the engine's jobs (``tracked``: the engine's job states by id;
    ``place_root``: the jobs' runtime-record places; ``owners``: a user's uid; ``now``: Slurm's clock)."""

    state: EngineState
    place_root: Path
    tracked: Callable[[], Mapping[str, JobState]]
    owners: Callable[[str], Owner]
    now: Callable[[], float]
    seen: SeenFiles | None = None  # the engine's looks at the files: an unchanged file is not read again

    def read(self, js: JobState) -> None:
        """What ``js`` appended since the last look; its state is saved at once when a mark came (so a
        crash does not forget what the offsets already passed)."""
        if self.seen is not None and self.seen.unchanged(checkpoints_key(js.job_id),
                                                         self.seen.look(self.place_root, js.job_id)):
            return  # nothing new since the last look (no owner to look up)
        if ingest_checkpoints(self.state, self.place_root, js, self.owners(js.user).uid, self.now(), self.seen):
            self.state.save(js)

    def listening(self, job: SlurmJob) -> bool:
        js = self.tracked().get(job.job_id)
        if js is None:
            return False
        self.read(js)
        return listens(js, job)

    def answered(self, job_id: str, since: float) -> bool:
        js = self.tracked().get(job_id)
        if js is None:
            return False
        self.read(js)
        return answered(js, since)


def note_stops(tracked: Mapping[str, JobState], result: EnactResult, marks: Marks | None, now: float,
               cause: Callable[[str], str] | None = None) -> list[JobState]:
    """After an enactment: each job it requeued gets, in its open placement (the one the requeue ends),
    ``cause`` (why the plan preempted it: ``cause(job_id)``, :func:`hops_slurm.core.interface.cause_of`),
    ``notice`` (seconds from its signal to its requeue; None: requeued without notice), ``checkpoint``
    (a checkpoint answered the notice) and ``lost`` (seconds of work lost: since its last checkpoint, or
    its run's start; 0 when one answered); a job given notice remembers when. The jobs changed."""
    changed = []
    for job_id in result.preempted:
        js = tracked.get(job_id)
        if js is None or not js.placements or js.placements[-1].get("end") is not None:
            continue
        if cause is not None:  # the plan that requeued it says why (a later look at the same run keeps it)
            js.placements[-1].setdefault("cause", cause(job_id))
        notice = result.notices.get(job_id)
        if marks is not None:
            try:
                marks.read(js)
            except Exception as exc:  # noqa: BLE001 - its marks as read before: the record says a little more lost
                log.info("job %s: checkpoint marks not read (%s)", job_id, exc)
        place = js.placements[-1]
        requeued = notice.decided_at if notice is not None and notice.decided_at is not None else now
        if notice is not None and notice.given_at is not None:
            js.notice_at = notice.given_at
            place["notice"] = max(0.0, requeued - notice.given_at)
        else:
            place["notice"] = None
        place["checkpoint"] = bool(notice is not None and notice.answered)
        since = max(js.checkpoint_at or 0.0, float(place["start"]))
        place["lost"] = 0.0 if place["checkpoint"] else max(0.0, requeued - since)
        changed.append(js)
    return changed


def placement_notice(place: Mapping[str, Any]) -> dict[str, Any]:
    """The notice fields of a placement dict for :class:`hops_slurm.records.PlacementRecord` (none for a
    placement no planned requeue ended), and the cause of a preempted one where the engine kept it."""
    cause = {"cause": str(place.get("cause") or "")[:32]} if place.get("preempted") and place.get("cause") else {}
    if "lost" not in place:
        return cause
    return {"notice": place.get("notice"), "checkpoint_seen": bool(place.get("checkpoint")), "work_lost": place.get("lost"),
            **cause}
