"""Server entities: nodes whose estimated speed differs are never interchangeable for the planner.

Runs at the start of a planning in :mod:`planner.hops`, before configuration generation. The compact
ILP (:mod:`planner.ilp`) treats nodes of one (GPU type, server class) with the same free GPUs as
interchangeable; the server class comes from Slurm (node features). The paper's point is
heterogeneity awareness "at the server entity level": when the estimator has learned that one node
of a class is slower (its entity layer), that node must not stand for the others. This module
splits each declared class into *entity classes*: nodes stay in one class only while, for every
probe job, the estimated throughput of the job's smallest request on the node agrees within
``tolerance`` (relative, compared in log space buckets). Where nodes truly are alike nothing
changes and the model stays as compact as before.

Probe jobs: the planning's jobs in the order given (highest priority first), at most as many as
keep ``nodes × jobs`` estimates under :data:`PROBE_BUDGET` (never fewer than one). Deterministic:
it depends only on the views, never on a clock.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from planner.views import ClusterView, JobView, NodeView, freeze_config

#: at most this many throughput estimates per planning spent on finding entity classes
PROBE_BUDGET = 4096
#: separator between the declared class and the entity bucket in a derived class name
SEP = "~entity"


def _bucket(value: float, tolerance: float) -> int | None:
    if value <= 0.0 or not math.isfinite(value):
        return None
    return round(math.log(value) / math.log1p(tolerance))


def entity_classes(cluster: ClusterView, jobs: Sequence[JobView], tolerance: float) -> ClusterView:
    """``cluster`` with each server class split where its nodes' estimated speeds differ (see module
    docstring). ``tolerance`` ≤ 0 turns it off."""
    if tolerance <= 0.0 or not jobs:
        return cluster
    members: dict[tuple[str, str], list[NodeView]] = defaultdict(list)
    for n in cluster.nodes:
        members[(n.gpu_type, n.server_class)].append(n)
    shared = [ns for ns in members.values() if len(ns) > 1]
    n_shared = sum(len(ns) for ns in shared)
    if not n_shared:
        return cluster
    probes = list(jobs)[: max(1, PROBE_BUDGET // n_shared)]
    renamed: dict[str, str] = {}
    for nodes in shared:
        keys: dict[str, tuple[int | None, ...]] = {}
        for n in nodes:
            keys[n.name] = tuple(
                _bucket(float(j.throughput(freeze_config({n.name: min(j.requirements[0], n.total_gpus)}))), tolerance)
                for j in probes)
        distinct = list(dict.fromkeys(keys.values()))
        if len(distinct) == 1:
            continue
        for n in nodes:
            renamed[n.name] = f"{n.server_class}{SEP}{distinct.index(keys[n.name])}"
    if not renamed:
        return cluster
    return ClusterView(tuple(replace(n, server_class=renamed[n.name]) if n.name in renamed else n
                             for n in cluster.nodes))
