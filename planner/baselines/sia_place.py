"""Sia's placement step: from the ILP's (pool, nodes, GPUs) choices to nodes, as Sia's placer does it.

Data flow: :class:`planner.baselines.sia.SiaPolicy` solves its ILP over per-pool GPU counts (a pool is
Sia's uniform "cluster": the nodes of one GPU type with one node size) and hands the chosen configs here;
this module returns node-exact configs for the simulator or engine to enact.

The rules are those of Sia's placer for a real cluster (the artifact's ``alloc_to_placement_smart``,
sia-simulator/sia.py; its simulator uses a "fast" variant that ignores node boundaries, which a
node-exact simulator cannot):

1. A running job whose chosen config equals its current one keeps its nodes (no restart).
2. The others, in decreasing GPU count: a config of one node goes on the best-fitting node (the fewest
   free GPUs that suffice); a config of several nodes goes on the pool's nodes with the most free GPUs
   (whole nodes when there are; a rigid count that is not a multiple of the node size, which Sia's own
   configs never are, fills all but its last node and puts the rest on the last).
3. When a job does not fit (the ILP only counted GPUs per pool), Sia evicts: for a multi-node or
   whole-node job, every single-node job on the node with the most free GPUs, node after node; for a
   smaller job, the smallest jobs on the node that lacks the fewest GPUs. Evicted jobs go back in the
   queue and are placed again by the same rules. Here only jobs kept in step 1 can be evicted, and each
   at most once, so the step always ends (Sia asserts instead); a job that still does not fit waits for
   the next round (``unplaced``).

Pure: no clock, no globals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from planner.baselines.common import free_by_node, take
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config


def place(cluster: ClusterView, jobs: Mapping[str, JobView], chosen: Mapping[str, tuple[int, int]],
          pool_nodes: Callable[[str], tuple[NodeView, ...]],
          keeps: Callable[[str, Config], bool]) -> tuple[dict[str, Config | None], list[str], list[str]]:
    """Node-exact configs for the jobs in ``chosen`` (job -> (nodes, GPUs) in its chosen pool).

    ``pool_nodes(job)`` are the nodes of the job's chosen pool it may use, in cluster order;
    ``keeps(job, current)`` says whether the job's current config is its chosen one (rule 1).
    Returns (config or None for every job in ``jobs``, the chosen jobs left unplaced, the kept jobs evicted).
    """
    free = free_by_node(cluster)
    out: dict[str, Config | None] = {jid: None for jid in jobs}
    kept: dict[str, Config] = {}
    for jid in chosen:
        cur = jobs[jid].current
        if cur and keeps(jid, cur) and all(free.get(n, 0) >= g for n, g in cur.items()):
            out[jid] = kept[jid] = cur
            take(free, cur)
    queue = sorted((jid for jid in chosen if jid not in kept), key=lambda jid: (-chosen[jid][1], jid))
    unplaced: list[str] = []
    evicted: list[str] = []
    while queue:
        jid = queue.pop(0)
        n_nodes, gpus = chosen[jid]
        nodes = pool_nodes(jid)
        config = fit(free, nodes, n_nodes, gpus)
        if config is None:
            gone = _evict(free, nodes, n_nodes, gpus, kept)
            if gone:
                for other in gone:
                    out[other] = None
                evicted.extend(gone)
                queue = sorted(queue + gone, key=lambda j: (-chosen[j][1], j))
                config = fit(free, nodes, n_nodes, gpus)
        if config is None:
            unplaced.append(jid)
            continue
        out[jid] = config
        take(free, config)
    return out, unplaced, evicted


def fit(free: Mapping[str, int], nodes: tuple[NodeView, ...], n_nodes: int, gpus: int) -> Config | None:
    """``gpus`` GPUs on exactly ``n_nodes`` of ``nodes`` by rule 2, or None; ``free`` is not changed."""
    if n_nodes == 1:
        fits = [n for n in nodes if free.get(n.name, 0) >= gpus]
        if not fits:
            return None
        best = min(fits, key=lambda n: free[n.name])  # the first of the best-fitting ones in cluster order
        return freeze_config({best.name: gpus})
    ranked = sorted(nodes, key=lambda n: -free.get(n.name, 0))[:n_nodes]
    if len(ranked) < n_nodes or sum(free.get(n.name, 0) for n in ranked) < gpus:
        return None
    config: dict[str, int] = {}
    left = gpus
    for i, n in enumerate(ranked):
        # leave at least one GPU for each remaining node so the job spans exactly n_nodes nodes
        room = min(free.get(n.name, 0), left - (n_nodes - 1 - i))
        if room <= 0:
            return None
        config[n.name] = room
        left -= room
    return freeze_config(config) if left == 0 else None


def _evict(free: dict[str, int], nodes: tuple[NodeView, ...], n_nodes: int, gpus: int,
           kept: dict[str, Config]) -> list[str]:
    """Rule 3: evict kept single-node jobs until the job fits; the evicted jobs (their GPUs returned to
    ``free``, removed from ``kept``), or none (nothing changed) when no eviction makes it fit."""
    names = {n.name for n in nodes}
    on_node: dict[str, list[str]] = {}
    for jid, cfg in kept.items():
        if len(cfg) == 1:
            (node,) = cfg
            if node in names:
                on_node.setdefault(node, []).append(jid)
    if not on_node:
        return []
    trial = dict(free)
    gone: list[str] = []
    size = max(n.total_gpus for n in nodes)
    if n_nodes > 1 or gpus >= size:
        # the node with the most free GPUs first, all its single-node jobs, until the job fits
        order = sorted((n for n in nodes if n.name in on_node), key=lambda n: -trial.get(n.name, 0))
        for n in order:
            for jid in on_node[n.name]:
                trial[n.name] += kept[jid][n.name]
                gone.append(jid)
            if fit(trial, nodes, n_nodes, gpus) is not None:
                break
        else:
            return []
    else:
        # the node that lacks the fewest GPUs and can be freed enough; its smallest jobs first
        lacking = sorted((n for n in nodes if n.name in on_node and trial.get(n.name, 0) < gpus),
                         key=lambda n: gpus - trial.get(n.name, 0))
        for n in lacking:
            room = trial.get(n.name, 0) + sum(kept[j][n.name] for j in on_node[n.name])
            if room < gpus:
                continue
            for jid in sorted(on_node[n.name], key=lambda j: (kept[j][n.name], j)):
                if trial[n.name] >= gpus:
                    break
                trial[n.name] += kept[jid][n.name]
                gone.append(jid)
            break
        else:
            return []
    for jid in gone:
        del kept[jid]
    free.update(trial)
    return gone
