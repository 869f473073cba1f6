"""Fragment growth: a round plan grows a running job into idle GPUs that no waiting job can use (``fragment_growth``).

Where it sits: the ``swaps`` stage of :class:`planner.hops.HopsPolicy`, in round plans only, after the
fragment swaps (:mod:`planner.fragfill`) and before Slurm's split is checked (:mod:`planner.fragsplit`).
Pure: job views, the plan and the planning's capacity in, the plan out.

Why (docs/results/fragments.md, "Fragments under the JCT combination"): under the candidate default
(stretch weights, no restart or preemption premium, the bounded head reservation) most of Table 4's
fragments are idle GPUs of a type on which every waiting job needs more GPUs than are idle, while a
running job of that type could take a larger GPU count it accepts with them. The fragment plans that
follow the round plan place waiting jobs only, so those GPUs stay idle until enough free up for a wide
job.

The rule: for each GPU type whose idle GPUs (the planning's capacity less the plan's placements) no job
the plan leaves without GPUs could use by count (its smallest request is larger; such a job is left to
the fragment plans), and that is not the type held for the queue head's reservation, a running job that
the plan keeps where it runs, on that type only, may move to a config on its own nodes and those idle
GPUs with more GPUs than it holds, when the move saves it at least ``min_saving`` seconds
(:func:`planner.moves.move_price`: its remaining work at the new rate, its restart and lost work paid).
The job that saves the most goes first; the GPUs it takes are no longer idle. The move is a preemption
(a restart), counted as one; a later round plan may shrink the job back (another).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.configs import generate_configs
from planner.moves import current_rate, move_price, rate_on
from planner.views import ClusterView, Config, JobView, config_gpus, freeze_config


def idle_after(chosen: Mapping[str, Config | None], capacity: Mapping[str, int]) -> dict[str, int]:
    """Each node's GPUs the plan ``chosen`` leaves idle out of the planning's ``capacity``."""
    idle = dict(capacity)
    for cfg in chosen.values():
        for n, g in (cfg or {}).items():
            idle[n] = idle.get(n, 0) - g
    return {n: max(g, 0) for n, g in idle.items()}


def _best_growth(job: JobView, cluster: ClusterView, idle: Mapping[str, int], sigma: float,
                 min_saving: float) -> tuple[Config, float] | None:
    """The config of running ``job`` on its own GPUs and the ``idle`` ones, with more GPUs than it holds,
    that saves it the most (at least ``min_saving`` seconds); None when none does."""
    current = dict(job.current or {})
    view = cluster.with_free(lambda n: current.get(n.name, 0) + idle.get(n.name, 0))
    held, rate_now = sum(current.values()), current_rate(job)
    best: tuple[Config, float] | None = None
    for cfg in generate_configs(job, view, sigma):
        if config_gpus(cfg) <= held:
            continue
        saves = move_price(job, rate_now, rate_on(job, cfg)).saves
        if saves >= min_saving and saves > 0.0 and (best is None or saves > best[1]):
            best = (cfg, saves)
    return best


def grow_into_fragments(chosen: Mapping[str, Config | None], jobs: Sequence[JobView], queue: Sequence[JobView],
                        cluster: ClusterView, capacity: Mapping[str, int], sigma: float, min_saving: float,
                        held_type: str = "") -> tuple[dict[str, Config | None], dict[str, int]]:
    """``chosen`` with running jobs grown into idle GPUs no unplaced job can use (module docstring), and
    the jobs grown -> the GPUs they took beyond those they held. ``jobs``: the planning's jobs;
    ``queue``: every waiting job (the window's and those behind it); ``held_type``: the GPU type of the
    queue head's reservation ("" when none)."""
    out = dict(chosen)
    idle = idle_after(out, capacity)
    type_of = {n.name: n.gpu_type for n in cluster.nodes}
    smallest = [j.requirements[0] for j in [*jobs, *queue] if not out.get(j.job_id)]
    if not smallest:
        return out, {}
    grown: dict[str, int] = {}
    for gpu_type in cluster.gpu_types:
        if gpu_type == held_type:
            continue
        free = sum(g for n, g in idle.items() if type_of.get(n) == gpu_type)
        if free <= 0 or min(smallest) <= free:
            continue
        kept = [j for j in jobs if j.current and out.get(j.job_id) is not None
                and dict(out[j.job_id] or {}) == dict(j.current)
                and {type_of.get(n) for n in j.current} == {gpu_type}
                and any(r > config_gpus(j.current) for r in j.requirements)]
        options = []
        for job in kept:
            found = _best_growth(job, cluster, {n: g for n, g in idle.items() if type_of.get(n) == gpu_type},
                                 sigma, min_saving)
            if found is not None:
                options.append((-found[1], job.job_id, job, found[0]))
        for _, job_id, job, cfg in sorted(options, key=lambda o: (o[0], o[1])):
            current = dict(job.current or {})
            if any(g > current.get(n, 0) + idle.get(n, 0) for n, g in cfg.items()):
                continue  # an earlier growth took those GPUs
            for n, g in current.items():
                idle[n] = idle.get(n, 0) + g
            for n, g in cfg.items():
                idle[n] -= g
            out[job_id] = freeze_config(cfg)
            grown[job_id] = config_gpus(cfg) - sum(current.values())
    return out, grown


__all__ = ["grow_into_fragments", "idle_after"]
