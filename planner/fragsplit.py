"""Spans Slurm splits as planned: a plan's uneven multi-node placements replayed through Slurm's split.

Where it sits: the last step of a planning of :class:`planner.hops.HopsPolicy` before ``outcome`` (the
end of stage ``swaps``, round and fragment plans alike), with the parameter ``split_spans`` (on by default). Pure: the plan, the
planning's free GPUs and the job views in, the plan out.

Why (docs/results/fragments.md, the classes of Table 4's fragments): an uneven config such as
``{a: 2, b: 6}`` is asked of Slurm as one per-job GPU count on those nodes, and Slurm 22.05 splits that
count greedily in node order over the GPUs free at that moment (each node takes as many as it can while
leaving one for every node after it). The enactor places it only when that split is the planned one, and
refuses it otherwise (``hops_slurm/slurm/enact.py``; the fast simulator the same, ``hops_slurm/sim/split.py``):
the job waits, a running job that the plan moved there is preempted for nothing, and its GPUs stay idle
while it waits: fragments. On Table 4 seed 0 with the defaults, 92 placements (1,289 GPUs) were refused so.

Rule: replay the enactor's split over the plan, in the order the plan lists its jobs, with the GPUs
free at enactment (the planning's free GPUs less those of the running jobs the plan keeps where they
are; each new placement takes its GPUs from those after it). For the first placement that Slurm would
not split as planned: a running job whose current GPUs no other placement of the plan uses stays where it
is (no move); otherwise the job gets Slurm's own split of its GPU count on the same nodes when those GPUs
are idle in the plan and the job has a positive estimate there; otherwise it is left out (as the enactor
would leave it). Then the replay starts again, until every placement is split as planned (at most one
round per placement). The node order is the cluster view's (both backends list nodes in Slurm's order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from planner.views import ClusterView, Config, freeze_config


def greedy_split(total: int, nodes: Sequence[str], free: Mapping[str, int]) -> dict[str, int] | None:
    """How Slurm 22.05 splits ``--gpus=total`` over required ``nodes`` (in node order) with ``free`` GPUs per
    node: each node takes as many as it can while leaving one for every node after it; None when they cannot
    hold it. (Observed: 6 GPUs on two idle 8-GPU nodes -> 5+1; 4 on two idle 4-GPU nodes -> 3+1.) The one
    statement of the rule: the enactor's check (:func:`hops_slurm.slurm.placement.realisable`) calls it too."""
    out: dict[str, int] = {}
    left = total
    for i, node in enumerate(nodes):
        take = min(free.get(node, 0), left - (len(nodes) - i - 1))
        if take < 1:
            return None
        out[node] = take
        left -= take
    return out if left == 0 else None


def split_as_planned(config: Mapping[str, int], free: Mapping[str, int], rank: Mapping[str, int]) -> bool:
    """Whether Slurm places exactly ``config``: an even split always (it waits for busy GPUs), an uneven one
    only when the greedy split of the GPUs ``free`` now is that config (``rank``: node -> its place)."""
    if len(set(config.values())) <= 1:
        return True
    if any(g > free.get(n, 0) for n, g in config.items()):
        return False
    nodes = sorted(config, key=lambda n: rank.get(n, len(rank)))
    return greedy_split(sum(config.values()), nodes, free) == {n: config[n] for n in nodes}


def _rate(throughput: Callable[[Config], float], cfg: Config) -> float:
    try:
        return float(throughput(cfg))
    except Exception:  # noqa: BLE001 - no estimate there: not placed there
        return 0.0


def _first_refused(chosen: Mapping[str, Config | None], order: Sequence[str], capacity: Mapping[str, int],
                   current: Mapping[str, Config], rank: Mapping[str, int]) -> tuple[str, dict[str, int]] | None:
    """The first job of ``order`` whose placement the enactor would refuse, with the GPUs free when its turn
    comes; None when every placement is split as planned."""
    free = dict(capacity)
    for job_id, cfg in chosen.items():  # running jobs kept where they are hold their GPUs from the start
        if cfg and job_id in current and dict(cfg) == dict(current[job_id]):
            for n, g in cfg.items():
                free[n] = free.get(n, 0) - g
    for job_id in order:
        cfg = chosen.get(job_id)
        if not cfg or (job_id in current and dict(cfg) == dict(current[job_id])):
            continue
        if not split_as_planned(cfg, free, rank):
            return job_id, free
        for n, g in cfg.items():
            free[n] = free.get(n, 0) - g
    return None


def keep_splittable(chosen: Mapping[str, Config | None], order: Sequence[str], capacity: Mapping[str, int],
                    current: Mapping[str, Config], throughput: Mapping[str, Callable[[Config], float]],
                    cluster: ClusterView) -> tuple[dict[str, Config | None], dict[str, str]]:
    """``chosen`` with every placement Slurm would not split as planned changed as the module docstring says,
    and what was changed (job id -> "kept" | "resplit" | "left out"). ``order``: the jobs in the order the
    plan lists them; ``capacity``: the GPUs per node the planning distributes; ``current``: the running
    jobs' configs; ``throughput``: each job's estimate."""
    out: dict[str, Config | None] = dict(chosen)
    rank = {n.name: i for i, n in enumerate(cluster.nodes)}
    changed: dict[str, str] = {}
    for _ in range(len(order) + 1):
        hit = _first_refused(out, order, capacity, current, rank)
        if hit is None:
            break
        job_id, free = hit
        cfg = out[job_id] or {}
        others: dict[str, int] = {}
        for j, c in out.items():
            if j != job_id:
                for n, g in (c or {}).items():
                    others[n] = others.get(n, 0) + g
        cur = current.get(job_id)
        if cur and all(others.get(n, 0) + g <= capacity.get(n, 0) for n, g in cur.items()):
            out[job_id], changed[job_id] = freeze_config(cur), "kept"
            continue
        nodes = sorted(cfg, key=lambda n: rank.get(n, len(rank)))
        # the job's own planned GPUs and the ones the plan leaves idle: no other placement is touched
        room = {n: min(free.get(n, 0), capacity.get(n, 0) - others.get(n, 0)) for n in nodes}
        split = greedy_split(sum(cfg.values()), nodes, room)
        rate = throughput.get(job_id)
        if (split is not None and rate is not None and split_as_planned(split, free, rank)
                and _rate(rate, freeze_config(split)) > 0.0):
            out[job_id], changed[job_id] = freeze_config(split), "resplit"
        else:
            out[job_id], changed[job_id] = None, "left out"
    return out, changed


__all__ = ["greedy_split", "keep_splittable", "split_as_planned"]
