"""The round loop: drives any :class:`planner.views.Policy` through any :class:`hops_slurm.backend.Backend`.

Data flow: every ``round_seconds`` (default 360 s, Gavel's) a round plan over every active job; every
``refresh_seconds`` (30 s, the paper's queue refresh) inside the round, for policies that support it,
a fragment plan for pending jobs on idle GPUs. Each planning becomes a
:class:`hops_slurm.records.RoundRecord`. Nothing here is simulator-specific; the live engine can run it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from hops_slurm.backend import Backend, plan_once
from hops_slurm.records import RoundRecord
from planner.views import Policy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopSettings:
    round_seconds: float = 360.0
    refresh_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.round_seconds <= 0 or self.refresh_seconds <= 0:
            raise ValueError("round and refresh lengths must be positive seconds")


def _plan_once(backend: Backend, policy: Policy, index: int, fragment: bool) -> RoundRecord | None:
    planning = plan_once(backend, policy, index, fragment=fragment)
    return planning.record if planning else None


def run_rounds(
    backend: Backend,
    policy: Policy,
    settings: LoopSettings = LoopSettings(),
    *,
    on_round: Callable[[float], None] | None = None,
    max_rounds: int | None = None,
) -> list[RoundRecord]:
    """Plan rounds until the backend is done (or ``max_rounds``); returns every planning's record."""
    records: list[RoundRecord] = []
    rounds = 0
    while not backend.done():
        if max_rounds is not None and rounds >= max_rounds:
            break
        if not backend.job_views(fragment=False):
            nxt = backend.next_activity()
            if nxt is None:
                break
            backend.wait_until(max(nxt, backend.now()))
            continue
        start = backend.now()
        rounds += 1
        rec = _plan_once(backend, policy, 0, False)
        if rec:
            records.append(rec)
        index = 1
        tick = start + settings.refresh_seconds
        while tick < start + settings.round_seconds - 1e-9 and not backend.done():
            backend.wait_until(tick)
            if policy.supports_fragment_plans:
                rec = _plan_once(backend, policy, index, True)
                if rec:
                    records.append(rec)
                    index += 1
            tick += settings.refresh_seconds
        backend.wait_until(start + settings.round_seconds)
        if on_round:
            on_round(backend.now())
    return records
