"""The fairness and efficiency metrics of Hops, as pure functions over records: the only metrics module.

Reports (live and simulated, ``hops-slurm report``) and the simulator's tables (:func:`summarize`,
the paper's Tables 3/4 and Figs. 9/11/12) call these; nothing here reads files, Slurm or the wall
clock: every function that depends on time takes ``now`` explicitly.

Definitions (Hops, SoCC '24, and docs/design.md, "Reading the paper"):
- wait: time queued, not running, since submission, summed over preemptions.
- LR (eq. 6, the priority of eq. 8): ``wait / age`` with ``age`` the eq. 9 estimate made before the
  job first ran (``JobRecord.age_estimate``).
- RAQLR (eq. 7): the mean LR of the jobs that died (ended) within the last ``h`` hours.
- FTF rho (Themis, NSDI '20): ``T_shared / T_ideal``; ``T_shared`` is the job's time in the shared
  cluster, submission to finish (its JCT), and ``T_ideal`` is ``JobRecord.ideal_time``.
- Avg.frag: idle GPUs while some job is still unassigned, after the plans of a round's instant (the
  round plan and the fragment plans that follow it at once; the paper: "after each round of
  scheduling"), averaged over rounds.
- Preemption causes: the round records' ``preempted_by`` summed over the run (:func:`causes_of`; why each
  preemption was made: :mod:`planner.changes`).
- :func:`summarize` (a whole run): only completed jobs enter the averages; ``set_aside`` counts the jobs
  the scheduler set aside with a reason (``JobRecord.aside``: no configuration serves them) and
  ``unfinished`` the others (a simulation cancels jobs a policy never places); makespan is the last completion minus the
  first submission; rounds count up to the last completion; planner time per round sums the solve
  seconds of a round's plans.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, PlacementRecord, RoundRecord
from hops_slurm.report import timeline


def wait_time(job: JobRecord, now: float) -> float:
    """Seconds ``job`` has spent queued (not running) up to ``now``, summed over preemptions.

    Queued stretches: submission to the first placement, every gap between placements, and, when the
    job is not running at ``now``, from its last placement's end (or submission) to ``now``, or to
    its end when it ended while queued (e.g. cancelled after a preemption). Without placements, ``start`` (if any) stands for the first placement.
    """
    placements = sorted(job.placements, key=lambda p: p.start)
    stop = now if job.end is None else min(now, job.end)
    if not placements:
        if job.start is not None:
            return max(0.0, min(job.start, stop) - job.submit)
        return max(0.0, stop - job.submit)
    waited = 0.0
    queued_since: float | None = job.submit
    for p in placements:
        if p.start >= stop:
            break
        if queued_since is not None:
            waited += max(0.0, p.start - queued_since)
        queued_since = None if p.end is None else p.end
        if p.end is not None and p.end >= stop:
            queued_since = None
            break
    if queued_since is not None:
        waited += max(0.0, stop - queued_since)
    return waited


def run_time(job: JobRecord, now: float) -> float:
    """Seconds ``job`` has held GPUs up to ``now`` (sum of its placements, clipped to ``now``)."""
    total = 0.0
    for p in job.placements:
        end = now if p.end is None else min(p.end, now)
        total += max(0.0, end - p.start)
    return total


def latency_ratio(wait: float, age: float | None) -> float | None:
    """Hops eq. 6/8: ``wait / age``; None when the age estimate is missing or not positive."""
    if age is None or not age > 0:
        return None
    return wait / age


def job_latency_ratio(job: JobRecord, now: float) -> float | None:
    """LR of ``job`` at ``now`` (its final LR once it has ended)."""
    return latency_ratio(wait_time(job, now), job.age_estimate)


def jct(job: JobRecord) -> float | None:
    """Job completion time: submission to end, None while the job has not ended."""
    if job.end is None:
        return None
    return job.end - job.submit


def ftf_rho(t_shared: float | None, t_ideal: float | None) -> float | None:
    """Themis finish-time fairness ``rho = T_shared / T_ideal``; None when either is unknown."""
    if t_shared is None or t_ideal is None or not t_ideal > 0:
        return None
    return t_shared / t_ideal


def job_ftf_rho(job: JobRecord) -> float | None:
    return ftf_rho(jct(job), job.ideal_time)


def raqlr(jobs: Iterable[JobRecord], now: float, window: float) -> float | None:
    """Hops eq. 7: mean final LR of the jobs that ended in ``(now - window, now]``.

    Jobs without an age estimate have no LR and are left out; None when no job qualifies.
    """
    ratios = [
        lr
        for job in jobs
        if job.end is not None and now - window < job.end <= now
        for lr in [job_latency_ratio(job, job.end)]
        if lr is not None
    ]
    return mean(ratios)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) with linear interpolation between order statistics.

    Same rule as numpy's default: position ``(n - 1) * q / 100`` in the sorted values.
    """
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} outside 0..100")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def rounds_of(plans: Iterable[RoundRecord]) -> list[list[RoundRecord]]:
    """Group plan records into rounds: a ``plan_index == 0`` record opens a round, fragment plans follow."""
    rounds: list[list[RoundRecord]] = []
    for plan in sorted(plans, key=lambda r: (r.time, r.plan_index)):
        if plan.plan_index == 0 or not rounds:
            rounds.append([plan])
        else:
            rounds[-1].append(plan)
    return rounds


def at_round_instant(rnd: Sequence[RoundRecord]) -> RoundRecord:
    """The last plan at a round's own instant: the round plan, or the last fragment plan that followed
    it at the same time (later refresh-tick plans of the round do not count)."""
    last = rnd[0]
    for plan in rnd[1:]:
        if plan.time == rnd[0].time:
            last = plan
    return last


def fragments_per_round(plans: Iterable[RoundRecord], until: float | None = None) -> float | None:
    """Avg.frag: per round (up to ``until`` when given), the fragments left after the plans of its
    instant; averaged over rounds."""
    per_round = [at_round_instant(r).fragments for r in rounds_of(plans) if until is None or r[0].time <= until]
    return mean([float(f) for f in per_round])


def gpu_seconds(placements: Iterable[PlacementRecord], start: float, end: float) -> float:
    """GPU-seconds one job's placements held inside ``[start, end]`` (a running placement runs to ``end``;
    the job counted once while it moves: :func:`hops_slurm.report.timeline.held`)."""
    total = 0.0
    for s in timeline.held(placements):
        lo = max(s.start, start)
        hi = min(end if s.end is None else s.end, end)
        if hi > lo:
            total += (hi - lo) * s.gpus
    return total


def gpu_utilisation(jobs: Iterable[JobRecord], total_gpus: int, start: float, end: float) -> float | None:
    """Share of the cluster's GPU-seconds in ``[start, end]`` that jobs held (0..1 for records whose
    timeline stays within the cluster: :func:`hops_slurm.report.timeline.timeline_problems`)."""
    if total_gpus <= 0 or end <= start:
        return None
    used = sum(gpu_seconds(job.placements, start, end) for job in jobs)
    return used / (total_gpus * (end - start))


def gpus_in_use_steps(jobs: Iterable[JobRecord], until: float) -> list[tuple[float, int]]:
    """Cluster GPU use as a step function (:func:`hops_slurm.report.timeline.gpus_in_use_steps`)."""
    return timeline.gpus_in_use_steps(jobs, until)


@dataclass
class RunMetrics:
    """One run's table row (seconds) and its per-job distributions (see the module docstring)."""

    jobs: int
    unfinished: int
    makespan: float
    avg_jct: float
    avg_wait: float
    max_lr: float
    avg_frag: float
    max_rho: float
    preemptions: int
    planner_mean_seconds: float
    planner_max_seconds: float
    limit_hits: int  # plans a wall-clock solver limit ended (0: the run is reproducible on any load)
    jct: list[float]
    lr: list[float]
    rho: list[float]
    set_aside: int = 0  # cancelled with a reason (JobRecord.aside): no configuration serves them
    #: the preemptions the round records name, per cause (planner.changes; every planning of the run)
    preemption_causes: dict[str, int] = field(default_factory=dict)

    def table_row(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if not isinstance(v, list)}


def summarize(jobs: Sequence[JobRecord], rounds: Sequence[RoundRecord]) -> RunMetrics:
    """A whole run's metrics from its records (the simulator's tables; any complete record set)."""
    done = [j for j in jobs if j.end is not None and j.state != "CANCELLED"]  # a cancelled job completed nothing
    if not done:
        raise HopsError("no job completed: nothing to summarise")
    aside = sum(1 for j in jobs if j.state == "CANCELLED" and j.aside)
    ends = [float(j.end) for j in done]  # type: ignore[arg-type]
    jcts = [e - j.submit for e, j in zip(ends, done)]
    waits = [wait_time(j, e) for e, j in zip(ends, done)]
    lr = [latency_ratio(w, j.age_estimate) for w, j in zip(waits, done)]
    rho = [ftf_rho(c, j.ideal_time) for c, j in zip(jcts, done)]
    last_end = max(ends)
    per_round = [sum(p.solve_seconds for p in r) for r in rounds_of(rounds)] or [0.0]
    return RunMetrics(
        jobs=len(done),
        unfinished=len(jobs) - len(done) - aside,
        makespan=last_end - min(j.submit for j in done),
        avg_jct=sum(jcts) / len(jcts),
        avg_wait=sum(waits) / len(waits),
        max_lr=max(math.inf if x is None else x for x in lr),
        avg_frag=fragments_per_round(rounds, until=last_end) or 0.0,
        max_rho=max(math.inf if x is None else x for x in rho),
        preemptions=sum(j.preemptions for j in done),
        planner_mean_seconds=sum(per_round) / len(per_round),
        planner_max_seconds=max(per_round),
        limit_hits=sum(1 for r in rounds if r.limit_hit),
        jct=jcts,
        lr=[math.inf if x is None else x for x in lr],
        rho=[math.inf if x is None else x for x in rho],
        set_aside=aside,
        preemption_causes=causes_of(rounds),
    )


def causes_of(rounds: Iterable[RoundRecord]) -> dict[str, int]:
    """The preemptions of ``rounds`` per cause (``RoundRecord.preempted_by``), most first."""
    total: dict[str, int] = {}
    for r in rounds:
        for cause, n in r.preempted_by.items():
            total[cause] = total.get(cause, 0) + n
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def cdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Sorted finite values and their cumulative fractions (for CDF plots)."""
    xs = sorted(v for v in values if math.isfinite(v))
    return xs, [(i + 1) / len(xs) for i in range(len(xs))]
