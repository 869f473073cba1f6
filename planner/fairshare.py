"""Fair share across users: each user's standing, as Slurm's classic multifactor computes it.

Where it sits: pure planner input. A backend gives each job's :attr:`planner.views.JobView.fair_share`,
a factor in [0, 1] (1: the user used nothing of late; 0.5: exactly their share; towards 0: far over it),
and the queue priority adds ``fairshare_weight`` times it to the latency ratio
(:func:`planner.priorities.priorities`), so jobs of one user keep their latency-ratio order among
themselves while a user with many jobs cannot push one with few to the back (docs/governance.md).

Where the factor comes from (docs/governance.md, "Fair share"):

* live: Slurm's own ``FairShare`` of the job's association (``sshare``; :mod:`hops_slurm.slurm.assoc`):
  the site's shares, half-life, tree and every job's usage, Hops or not, as slurmdbd counts them;
* in simulation (no slurmdbd): the same classic formula over usage decayed with a half-life, from the
  simulated jobs' placements (:func:`decayed_usage`, :func:`factors`).

Classic fair share (Slurm's priority/multifactor, before fair tree): F = 2^(-U/S), with U the user's
decayed usage over everyone's and S the user's normalised shares (equal shares unless given).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

#: PriorityDecayHalfLife's default in Slurm: 7 days
DEFAULT_HALF_LIFE = 7 * 86400.0


def decayed_gpu_seconds(gpus: float, start: float, end: float, now: float, half_life: float) -> float:
    """GPU-seconds of a run from ``start`` to ``end`` (<= ``now``), each second weighed by
    2^(-(now - t) / half_life): the integral of Slurm's decay over the run."""
    end = min(end, now)
    if end <= start or gpus <= 0:
        return 0.0
    if half_life <= 0:
        return 0.0
    k = math.log(2.0) / half_life
    return gpus * (math.exp(-k * (now - end)) - math.exp(-k * (now - start))) / k


def decayed_usage(runs: Iterable[tuple[str, float, float, float]], now: float, half_life: float) -> dict[str, float]:
    """User -> decayed GPU-seconds over ``runs`` of (user, GPUs, start, end); a run still going ends at ``now``."""
    out: dict[str, float] = {}
    for user, gpus, start, end in runs:
        out[user] = out.get(user, 0.0) + decayed_gpu_seconds(gpus, start, end, now, half_life)
    return out


def factors(usage: Mapping[str, float], shares: Mapping[str, float] | None = None,
            users: Iterable[str] = ()) -> dict[str, float]:
    """User -> F = 2^(-U_norm / S_norm) over every user of ``usage``, ``shares`` and ``users`` (equal
    shares where ``shares`` names none); 1.0 for everyone while nobody has used anything."""
    everyone = sorted(set(usage) | set(shares or {}) | set(users))
    if not everyone:
        return {}
    raw = {u: float((shares or {}).get(u, 1.0)) for u in everyone}
    total_shares = sum(max(s, 0.0) for s in raw.values()) or 1.0
    total_usage = sum(max(v, 0.0) for v in usage.values())
    out: dict[str, float] = {}
    for u in everyone:
        s = max(raw[u], 0.0) / total_shares
        used = max(usage.get(u, 0.0), 0.0) / total_usage if total_usage > 0 else 0.0
        out[u] = 0.0 if s <= 0 and used > 0 else (1.0 if used == 0 else 2.0 ** (-used / s))
    return out


__all__ = ["DEFAULT_HALF_LIFE", "decayed_gpu_seconds", "decayed_usage", "factors"]
