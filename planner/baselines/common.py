"""Shared helpers for the baseline policies: priorities, type-level views and node placement.

Sits between :mod:`planner.views` (the cluster and job views every policy reads) and the baseline
policies in this package. Type-level schedulers (Gavel, Sia) decide per GPU *type*; they then need a
throughput for "n GPUs of type t" and, once decided, a concrete node placement for the simulator to
enact. Both live here so the policies differ only in what their papers say.

Everything here is pure: no clock, no globals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from planner.priorities import latency_ratio  # noqa: F401  (re-exported for the baselines)


def lr_weights(jobs: Sequence[JobView], exponent: float = 1.0) -> dict[str, float]:
    """Priority weights ``(prior_i + bias) ** exponent`` with the LR priority (Hops eq. 11).

    ``bias = |min prior| + 0.01`` when any prior is <= 0, else 0 (the project's reading of eq. 11,
    docs/design.md, "Reading the paper"), so every weight is positive.
    """
    priors = {j.job_id: latency_ratio(j) for j in jobs}
    if not priors:
        return {}
    low = min(priors.values())
    bias = abs(low) + 0.01 if low <= 0 else 0.0
    return {jid: (p + bias) ** exponent for jid, p in priors.items()}


def solver_weights(weights: Mapping[str, float], floor: float = 1e-4) -> dict[str, float]:
    """Weights scaled so the largest is 1, with a floor of ``floor`` for the rest.

    LR weights can span many orders of magnitude (a job that waited a microsecond among jobs that
    waited hours); coefficients like 1/w then break the LP/ILP solvers (CBC aborts on 1e46). Scaling by
    a common factor changes neither Gavel's nor Sia's optimum; the floor only touches weights already
    10,000 times below the largest.
    """
    if not weights:
        return {}
    top = max(weights.values())
    if top <= 0:
        raise ValueError(f"weights must be positive, got {dict(weights)}")
    return {k: max(w / top, floor) for k, w in weights.items()}


def median_requirement(job: JobView) -> int:
    """The rigid GPU count the Hops paper gave Gavel: the median of the requirement set.

    For an even number of choices the lower median is used, so the count is one the user accepts.
    """
    reqs = job.requirements
    return reqs[(len(reqs) - 1) // 2]


def representative_config(cluster: ClusterView, gpu_type: str, gpus: int, nodes: int | None = None) -> Config | None:
    """A config of ``gpus`` GPUs of ``gpu_type`` a type-level scheduler uses to look up throughput.

    Type-level schedulers cannot tell servers of one type apart, so every "n GPUs of type t" decision
    is evaluated on the same stand-in, sized by *total* GPUs (free counts would make the estimate
    change with load): what :func:`place_consolidated` would choose on the idle type — one node if one
    can hold the job (the smallest such, then cluster order), else nodes filled in decreasing order of
    size (then cluster order), the last partly. Where a type's nodes all have one size, as Gavel's
    paper assumes, that is simply its first nodes in cluster order; where sizes mix (the Alibaba
    fleet), a job that fits one server is not estimated spread over the first, smaller ones. With
    ``nodes`` given, the GPUs are spread as evenly as possible over exactly that many first nodes
    (Sia's (type, nodes, GPUs) configs). ``None`` when the type has too few GPUs or nodes.
    """
    of_type = cluster.nodes_of_type(gpu_type)
    if gpus <= 0 or sum(n.total_gpus for n in of_type) < gpus:
        return None
    if nodes is None:
        whole = [n for n in of_type if n.total_gpus >= gpus]
        if whole:
            return freeze_config({min(whole, key=lambda n: n.total_gpus).name: gpus})
        config: dict[str, int] = {}
        left = gpus
        for n in sorted(of_type, key=lambda n: -n.total_gpus):
            take = min(n.total_gpus, left)
            config[n.name] = take
            left -= take
            if left == 0:
                break
        return freeze_config(config)
    if nodes > len(of_type) or nodes > gpus:
        return None
    chosen = of_type[:nodes]
    base, extra = divmod(gpus, nodes)
    config = {}
    for i, n in enumerate(chosen):
        want = base + (1 if i < extra else 0)
        if want > n.total_gpus:
            return None
        config[n.name] = want
    return freeze_config(config)


def free_by_node(cluster: ClusterView) -> dict[str, int]:
    """Free GPUs per node, a mutable copy the placement steps consume."""
    return {n.name: n.free_gpus for n in cluster.nodes}


def place_consolidated(free: Mapping[str, int], nodes: Iterable[NodeView], gpus: int) -> Config | None:
    """Consolidated-first placement of ``gpus`` GPUs on ``nodes`` (Gavel §5: same server when possible).

    If one node can hold the job, the best-fitting one (fewest free GPUs that still suffice, then
    cluster order) is used; otherwise nodes are filled in decreasing order of free GPUs, the last
    partly. ``None`` when the nodes do not have ``gpus`` free GPUs together. ``free`` is not changed.
    """
    nodes = list(nodes)
    fits = [n for n in nodes if free.get(n.name, 0) >= gpus]
    if fits:
        best = min(fits, key=lambda n: free[n.name])
        return freeze_config({best.name: gpus})
    if sum(free.get(n.name, 0) for n in nodes) < gpus:
        return None
    config: dict[str, int] = {}
    left = gpus
    for n in sorted(nodes, key=lambda n: -free.get(n.name, 0)):
        take = min(free.get(n.name, 0), left)
        if take > 0:
            config[n.name] = take
            left -= take
        if left == 0:
            break
    return freeze_config(config)


def take(free: dict[str, int], config: Config) -> None:
    """Remove ``config``'s GPUs from ``free`` (raises if that would overcommit a node)."""
    for node, g in config.items():
        if free.get(node, 0) < g:
            raise ValueError(f"placement overcommits node {node}: {g} GPUs wanted, {free.get(node, 0)} free")
        free[node] -= g


def fits(free: Mapping[str, int], config: Config) -> bool:
    """Whether ``config`` fits in the free GPUs ``free``."""
    return all(free.get(node, 0) >= g for node, g in config.items())
