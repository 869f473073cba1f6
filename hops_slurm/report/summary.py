"""``hops-slurm report --summary``: how busy and how fair the cluster was over a window.

Data flow: selected jobs + plan records --> :func:`summarise` --> :class:`Summary` --> text or JSON.
The window is the records' own unless one is asked for: first submission to last end (while jobs still
run or wait, the latest time their records mention), so a finished run gives the same numbers whenever
the report is made; an asked ``window`` is ``(now - window, now]``, clipped to the first record (a
simulation starts at 0). Job statistics are over the jobs that ended inside the window (the population
of RAQLR, Hops eq. 7); ``waiting`` counts jobs still queued at the window's end and their largest LR
so far.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

from hops_slurm.records import JobRecord, RoundRecord
from hops_slurm.report import metrics
from hops_slurm.report.timefmt import format_elapsed


@dataclass(frozen=True)
class GroupStats:
    """Statistics of one group of jobs (all, one user, one partition)."""

    key: str
    jobs: int  # jobs of the group in the selection
    finished: int  # of which ended inside the window
    raqlr: float | None  # mean LR of the finished jobs (eq. 7)
    max_lr: float | None
    p95_lr: float | None
    avg_wait: float | None  # seconds, finished jobs
    avg_jct: float | None  # seconds, finished jobs
    max_ftf: float | None
    waiting: int  # queued (not running, not ended) at the window's end
    waiting_max_lr: float | None
    gpu_hours: float  # GPU time held inside the window
    history: float | None = None  # the group's history factor on ages (estimator.honesty, defaults), users only


@dataclass(frozen=True)
class Summary:
    window_start: float
    window_end: float
    window: float | None  # requested length, seconds; None: the records' own (first submit to last end)
    all: GroupStats
    rounds: int
    fragments_per_round: float | None
    total_gpus: int
    gpu_utilisation: float | None  # 0..1
    by_user: tuple[GroupStats, ...]
    by_partition: tuple[GroupStats, ...]
    #: the preemptions the window's plannings enacted, per cause (planner.changes), most first
    preemption_causes: dict[str, int] = field(default_factory=dict)


def _is_waiting(job: JobRecord, at: float) -> bool:
    if job.submit > at or (job.end is not None and job.end <= at):
        return False
    return not any(p.start <= at and (p.end is None or p.end > at) for p in job.placements)


def group_stats(key: str, jobs: Sequence[JobRecord], start: float, end: float) -> GroupStats:
    finished = [j for j in jobs if j.end is not None and start < j.end <= end]
    lrs = [lr for j in finished if (lr := metrics.job_latency_ratio(j, j.end or end)) is not None]
    ftfs = [r for j in finished if (r := metrics.job_ftf_rho(j)) is not None]
    waits = [metrics.wait_time(j, end) for j in finished]
    jcts = [t for j in finished if (t := metrics.jct(j)) is not None]
    waiting = [j for j in jobs if _is_waiting(j, end)]
    waiting_lrs = [lr for j in waiting if (lr := metrics.job_latency_ratio(j, end)) is not None]
    gpu_seconds = sum(metrics.gpu_seconds(j.placements, start, end) for j in jobs)
    return GroupStats(
        key=key,
        jobs=len(jobs),
        finished=len(finished),
        raqlr=metrics.mean(lrs),
        max_lr=max(lrs, default=None),
        p95_lr=metrics.percentile(lrs, 95),
        avg_wait=metrics.mean(waits),
        avg_jct=metrics.mean(jcts),
        max_ftf=max(ftfs, default=None),
        waiting=len(waiting),
        waiting_max_lr=max(waiting_lrs, default=None),
        gpu_hours=gpu_seconds / 3600.0,
    )


def _groups(jobs: Sequence[JobRecord], key: Callable[[JobRecord], str], start: float, end: float) -> tuple[GroupStats, ...]:
    buckets: dict[str, list[JobRecord]] = {}
    for j in jobs:
        buckets.setdefault(key(j) or "(none)", []).append(j)
    return tuple(group_stats(k, buckets[k], start, end) for k in sorted(buckets))


def records_window(jobs: Sequence[JobRecord], default: float) -> tuple[float, float]:
    """The records' own window: first submission to last end (the latest time the jobs' records mention,
    ends and placement starts included, while some still run or wait); ``(default, default)`` without jobs."""
    if not jobs:
        return default, default
    times = [t for j in jobs for t in (j.submit, j.start, j.end, *(x for p in j.placements for x in (p.start, p.end)))
             if t is not None]
    return min(j.submit for j in jobs), max(times)


def summarise(
    jobs: Sequence[JobRecord],
    rounds: Sequence[RoundRecord],
    now: float,
    window: float | None = None,
    total_gpus: int | None = None,
) -> Summary:
    """Summary of the records' own window (``window`` None: :func:`records_window`, ``now`` unused but
    without jobs), or of ``(now - window, now]``; ``total_gpus`` defaults to the plan records'."""
    if window is None:
        start, end = records_window(jobs, now)
        opened = start - 1.0  # jobs ending in (opened, end]: every job of the records that ended
    else:
        first = min([j.submit for j in jobs] + [r.time for r in rounds], default=now)
        start, end = max(now - window, min(first, now)), now
        opened = now - window
    gpus = total_gpus if total_gpus is not None else max((r.total_gpus for r in rounds), default=0)
    in_window = [r for r in rounds if start <= r.time <= end]
    return Summary(
        window_start=start,
        window_end=end,
        window=window,
        all=group_stats("all", jobs, opened, end),
        rounds=len(metrics.rounds_of(in_window)),
        fragments_per_round=metrics.fragments_per_round(in_window),
        total_gpus=gpus,
        gpu_utilisation=metrics.gpu_utilisation(jobs, gpus, start, end),
        by_user=tuple(replace(g, history=user_history(jobs, g.key, end)) for g in _groups(jobs, lambda j: j.user, opened, end)),
        by_partition=_groups(jobs, lambda j: j.partition, opened, end),
        preemption_causes=metrics.causes_of(in_window),
    )


def summary_json(summary: Summary) -> str:
    return json.dumps({"summary": asdict(summary)}, indent=2) + "\n"


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def _dur(x: float | None) -> str:
    return "-" if x is None else format_elapsed(x)


_GROUP_HEAD = f"{'':<12} {'Jobs':>5} {'Done':>5} {'RAQLR':>7} {'MaxLR':>7} {'p95LR':>7} {'AvgWait':>11} {'AvgJCT':>11} {'MaxFTF':>7} {'Queued':>6} {'GPUh':>8} {'History':>7}"


def _group_line(g: GroupStats) -> str:
    key = g.key if len(g.key) <= 12 else g.key[:11] + "+"
    return (
        f"{key:<12} {g.jobs:>5} {g.finished:>5} {_num(g.raqlr):>7} {_num(g.max_lr):>7} {_num(g.p95_lr):>7} "
        f"{_dur(g.avg_wait):>11} {_dur(g.avg_jct):>11} {_num(g.max_ftf):>7} {g.waiting:>6} {g.gpu_hours:>8.1f} "
        f"{_num(g.history, 'x{:.3g}'):>7}"
    )


def user_history(jobs: Sequence[JobRecord], user: str, now: float) -> float | None:
    """The factor :mod:`estimator.honesty` (default settings) puts on the ages of ``user``'s new jobs, from
    their jobs ended by ``now`` with declared and processed samples; None when none has both."""
    from estimator.honesty import HonestyParams, JobOutcome, history_of

    ended = sorted((j for j in jobs if j.user == user and j.end is not None and j.end <= now
                    and j.total_samples is not None and j.processed_samples is not None), key=lambda j: j.end or 0.0)
    if not ended:
        return None
    return history_of([JobOutcome(j.total_samples or 0.0, j.processed_samples or 0.0) for j in ended],
                      HonestyParams()).factor


def _causes(causes: dict[str, int]) -> str:
    """``requeued 12, moved-type 5`` (planner.changes), or ``none``."""
    return ", ".join(f"{cause} {n}" for cause, n in causes.items()) or "none"


def summary_text(summary: Summary, instant: Callable[[float | None], str]) -> str:
    """Human-readable summary; ``instant`` prints a time (see :class:`~hops_slurm.report.table.TimeStyle`)."""
    a = summary.all
    util = "-" if summary.gpu_utilisation is None else f"{100 * summary.gpu_utilisation:.1f}%"
    lines = [
        f"Window {instant(summary.window_start)} .. {instant(summary.window_end)} "
        f"({format_elapsed(summary.window_end - summary.window_start)}"
        + (", the records': first submission to last end)" if summary.window is None
           else f" of the {format_elapsed(summary.window)} asked)"),
        f"  RAQLR (eq. 7)        {_num(a.raqlr, '{:.3f}')}  over {a.finished} jobs ended in the window",
        f"  LR max / p95         {_num(a.max_lr, '{:.3f}')} / {_num(a.p95_lr, '{:.3f}')}",
        f"  Avg wait / Avg JCT   {_dur(a.avg_wait)} / {_dur(a.avg_jct)}",
        f"  FTF rho max          {_num(a.max_ftf, '{:.3f}')}",
        f"  Queued at end        {a.waiting} jobs, max LR so far {_num(a.waiting_max_lr, '{:.3f}')}",
        f"  Fragments per round  {_num(summary.fragments_per_round)}  over {summary.rounds} rounds",
        f"  GPU utilisation      {util} of {summary.total_gpus} GPUs",
        f"  Preemptions by cause {_causes(summary.preemption_causes)}",
        "",
        "By user",
        _GROUP_HEAD,
        *(_group_line(g) for g in summary.by_user),
        "",
        "By partition",
        _GROUP_HEAD,
        *(_group_line(g) for g in summary.by_partition),
    ]
    return "\n".join(lines) + "\n"
