"""From what Slurm reports to what the planner reads: nodes and GPU use -> :class:`planner.views.ClusterView`.

Where it sits: the live engine reads ``api.nodes()`` and ``api.jobs()`` each refresh and builds the
cluster view for a round plan (running Hops jobs' GPUs counted free, as they are re-planned) or a
fragment plan (only idle GPUs). Job views need the estimator and the profiler and are built by the engine.
"""

from __future__ import annotations

from planner.views import ClusterView, Config, NodeView, freeze_config

from hops_slurm.slurm.api import SlurmJob, SlurmNode


def server_class(node: SlurmNode) -> str:
    """The node's entity class: a feature other than its GPU type (the minicluster exports
    ``server_class`` as a feature), else the GPU type."""
    return next((f for f in node.features if f != node.gpu_type), node.gpu_type)


def cluster_view(nodes: list[SlurmNode], jobs: list[SlurmJob], *, fragment: bool, partition: str | None = "hops") -> ClusterView:
    """GPU nodes in ``partition`` (None: all) that can run jobs, in Slurm's node order."""
    hops_used: dict[str, int] = {}
    for job in jobs:
        if job.is_hops and job.active:
            for n, idx in job.gpu_alloc.items():
                hops_used[n] = hops_used.get(n, 0) + len(idx)
    views = []
    for n in nodes:
        if n.gpus_total == 0 or not n.usable or (partition is not None and partition not in n.partitions):
            continue
        used = len(n.gpus_used) if fragment else len(n.gpus_used) - hops_used.get(n.name, 0)
        free = max(0, min(n.gpus_total, n.gpus_total - used))
        views.append(NodeView(name=n.name, gpu_type=n.gpu_type, server_class=server_class(n), total_gpus=n.gpus_total, free_gpus=free))
    return ClusterView(nodes=tuple(views))


def current_configs(jobs: list[SlurmJob]) -> dict[str, Config]:
    """Running Hops jobs -> the config they hold now (for ``JobView.current``)."""
    return {j.job_id: freeze_config(j.gpu_config()) for j in jobs if j.is_hops and j.active and j.gpu_alloc}
