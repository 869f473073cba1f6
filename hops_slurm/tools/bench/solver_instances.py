"""The solver bench's instances: round-plan clusters and queues like the paper's simulation (§4.3).

Used by :mod:`hops_slurm.tools.bench.solver` (both its parts) and :mod:`hops_slurm.tools.bench.solver_speeds`, and by
the planner tests that need realistic instances: five server classes over three GPU types, 8 GPUs per
node, about a third of the nodes partly or fully held, requirement sets between 1 and 16 GPUs, a
synthetic throughput per job (per-class speed, sublinear scaling, a cross-node penalty, optionally a
speed factor per node).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from planner.views import ClusterView, Config, JobView, NodeView

# The paper's 512-GPU cluster (§4.3): (gpu_type, server_class, share of the nodes, speed factor).
# Speeds are relative per-GPU rates for this synthetic benchmark, not measured data.
CLASSES: tuple[tuple[str, str, float, float], ...] = (
    ("1080ti", "1080ti-w780g", 2 / 8, 1.0),
    ("titanxp", "titanxp-w780g", 2 / 8, 1.15),
    ("rtx3090", "rtx3090-w780g", 2 / 8, 2.1),
    ("rtx3090", "rtx3090-yk8100-8g", 1 / 8, 2.2),
    ("rtx3090", "rtx3090-yk8100-10g", 1 / 8, 2.35),
)
GPUS_PER_NODE = 8


def make_cluster(total_gpus: int, rng: random.Random) -> ClusterView:
    """Nodes of the five classes in proportion; about a third of the nodes partly or fully held by
    jobs outside this planning (the free-GPU pattern a round meets). Node speeds, when the instance
    has them (:func:`node_speeds`), come from a separate generator so the nodes are the same."""
    n_nodes = total_gpus // GPUS_PER_NODE
    counts = [max(1, round(share * n_nodes)) for _, _, share, _ in CLASSES]
    counts[0] += n_nodes - sum(counts)
    nodes: list[NodeView] = []
    for (gpu_type, cls, _, _), count in zip(CLASSES, counts, strict=True):
        for k in range(count):
            r = rng.random()
            free = GPUS_PER_NODE if r < 0.65 else (0 if r < 0.75 else rng.randint(1, GPUS_PER_NODE - 1))
            nodes.append(NodeView(f"{cls}-{k:03d}", gpu_type, cls, GPUS_PER_NODE, free))
    return ClusterView(tuple(nodes))


@dataclass(frozen=True)
class _Model:
    """A synthetic job's throughput: per-GPU speed per class, sublinear scaling, a cross-node penalty."""

    base: float
    speed: dict[str, float]
    scaling: float
    sensitivity: float
    classes: dict[str, str]
    entity: dict[str, float] | None = None  # node -> speed factor within its class

    def __call__(self, config: Config) -> float:
        gpus = sum(config.values())
        if gpus == 0:
            return 0.0
        ent = self.entity
        # the slowest node sets the pace
        rate = min(self.speed[self.classes[n]] * (ent[n] if ent else 1.0) for n in config)
        thr = self.base * rate * gpus ** self.scaling
        return thr / self.sensitivity if len(config) > 1 else thr


def node_speeds(cluster: ClusterView, seed: int) -> dict[str, float]:
    """Every node its own speed factor in [0.6, 1.0] (the estimator's entity layer having learned each
    server): the planner's entity classes split the declared classes by them."""
    rng = random.Random(seed)
    return {n.name: rng.uniform(0.6, 1.0) for n in cluster.nodes}


def make_jobs(cluster: ClusterView, n_jobs: int, rng: random.Random,
              entity: dict[str, float] | None = None) -> tuple[JobView, ...]:
    classes = {n.name: n.server_class for n in cluster.nodes}
    speeds = {cls: s for _, cls, _, s in CLASSES}
    jobs: list[JobView] = []
    for i in range(n_jobs):
        r1 = rng.choice((1, 1, 1, 1, 2, 2, 2, 4, 4, 8, 16))
        extra = rng.randint(0, 3)
        reqs = sorted({r1, *(min(16, r1 * rng.choice((2, 3, 4))) for _ in range(extra))})
        sens = rng.choice((1.05, 1.1, 1.2, 1.3, 1.5, 1.8, 2.2))
        model = _Model(
            base=rng.uniform(50, 500),
            speed={c: s * rng.uniform(0.85, 1.15) for c, s in speeds.items()},
            scaling=rng.uniform(0.8, 0.98),
            sensitivity=sens,
            classes=classes,
            entity=entity,
        )
        age = rng.uniform(0.2, 40) * 3600
        jobs.append(JobView(
            job_id=f"j{i:05d}", requirements=tuple(reqs), submit_time=-rng.uniform(0, 20000),
            wait=rng.uniform(0, 20000), age=age, sensitivity=sens, throughput=model,
        ))
    return tuple(jobs)



def pct(xs: Sequence[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, max(0, math.ceil(q * len(ys)) - 1))]
