"""Where reports get their records: JSONL (the simulator) or SQLite (the live engine), one interface.

Data flow: engine / simulator --(write_sqlite / write_jsonl)--> file --(open_source().load())-->
:class:`RecordSet` --> report tables, summaries and plots.

JSONL: one JSON object per line, a :class:`~hops_slurm.records.JobRecord` or a
:class:`~hops_slurm.records.RoundRecord`, told apart by an optional ``"kind": "job" | "round"`` key or
else by shape (``job_id`` means a job). A path may be one file or a folder of ``*.jsonl`` files. A
job may appear on several lines (an append-only log of snapshots): the last line wins.

SQLite: tables ``job_records`` (one row per job, the record as JSON in ``record`` plus a few indexed
columns) and ``round_records`` (one row per plan); :class:`RecordsFile` (the engine) and :func:`write_sqlite` create them;
reports read them through a read-only URI (:func:`estimator.store.read_only_uri`) that creates nothing.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import ValidationError

from estimator.store import read_only_uri
from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, RoundRecord

log = logging.getLogger(__name__)

JOBS_TABLE = "job_records"
ROUNDS_TABLE = "round_records"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_R = TypeVar("_R", JobRecord, RoundRecord)


class RecordsError(HopsError):
    """Records could not be read: missing file, bad line, or a database without the record tables."""


@dataclass(frozen=True)
class RecordSet:
    """Jobs (ordered by submission) and plan records (ordered by time) from one source."""

    jobs: tuple[JobRecord, ...]
    rounds: tuple[RoundRecord, ...] = ()

    def last_time(self) -> float | None:
        """The latest instant any record mentions (submission, start, end, placement, plan)."""
        times: list[float] = [r.time for r in self.rounds]
        for j in self.jobs:
            times.append(j.submit)
            times.extend(t for t in (j.start, j.end) if t is not None)
            for p in j.placements:
                times.append(p.start)
                if p.end is not None:
                    times.append(p.end)
        return max(times) if times else None

    def total_gpus(self) -> int:
        """Cluster size from the plan records (the largest seen); 0 when there are none."""
        return max((r.total_gpus for r in self.rounds), default=0)


class RecordSource(Protocol):
    """Anything reports can load records from."""

    def load(self) -> RecordSet: ...


def _ordered(jobs: dict[str, JobRecord], rounds: list[RoundRecord]) -> RecordSet:
    return RecordSet(
        jobs=tuple(sorted(jobs.values(), key=lambda j: (j.submit, j.job_id))),
        rounds=tuple(sorted(rounds, key=lambda r: (r.time, r.plan_index))),
    )


@dataclass(frozen=True)
class JsonlSource:
    """Records from a JSONL file, or from every ``*.jsonl`` file in a folder (in name order)."""

    path: Path

    def files(self) -> list[Path]:
        if self.path.is_dir():
            found = sorted(p for p in self.path.glob("*.jsonl") if p.is_file())
            if not found:
                raise RecordsError(f"{self.path}: folder has no *.jsonl record files")
            return found
        if not self.path.exists():
            raise RecordsError(f"{self.path}: no such records file or folder")
        if not self.path.is_file():
            raise RecordsError(f"{self.path}: not a regular file (a records file or folder is expected)")
        return [self.path]

    def load(self) -> RecordSet:
        jobs: dict[str, JobRecord] = {}
        rounds: list[RoundRecord] = []
        for file in self.files():
            with file.open("rb") as fh:
                for lineno, raw in enumerate(fh, 1):
                    where = f"{file}:{lineno}"
                    try:
                        line = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise RecordsError(f"{where}: not UTF-8 text (byte {exc.start + 1}); is this a records file?") from None
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise RecordsError(f"{where}: not JSON ({exc.msg})") from None
                    except RecursionError:
                        raise RecordsError(f"{where}: JSON nested too deeply") from None
                    record = _parse_line(obj, where)
                    if isinstance(record, JobRecord):
                        jobs[record.job_id] = record
                    else:
                        rounds.append(record)
        return _ordered(jobs, rounds)


def _parse_line(obj: object, where: str) -> JobRecord | RoundRecord:
    if not isinstance(obj, dict):
        raise RecordsError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    data = dict(obj)
    kind = data.pop("kind", None)
    if kind is None:
        kind = "job" if "job_id" in data else "round"
    try:
        if kind == "job":
            return JobRecord.model_validate(data)
        if kind == "round":
            return RoundRecord.model_validate(data)
    except ValidationError as exc:
        raise RecordsError(f"{where}: invalid {kind} record: {_first_problem(exc)}") from None
    raise RecordsError(f"{where}: unknown record kind {kind!r} (expected 'job' or 'round')")


@dataclass(frozen=True)
class SqliteSource:
    """Records from the engine's SQLite database (tables ``job_records`` and ``round_records``)."""

    path: Path

    def load(self) -> RecordSet:
        if not self.path.is_file():
            raise RecordsError(f"{self.path}: no such database")
        try:
            return self._load()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise RecordsError(f"{self.path}: cannot read the database: {exc} (truncated or not a hops-slurm database?)") from None

    def _load(self) -> RecordSet:
        con = sqlite3.connect(read_only_uri(self.path), uri=True)  # creates and writes nothing
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if JOBS_TABLE not in tables:
                raise RecordsError(
                    f"{self.path}: no {JOBS_TABLE} table; is this the hops-slurm engine database? "
                    f"(tables found: {', '.join(sorted(tables)) or 'none'})"
                )
            jobs: dict[str, JobRecord] = {}
            for job_id, text in con.execute(f"SELECT job_id, record FROM {JOBS_TABLE}"):
                jobs[job_id] = _validate_json(JobRecord, text, f"{self.path}:{JOBS_TABLE}[{job_id}]")
            rounds: list[RoundRecord] = []
            if ROUNDS_TABLE in tables:
                for rowid, text in con.execute(f"SELECT rowid, record FROM {ROUNDS_TABLE}"):
                    rounds.append(_validate_json(RoundRecord, text, f"{self.path}:{ROUNDS_TABLE}[{rowid}]"))
        finally:
            con.close()
        return _ordered(jobs, rounds)


def _validate_json(model: type[_R], text: str, where: str) -> _R:
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise RecordsError(f"{where}: invalid record: {_first_problem(exc)}") from None


def _first_problem(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def open_source(path: str | Path) -> RecordSource:
    """The right reader for ``path``: SQLite when the file is a database, JSONL otherwise."""
    p = Path(path)
    if p.is_file():
        with p.open("rb") as fh:
            if fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC:
                return SqliteSource(p)
    return JsonlSource(p)


def write_jsonl(path: str | Path, jobs: Iterable[JobRecord], rounds: Iterable[RoundRecord] = ()) -> Path:
    """Write records as JSONL (``kind``-tagged lines), replacing ``path``; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as fh:
        for job in jobs:
            fh.write(json.dumps({"kind": "job", **job.model_dump(mode="json")}) + "\n")
        for plan in rounds:
            fh.write(json.dumps({"kind": "round", **plan.model_dump(mode="json")}) + "\n")
    return p


class RecordsFile:
    """The engine's records.sqlite, kept open by its one writer: the tables are made when it opens and each
    :meth:`write` is one transaction on the same connection (opening, creating and closing the file at
    every refresh and plan was most of the engine path's extra time in simulation). ``durable=False``
    (a simulation's temporary file) skips the sync to disk at each commit."""

    def __init__(self, path: str | Path, *, durable: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db: sqlite3.Connection | None = sqlite3.connect(self.path)
        if not durable:
            self.db.execute("PRAGMA synchronous=OFF")
        with self.db:
            self.db.execute(
                f"CREATE TABLE IF NOT EXISTS {JOBS_TABLE} (job_id TEXT PRIMARY KEY, submit REAL NOT NULL,"
                ' "end" REAL, user TEXT, state TEXT, record TEXT NOT NULL)'
            )
            self.db.execute(
                f"CREATE TABLE IF NOT EXISTS {ROUNDS_TABLE} (time REAL NOT NULL, plan_index INTEGER NOT NULL,"
                " record TEXT NOT NULL)"
            )
            self.db.execute(f'CREATE INDEX IF NOT EXISTS {JOBS_TABLE}_end ON {JOBS_TABLE} ("end")')

    def write(self, jobs: Iterable[JobRecord], rounds: Iterable[RoundRecord] = ()) -> None:
        """Upsert ``jobs`` (by job_id) and append ``rounds``, in one transaction (nothing to write: none)."""
        job_rows = [(j.job_id, j.submit, j.end, j.user, j.state, j.model_dump_json()) for j in jobs]
        round_rows = [(r.time, r.plan_index, r.model_dump_json()) for r in rounds]
        if not (job_rows or round_rows):
            return
        if self.db is None:
            raise HopsError(f"records file {self.path} is closed")
        with self.db:
            self.db.executemany(
                f'INSERT INTO {JOBS_TABLE} (job_id, submit, "end", user, state, record) VALUES (?, ?, ?, ?, ?, ?)'
                ' ON CONFLICT(job_id) DO UPDATE SET submit = excluded.submit, "end" = excluded."end",'
                " user = excluded.user, state = excluded.state, record = excluded.record",
                job_rows,
            )
            self.db.executemany(f"INSERT INTO {ROUNDS_TABLE} (time, plan_index, record) VALUES (?, ?, ?)", round_rows)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def __enter__(self) -> RecordsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_sqlite(path: str | Path, jobs: Iterable[JobRecord], rounds: Iterable[RoundRecord] = ()) -> Path:
    """Create the record tables if needed and upsert ``jobs`` (by job_id) and append ``rounds`` (once: a
    writer that writes often keeps a :class:`RecordsFile` open)."""
    with RecordsFile(path) as f:
        f.write(jobs, rounds)
    return Path(path)
