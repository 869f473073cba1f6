"""The engine's own bookkeeping in SQLite (``<state_dir>/engine.sqlite``): what Slurm does not remember.

Where it sits: every refresh the engine (:mod:`hops_slurm.engine.engine`) reads Slurm's jobs and
calls :meth:`EngineState.account` to add the time since the last refresh to each Hops job's wait (while
pending) or run time and GPU-seconds (while running); profiling progress (probe job per GPU type,
signature, failures), the eq. 9 age and why a job was set aside (``aside``) live here too. All of it survives a restart of the daemon.
Slurm stays the source of truth for which jobs exist; rows of jobs Slurm no longer lists are closed.

Only the engine writes (and migrates) it: :meth:`EngineState.read_only` opens it for ``hops-slurm queue``
and ``plan --dry-run`` through a read-only URI (:func:`estimator.store.read_only_uri`), creating and
changing nothing; a database that is not the engine's, or of a newer schema (:data:`SCHEMA_VERSION`, in
SQLite's ``user_version``), is one :class:`StateSchemaError` line naming it, for readers and the engine alike.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hops_slurm.core.ledger import account  # noqa: F401 - per-job accounting, shared with the simulator
from hops_slurm.errors import HopsError

PROFILE_NEW, PROFILE_PROBING, PROFILE_DONE, PROFILE_FAILED = "new", "probing", "done", "failed"
#: schedulable before any probe measured its model: its runtime records do (hops_slurm.engine.inplace)
PROFILE_INPLACE = "in_place"
#: profile states of a job the engine plans (with its signature's data, or the fallback while it has none)
SCHEDULABLE_PROFILES = frozenset({PROFILE_DONE, PROFILE_FAILED, PROFILE_INPLACE})


#: the schema of engine.sqlite (SQLite's ``user_version``); 0: written before versions were kept (same tables)
SCHEMA_VERSION = 1


class StateSchemaError(HopsError):
    """The engine database is not one (another program's SQLite file) or is of a newer schema."""


class StateError(HopsError):
    """The engine's own files (state, journal, records, store) cannot be written: disk full, read-only,
    corrupt. Not any job's fault: the step stops and is retried."""


_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def disk_failure(exc: BaseException) -> bool:
    """True for failures of the engine's storage rather than of a job."""
    from estimator.errors import StoreError

    if isinstance(exc, (sqlite3.Error, StoreError, StateError)):
        return True
    return isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    user TEXT NOT NULL DEFAULT '',
    directives TEXT NOT NULL,
    submit_time REAL NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    last_state TEXT NOT NULL,
    wait REAL NOT NULL DEFAULT 0,
    run_time REAL NOT NULL DEFAULT 0,
    gpu_seconds REAL NOT NULL DEFAULT 0,
    first_start REAL,
    ended REAL,
    end_state TEXT NOT NULL DEFAULT '',
    config TEXT NOT NULL DEFAULT '{}',
    placements TEXT NOT NULL DEFAULT '[]',
    profile TEXT NOT NULL DEFAULT 'new',
    probes TEXT NOT NULL DEFAULT '{}',
    signature TEXT NOT NULL DEFAULT '',
    profile_error TEXT NOT NULL DEFAULT '',
    age REAL,
    sensitivity REAL,
    aside TEXT NOT NULL DEFAULT '',
    recorded_samples REAL NOT NULL DEFAULT 0,
    recorded_seconds REAL NOT NULL DEFAULT 0,
    processed REAL NOT NULL DEFAULT 0,
    age_factor REAL NOT NULL DEFAULT 1,
    honesty TEXT NOT NULL DEFAULT '',
    listen_run INTEGER NOT NULL DEFAULT -1,
    checkpoint_at REAL,
    answer_at REAL,
    notice_at REAL
);
CREATE TABLE IF NOT EXISTS outcomes (
    job_id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    ended REAL NOT NULL,
    declared REAL NOT NULL,
    processed REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_user ON outcomes (user, ended);
CREATE TABLE IF NOT EXISTS models (
    model_key TEXT PRIMARY KEY,
    signature TEXT NOT NULL,
    gpu_types TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass
class JobState:
    """One Hops job as the engine tracks it (times in epoch seconds)."""

    job_id: str
    name: str
    user: str
    directives: str
    submit_time: float
    first_seen: float
    last_seen: float
    last_state: str
    wait: float = 0.0
    run_time: float = 0.0
    gpu_seconds: float = 0.0
    first_start: float | None = None
    ended: float | None = None
    end_state: str = ""
    config: dict[str, int] = field(default_factory=dict)
    placements: list[dict[str, Any]] = field(default_factory=list)
    profile: str = PROFILE_NEW
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)  # gpu_type -> {job_id, out, status}
    signature: str = ""
    profile_error: str = ""
    age: float | None = None
    sensitivity: float | None = None
    aside: str = ""  # why the engine set this job aside (not profiled nor planned); "" = in play
    # declared vs processed samples (issue 16, hops_slurm.engine.honesty_review)
    recorded_samples: float = 0.0  # samples its runtime records account for (rank 0's windows)
    recorded_seconds: float = 0.0  # seconds those windows cover
    processed: float = 0.0  # samples processed so far: records + uncovered run time x throughput
    age_factor: float = 1.0  # the planner's age = eq. 9 age x this (estimator.honesty.assess)
    honesty: str = ""  # the verdict's reason for the owner ("" = nothing to say)
    # preemption with notice (hops_slurm.engine.checkpoints): what its checkpoint marks said
    listen_run: int = -1  # Slurm's restart count of the last run that listens for the notice (-1: none)
    checkpoint_at: float | None = None  # when it last saved a checkpoint (its mark's time)
    answer_at: float | None = None  # when it last saved one because of a notice
    notice_at: float | None = None  # when the engine last gave it notice

    @property
    def active(self) -> bool:
        return self.ended is None


_JSON_FIELDS = ("config", "placements", "probes")
_HONESTY_COLUMNS = (("recorded_samples", "REAL NOT NULL DEFAULT 0"), ("recorded_seconds", "REAL NOT NULL DEFAULT 0"),
                    ("processed", "REAL NOT NULL DEFAULT 0"), ("age_factor", "REAL NOT NULL DEFAULT 1"),
                    ("honesty", "TEXT NOT NULL DEFAULT ''"),
                    # from before preemption with notice (checkpoint marks)
                    ("listen_run", "INTEGER NOT NULL DEFAULT -1"), ("checkpoint_at", "REAL"), ("answer_at", "REAL"),
                    ("notice_at", "REAL"))


def _check_schema(db: sqlite3.Connection, path: Path) -> None:
    """Raise :class:`StateSchemaError` unless ``db`` is empty or an engine database this code knows."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if tables and not {"jobs", "meta"} <= tables:
        raise StateSchemaError(f"{path} is an SQLite database but not the hops-slurm engine's (tables: "
                               f"{', '.join(sorted(tables)[:10])}); point [paths] engine_db at another file")
    if version > SCHEMA_VERSION:
        raise StateSchemaError(f"{path} is an engine database of schema version {version}, newer than this "
                               f"hops-slurm understands ({SCHEMA_VERSION}): upgrade hops-slurm")
    if "jobs" in tables:
        columns = {r[1] for r in db.execute("PRAGMA table_info(jobs)")}
        known = {f.name for f in dataclasses.fields(JobState)}
        required = known - {"aside"} - {name for name, _ in _HONESTY_COLUMNS}  # the first release's columns
        if columns - known or required - columns:
            odd = sorted(columns - known)[:5] or [f"no {c}" for c in sorted(required - columns)[:5]]
            raise StateSchemaError(f"{path}: its jobs table is not the hops-slurm engine's (columns: {', '.join(odd)}): "
                                   "another program's database, or a newer hops-slurm's")


class EngineState:
    """Open (creating, migrating) the engine database at ``path``. Single writer: the engine holding the
    lock. Readers use :meth:`read_only`."""

    def __init__(self, path: Path | str, *, _db: sqlite3.Connection | None = None) -> None:
        self.path = Path(path)
        #: the writer's meta values as last read or written (None for a reader: another process writes)
        self._meta: dict[str, str] | None = None
        #: the writer's answers of :meth:`outcomes` until the next :meth:`add_outcome` (None for a reader)
        self._outcomes: dict[tuple[str, int], list[tuple[float, float]]] | None = None
        if _db is not None:  # read_only()
            self.db = _db
            return
        self._meta, self._outcomes = {}, {}
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=10.0, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        try:
            _check_schema(self.db, self.path)
        except BaseException:
            self.db.close()
            raise
        with self.db:
            self.db.executescript(_SCHEMA)
            self.db.execute("PRAGMA journal_mode=WAL")
            columns = {r["name"] for r in self.db.execute("PRAGMA table_info(jobs)")}
            if "aside" not in columns:  # a state database from before set-aside jobs existed
                self.db.execute("ALTER TABLE jobs ADD COLUMN aside TEXT NOT NULL DEFAULT ''")
            for name, kind in _HONESTY_COLUMNS:  # from before declarations were checked
                if name not in columns:
                    self.db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @classmethod
    def read_only(cls, path: Path | str) -> EngineState:
        """Open an existing engine database for reading only: nothing is created, migrated or written
        (:class:`StateSchemaError` for a foreign or newer one, :class:`HopsError` for a missing one)."""
        from estimator.store import read_only_uri

        p = Path(path)
        if not p.is_file():
            raise HopsError(f"{p}: no such engine database (the engine has not run yet: hops-slurm daemon)")
        db = sqlite3.connect(read_only_uri(p), uri=True, timeout=10.0, check_same_thread=False)
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA query_only = 1")
            _check_schema(db, p)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise StateSchemaError(f"{p} is not an SQLite database the engine wrote ({exc})") from None
        except BaseException:
            db.close()
            raise
        return cls(p, _db=db)

    def close(self) -> None:
        self.db.close()

    # ----- jobs -------------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobState | None:
        row = self.db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return _job(row) if row else None

    def jobs(self, *, active_only: bool = True) -> dict[str, JobState]:
        sql = "SELECT * FROM jobs" + (" WHERE ended IS NULL" if active_only else "") + " ORDER BY submit_time, CAST(job_id AS INTEGER), job_id"
        return {r["job_id"]: _job(r) for r in self.db.execute(sql)}

    def save(self, job: JobState) -> None:
        self.save_all([job])

    def save_all(self, jobs: Iterable[JobState]) -> None:
        """Insert or update ``jobs`` in one transaction (all or none)."""
        self.save_rows([job_row(job) for job in jobs])

    def save_rows(self, rows: Sequence[Mapping[str, object]]) -> None:
        """Insert or update the rows of :func:`job_row` in one transaction (all or none)."""
        if not rows:
            return
        cols = ", ".join(rows[0])
        marks = ", ".join("?" for _ in rows[0])
        updates = ", ".join(f"{k} = excluded.{k}" for k in rows[0] if k != "job_id")
        with self.db:
            self.db.executemany(f"INSERT INTO jobs ({cols}) VALUES ({marks}) ON CONFLICT(job_id) DO UPDATE SET {updates}",
                                [list(row.values()) for row in rows])

    # ----- users' history of declared vs processed samples (estimator.honesty) -----------------------
    def add_outcome(self, job_id: str, user: str, ended: float, declared: float, processed: float) -> None:
        if self._outcomes is not None:
            self._outcomes.clear()
        with self.db:
            self.db.execute("INSERT INTO outcomes VALUES (?, ?, ?, ?, ?) ON CONFLICT(job_id) DO UPDATE SET "
                            "ended = excluded.ended, declared = excluded.declared, processed = excluded.processed",
                            (job_id, user, ended, declared, processed))

    def outcomes(self, user: str, limit: int) -> list[tuple[float, float]]:
        """(declared, processed) of the user's last ``limit`` ended jobs, oldest first."""
        if self._outcomes is not None and (user, limit) in self._outcomes:
            return list(self._outcomes[(user, limit)])
        rows = self.db.execute("SELECT declared, processed FROM outcomes WHERE user = ? ORDER BY ended DESC, "
                               "job_id DESC LIMIT ?", (user, limit)).fetchall()
        got = [(float(r["declared"]), float(r["processed"])) for r in reversed(rows)]
        if self._outcomes is not None:
            self._outcomes[(user, limit)] = list(got)
        return got

    # ----- model cache: a model already profiled on every GPU type is not probed again ---------------
    def known_model(self, key: str) -> tuple[str, list[str]] | None:
        row = self.db.execute("SELECT signature, gpu_types FROM models WHERE model_key = ?", (key,)).fetchone()
        return (row["signature"], json.loads(row["gpu_types"])) if row else None

    def remember_model(self, key: str, signature: str, gpu_types: list[str]) -> None:
        with self.db:
            self.db.execute("INSERT INTO models VALUES (?, ?, ?) ON CONFLICT(model_key) DO UPDATE SET "
                            "signature = excluded.signature, gpu_types = excluded.gpu_types",
                            (key, signature, json.dumps(sorted(gpu_types))))

    # ----- small counters (round numbers) -------------------------------------------------------------
    def meta(self, key: str, default: str = "") -> str:
        if self._meta is not None and key in self._meta:
            return self._meta[key]
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            return default
        if self._meta is not None:
            self._meta[key] = row["value"]
        return str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        """Write ``key`` (nothing to do when the writer knows it holds ``value`` already)."""
        if self._meta is not None and self._meta.get(key) == value:
            return
        with self.db:
            self.db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                            (key, value))
        if self._meta is not None:
            self._meta[key] = value


def _job(row: sqlite3.Row) -> JobState:
    data = dict(row)
    for k in _JSON_FIELDS:
        data[k] = json.loads(data[k])
    return JobState(**data)


def job_row(job: JobState) -> dict[str, object]:
    """One job's row of the ``jobs`` table (its lists and maps as JSON)."""
    row = dict(job.__dict__)
    for k in _JSON_FIELDS:
        row[k] = json.dumps(row[k], sort_keys=True)
    return row


@contextmanager
def storage_errors(state_dir: Path) -> Iterator[None]:
    """The engine's storage failing (disk full, read-only, corrupt) becomes one :class:`StateError` that
    names it; the daemon logs it on one line and retries the step."""
    try:
        yield
    except StateError:
        raise
    except Exception as exc:
        if not disk_failure(exc):
            raise
        raise StateError(f"the engine's files under {state_dir} cannot be written ({exc}); free space or fix the "
                         "file system: Slurm's state is repaired from the journal on the next step") from exc
