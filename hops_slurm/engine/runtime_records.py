"""Runtime records of running jobs -> the store, read only from each job's own place and only for that job.

Where it sits: the engine gives every job it places a place ``<state_dir>/metrics/<job_id>/`` owned
by the job's owner (:func:`hops_slurm.engine.userfiles.make_place`) and the environment
``HOPS_METRICS_FILE=<place>/runtime.jsonl`` (:mod:`profiler.runtime` appends JSON lines there, as
the owner). Each refresh :func:`ingest_job` reads what was appended since the last time (the offset
is kept in the engine state), at most :data:`MAX_READ` bytes, and ingests the complete lines.

A line is accepted only if it is a valid :class:`profiler.records.RuntimeRecord` (finite, bounded
values whose throughput agrees with its steps) *for this job*: its signature is the job's own (the
engine's ``<owner>/<hash>``), and its node is one the job runs or ran on, with that node's GPU type (or ``mixed`` for a job
placed across GPU types, as its ``HOPS_GPU_TYPE`` says), its GPUs and nodes are those the job held there,
and its window fits in the time the job ran (:mod:`hops_slurm.engine.record_limits`).
A record for another job's signature is refused (a user cannot feed measurements to someone else's
jobs, nor to a signature of their own other jobs through this one). Refusals are counted and logged
(each naming the field and the bound it broke), never raised: a job's records cannot stop the refresh.
An accepted record goes into the store within the job's and its owner's budgets
(:mod:`hops_slurm.engine.record_limits`); over budget it counts for the job's progress only.

A file shorter than the offset kept for it was truncated by its owner: it is read on from its new end
(what it held before is never read twice, nor what was written over it).

A file is opened only when it may hold something new (:class:`SeenFiles`): each reader notes the file's
stamp (device, inode, size, mtime and ctime: :func:`hops_slurm.engine.userfiles.stamp`) after a read that
reached its end, once it has kept its offset; while ``lstat`` of the path gives the same stamp the file is
the same version, unchanged, and reading it again could only give the incomplete last line already seen.
An append, a truncation, a replacement (another inode), a link or a chmod changes the stamp: the file is
then read as before, with every check of :func:`hops_slurm.engine.userfiles.read_owned_stat`.

The same file carries the job's checkpoint marks (:class:`profiler.records.CheckpointMark`, written by
:mod:`profiler.preempt`): :func:`ingest_checkpoints` reads them with an offset of its own (so it serves
jobs without a signature too, and the enactor can look between refreshes while it waits for an answer
to a notice) into :class:`hops_slurm.engine.state.JobState` (:func:`apply_mark`); :func:`ingest_job`
passes them by.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hops_slurm.core.processed import Window
from hops_slurm.engine.record_limits import Claims, RefreshBudget, check_allocation, spaced
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Stamp, owner_of, read_owned_stat, stamp

if TYPE_CHECKING:
    from profiler.ingest import StoreWriter

log = logging.getLogger(__name__)

RUNTIME_FILE = "runtime.jsonl"
MAX_READ = 1 << 20  # bytes of new records read per job and refresh
MAX_LINE = 1 << 16
_CHECKPOINT_KIND = b'"kind":"checkpoint"'  # how the helper's JSON names the kind (lines without it are skipped)


@dataclass
class MetricsReport:
    accepted: int = 0  # stored
    over_budget: int = 0  # valid, counted for the job's progress, not stored (record_limits' budgets)
    refused: list[str] = field(default_factory=list)
    samples: float = 0.0  # samples the accepted rank-0 windows processed (the job's progress: issue 16)
    seconds: float = 0.0  # seconds those windows cover
    types: set[str] = field(default_factory=set)  # GPU types the accepted records measured (the probe in place)
    windows: list[Window] = field(default_factory=list)  # those windows, in the order they were written


def job_nodes(job: JobState) -> set[str]:
    """Every node the job runs or ran on (its current config and its placements)."""
    nodes = set(job.config)
    for p in job.placements:
        nodes.update(p.get("config", {}))
    return nodes


def check_runtime(record: object, job: JobState, node_types: Mapping[str, str]) -> None:
    """Raise ValueError unless ``record`` is a runtime record of ``job`` (see the module docstring)."""
    from profiler.records import RuntimeRecord

    if not isinstance(record, RuntimeRecord):
        raise ValueError(f"not a runtime record (kind {getattr(record, 'kind', '?')})")
    if not job.signature or record.signature != job.signature:
        raise ValueError(f"signature {record.signature[:60]!r} is not this job's")
    if record.node not in job_nodes(job):
        raise ValueError(f"node {record.node[:60]!r} is not one this job ran on")
    mixed = len({node_types.get(n) for n in job_nodes(job)}) > 1  # the engine tells such a job "mixed"
    if record.gpu_type != node_types.get(record.node) and not (mixed and record.gpu_type == "mixed"):
        raise ValueError(f"GPU type {record.gpu_type[:30]!r} is not node {record.node}'s")
    check_allocation(record, job)


def _reason(exc: ValueError) -> str:
    """One line naming the field and the bound (pydantic's header, ``1 validation error for ...``, names neither)."""
    from hops_slurm.validation import reason

    return reason(exc, 200)


#: the stamp of a file that is not there (its place or itself)
NO_FILE: Stamp = (-1, -1, -1, -1, -1)


@dataclass
class SeenFiles:
    """Each reader's last complete look at each job's runtime file (the module docstring): its key (the
    state's offset key, ``metrics:<job>`` or ``checkpoints:<job>``) -> the file's stamp then."""

    stamps: dict[str, Stamp] = field(default_factory=dict)

    @staticmethod
    def look(place_root: Path, job_id: str) -> Stamp | None:
        """The stamp of the job's runtime file now (``lstat``; :data:`NO_FILE` when there is none; None when it
        cannot be told: the full read says what is wrong)."""
        try:
            return stamp(os.lstat(f"{place_root}/{job_id}/{RUNTIME_FILE}"))
        except FileNotFoundError:
            return NO_FILE
        except OSError:  # ENOTDIR, EACCES ...
            return None

    def unchanged(self, key: str, looked: Stamp | None) -> bool:
        """The file ``looked`` at (:meth:`look`) is the version the reader under ``key`` read to its end."""
        return looked is not None and self.stamps.get(key) == looked

    def note(self, key: str, seen: Stamp | None) -> None:
        """The reader under ``key`` has kept its offset after a read of the version ``seen`` (None: the read
        stopped before the end: the next one reads on)."""
        if seen is None:
            self.stamps.pop(key, None)
        else:
            self.stamps[key] = seen

    def forget(self, job_id: str) -> None:
        """The job ended: its files are not looked at again."""
        for key in (metrics_key(job_id), checkpoints_key(job_id)):
            self.stamps.pop(key, None)


def metrics_key(job_id: str) -> str:
    """Where :func:`ingest_job` keeps its offset in the job's runtime file (the state's meta key)."""
    return f"metrics:{job_id}"


def checkpoints_key(job_id: str) -> str:
    """Where :func:`ingest_checkpoints` keeps its offset in the job's runtime file."""
    return f"checkpoints:{job_id}"


def read_new(state: EngineState, key: str, place: Path, uid: int, job_id: str) -> tuple[bytes, int, Stamp | None]:
    """(what was appended to the job's runtime file since the offset kept under ``key``, that offset, the
    file's stamp when the read reached its end, :data:`NO_FILE` when there is no file, else None), at
    most :data:`MAX_READ` bytes; a truncated file is read on from its new end (the module docstring)."""
    offset = int(state.meta(key, "0"))
    data, st = read_owned_stat(place, RUNTIME_FILE, uid, offset=offset, cap=MAX_READ)
    if data is None or st is None:
        return b"", offset, NO_FILE
    size = st.st_size
    if size < offset:
        log.warning("job %s: %s was truncated (%d bytes, read up to %d before): read on from its new end",
                    job_id, RUNTIME_FILE, size, offset)
        state.set_meta(key, str(size))
        return b"", size, stamp(st)
    return data, offset, stamp(st) if offset + len(data) >= size else None


def ingest_job(store: StoreWriter, state: EngineState, place_root: Path, job: JobState,
               node_types: Mapping[str, str], uid: int | None = None,
               budget: RefreshBudget | None = None, seen: SeenFiles | None = None) -> MetricsReport:
    """Ingest what ``job`` appended to its runtime file since the last refresh (see the module docstring).
    ``budget``: the refresh's per-user budget, shared by the owner's jobs (None: this job's alone);
    ``seen``: the engine's looks at the files (None: the file is read every time)."""
    from profiler.ingest import ingest_runtime
    from profiler.records import CheckpointMark, RuntimeRecord, parse_record

    report = MetricsReport()
    key = metrics_key(job.job_id)
    if seen is not None and seen.unchanged(key, seen.look(place_root, job.job_id)):
        return report
    place = place_root / job.job_id
    if not place.exists():
        if seen is not None:
            seen.note(key, NO_FILE)
        return report
    uid = owner_of(job.user).uid if uid is None else uid  # the file must be the owner's
    data, offset, version = read_new(state, key, place, uid, job.job_id)
    if not data:
        if seen is not None:
            seen.note(key, version)
        return report
    budget = budget if budget is not None else RefreshBudget()
    claims = Claims.of(state, job)
    end = data.rfind(b"\n") + 1
    if end == 0 and len(data) >= MAX_READ:  # one line longer than we ever read: skip it
        end = len(data)
        report.refused.append(f"a line longer than {MAX_READ} bytes")
    for raw in data[:end].split(b"\n"):
        if not raw.strip():
            continue
        try:
            if len(raw) > MAX_LINE:
                raise ValueError(f"line of {len(raw)} bytes (at most {MAX_LINE})")
            record = parse_record(raw.decode("utf-8"))
            if isinstance(record, CheckpointMark):
                continue  # :func:`ingest_checkpoints` reads these
            check_runtime(record, job, node_types)
            if not isinstance(record, RuntimeRecord):  # check_runtime refused every other kind already
                raise ValueError(f"not a runtime record: {type(record).__name__}")
            claims.claim(record, job)
        except ValueError as exc:  # pydantic's ValidationError and UnicodeDecodeError are ValueErrors
            report.refused.append(_reason(exc))
            continue
        if claims.may_store(job, report.accepted) and budget.take(job.user):
            ingest_runtime(store, record.model_copy(update={
                "data_times": spaced(record.data_times), "sync_waits": spaced(record.sync_waits)}))
            claims.stored += 1
            report.accepted += 1
            report.types.add(record.gpu_type)
        else:
            report.over_budget += 1
        if record.rank == 0:  # every rank's window covers the whole job's steps: count one
            report.samples += float(record.steps * record.batch_size * record.gpus)
            report.seconds += record.window_seconds
            report.windows.append(Window.of(record))
    state.set_meta(key, str(offset + end))
    claims.save(state)
    if seen is not None:
        seen.note(key, version)
    if report.refused:
        reasons = list(dict.fromkeys(report.refused))
        log.warning("job %s: %d runtime record(s) refused: %s", job.job_id, len(report.refused), "; ".join(reasons[:3]))
    if report.over_budget:
        log.info("job %s: %d valid runtime record(s) over its budget of stored records (counted for its "
                    "progress, not stored)", job.job_id, report.over_budget)
    return report


def apply_mark(job: JobState, mark: object, now: float) -> None:
    """What one checkpoint mark says, into ``job``: its run listens for the notice, or it saved a checkpoint
    (because of a notice, or regularly). A mark's time is the job's own: never later than ``now``."""
    from profiler.records import CheckpointMark

    if not isinstance(mark, CheckpointMark):
        raise ValueError(f"not a checkpoint mark (kind {getattr(mark, 'kind', '?')})")
    if mark.event == "listening":
        job.listen_run = mark.run
        return
    at = min(mark.measured_at.timestamp(), now)
    job.checkpoint_at = max(job.checkpoint_at or at, at)
    if mark.notice:
        job.answer_at = max(job.answer_at or at, at)


def ingest_checkpoints(state: EngineState, place_root: Path, job: JobState, uid: int, now: float,
                       seen: SeenFiles | None = None) -> int:
    """The checkpoint marks ``job`` appended to its runtime file since the last look (at most
    :data:`MAX_READ` bytes, complete lines only), into ``job`` (:func:`apply_mark`); the number read.
    Lines that are not checkpoint marks are left to :func:`ingest_job`; a bad mark is logged and skipped.
    ``seen``: as for :func:`ingest_job`."""
    from profiler.records import parse_record

    key = checkpoints_key(job.job_id)
    if seen is not None and seen.unchanged(key, seen.look(place_root, job.job_id)):
        return 0
    place = place_root / job.job_id
    if not place.exists():
        if seen is not None:
            seen.note(key, NO_FILE)
        return 0
    data, offset, version = read_new(state, key, place, uid, job.job_id)
    if not data:
        if seen is not None:
            seen.note(key, version)
        return 0
    end = data.rfind(b"\n") + 1
    if end == 0 and len(data) >= MAX_READ:
        end = len(data)
    read, refused = 0, []
    for raw in data[:end].split(b"\n"):
        if _CHECKPOINT_KIND not in raw:
            continue
        try:
            if len(raw) > MAX_LINE:
                raise ValueError(f"line of {len(raw)} bytes (at most {MAX_LINE})")
            apply_mark(job, parse_record(raw.decode("utf-8")), now)
            read += 1
        except ValueError as exc:
            refused.append(_reason(exc))
    state.set_meta(key, str(offset + end))
    if seen is not None:
        seen.note(key, version)
    if refused:
        log.warning("job %s: %d checkpoint mark(s) refused: %s", job.job_id, len(refused), "; ".join(refused[:3]))
    return read
