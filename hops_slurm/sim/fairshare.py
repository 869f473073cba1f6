"""Fair-share standing in simulation: the classic formula over the simulated jobs' decayed GPU usage.

Where it sits: :class:`hops_slurm.sim.backend.SimBackend` answers ``fair_share()`` with
:func:`sim_standing`, which :func:`hops_slurm.backend.plan_once` asks before each planning (the live
backend answers with Slurm's own ``FairShare`` from ``sshare``; there is no slurmdbd here). Usage is
every run of every job so far (from the jobs' ledgers: GPUs, start, end), each GPU-second decayed with
the half-life (:data:`HALF_LIFE`, Slurm's default PriorityDecayHalfLife: 7 days); every user of an
active job has an equal share (:func:`planner.fairshare.factors`).
"""

from __future__ import annotations

from typing import Any

from planner.fairshare import DEFAULT_HALF_LIFE, decayed_usage, factors

HALF_LIFE = DEFAULT_HALF_LIFE


def sim_standing(backend: Any, half_life: float = HALF_LIFE) -> dict[str, float]:
    """Active job id -> its owner's fair-share factor at the backend's time."""
    now = float(backend.t)
    runs: list[tuple[str, float, float, float]] = []
    jobs = (*backend.finished.values(), *backend.active.values())
    for job in jobs:
        for p in job.ledger.placements:
            end = p.get("end")
            runs.append((job.spec.user, float(sum(dict(p.get("config") or {}).values())), float(p["start"]),
                         float(end) if end is not None else now))
    f = factors(decayed_usage(runs, now, half_life), users=[j.spec.user for j in jobs])
    return {j.spec.job_id: f.get(j.spec.user, 1.0) for j in backend.active.values()}
