"""Whether Hops came out ahead of the replayed Slurm on avg JCT, and when not, why.

Where it sits: after :func:`hops_slurm.whatif.pipeline.run_whatif`; ``hops-slurm whatif`` prints
:func:`verdict` on stderr (and ``--json`` under ``meta.verdict``). Pure: it reads the sides' records.

The comparison is Hops against the first replayed Slurm policy (``slurm-backfill``, else
``slurm-multifactor``: the one the fidelity line checks against the record). When Hops is not ahead, each
reason below that the records show is named, with its numbers; the rules are general, not fitted to
any export:

* **rigid jobs**: most jobs have one GPU count Hops may give them (1-GPU jobs, a ``#HOPS gpus=`` of one
  count, ``halvings = 0``): Hops can only reorder them;
* **an idle cluster**: in Slurm's record or its replay, jobs waited little against their run (avg wait
  under a tenth of avg JCT): there is little queueing for any scheduler to remove;
* **the monitor step**: Hops notices a job's end or arrival at its next monitor step, Slurm at once:
  named when Hops's jobs waited longer than Slurm's by at most one step, or the jobs' median run is
  under 20 monitor intervals;
* **fewer GPUs, longer runs**: Hops waited less but its jobs ran longer (it chose smaller counts of
  sublinear models, or placements that run slower): the guessed requirement sets decide this;
* **moves**: Hops restarted jobs; each restart pays a process start and a checkpoint load (guessed);
* **probes**: the first job of each model new to Hops (per user and model) waited longer under Hops
  than under Slurm: with no idle GPU it waits for its probe.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from hops_slurm.records import JobRecord
from hops_slurm.report.timefmt import format_elapsed
from hops_slurm.sim.site import SITE_POLICIES
from hops_slurm.whatif.assumptions import Derived
from hops_slurm.whatif.output import Row
from hops_slurm.whatif.replay import RECORDED, Side, is_hops

#: reasons are named when at least this share of jobs is rigid
RIGID_SHARE = 0.5
#: the record's avg wait under this share of its avg JCT: an idle cluster
IDLE_WAIT_SHARE = 0.1
#: the monitor step weighs when the median run is under this many monitor intervals
MONITOR_RUNS = 20


@dataclass
class Verdict:
    hops: str
    slurm: str
    hops_jct: float
    slurm_jct: float
    reasons: list[str] = field(default_factory=list)

    @property
    def ahead(self) -> bool:
        return self.hops_jct < self.slurm_jct

    def lines(self) -> list[str]:
        change = (self.hops_jct - self.slurm_jct) / self.slurm_jct if self.slurm_jct > 0 else 0.0
        head = (f"{self.hops} {'is' if self.ahead else 'is not'} ahead of {self.slurm} on avg JCT: "
                f"{format_elapsed(self.hops_jct)} vs {format_elapsed(self.slurm_jct)} ({100 * change:+.0f}%)")
        if self.ahead:
            return [head]
        return [head + ("; why:" if self.reasons else "; no single cause found in the records: compare the "
                        "per-job records (--out DIR)"), *(f"  - {r}" for r in self.reasons)]


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _runs(jobs: Sequence[JobRecord]) -> list[float]:
    """Each finished job's time from its first start to its end (what it ran, restarts included)."""
    return [j.end - j.start for j in jobs if j.end is not None and j.start is not None]


def _waits(jobs: Sequence[JobRecord]) -> list[float]:
    return [j.start - j.submit for j in jobs if j.end is not None and j.start is not None]


def verdict(sides: Sequence[Side], rows: Sequence[Row], derived: Sequence[Derived],
            monitor_seconds: float, probe_seconds: float) -> Verdict | None:
    """Hops's first side against the first replayed Slurm policy; None without both (or without a JCT)."""
    by = {r.scheduler: r for r in rows}
    side_of = {s.label: s for s in sides}
    hops = next((r for r in rows if is_hops(r.scheduler) and r.avg_jct is not None and not r.error), None)
    slurm = next((by[p] for p in SITE_POLICIES if p in by and by[p].avg_jct is not None and not by[p].error), None)
    if hops is None or slurm is None or hops.avg_jct is None or slurm.avg_jct is None:
        return None
    v = Verdict(hops.scheduler, slurm.scheduler, hops.avg_jct, slurm.avg_jct)
    if v.ahead:
        return v
    rigid = sum(1 for d in derived if len(d.spec.requirements) == 1)
    if derived and rigid >= RIGID_SHARE * len(derived):
        v.reasons.append(f"the jobs are rigid: {rigid} of {len(derived)} have one GPU count Hops may give them "
                         "(1-GPU jobs, or one count in #HOPS gpus=); Hops can only reorder them")
    idle = [(label, r) for label, r in (("Slurm's record", by.get(RECORDED)), (f"the replayed {slurm.scheduler}", slurm))
            if r is not None and r.avg_wait is not None and r.avg_jct and r.avg_wait < IDLE_WAIT_SHARE * r.avg_jct]
    if idle:
        v.reasons.append("the cluster was mostly idle: " + "; ".join(
            f"in {label} jobs waited {format_elapsed(r.avg_wait)} on average against an avg JCT of "
            f"{format_elapsed(r.avg_jct)}" for label, r in idle) + ": little queueing to remove")
    h_jobs, s_jobs = side_of[hops.scheduler].jobs, side_of[slurm.scheduler].jobs
    runs = _runs(s_jobs)
    h_wait, s_wait, h_run, s_run = _mean(_waits(h_jobs)), _mean(_waits(s_jobs)), _mean(_runs(h_jobs)), _mean(runs)
    short = bool(runs) and statistics.median(runs) < MONITOR_RUNS * monitor_seconds
    if monitor_seconds > 0 and (short or s_wait < h_wait <= s_wait + monitor_seconds):
        v.reasons.append(f"Hops's jobs waited {format_elapsed(h_wait)} on average, {slurm.scheduler}'s "
                         f"{format_elapsed(s_wait)}: the engine notices an ended or new job at its monitor step "
                         f"({format_elapsed(monitor_seconds)}), Slurm's scheduler at once"
                         + (f"; that weighs on short jobs (median run {format_elapsed(statistics.median(runs))})"
                            if short else ""))
    if h_wait <= s_wait and h_run > s_run:
        v.reasons.append(f"Hops's jobs waited less ({format_elapsed(h_wait)} vs {format_elapsed(s_wait)}) but ran longer "
                         f"({format_elapsed(h_run)} vs {format_elapsed(s_run)}): it gave them fewer GPUs or slower "
                         "placements; the GPU counts it may choose and the models' scaling are guessed (--assumptions)")
    moves = hops.preemptions
    if moves:
        v.reasons.append(f"Hops moved or preempted jobs {moves} times; each restart pays a process start and a "
                         "checkpoint load (guessed costs: --process-start-seconds, --checkpoint-seconds)")
    firsts = _first_of_each_model(derived)
    h_first, s_first = _wait_of(h_jobs, firsts), _wait_of(s_jobs, firsts)
    if firsts and h_first > s_first + monitor_seconds:
        v.reasons.append(f"the first job of each of the {len(firsts)} models new to Hops (one per user and model) waited "
                         f"{format_elapsed(h_first)} on average (Slurm: {format_elapsed(s_first)}): a new model that "
                         f"finds no idle GPU waits for its probe ({format_elapsed(probe_seconds)} on the profiler's GPUs, "
                         "guessed)")
    return v


def _first_of_each_model(derived: Sequence[Derived]) -> set[str]:
    """The job ids of each (user, model)'s first submitted job: the ones Hops has no data for."""
    first: dict[tuple[str, str], Derived] = {}
    for d in sorted(derived, key=lambda d: d.spec.arrival):
        first.setdefault((d.spec.user, d.spec.model), d)
    return {d.spec.job_id for d in first.values()}


def _wait_of(jobs: Sequence[JobRecord], ids: set[str]) -> float:
    return _mean([j.start - j.submit for j in jobs if j.job_id in ids and j.start is not None])


__all__ = ["Verdict", "verdict"]
