"""Slurm's expected starts (``squeue --start``) for the backfill baseline: what a Slurm user is told today.

Where it sits: beside :class:`planner.baselines.slurm_backfill.SlurmBackfillPolicy` (the simulator's Slurm
policy), read by the forecast accuracy bench (``hops-slurm bench forecast``) to set Slurm's forecasts
beside Hops's on the same workload. Slurm's backfill scheduler gives every pending job it tests a planned
start: in priority order, the earliest time its request fits on GPUs that no running job (held until its
start plus its *time limit*) and no higher-priority job's planned start holds for the whole of its time
limit; that time is what ``squeue --start`` shows. Here: the same, with the baseline's rules (its
priority order, its rigid largest request, its type-blind first-fit placement, its time limits:
the job's own, else its age times ``time_limit_factor``). Pure: no clock, no Slurm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from planner.baselines.slurm_backfill import SlurmBackfillPolicy, place_first_fit, runs_on
from planner.views import ClusterView, Config, JobView

#: (node -> GPUs, from, until): GPUs held over [from, until)
Hold = tuple[Config, float, float]


class _Timeline:
    """GPUs held per node over time: a step function over the holds' breakpoints (numpy, one matrix)."""

    def __init__(self, total: Mapping[str, int], holds: Sequence[Hold], now: float) -> None:
        self.names = list(total)
        index = {n: k for k, n in enumerate(self.names)}
        self.total = np.array([total[n] for n in self.names], dtype=np.int64)
        points = sorted({now, *(h[1] for h in holds if h[1] > now), *(h[2] for h in holds if h[2] > now)})
        self.points = np.array(points, dtype=float)
        used = np.zeros((len(points), len(self.names)), dtype=np.int64)  # row k: held over [points[k], points[k+1])
        for config, a, b in holds:
            lo = int(np.searchsorted(self.points, max(a, now), side="left"))
            hi = int(np.searchsorted(self.points, b, side="left"))
            for n, g in config.items():
                if n in index:
                    used[lo:hi, index[n]] += g
        self.used = used

    def free(self, k: int, length: float) -> dict[str, int]:
        """GPUs per node free throughout [points[k], points[k] + length)."""
        hi = max(k + 1, int(np.searchsorted(self.points, self.points[k] + length, side="left")))
        worst = self.used[k:hi].max(axis=0)
        return dict(zip(self.names, (int(x) for x in np.maximum(self.total - worst, 0)), strict=True))


def expected_starts(cluster: ClusterView, jobs: Sequence[JobView], now: float,
                    policy: SlurmBackfillPolicy | None = None, *, max_jobs: int = 10_000) -> dict[str, float | None]:
    """Pending job id -> its expected start (None: its request never fits). ``cluster``: a round plan's view
    (the GPUs of ``jobs``' running ones counted free); the running jobs of ``jobs`` hold their GPUs until
    their start plus their time limit (at least until ``now``)."""
    policy = policy or SlurmBackfillPolicy()
    total = {n.name: n.free_gpus for n in cluster.nodes}
    holds: list[Hold] = []
    pending: list[JobView] = []
    for job in jobs:
        if job.current:
            end = max(now, now - job.run_time + policy._limit(job))  # noqa: SLF001 - the baseline's own rule
            holds.append((job.current, -float("inf"), end if end > now else now + 1e-6))
        else:
            pending.append(job)
    ordered = policy.order(pending, tuple(jobs), now, cluster, False)[:max_jobs]
    out: dict[str, float | None] = {}
    whole = sum(total.values())
    for job in ordered:
        want, limit, usable = job.requirements[-1], max(policy._limit(job), 1.0), runs_on(job)  # noqa: SLF001
        found: float | None = None
        if want <= whole:
            line = _Timeline(total, holds, now)
            ends = {h[2] for h in holds if h[2] > now} | {now}
            for k, t in enumerate(line.points.tolist()):
                if t not in ends:
                    continue  # GPUs come back only where a hold ends
                config = place_first_fit(line.free(k, limit), cluster, want, usable)
                if config is not None:
                    holds.append((config, t, t + limit))
                    found = t
                    break
        out[job.job_id] = found
    return out


__all__ = ["expected_starts"]
