"""Configuration generation (Hops §3.6): the candidate placements of each window job.

Third step of a planning, after the window (:mod:`planner.window`) and before the ILP
(:mod:`planner.ilp`). A configuration names exact nodes and GPU counts (``{node: gpus}``).

Per GPU type, with S_t the free GPUs of node t and R = (R_1 < ... < R_n) the job's requirements:

* aggregated: ``{t: R_k}`` for every node t of the type with R_k ≤ S_t (the paper's "R_k < S_t" read
  as ≤: docs/design.md, "Reading the paper: the smaller choices");
* distributed, for low-sensitivity jobs (ρ ≤ σ), and for high-sensitivity jobs only when R_1 exceeds
  the largest node of the type (they cannot run otherwise): from each start node, the consecutive
  nodes of the type (cluster order, nodes with free GPUs), each filled with all its free GPUs, the
  last one partly, until R_k is reached; a start whose first node alone holds R_k is the aggregated
  config already. Two pointers keep this O(N_type) per requirement; once the nodes from a start can
  no longer hold R_k, later starts are not tried (the paper's stopping rule).

A running job's current config is a candidate too whenever it still fits the free GPUs and its size
is one of the requirements, so the ILP can always keep a job where it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.views import ClusterView, Config, JobView, NodeView, config_gpus, freeze_config


def aggregated_configs(nodes: Sequence[NodeView], requirement: int, *, one_per_class: bool = False) -> list[Config]:
    """``{t: R}`` on every node with room; with ``one_per_class`` only the first such node of each
    server class (for the compact ILP, where nodes of a class are interchangeable)."""
    out: list[Config] = []
    seen: set[str] = set()
    for n in nodes:
        if requirement <= n.free_gpus and not (one_per_class and n.server_class in seen):
            seen.add(n.server_class)
            out.append(freeze_config({n.name: requirement}))
    return out


def distributed_configs(nodes: Sequence[NodeView], requirement: int) -> list[Config]:
    """Spanning configs from every start over ``nodes`` (one type, cluster order), O(len(nodes))."""
    usable = [n for n in nodes if n.free_gpus > 0]
    out: list[Config] = []
    end = 0  # nodes usable[start:end] are in the current span
    acc = 0  # their free GPUs
    for start in range(len(usable)):
        if end < start:
            end, acc = start, 0
        while end < len(usable) and acc < requirement:
            acc += usable[end].free_gpus
            end += 1
        if acc < requirement:
            break  # fewer nodes left than this requirement needs: no longer spans from later starts
        if usable[start].free_gpus < requirement:
            span = usable[start:end]
            placed = {n.name: n.free_gpus for n in span[:-1]}
            placed[span[-1].name] = requirement - sum(placed.values())
            out.append(freeze_config(placed))
        acc -= usable[start].free_gpus
    return out


def is_high_sensitivity(job: JobView, sigma: float) -> bool:
    return job.sensitivity > sigma


def generate_configs(job: JobView, cluster: ClusterView, sigma: float, *, one_per_class: bool = False) -> list[Config]:
    """All candidate configs of ``job`` on ``cluster``'s free GPUs (see module docstring), no duplicates.

    ``one_per_class``: aggregated configs only on the first fitting node of each server class (the
    compact ILP stands one config for all interchangeable nodes of a class)."""
    seen: dict[tuple[tuple[str, int], ...], Config] = {}

    def add(cfg: Config) -> None:
        seen.setdefault(tuple(cfg.items()), cfg)

    high = is_high_sensitivity(job, sigma)
    for gpu_type in cluster.gpu_types:
        of_type = cluster.nodes_of_type(gpu_type)
        largest = max(n.total_gpus for n in of_type)
        for r in job.requirements:
            for cfg in aggregated_configs(of_type, r, one_per_class=one_per_class):
                add(cfg)
        if not high or job.requirements[0] > largest:
            for r in job.requirements:
                for cfg in distributed_configs(of_type, r):
                    add(cfg)
    if job.current:
        cur = freeze_config(job.current)
        fits = all(n in {x.name for x in cluster.nodes} and g <= cluster.node(n).free_gpus for n, g in cur.items())
        spans_ok = len(cur) == 1 or not high or all(
            job.requirements[0] > max(n.total_gpus for n in cluster.nodes_of_type(cluster.node(name).gpu_type))
            for name in cur
        ) if fits else False
        if cur and fits and spans_ok and config_gpus(cur) in job.requirements:
            add(cur)
    return list(seen.values())
