"""Explore across servers at the estimate: a running job is moved to explore a config on several servers only
where the estimator's own estimate there pays the move (``explore_estimate``, on by default).

Where it sits: :class:`planner.hops.HopsPolicy`'s ``explore`` stage hands :func:`planner.explore.explore_idle`
running jobs whose optimistic rate (:attr:`planner.views.JobView.explore`) on a config over more than one
server is capped at their estimate there (:attr:`planner.views.JobView.throughput`, eq. 2's formula with its
communication): :func:`capped`. A job that starts or restarts explores as before (no move to pay for), and
single-server configs keep their optimistic rate (a GPU type never tried, issue 22's case).

Why: the estimator keys a spanning config by its GPU type and number of servers, so each number of servers
of each type is unmeasured once, and its optimistic rate (the single-GPU rate times the GPUs: no
communication at all) beats the job's measured rate. Under the JCT combination most explore moves of running
jobs were to such configs, at a median estimated gain below 1 (docs/results/preemptions.md, "Explore and
repeated moves under the JCT combination"). The formula's estimate there already knows the communication;
only a move that pays at it is worth a restart. Pure: views in, views out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from planner.views import Config, JobView


def capped(jobs: Sequence[JobView]) -> list[JobView]:
    """``jobs`` with each running job's optimistic rate on configs over several servers at most its estimate."""
    out: list[JobView] = []
    for j in jobs:
        if not j.current or j.explore is None:
            out.append(j)
            continue

        def bound(cfg: Config, opt: object = j.explore, est: object = j.throughput) -> float:
            rate = opt(cfg)  # type: ignore[operator]
            return rate if len(cfg) <= 1 else min(rate, est(cfg))  # type: ignore[operator]

        out.append(dataclasses.replace(j, explore=bound))
    return out


__all__ = ["capped"]
