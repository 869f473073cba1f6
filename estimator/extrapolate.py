"""Estimates where a job has not run yet, from what it measured where it did (the probe in place).

Where it sits: :func:`estimator.estimate.per_gpu_estimate` asks :func:`extrapolated_per_gpu` when
neither the entity nor the type layer holds a measurement for the asked GPU type and count and the
job has no theoretical-layer profile (eq. 1-5) on that type. That is the case of a job the engine
started without probes (``hops_slurm.engine.profiling``: "probe in place"): its first runtime
records measure one GPU type at one GPU count, and until it has run elsewhere the store knows
nothing else of it. Answering 0 there ("cannot run") would lock the job onto the first type and
count it happened to get; this module answers instead:

1. **Same GPU type, another count or layout**: the per-GPU throughput measured on that type at the
   nearest count (same layout first: one node by GPU count, several nodes by node count; equally
   near: the larger count, the more conservative per-GPU value). The job demonstrably runs on the
   type; per-GPU throughput carried to another count is what the fallback assumes too (throughput
   proportional to GPUs), anchored on a real number.
2. **Another GPU type**, only for a job with no probe profile on any type: the mean of its nearest
   per-GPU values on the types it was measured on (every type alike, the fallback's assumption).
   A job *with* probe profiles on some types was probed on the others too, so a type without a
   profile is one its probe failed on (out of memory, say): that stays unavailable, as before.

Records of jobs placed across GPU types (type ``mixed``) are not carried to any one type. Returns
None when nothing measured can be carried. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math

from estimator.progress import no_progress
from estimator.snapshot import JobSnapshot

MIXED = "mixed"

#: (one node?, count: GPUs on one node or nodes, per-GPU samples/s)
Point = tuple[bool, int, float]


def measured_points(snap: JobSnapshot, gpu_type: str) -> list[Point]:
    """The job's type-layer measurements on ``gpu_type`` (the entity layer mirrors into it)."""
    points: list[Point] = [(True, c, v) for (t, c), v in snap.type_aggregated.items() if t == gpu_type]
    points += [(False, c, v) for (t, c), v in snap.type_distributed.items() if t == gpu_type]
    return [p for p in points if p[1] > 0 and math.isfinite(p[2]) and p[2] > 0 and not no_progress(p[2], snap)]


def nearest(points: list[Point], aggregated: bool, count: int) -> float | None:
    """The per-GPU value at the count nearest ``count`` (ratio distance), same layout first; ties: the
    larger count."""
    same = [p for p in points if p[0] == aggregated] or points
    if not same:
        return None
    best = min(same, key=lambda p: (abs(math.log(p[1] / count)), -p[1]))
    return best[2]


def extrapolated_per_gpu(snap: JobSnapshot, gpu_type: str, *, gpus: int, nodes: int) -> float | None:
    """Per-GPU samples/s of the job on ``nodes`` node(s) of ``gpu_type`` with ``gpus`` GPUs in all, carried
    from its measurements (see the module docstring); None if nothing can be carried."""
    aggregated = nodes == 1
    count = gpus if aggregated else nodes
    own = measured_points(snap, gpu_type)
    if own:
        return nearest(own, aggregated, count)
    if snap.theory:
        return None
    types = {t for t, _ in (*snap.type_aggregated, *snap.type_distributed) if t != MIXED and t != gpu_type}
    values = [v for v in (nearest(measured_points(snap, t), aggregated, count) for t in sorted(types)) if v is not None]
    return sum(values) / len(values) if values else None


__all__ = ["extrapolated_per_gpu", "measured_points", "nearest", "MIXED"]
