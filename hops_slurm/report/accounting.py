"""Per-job accounting rows: records in, one computed :class:`JobRow` per job (and per placement) out.

Data flow: :class:`~hops_slurm.report.source.RecordSet` --> :func:`select_jobs` (the sacct-like
filters -S/-E/-u/-j/--state/...) --> :func:`job_row` / :func:`history_rows` --> table, JSON, summary.
Metric values come from :mod:`hops_slurm.report.metrics`; this module only assembles them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report import metrics

#: Slurm job state names and their short forms (``sacct --state`` accepts either).
STATE_ABBREVIATIONS = {
    "BF": "BOOT_FAIL",
    "CA": "CANCELLED",
    "CD": "COMPLETED",
    "DL": "DEADLINE",
    "F": "FAILED",
    "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY",
    "PD": "PENDING",
    "PR": "PREEMPTED",
    "R": "RUNNING",
    "RQ": "REQUEUED",
    "RS": "RESIZING",
    "RV": "REVOKED",
    "S": "SUSPENDED",
    "TO": "TIMEOUT",
}
STATE_NAMES = frozenset(STATE_ABBREVIATIONS.values())


def normalise_states(states: Iterable[str]) -> frozenset[str]:
    """Upper-case full state names from names or abbreviations; raises for unknown ones."""
    out: set[str] = set()
    for s in states:
        key = s.strip().upper()
        if not key:
            continue
        name = STATE_ABBREVIATIONS.get(key, key)
        if name not in STATE_NAMES:
            known = ", ".join(sorted(STATE_NAMES))
            raise HopsError(f"unknown job state {s!r} for --state; use one of {known} or their short forms")
        out.add(name)
    return frozenset(out)


@dataclass(frozen=True)
class JobFilter:
    """The sacct-like selection. ``start``/``end``: keep jobs that existed (submitted, not yet ended)
    at some instant of ``[start, end]``, as ``sacct -S/-E`` does; empty sets mean no restriction."""

    start: float | None = None
    end: float | None = None
    users: frozenset[str] = frozenset()
    jobs: frozenset[str] = frozenset()
    states: frozenset[str] = frozenset()
    partitions: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()

    def accepts(self, job: JobRecord) -> bool:
        if self.end is not None and job.submit > self.end:
            return False
        if self.start is not None and job.end is not None and job.end < self.start:
            return False
        if self.users and job.user not in self.users:
            return False
        if self.jobs and job.job_id not in self.jobs:
            return False
        if self.states and job.state.upper() not in self.states:
            return False
        if self.partitions and job.partition not in self.partitions:
            return False
        return not (self.accounts and job.account not in self.accounts)


def select_jobs(jobs: Iterable[JobRecord], flt: JobFilter) -> list[JobRecord]:
    return [j for j in jobs if flt.accepts(j)]


@dataclass(frozen=True)
class JobRow:
    """One line of the report: a job, or (``step`` set) one placement of a job under ``--history``."""

    job_id: str
    name: str
    user: str
    account: str
    partition: str
    submit: float
    start: float | None
    end: float | None
    wait: float
    age: float | None
    lr: float | None
    ftf: float | None
    gpus: int
    config: dict[str, int] = field(default_factory=dict)
    gpu_type: str = ""
    preemptions: int = 0
    state: str = ""
    jct: float | None = None
    elapsed: float = 0.0  # seconds holding GPUs
    step: int | None = None
    declared: float | None = None  # samples= (issue 16)
    processed: float | None = None  # samples measured
    # planned requeues (preemption with notice): a job's row sums its placements' (None: nothing known)
    notice: float | None = None  # seconds between the notices and the requeues
    checkpointed: int | None = None  # requeues a checkpoint answered
    lost: float | None = None  # seconds of work lost
    nodes: tuple[str, ...] = ()  # the nodes of its latest placement (sacct's NodeList: the latest run)
    time_limit: float | None = None  # seconds (Slurm's Timelimit); None: unknown
    exit_code: str = ""  # Slurm's code:signal; "" unknown
    #: why it waited, while pending (planner.reasons; sacct's Reason); on a placement row (--history) the
    #: scheduler ended, why it did (planner.changes: requeued, moved-type, ...); "None" otherwise
    reason: str = "None"
    forecast: float | None = None  # the start forecast when it was first seen waiting (JobRecord.forecast_start)

    @property
    def done(self) -> float | None:
        """processed / declared samples (> 1: the job did more than it declared)."""
        return self.processed / self.declared if self.processed is not None and self.declared else None


def _config_of(job: JobRecord) -> tuple[dict[str, int], str]:
    if not job.placements:
        return {}, ""
    last = max(job.placements, key=lambda p: p.start)
    return dict(last.config), last.gpu_type


def _identity(job: JobRecord) -> dict[str, Any]:
    """The columns a job's row and its placement rows share."""
    return {"name": job.name, "user": job.user, "account": job.account, "partition": job.partition, "submit": job.submit}


def job_row(job: JobRecord, now: float) -> JobRow:
    """The accounting row of ``job`` as of ``now`` (waits of unfinished jobs run up to ``now``)."""
    config, gpu_type = _config_of(job)
    wait = metrics.wait_time(job, now)
    start = job.start
    if start is None and job.placements:
        start = min(p.start for p in job.placements)
    return JobRow(
        job_id=job.job_id,
        **_identity(job),
        start=start,
        end=job.end,
        wait=wait,
        age=job.age_estimate,
        lr=metrics.latency_ratio(wait, job.age_estimate),
        ftf=metrics.job_ftf_rho(job),
        gpus=sum(config.values()),
        config=config,
        gpu_type=gpu_type,
        preemptions=job.preemptions,
        state=job.state,
        jct=metrics.jct(job),
        elapsed=metrics.run_time(job, now),
        declared=job.total_samples,
        processed=job.processed_samples,
        **notice_totals(job.placements),
        nodes=tuple(sorted(n for n, g in config.items() if g > 0)),
        time_limit=job.time_limit,
        exit_code=job.exit_code or ("0:0" if job.state == "COMPLETED" else ""),
        reason=(job.reason or "None") if job.state == "PENDING" else "None",
        forecast=job.forecast_start,
    )


def notice_totals(placements: Sequence[PlacementRecord]) -> dict[str, Any]:
    """``notice``, ``checkpointed`` and ``lost`` of a row, summed over ``placements`` ended by a planned
    requeue (each None when none was)."""
    ended = [p for p in placements if p.preempted and p.work_lost is not None]
    if not ended:
        return {}
    noticed = [p.notice for p in ended if p.notice is not None]
    return {"notice": sum(noticed) if noticed else None, "checkpointed": sum(1 for p in ended if p.checkpoint_seen),
            "lost": sum(p.work_lost or 0.0 for p in ended)}


def history_rows(job: JobRecord, now: float) -> list[JobRow]:
    """One row per placement (``JOBID.N``): its start/end/config, the wait just before it, and its
    state: PREEMPTED when the scheduler ended it (its reason: why, where the records say), RUNNING while
    open, else the job's final state."""
    rows: list[JobRow] = []
    queued_since = job.submit
    for i, p in enumerate(sorted(job.placements, key=lambda q: q.start)):
        if p.preempted:
            state = "PREEMPTED"
        elif p.end is None:
            state = "RUNNING"
        else:
            state = job.state
        end = p.end if p.end is not None else now
        rows.append(
            JobRow(
                job_id=f"{job.job_id}.{i}",
                **_identity(job),
                start=p.start,
                end=p.end,
                wait=max(0.0, p.start - queued_since),
                age=None,
                lr=None,
                ftf=None,
                gpus=sum(p.config.values()),
                config=dict(p.config),
                gpu_type=p.gpu_type,
                preemptions=1 if p.preempted else 0,
                state=state,
                elapsed=max(0.0, end - p.start),
                step=i,
                **notice_totals([p]),
                nodes=tuple(sorted(n for n, g in p.config.items() if g > 0)),
                time_limit=job.time_limit,
                reason=(p.cause or "None") if p.preempted else "None",
            )
        )
        queued_since = end
    return rows


def build_rows(jobs: Sequence[JobRecord], now: float, history: bool = False) -> list[JobRow]:
    """Rows for ``jobs`` in order; with ``history`` each job row is followed by its placement rows."""
    rows: list[JobRow] = []
    for job in jobs:
        rows.append(job_row(job, now))
        if history:
            rows.extend(history_rows(job, now))
    return rows
