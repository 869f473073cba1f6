"""The physical bound beside every simulated table: each job alone on its fastest allowed configuration.

Where it sits: :func:`hops_slurm.sim.runner.compare` computes it once per workload (seed) and hands it
to every run of that workload (``RunResult.bound_avg_jct``); :mod:`hops_slurm.sim.comparison` prints it under
each table and each policy's slowdown against it (avg JCT / the bound's avg JCT); benches that print
their own per-policy tables call :func:`physical_bound` too. Pure: workload + cluster + ground truth in,
seconds out.

The bound of a job: from its submission, no wait, no probe, no restart, it runs alone on the cluster in
the configuration that finishes its true samples first, over every GPU count of its requirement set the
cluster can hold and every placement of that count, at ground-truth throughput
(:class:`hops_slurm.sim.groundtruth.GroundTruth`, entity speeds included). Ground truth depends on a
placement only through its GPU types, its GPU count, whether it spans servers and its slowest server,
so the search is over those: one server of a type (the fastest server that holds the count), servers of
one type no slower than a threshold, and servers of the fastest types together (a mix runs at its
slowest type). No policy can finish a job sooner, so no policy's avg JCT is below the bound's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.workload import JobSpec


@dataclass(frozen=True)
class Bound:
    """Per job (workload id) the bound's JCT in seconds (inf where it can run nowhere); ``avg_jct`` the mean
    over the jobs that can run somewhere (those a policy can complete: the others are set aside, and a
    policy's avg JCT covers completed jobs only); nan when there is none."""

    jct: dict[str, float]

    @property
    def avg_jct(self) -> float:
        finite = [t for t in self.jct.values() if math.isfinite(t)]
        return sum(finite) / len(finite) if finite else math.nan


def fastest_rate(truth: GroundTruth, cluster: ClusterSpec, model: str, requirements: Sequence[int]) -> float:
    """The most samples/s ``model`` reaches alone on ``cluster`` at any count of ``requirements``."""
    truth_speeds = cluster.node_speeds()
    servers = [(kind.gpu_type, truth_speeds[name].speed, kind.gpus) for name, kind in cluster.nodes()]
    types = list(dict.fromkeys(t for t, _s, _g in servers))
    speeds = sorted({s for _t, s, _g in servers}, reverse=True)
    best = 0.0
    for n in sorted(set(requirements)):
        for t in types:
            alone = [s for ty, s, g in servers if ty == t and g >= n]
            if alone:
                best = max(best, truth.samples_per_second(model, t, n, False) * max(alone))
            if n > 1:
                spread = truth.samples_per_second(model, t, n, True)
                for floor in speeds:  # servers of this type no slower than ``floor``, two or more
                    picked = [g for ty, s, g in servers if ty == t and s >= floor]
                    if len(picked) > 1 and sum(picked) >= n:
                        best = max(best, spread * floor)
                        break
        ranked = sorted(types, key=lambda t: truth.samples_per_second(model, t, n, True), reverse=True)
        for k in range(2, len(ranked) + 1):  # a mix of the k fastest types, paced by the k-th
            slowest = truth.samples_per_second(model, ranked[k - 1], n, True)
            for floor in speeds:
                if sum(g for ty, s, g in servers if ty in ranked[:k] and s >= floor) >= n:
                    best = max(best, slowest * floor)
                    break
    return best


def physical_bound(cluster: ClusterSpec, jobs: Sequence[JobSpec], truth: GroundTruth | None = None) -> Bound:
    """Each job's bound JCT: its true samples at :func:`fastest_rate` (inf where it can run nowhere)."""
    truth = truth or GroundTruth()
    rates: dict[tuple[str, tuple[int, ...]], float] = {}
    out: dict[str, float] = {}
    for job in jobs:
        key = (job.model, tuple(job.requirements))
        if key not in rates:
            rates[key] = fastest_rate(truth, cluster, job.model, job.requirements)
        out[job.job_id] = job.total_samples / rates[key] if rates[key] > 0 else math.inf
    return Bound(out)


def slowdown(avg_jct: float, bound_avg_jct: float | None) -> float:
    """A policy's avg JCT over the bound's (nan when there is no bound)."""
    if bound_avg_jct is None or not bound_avg_jct > 0 or math.isnan(bound_avg_jct):
        return math.nan
    return avg_jct / bound_avg_jct
