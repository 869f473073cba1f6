"""Server entities: nodes whose estimated speed differs are never interchangeable for the planner.

Runs at the start of a planning in :mod:`planner.hops`, before configuration generation. The compact
ILP (:mod:`planner.ilp`) treats nodes of one (GPU type, server class) with the same free GPUs as
interchangeable; the server class comes from Slurm (node features). The paper's point is
heterogeneity awareness "at the server entity level": when the estimator has learned that one node
of a class is slower (its entity layer), that node must not stand for the others. This module
splits each declared class into *entity classes*: nodes stay in one class only while, for every
probe job, the estimated throughput of the job's smallest request on the node agrees within
``tolerance`` (relative) with the class's anchor node: nodes are taken fastest first, each joins the
first entity class whose anchor it is that close to, else it anchors a new one. Where nodes truly are alike nothing
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
    limit = math.log1p(tolerance)
    for nodes in shared:
        logs: dict[str, tuple[float, ...]] = {}
        for n in nodes:
            thr = [float(j.throughput(freeze_config({n.name: min(j.requirements[0], n.total_gpus)}))) for j in probes]
            logs[n.name] = tuple(math.log(t) if t > 0.0 and math.isfinite(t) else -math.inf for t in thr)
        # anchors: walk the nodes fastest first (by the probe jobs' estimates); a node joins the first
        # entity class whose anchor it is within the tolerance of for every probe job, else anchors a
        # new one
        order = sorted(nodes, key=lambda n: tuple(-x for x in logs[n.name]))
        anchors: list[str] = []
        member: dict[str, int] = {}
        for n in order:
            for k, a in enumerate(anchors):
                if all(x == y or abs(x - y) <= limit for x, y in zip(logs[n.name], logs[a], strict=True)):
                    member[n.name] = k
                    break
            else:
                member[n.name] = len(anchors)
                anchors.append(n.name)
        if len(anchors) == 1:
            continue
        for n in nodes:
            renamed[n.name] = f"{n.server_class}{SEP}{member[n.name]}"
    if not renamed:
        return cluster
    return ClusterView(tuple(replace(n, server_class=renamed[n.name]) if n.name in renamed else n
                             for n in cluster.nodes))
