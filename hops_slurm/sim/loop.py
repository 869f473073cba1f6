"""The round loop: drives any :class:`planner.views.Policy` through any :class:`hops_slurm.backend.Backend`.

Data flow: every ``round_seconds`` (default 360 s, Gavel's) a round plan over every active job; every
``refresh_seconds`` (30 s, the paper's queue refresh) inside the round, for policies that support it,
a fragment plan for pending jobs on idle GPUs. The paper plans again "if there are still available
resources after the initial planning": right after each round plan (and at each refresh tick),
fragment plans follow at the same instant while one of them still places a job and GPUs stay idle
(``fragment_at_once``; at most ``max_plans_per_instant`` plans). Each planning becomes a
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
    #: fragment plans at the round plan's instant (the paper's); False: only at refresh ticks (ablation)
    fragment_at_once: bool = True
    max_plans_per_instant: int = 4

    def __post_init__(self) -> None:
        if self.round_seconds <= 0 or self.refresh_seconds <= 0:
            raise ValueError("round and refresh lengths must be positive seconds")
        if self.max_plans_per_instant < 1:
            raise ValueError("max_plans_per_instant must be at least 1")


def _plan_once(backend: Backend, policy: Policy, index: int, fragment: bool) -> RoundRecord | None:
    planning = plan_once(backend, policy, index, fragment=fragment)
    return planning.record if planning else None


def fragment_plans(backend: Backend, policy: Policy, index: int, limit: int) -> list[RoundRecord]:
    """Fragment plans at this instant, numbered from ``index``: again while the last one placed a job
    and GPUs are still idle, at most ``limit`` plans."""
    out: list[RoundRecord] = []
    while len(out) < limit:
        planning = plan_once(backend, policy, index + len(out), fragment=True)
        if planning is None:
            break
        out.append(planning.record)
        if not planning.plan.placed() or planning.record.idle_gpus_after == 0:
            break
    return out


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
        if policy.supports_fragment_plans and settings.fragment_at_once:
            more = fragment_plans(backend, policy, index, settings.max_plans_per_instant)
            records += more
            index += len(more)
        tick = start + settings.refresh_seconds
        while tick < start + settings.round_seconds - 1e-9 and not backend.done():
            backend.wait_until(tick)
            if policy.supports_fragment_plans:
                more = fragment_plans(backend, policy, index,
                                      settings.max_plans_per_instant if settings.fragment_at_once else 1)
                records += more
                index += len(more)
            tick += settings.refresh_seconds
        backend.wait_until(start + settings.round_seconds)
        if on_round:
            on_round(backend.now())
    return records
