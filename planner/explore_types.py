"""Explore a GPU type once: a running job is moved to explore only onto GPU types it has not run on
(``explore_types_once``, off by default).

Where it sits: :class:`planner.hops.HopsPolicy` remembers, per job, the GPU types of the configs it has
run in (:func:`remember`, every planning), and its ``explore`` stage hands :func:`planner.explore.explore_idle`
running jobs whose optimistic rate (:attr:`planner.views.JobView.explore`) is 0 on every config of only
such types (:func:`masked`): nothing left to learn there by a move. Jobs that start or restart explore
as before (no move to pay for).

Why: on Table 4 a wide job (9-16 GPUs) spans servers, and the estimator keys a spanning config by its GPU
type and number of servers, so each number of servers of each type is unmeasured once and its optimistic
rate (no communication in it) beats the job's measured rate: such jobs were moved over and over between
types they had already run on (docs/results/preemptions.md, "Short moves"). Pure: views in, views out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, MutableMapping, Sequence

from planner.views import ClusterView, Config, JobView


def types_of(cfg: Config, types: Mapping[str, str]) -> frozenset[str]:
    return frozenset(types.get(n, "") for n in cfg)


def remember(seen: MutableMapping[str, frozenset[str]], jobs: Sequence[JobView], cluster: ClusterView,
             prune: bool) -> None:
    """Adds the GPU types each running job of ``jobs`` runs on to ``seen`` (in place); ``prune``: forgets
    jobs no longer in ``jobs`` (ended)."""
    types = {n.name: n.gpu_type for n in cluster.nodes}
    for j in jobs:
        if j.current:
            seen[j.job_id] = seen.get(j.job_id, frozenset()) | types_of(j.current, types)
    if prune:
        live = {j.job_id for j in jobs}
        for gone in [k for k in seen if k not in live]:
            del seen[gone]


def masked(jobs: Sequence[JobView], seen: Mapping[str, frozenset[str]], cluster: ClusterView) -> list[JobView]:
    """``jobs`` with each running job's optimistic rate 0 on configs only of GPU types it has run on."""
    types = {n.name: n.gpu_type for n in cluster.nodes}
    out: list[JobView] = []
    for j in jobs:
        ran = seen.get(j.job_id, frozenset())
        if not j.current or j.explore is None or not ran:
            out.append(j)
            continue

        def bound(cfg: Config, fn: object = j.explore, ran: frozenset[str] = ran) -> float:
            return 0.0 if types_of(cfg, types) <= ran else fn(cfg)  # type: ignore[operator]

        out.append(dataclasses.replace(j, explore=bound))
    return out


__all__ = ["masked", "remember", "types_of"]
