"""The queue summary: what every user may read about the Hops queue, written by the daemon each refresh.

Where it sits: the engine's refresh and round end with a ``summary`` step (:mod:`hops_slurm.engine.cycle`)
that calls :func:`build` on the tracked jobs, Slurm's listing and their reasons
(:mod:`hops_slurm.engine.reasons`), and :func:`write`, which puts ``<paths.state_dir>/queue-summary.json``
in place atomically as root, mode 0644 (:func:`hops_slurm.rootfile.write_file`: never through a link,
readers see the old file or the new one). ``hops-slurm queue`` run by an ordinary user reads it with
:func:`read` (:mod:`hops_slurm.cli.queue_user`), never the engine's root-only state.

What it holds is what ``squeue`` shows any user by default (docs/user-guide.md, "Why is my job pending"):
per pending or running Hops job its id, user, account, partition, name, state, submit time, start time
(running) or forecast start, end and band (pending, with ``[engine] forecast``; else null), allocated nodes, its place in
the Hops queue and its reason (:class:`planner.reasons.Why`); how many of its runs the scheduler
ended and why it ended the last (:mod:`planner.changes`; Slurm shows anyone a job's ``Restarts``). Nothing of the engine's own bookkeeping
(ages, estimates, directives, profiles) is in it. Bounded: at most :data:`MAX_JOBS` rows (the rest
counted in ``left_out``), every text field cut to a fixed length; :func:`read` refuses a file over
:data:`MAX_BYTES`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hops_slurm.engine.state import JobState
from hops_slurm.errors import HopsError
from hops_slurm.rootfile import write_file
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.text import printable
from planner.forecast import Banded
from planner.reasons import DETAIL_MAX, Code, Why

#: the file's name in ``paths.state_dir`` (the directory users may traverse but not list)
NAME = "queue-summary.json"
FORMAT = 1
#: rows written at most (a larger queue is cut, in queue order, running jobs last)
MAX_JOBS = 50_000
#: the largest file read (50,000 rows of bounded fields stay well below it)
MAX_BYTES = 64 * 1024 * 1024
#: text fields' longest form
TEXT_MAX = 128


class NotWritten(HopsError):
    """No summary yet: the daemon has not run (or not since it was installed)."""


class SummaryJob(BaseModel):
    """One row (pending or running Hops job)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    job_id: str = Field(max_length=TEXT_MAX)
    user: str = Field("", max_length=TEXT_MAX)
    account: str = Field("", max_length=TEXT_MAX)
    partition: str = Field("", max_length=TEXT_MAX)
    name: str = Field("", max_length=TEXT_MAX)
    state: str = Field(max_length=32)  # Slurm's: PENDING, RUNNING, ...
    reason: str = Field("None", max_length=TEXT_MAX)  # squeue's REASON: a code, Slurm's limit name, or None
    reason_code: str = Field("", max_length=64)  # planner.reasons.Code value ("" for running jobs)
    detail: str = Field("", max_length=DETAIL_MAX)
    position: int | None = Field(None, ge=1)  # place among the waiting jobs of the Hops queue (1 = next)
    submit: float | None = None
    start: float | None = None  # running: when it started; pending: the forecast start (None: none yet)
    end: float | None = None  # pending: the forecast end (None: none yet)
    start_early: float | None = None  # pending: the band of the forecast start (None: unknown)
    start_late: float | None = None
    nodes: str = Field("", max_length=4096)
    preemptions: int = Field(0, ge=0)  # how many of its runs the scheduler ended
    #: why the scheduler ended its last preempted run (planner.changes: requeued, moved-type, ...; "": none,
    #: or not known)
    preempted: str = Field("", max_length=32)


class Summary(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    hops_queue_summary: int
    as_of: float
    refresh_seconds: float = Field(30.0, gt=0)
    left_out: int = Field(0, ge=0)
    jobs: list[SummaryJob] = Field(default_factory=list, max_length=MAX_JOBS)


def _text(value: str, limit: int = TEXT_MAX) -> str:
    """One line of safe characters (users' text: job and user names), at most ``limit`` of them."""
    return printable(value[:limit])[:limit]


def build(tracked: Mapping[str, JobState], listing: Mapping[str, SlurmJob], reasons: Mapping[str, Why],
          order: Sequence[str], now: float, refresh_seconds: float,
          forecasts: Mapping[str, Banded] | None = None) -> Summary:
    """The summary of every tracked job Slurm lists as pending or running; ``reasons``: each pending job's
    (:meth:`hops_slurm.engine.reasons.Reasons.current`); ``order``: the latest planning's queue order;
    ``forecasts``: pending jobs' forecast start, end and band (``[engine] forecast``)."""
    forecasts = forecasts or {}
    rank = {j: k for k, j in enumerate(order)}
    pending = sorted((j for j in tracked if (s := listing.get(j)) is not None and s.pending),
                     key=lambda j: (rank.get(j, len(rank)), _id_key(j)))
    running = sorted((j for j in tracked if (s := listing.get(j)) is not None and s.active), key=_id_key)
    rows: list[SummaryJob] = []
    place = 0
    for job_id in (pending + running)[:MAX_JOBS]:
        seen, js = listing[job_id], tracked[job_id]
        if seen.pending:
            why = reasons.get(job_id) or Why(Code.NEW)
            if job_id in rank:
                place += 1
            f = forecasts.get(job_id)
            row = _row(js, seen, why.name, why.code.value, why.detail, place if job_id in rank else None,
                       f.start if f else None)
            if f is not None:
                row = row.model_copy(update={"end": f.end, "start_early": f.early, "start_late": f.late})
            rows.append(row)
        else:
            rows.append(_row(js, seen, "None", "", "", None, seen.start_time or None))
    return Summary(hops_queue_summary=FORMAT, as_of=now, refresh_seconds=refresh_seconds,
                   left_out=max(0, len(pending) + len(running) - MAX_JOBS), jobs=rows)


def _id_key(job_id: str) -> tuple[int, str]:
    head = job_id.split("_", 1)[0]
    return (int(head) if head.isdigit() else 0, job_id)


def preemptions_of(js: JobState) -> tuple[int, str]:
    """How many of ``js``'s runs were preempted, and why the last of them was ("" where not kept)."""
    ended = [p for p in js.placements if p.get("preempted")]
    return len(ended), (_text(str(ended[-1].get("cause") or ""), 32) if ended else "")


def _row(js: JobState, seen: SlurmJob, reason: str, code: str, detail: str, position: int | None,
         start: float | None) -> SummaryJob:
    preemptions, preempted = preemptions_of(js)
    return SummaryJob(
        job_id=_text(js.job_id), user=_text(seen.user or js.user), account=_text(seen.account),
        partition=_text(seen.partition), name=_text(seen.name or js.name), state=_text(seen.state, 32),
        reason=_text(reason), reason_code=code, detail=_text(detail, DETAIL_MAX), position=position,
        submit=seen.submit_time or js.submit_time or None, start=start, end=None, start_early=None, start_late=None,
        nodes=_text(",".join(seen.nodes), 4096), preemptions=preemptions, preempted=preempted)


def write(directory: Path, summary: Summary) -> Path:
    """``directory/queue-summary.json`` becomes ``summary`` (root's file, mode 0644, atomically)."""
    write_file(directory, NAME, summary.model_dump_json().encode("ascii", "backslashreplace"), 0o644)
    return directory / NAME


def read(path: Path) -> Summary:
    """The summary at ``path``. :class:`NotWritten` when there is none; :class:`HopsError` (one line) for
    one that cannot be read, is too large, is not a summary or is cut short."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NotWritten(f"no queue summary at {path}: the Hops daemon has not run yet "
                         "(it writes it at its first refresh)") from None
    except OSError as exc:
        raise HopsError(f"cannot read the queue summary {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000):
            raise HopsError(f"{path} is not a regular file")
        if st.st_size > MAX_BYTES:
            raise HopsError(f"{path} is {st.st_size} bytes, over the {MAX_BYTES} a queue summary may have")
        chunks, left = [], MAX_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        raise HopsError(f"cannot read the queue summary {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise HopsError(f"{path} is over the {MAX_BYTES} bytes a queue summary may have")
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        raise HopsError(f"the queue summary {path} is cut short or not JSON (the daemon rewrites it each "
                        "refresh; try again)") from None
    if not isinstance(raw, dict) or raw.get("hops_queue_summary") != FORMAT:
        raise HopsError(f"{path} is not a queue summary of format {FORMAT} (another hops-slurm version?)")
    try:
        return Summary.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise HopsError(printable(f"the queue summary {path} has a bad field {where}: {first.get('msg', '')}",
                                  300)) from None


__all__ = ["FORMAT", "MAX_BYTES", "MAX_JOBS", "NAME", "NotWritten", "Summary", "SummaryJob", "build", "read", "write"]
