"""Named stages over one state, run in order: how a planning is written down as data.

Where it sits: :class:`planner.hops.HopsPolicy` lists its planning as ``(name, function)`` pairs
(:data:`planner.hops.PLAN_STAGES`) over a small plan state and hands them to :func:`run_stages`.
The planner stays pure (no wall clock here): a caller that wants each stage timed gives a
:class:`StageTimer` (the live engine's records into ``hops_engine_step_duration_seconds{cycle="plan",
step}``: :mod:`hops_slurm.engine.exporter`); without one the stages simply run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

S = TypeVar("S")


class StageTimer(Protocol):
    """What times a stage: ``with timer.stage(name): ...`` around each stage's function."""

    def stage(self, name: str) -> AbstractContextManager[None]: ...


def run_stages(stages: Sequence[tuple[str, Callable[[S], None]]], state: S, timer: StageTimer | None = None) -> S:
    """Run each stage's function on ``state`` in order (each inside ``timer.stage(name)`` when a timer is
    given); returns ``state``."""
    for name, function in stages:
        if timer is None:
            function(state)
        else:
            with timer.stage(name):
                function(state)
    return state


def stage_names(stages: Sequence[tuple[str, object]]) -> tuple[str, ...]:
    """The names of ``stages`` in order (what a timer sees; the metrics' series)."""
    return tuple(name for name, _ in stages)
