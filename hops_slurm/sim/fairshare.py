"""Fair-share standing in simulation: the classic formula over the simulated jobs' decayed GPU usage.

Where it sits: :class:`hops_slurm.sim.sim_backend.SimBackend` answers ``fair_share()`` with
:func:`sim_standing`, which :func:`hops_slurm.core.interface.plan_once` asks before each planning (the live
backend answers with Slurm's own ``FairShare`` from ``sshare``; there is no slurmdbd here). Usage is
every run of every job so far (from the jobs' ledgers: GPUs, start, end), each GPU-second decayed with
the half-life (:data:`HALF_LIFE`, Slurm's default PriorityDecayHalfLife: 7 days); every user of an
active job has an equal share (:func:`planner.fairshare.factors`).
"""

from __future__ import annotations

import math
from typing import Any

from planner.fairshare import DEFAULT_HALF_LIFE, decayed_gpu_seconds, factors

HALF_LIFE = DEFAULT_HALF_LIFE


class DecayedUsage:
    """Each user's decayed GPU-seconds, kept up to date run by run: a run that has ended decays as a whole
    (its :func:`planner.fairshare.decayed_gpu_seconds` at ``now`` is e^(-k·now) times a constant of the
    run), so the ended runs are summed once, as the constant, and only the runs still going are
    integrated at each call. The work per planning grows with the jobs, not with every run they ever had
    (a job moved hundreds of times). Runs are appended and ended, never changed afterwards (the ledger)."""

    def __init__(self, half_life: float) -> None:
        self.half_life = half_life
        self.k = math.log(2.0) / half_life if half_life > 0 else 0.0
        self.counted: dict[str, int] = {}  # job id -> its leading runs already summed (all ended)
        self.ended: dict[str, float] = {}  # user -> Σ over ended runs of gpus·(e^(k·end) − e^(k·start)) / k

    def usage(self, jobs: tuple[Any, ...], now: float) -> dict[str, float]:
        """User -> decayed GPU-seconds at ``now`` over every run of ``jobs`` (each job's ``spec.user``,
        ``spec.job_id`` and ``ledger.placements``), as :func:`planner.fairshare.decayed_usage` sums them."""
        out: dict[str, float] = {}
        if self.k <= 0:  # no half-life: nothing counts (decayed_gpu_seconds)
            return {job.spec.user: 0.0 for job in jobs}
        k, scale = self.k, math.exp(-self.k * now)
        for job in jobs:
            user, runs = job.spec.user, job.ledger.placements
            i = self.counted.get(job.spec.job_id, 0)
            going = 0.0
            contiguous = True
            while i < len(runs):
                p = runs[i]
                gpus = float(sum(dict(p.get("config") or {}).values()))
                end = p.get("end")
                if end is None or float(end) > now:
                    going += decayed_gpu_seconds(gpus, float(p["start"]), float(end) if end is not None else now, now,
                                                 self.half_life)
                    contiguous = False
                elif contiguous:
                    start, stop = float(p["start"]), float(end)
                    if stop > start and gpus > 0:
                        self.ended[user] = self.ended.get(user, 0.0) + gpus * (math.exp(k * stop) - math.exp(k * start)) / k
                    self.counted[job.spec.job_id] = i + 1
                else:
                    going += decayed_gpu_seconds(gpus, float(p["start"]), float(end), now, self.half_life)
                i += 1
            out[user] = out.get(user, 0.0) + going
        for user in out:
            out[user] += scale * self.ended.get(user, 0.0)
        return out


def sim_standing(backend: Any, half_life: float = HALF_LIFE) -> dict[str, float]:
    """Active job id -> its owner's fair-share factor at the backend's time (decayed usage kept on the
    backend by :class:`DecayedUsage`)."""
    now = float(backend.t)
    jobs = (*backend.finished.values(), *backend.active.values())
    kept = getattr(backend, "_decayed_usage", None)
    if kept is None or kept.half_life != half_life:
        kept = DecayedUsage(half_life)
        backend._decayed_usage = kept
    f = factors(kept.usage(jobs, now), users=[j.spec.user for j in jobs])
    return {j.spec.job_id: f.get(j.spec.user, 1.0) for j in backend.active.values()}
