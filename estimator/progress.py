"""No progress, no placement: which measured configs of a job count as "the job makes no progress there".

Where it sits: :func:`estimator.estimate.per_gpu_estimate` asks :func:`no_progress` of every measured
value it is about to answer with (entity and type layers) and answers 0.0 ("cannot run there", the
planner's convention) instead, layer ``no_progress``; :func:`estimator.extrapolate.measured_points`
leaves such values out, so a config where the job stalled is never carried to another one.

A runtime record is written after a bounded time on a config (the recorder's window; in simulation
``SimSettings.record_seconds`` after each start), so a job that stalls on a config is known to stall
there, for its model signature (the store's key: every job of that owner and program), one record
after it started. What counts as no measurable progress: a per-GPU rate below
:data:`NO_PROGRESS_SHARE` of the job's own best per-GPU rate known anywhere (its probes' single-GPU
rate on any type, eq. 5 at T_c = 0, or any of its measurements), or below :data:`NO_PROGRESS_RATE`
samples/s per GPU when nothing better is known. A recorder that saw one step in its longest window
(what the simulator writes for a model that does not run on a config) is far below both.

Such a config stays unusable while its records say so: the store averages a key's records, so a
later record with real progress on the same key (the job fixed, the node repaired) lifts it again.
Pure: plain values in, a bool out.
"""

from __future__ import annotations

import math

from estimator.snapshot import JobSnapshot

#: a measured per-GPU rate below this share of the job's best known per-GPU rate is no progress
NO_PROGRESS_SHARE = 0.01
#: samples/s per GPU below which nothing measurable happened, whatever else is known
NO_PROGRESS_RATE = 1.0e-3


def best_rate(snap: JobSnapshot) -> float:
    """The job's best per-GPU samples/s known anywhere: its probes' single-GPU rate on any type
    (batch / (T_f + T_b + T_u)) and every measured value; 0.0 when nothing is known."""
    best = 0.0
    for theory in snap.theory.values():
        tc = theory.components
        t = tc.t_f + tc.t_b + tc.t_u
        if t > 0:
            best = max(best, tc.batch_size / t)
    for table in (snap.type_aggregated, snap.type_distributed, snap.entity_aggregated, snap.entity_distributed):
        for value in table.values():
            if math.isfinite(value):
                best = max(best, value)
    return best


def no_progress(value: float, snap: JobSnapshot) -> bool:
    """Whether a measured per-GPU rate ``value`` of ``snap``'s job is no measurable progress."""
    if not math.isfinite(value) or value < NO_PROGRESS_RATE:
        return True
    return value < NO_PROGRESS_SHARE * best_rate(snap)


__all__ = ["NO_PROGRESS_RATE", "NO_PROGRESS_SHARE", "best_rate", "no_progress"]
