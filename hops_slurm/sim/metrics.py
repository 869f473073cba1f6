"""Metrics from records: what the paper's Tables 3/4 and Figs. 9/11/12 report.

Data flow: JobRecord / RoundRecord (from the simulator, or the live engine's journal) ->
:func:`summarize` -> :class:`RunMetrics` -> Markdown / JSON / plots (hops_slurm.sim.output).

Definitions (hours in tables, seconds here):

* Only completed jobs enter the averages; ``unfinished`` counts jobs the simulator had to cancel
  because the policy never placed them (see SimSettings.stall_seconds).
* makespan: last completion minus first submission.
* JCT: end - submit; wait: JCT minus time holding GPUs (profiling time counts as waiting).
* latency ratio (eq. 6): wait / age, age = the eq. 9 estimate made before the job first ran
  (``JobRecord.age_estimate``).
* FTF rho (Themis): JCT / ideal_time (``JobRecord.ideal_time``, T_id on 1/N of the cluster).
* Avg.frag: mean over rounds up to the last completion of idle GPUs while a job is unassigned, counted
  after the last plan at the round plan's instant (the round plan and the fragment plans that follow
  it at once; the paper: "after each round of scheduling").
* planner time per round: solve seconds of a round's plans summed (round plan + its fragment plans).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, RoundRecord


@dataclass
class RunMetrics:
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

    def table_row(self) -> dict[str, float]:
        return {k: v for k, v in asdict(self).items() if not isinstance(v, list)}


def _busy(rec: JobRecord) -> float:
    return sum((p.end if p.end is not None else rec.end or 0.0) - p.start for p in rec.placements)


def after_round(rounds: Sequence[RoundRecord], until: float) -> list[RoundRecord]:
    """Per round plan up to ``until``: the record of the last plan at its instant (itself, or the
    last fragment plan that followed it at the same time)."""
    out: list[RoundRecord] = []
    for r in rounds:
        if r.plan_index == 0:
            if r.time <= until:
                out.append(r)
            else:
                break
        elif out and r.time == out[-1].time:
            out[-1] = r
    return out


def summarize(jobs: Sequence[JobRecord], rounds: Sequence[RoundRecord]) -> RunMetrics:
    done = [j for j in jobs if j.end is not None]
    if not done:
        raise HopsError("no job completed: nothing to summarise")
    unfinished = len(jobs) - len(done)
    jct = [j.end - j.submit for j in done]  # type: ignore[operator]
    waits = [max(c - _busy(j), 0.0) for c, j in zip(jct, done)]
    lr = [w / j.age_estimate if j.age_estimate else math.inf for w, j in zip(waits, done)]
    rho = [c / j.ideal_time if j.ideal_time else math.inf for c, j in zip(jct, done)]
    last_end = max(j.end for j in done)  # type: ignore[type-var]
    main = after_round(rounds, last_end)
    per_round: dict[float, float] = defaultdict(float)
    current = None
    for r in rounds:
        if r.plan_index == 0:
            current = r.time
        per_round[current if current is not None else r.time] += r.solve_seconds
    times = list(per_round.values()) or [0.0]
    return RunMetrics(
        jobs=len(done),
        unfinished=unfinished,
        makespan=max(j.end for j in done) - min(j.submit for j in done),  # type: ignore[type-var]
        avg_jct=sum(jct) / len(jct),
        avg_wait=sum(waits) / len(waits),
        max_lr=max(lr),
        avg_frag=sum(r.fragments for r in main) / len(main) if main else 0.0,
        max_rho=max(rho),
        preemptions=sum(j.preemptions for j in done),
        planner_mean_seconds=sum(times) / len(times),
        planner_max_seconds=max(times),
        limit_hits=sum(1 for r in rounds if r.limit_hit),
        jct=jct,
        lr=lr,
        rho=rho,
    )


def cdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Sorted finite values and their cumulative fractions (for CDF plots)."""
    xs = sorted(v for v in values if math.isfinite(v))
    return xs, [(i + 1) / len(xs) for i in range(len(xs))]
