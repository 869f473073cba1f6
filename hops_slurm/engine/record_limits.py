"""How much a job's runtime records may claim and how many reach the store: checked against Slurm, budgeted.

Where it sits: :func:`hops_slurm.engine.runtime_records.ingest_job` asks this module about every valid
runtime record of a job (a user's recorder writes them, so each is a claim, not a fact):

* **the allocation** (:func:`check_allocation`): the record's GPUs and nodes must be those of a run of
  the job on the record's node (its current config or one of its placements, as Slurm showed them),
  its rank below its GPUs. A 1-GPU job cannot report itself as 1024 GPUs.
* **the time** (:class:`Claims`): a record covers at most the job's run time so far (Slurm's, with
  :func:`slack`); rank 0's windows together cover at most the run time, every rank's together at most
  the job's GPU-seconds (each process covers at most the run). 3,000 windows of a day each from a job
  that ran an hour are refused after the hour.
* **the budget**: at most :data:`RECORDS_PER_REFRESH` records of a job go into the store per refresh,
  :data:`USER_RECORDS_PER_REFRESH` of one user's jobs together (:class:`RefreshBudget`), and in all
  :data:`RECORDS_BURST` plus one per :data:`RECORD_INTERVAL` seconds the job ran. A valid record over
  budget still counts for the job's progress (its rank-0 window is added to the honesty check) but
  is not stored; each stored record keeps at most :data:`STORED_SAMPLES` of each of its lists.

The per-job counters live in the engine state (``records:<job_id>`` in its meta table), so a restarted
engine keeps them. Pure bookkeeping over what the engine already knows: no Slurm, no clock.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from hops_slurm.engine.state import EngineState, JobState

#: records of one job stored per refresh (a recorder's default window is 100 steps; 64 per 30 s refresh is
#: a step every 5 ms)
RECORDS_PER_REFRESH = 64
#: records of one user's jobs together stored per refresh
USER_RECORDS_PER_REFRESH = 256
#: records a job may store before its run time counts, and the run time that earns it one more
RECORDS_BURST = 64
RECORD_INTERVAL = 10.0
#: values of each list of a record (data times, sync waits) that go into the store, evenly spaced
STORED_SAMPLES = 128


def slack(run_time: float) -> float:
    """Clock skew allowed between a record's node and Slurm's controller: 10 s plus 1 % of the run."""
    return 10.0 + 0.01 * max(run_time, 0.0)


def job_runs(job: JobState) -> list[dict[str, int]]:
    """The configs (node -> GPUs) the job ran in: its placements and its current config."""
    runs = [dict(p.get("config") or {}) for p in job.placements]
    if job.config:
        runs.append(dict(job.config))
    return [r for r in runs if r]


def check_allocation(record: object, job: JobState) -> None:
    """Raise ValueError unless the record's GPUs and nodes are those of a run of ``job`` on its node."""
    gpus, nodes, node, rank = (getattr(record, k) for k in ("gpus", "nodes", "node", "rank"))
    runs = [r for r in job_runs(job) if node in r]
    if not any(sum(r.values()) == gpus and len(r) == nodes for r in runs):
        held = sorted({f"{sum(r.values())} GPUs on {len(r)} node(s)" for r in runs}) or ["nothing on that node"]
        raise ValueError(f"gpus={gpus} nodes={nodes}: the job held {' or '.join(held)} there")
    if rank >= gpus:
        raise ValueError(f"rank {rank}: the job has {gpus} processes (ranks 0..{gpus - 1})")


@dataclass
class Claims:
    """What a job's records claimed so far: seconds covered (rank 0's, every rank's) and records stored."""

    covered0: float = 0.0
    covered: float = 0.0
    stored: int = 0
    key: str = ""

    @classmethod
    def of(cls, state: EngineState, job: JobState) -> Claims:
        key = f"records:{job.job_id}"
        try:
            data = json.loads(state.meta(key, "{}"))
            return cls(float(data.get("covered0", 0.0)), float(data.get("covered", 0.0)), int(data.get("stored", 0)), key)
        except (ValueError, TypeError, AttributeError):  # the engine wrote it; a damaged value restarts the count
            return cls(key=key)

    def save(self, state: EngineState) -> None:
        state.set_meta(self.key, json.dumps({"covered0": self.covered0, "covered": self.covered, "stored": self.stored}))

    def claim(self, record: object, job: JobState) -> None:
        """Add the record's window to what the job claimed; ValueError (nothing added) when it covers more
        than the job ran."""
        window, rank = float(getattr(record, "window_seconds")), int(getattr(record, "rank"))
        run, gpu_seconds = max(job.run_time, 0.0), max(job.gpu_seconds, 0.0)
        limit = run + slack(run)
        if window > limit:
            raise ValueError(f"window_seconds {window:g}: the job has run {run:.0f} s")
        if rank == 0 and self.covered0 + window > limit:
            raise ValueError(f"window_seconds {window:g}: rank 0's records already cover {self.covered0:.0f} s "
                             f"of the {run:.0f} s the job ran")
        gpus = max(int(getattr(record, "gpus")), 1)
        if self.covered + window > gpu_seconds + gpus * slack(run):
            raise ValueError(f"window_seconds {window:g}: the job's records already cover {self.covered:.0f} "
                             f"process-seconds of the {gpu_seconds:.0f} GPU-seconds it ran")
        self.covered += window
        if rank == 0:
            self.covered0 += window

    def may_store(self, job: JobState, this_refresh: int) -> bool:
        """Whether one more record of the job may go into the store now (its per-refresh and total budgets)."""
        total = RECORDS_BURST + int(max(job.run_time, 0.0) / RECORD_INTERVAL)
        return this_refresh < RECORDS_PER_REFRESH and self.stored < total


class RefreshBudget:
    """Records stored per user in one refresh (one per refresh; the engine makes it)."""

    def __init__(self, per_user: int = USER_RECORDS_PER_REFRESH) -> None:
        self.per_user = per_user
        self.used: dict[str, int] = defaultdict(int)

    def take(self, user: str) -> bool:
        if self.used[user] >= self.per_user:
            return False
        self.used[user] += 1
        return True


def spaced(values: Sequence[float], keep: int = STORED_SAMPLES) -> list[float]:
    """At most ``keep`` of ``values``, evenly spaced, first and order kept."""
    n = len(values)
    if n <= keep:
        return list(values)
    return [values[i * n // keep] for i in range(keep)]


__all__ = ["Claims", "RECORDS_BURST", "RECORDS_PER_REFRESH", "RECORD_INTERVAL", "RefreshBudget", "STORED_SAMPLES",
           "USER_RECORDS_PER_REFRESH", "check_allocation", "job_runs", "slack", "spaced"]
