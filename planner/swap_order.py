"""Narrower fragment swaps: which swaps may requeue the job they displace, and which job to displace.

Where it sits: :func:`planner.fragfill.swap_for_fragments` asks :func:`finishes_first` (``swap_shorter``)
and :class:`RestartWaits` (``swap_soonest``, ``swap_back``) about each swap that would leave the displaced
job out of the plan (``fragment_swaps``). Pure: job views, configs and the plan's idle GPUs in.

Why (docs/results/fragments.md, "Where the swaps' JCT goes"): on Table 4 the fragment swaps are almost
all one wide job (9-16 GPUs) taking the GPUs of another wide job (about 10 GPUs) and filling about 2 idle
GPUs; the displaced job waits in the queue about half an hour (median 0.2-0.4 h) before it runs again,
and the same jobs are displaced up to 6 times. On seed 0 the displaced jobs' JCT is what the swaps cost
(+18.8 job-hours against the defaults), while the jobs swapped in gain nothing on net.

Shorter first (``swap_shorter``, a ratio): a swap reorders two jobs of about the same width, and by
shortest-remaining-first a reorder gives back avg JCT when the job put in front ends later. So a swap
requeues the displaced job only when the waiting job's remaining time on the config it gets is at most
``ratio`` times the displaced job's remaining time where it is placed. A job whose remaining time is
unknown (no estimate, no age) is swapped as before.

Soonest back (``swap_soonest``): among the placed jobs that make a swap, the one expected to get GPUs
again first is displaced (:class:`RestartWaits`: by the plan's idle GPUs and the expected ends of the
running jobs the plan keeps, as :func:`planner.backfill.reservation` reads a head's start; the idle GPUs
of the displaced job's own types are not counted, the waiting job takes them), then the lowest worth.
``swap_back`` (seconds): a swap requeues only a job whose estimate is within that. On Table 3 seed 1 four
swaps displaced jobs the estimate gave 2.4-4.1 h; on Table 4 no displaced job's estimate passed 40
minutes. The estimate reads expected ends only and knows nothing of the queue, so it is rough both ways:
on Gavel's workload a job estimated back in 18 minutes waited 13 h (other waiting jobs took the GPUs),
on Table 3 seed 1 the four estimated 2.4-4.1 h away were back after 0.1-1.4 h.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from planner.backfill import _probe_config
from planner.moves import remaining_seconds
from planner.views import ClusterView, Config, JobView


def _left(job: JobView, config: Config) -> float | None:
    try:
        rate = max(float(job.throughput(config)), 0.0)
    except Exception:  # noqa: BLE001 - no estimate there: its age alone says what is left
        rate = 0.0
    return remaining_seconds(job, rate)


def finishes_first(waiting: JobView, config: Config, placed: JobView, placed_config: Config, ratio: float) -> bool:
    """Whether ``waiting`` on ``config`` needs at most ``ratio`` times what ``placed`` still needs on
    ``placed_config`` (True when either is unknown, or ``ratio`` is 0: the rule is off)."""
    if ratio <= 0.0:
        return True
    mine, theirs = _left(waiting, config), _left(placed, placed_config)
    if mine is None or theirs is None:
        return True
    return mine <= ratio * theirs


class RestartWaits:
    """Per planning: how long a job left out of the plan would wait for GPUs again (module docstring)."""

    def __init__(self, cluster: ClusterView, placed: Mapping[str, Config | None], jobs: Mapping[str, JobView],
                 idle: Mapping[str, int]) -> None:
        self._cluster = cluster
        self._type = {n.name: n.gpu_type for n in cluster.nodes}
        self._idle: dict[str, int] = {}
        for n, g in idle.items():
            self._idle[self._type[n]] = self._idle.get(self._type[n], 0) + g
        self._releases: dict[str, list[tuple[float, str, int]]] = {t: [] for t in cluster.gpu_types}
        for job_id, cfg in placed.items():
            job = jobs.get(job_id)
            if job is None or not cfg or not job.current or dict(job.current) != dict(cfg):
                continue  # a job the plan starts or moves: its end is not known here
            left = _left(job, cfg)
            end = math.inf if left is None else left
            for n, g in cfg.items():
                self._releases[self._type[n]].append((end, job_id, g))
        for rel in self._releases.values():
            rel.sort()
        self._memo: dict[str, float] = {}

    def wait(self, job: JobView, config: Config) -> float:
        """Seconds until enough GPUs of some type free up for ``job``'s smallest count once it leaves
        ``config`` (math.inf when none does by the known ends)."""
        if job.job_id in self._memo:
            return self._memo[job.job_id]
        need = job.requirements[0]
        own = {self._type[n] for n in config}
        best = math.inf
        for gpu_type, rel in self._releases.items():
            probe = _probe_config(self._cluster, gpu_type, need)
            if probe is None or not _rate_positive(job, probe):
                continue
            have, start = (0 if gpu_type in own else self._idle.get(gpu_type, 0)), 0.0
            for end, job_id, g in rel:
                if have >= need or end >= best:
                    break
                if job_id != job.job_id:
                    have, start = have + g, end
            if have >= need:
                best = min(best, start)
        self._memo[job.job_id] = best
        return best


def _rate_positive(job: JobView, config: Config) -> bool:
    try:
        return float(job.throughput(config)) > 0.0
    except Exception:  # noqa: BLE001 - no estimate there: not a type it can run on
        return False


__all__ = ["RestartWaits", "finishes_first"]
