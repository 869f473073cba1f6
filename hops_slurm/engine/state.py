"""The engine's own bookkeeping in SQLite (``<state_dir>/engine.sqlite``): what Slurm does not remember.

Where it sits: every refresh the engine (:mod:`hops_slurm.engine.engine`) reads Slurm's jobs and
calls :meth:`EngineState.account` to add the time since the last refresh to each Hops job's wait (while
pending) or run time and GPU-seconds (while running); profiling progress (probe job per GPU type,
signature, failures) and the eq. 9 age live here too. All of it survives a restart of the daemon.
Slurm stays the source of truth for which jobs exist; rows of jobs Slurm no longer lists are closed.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROFILE_NEW, PROFILE_PROBING, PROFILE_DONE, PROFILE_FAILED = "new", "probing", "done", "failed"

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
    sensitivity REAL
);
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

    @property
    def active(self) -> bool:
        return self.ended is None


_JSON_FIELDS = ("config", "placements", "probes")


class EngineState:
    """Open (creating) the engine database at ``path``. Single writer: the engine holding the lock."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=10.0, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        with self.db:
            self.db.executescript(_SCHEMA)
            self.db.execute("PRAGMA journal_mode=WAL")

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
        row = dict(job.__dict__)
        for k in _JSON_FIELDS:
            row[k] = json.dumps(row[k], sort_keys=True)
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{k} = excluded.{k}" for k in row if k != "job_id")
        with self.db:
            self.db.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks}) ON CONFLICT(job_id) DO UPDATE SET {updates}",
                            list(row.values()))

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
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row["value"] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self.db:
            self.db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                            (key, value))


def _job(row: sqlite3.Row) -> JobState:
    data = dict(row)
    for k in _JSON_FIELDS:
        data[k] = json.loads(data[k])
    return JobState(**data)


def account(job: JobState, now: float, state: str, config: dict[str, int]) -> None:
    """Add the time since ``job.last_seen`` to wait (it was pending) or run time and GPU-seconds (it was
    running, in ``job.config``), then note the state seen now. Pure bookkeeping on the dataclass."""
    dt = max(0.0, now - job.last_seen)
    if job.last_state == "PENDING":
        job.wait += dt
    elif job.last_state == "RUNNING":
        job.run_time += dt
        job.gpu_seconds += dt * sum(job.config.values())
    running = state == "RUNNING"
    if running and job.first_start is None:
        job.first_start = now
    if running and config != job.config:
        if job.placements and job.placements[-1].get("end") is None:
            job.placements[-1]["end"] = now
            job.placements[-1]["preempted"] = True
        job.placements.append({"start": now, "end": None, "config": dict(config)})
    if not running and job.placements and job.placements[-1].get("end") is None:
        job.placements[-1]["end"] = now
        job.placements[-1]["preempted"] = state == "PENDING"
    job.config = dict(config) if running else {}
    job.last_state = "RUNNING" if running else "PENDING"
    job.last_seen = now
