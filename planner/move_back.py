"""No quick move back: a running job is not moved back onto a GPU type it left less than ``return_time``
seconds ago unless its estimate there beats its current rate by :data:`RETURN_GAIN` (off by default).

Where it sits: :class:`planner.hops.HopsPolicy` notes, on every planning, which GPU types each job has left
and when (:func:`observe`, into the policy's memory of departures); in a round plan the ``candidates`` stage
drops the moves of running jobs back onto such types (:func:`drop_returns`) and the ``explore`` stage gives
them no optimistic rate there (:func:`no_return_explore`). A job that starts or restarts goes where the plan
puts it (no move to pay for).

Why: under the JCT combination a job's moves often undo its last one: on Table 4 seed 0, 111 of the 486 ILP
moves and 25 of the 195 explore moves went back to a GPU type the job had left less than an hour before
(docs/results/preemptions.md, "Explore and repeated moves under the JCT combination"); each pays a restart
for a gain its estimate had already judged, the other way, within the hour. Pure: views and the memory the
policy passes in, candidates and views out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, MutableMapping, Sequence

from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView

#: a move back onto a type left recently is kept when its estimate beats the current rate by this factor
RETURN_GAIN = 1.5

#: job id -> (the GPU types it ran on when last seen, or None when pending; GPU types -> when it left them)
Departures = dict[str, tuple[frozenset[str] | None, dict[frozenset[str], float]]]


def _types(cfg: Config | None, types: Mapping[str, str]) -> frozenset[str] | None:
    return frozenset(types.get(n, "") for n in cfg) if cfg else None


def observe(memory: MutableMapping[str, tuple[frozenset[str] | None, dict[frozenset[str], float]]],
            jobs: Sequence[JobView], cluster: ClusterView, now: float, prune: bool) -> None:
    """Notes in ``memory`` (in place) the GPU types each job of ``jobs`` has left since it was last seen, at
    ``now``; ``prune``: forgets jobs no longer in ``jobs`` (ended)."""
    types = {n.name: n.gpu_type for n in cluster.nodes}
    for j in jobs:
        cur = _types(j.current, types)
        last, left = memory.get(j.job_id, (None, {}))
        if last is not None and last != cur:
            left = {**left, last: now}
        memory[j.job_id] = (cur, left)
    if prune:
        live = {j.job_id for j in jobs}
        for gone in [k for k in memory if k not in live]:
            del memory[gone]


def _recent(job: JobView, memory: Mapping[str, tuple[frozenset[str] | None, dict[frozenset[str], float]]],
            now: float, return_time: float) -> set[frozenset[str]]:
    """The GPU types running ``job`` left less than ``return_time`` ago, other than those it runs on."""
    cur, left = memory.get(job.job_id, (None, {}))
    return {t for t, when in left.items() if now - when < return_time and t != cur}


def drop_returns(cands: Sequence[Candidate], jobs: Sequence[JobView], cluster: ClusterView,
                 memory: Mapping[str, tuple[frozenset[str] | None, dict[frozenset[str], float]]],
                 now: float, return_time: float) -> list[Candidate]:
    """``cands`` less the moves of running ``jobs`` onto GPU types they left recently, unless the job's
    estimate there is at least :data:`RETURN_GAIN` times its current one."""
    types = {n.name: n.gpu_type for n in cluster.nodes}
    recent = {j.job_id: (j, r) for j in jobs if j.current and (r := _recent(j, memory, now, return_time))}
    if not recent:
        return list(cands)
    out: list[Candidate] = []
    for c in cands:
        hit = recent.get(c.job_id)
        if hit is not None and _types(c.config, types) in hit[1]:
            job = hit[0]
            try:
                now_rate, there = float(job.throughput(job.current or {})), float(job.throughput(c.config))
            except Exception:  # noqa: BLE001 - no estimate: no evidence the move back is worth it
                continue
            if there < RETURN_GAIN * now_rate:
                continue
        out.append(c)
    return out


def no_return_explore(jobs: Sequence[JobView], cluster: ClusterView,
                      memory: Mapping[str, tuple[frozenset[str] | None, dict[frozenset[str], float]]],
                      now: float, return_time: float) -> list[JobView]:
    """``jobs`` with each running job's optimistic rate 0 on configs of GPU types it left recently."""
    types = {n.name: n.gpu_type for n in cluster.nodes}
    out: list[JobView] = []
    for j in jobs:
        recent = _recent(j, memory, now, return_time) if j.current and j.explore is not None else set()
        if not recent:
            out.append(j)
            continue

        def bound(cfg: Config, fn: object = j.explore, recent: set[frozenset[str]] = recent) -> float:
            return 0.0 if _types(cfg, types) in recent else fn(cfg)  # type: ignore[operator]

        out.append(dataclasses.replace(j, explore=bound))
    return out


__all__ = ["RETURN_GAIN", "Departures", "drop_returns", "no_return_explore", "observe"]
