"""GPUs in use over time, from placements: the one timeline every report, plot and check reads.

Where it sits: :mod:`hops_slurm.report.metrics` (GPU-seconds, utilisation), :mod:`hops_slurm.report.plots`
(GPU use over time), the demo's A/B plots and its records check all take their timeline from here.
Pure: records in, numbers out; no files, no clock.

Rules:
- A job holds GPUs in one placement at a time. Its placements, in start order, are read as stretches
  that end no later than the next one begins, so a job being moved counts once, at its new placement
  from the moment that one starts. The accounting (:func:`hops_slurm.core.ledger.account`) already
  writes placements that way; records where it does not are named by :func:`timeline_problems`.
- Nothing is clipped to the cluster's size: a timeline above capacity is reported
  (:func:`above_capacity`, :func:`timeline_problems`), never flattened.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hops_slurm.records import JobRecord, PlacementRecord


@dataclass(frozen=True)
class Stretch:
    """GPUs one job held from ``start`` to ``end`` (None: still running)."""

    start: float
    end: float | None
    gpus: int


def held(placements: Iterable[PlacementRecord]) -> list[Stretch]:
    """One job's placements as the stretches it held GPUs, in start order: each ends no later than the
    next begins (the job counted once while it moves); stretches of no length are left out."""
    ordered = sorted(placements, key=lambda p: p.start)
    out: list[Stretch] = []
    for i, p in enumerate(ordered):
        nxt = ordered[i + 1].start if i + 1 < len(ordered) else None
        end = p.end if nxt is None else nxt if p.end is None else min(p.end, nxt)
        if end is None or end > p.start:
            out.append(Stretch(p.start, end, sum(p.config.values())))
    return out


def self_overlap(placements: Sequence[PlacementRecord]) -> float:
    """Seconds a job's own placements overlap in the records (0 for records the accounting wrote)."""
    ordered = sorted(placements, key=lambda p: p.start)
    total = 0.0
    for a, b in zip(ordered, ordered[1:]):
        end = float("inf") if a.end is None else a.end
        total += max(0.0, end - b.start)
    return total


def gpus_in_use_steps(jobs: Iterable[JobRecord], until: float) -> list[tuple[float, int]]:
    """Cluster GPU use as a step function: ``(time, GPUs in use from then on)``, in time order.

    Stretches still open hold their GPUs through ``until``; the last step is at ``until`` (or at the
    last change, if later) so the curve reaches the horizon without a false drop to zero.
    """
    deltas: dict[float, int] = {}
    for job in jobs:
        for s in held(job.placements):
            if s.start >= until:
                continue
            deltas[s.start] = deltas.get(s.start, 0) + s.gpus
            if s.end is not None and s.end <= until:
                deltas[s.end] = deltas.get(s.end, 0) - s.gpus
    steps: list[tuple[float, int]] = []
    level = 0
    for t in sorted(deltas):
        level += deltas[t]
        steps.append((t, level))
    if steps and steps[-1][0] < until:
        steps.append((until, level))
    return steps


def peak(steps: Sequence[tuple[float, int]]) -> int:
    """The most GPUs in use at any instant of a step function (0 when empty)."""
    return max((g for _t, g in steps), default=0)


def above_capacity(steps: Sequence[tuple[float, int]], capacity: int) -> list[tuple[float, float, int]]:
    """The stretches ``(from, to, GPUs in use)`` of a step function above ``capacity``, in time order."""
    out = []
    for i, (t, g) in enumerate(steps):
        if g > capacity:
            out.append((t, steps[i + 1][0] if i + 1 < len(steps) else t, g))
    return out


def timeline_problems(jobs: Sequence[JobRecord], capacity: int, until: float) -> list[str]:
    """What makes these records' GPU timeline wrong, one line each: a job whose own placements overlap
    (counted once here, but the records are wrong), and every stretch above the cluster's ``capacity``."""
    problems = [f"job {j.job_id}: its placements overlap for {o:.0f} s (counted once)"
                for j in jobs if (o := self_overlap(j.placements)) > 0]
    if capacity > 0:
        problems += [f"{g} GPUs in use on a {capacity}-GPU cluster from {a:.0f} to {b:.0f}"
                     for a, b, g in above_capacity(gpus_in_use_steps(jobs, until), capacity)]
    return problems
