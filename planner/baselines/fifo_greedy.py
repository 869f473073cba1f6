"""``fifo-greedy``: a simple real policy, first come, first served, that never preempts.

Where it sits: one of the names :func:`planner.policies.make_policy` knows; the simulator's tests use
it as a policy whose every decision can be predicted by hand. Running jobs keep their config; pending
jobs in submission order get the first config that fits: for each acceptable GPU count from largest to
smallest, the first single node (cluster order) with enough free GPUs, else consecutive nodes of one
GPU type filled with their free GPUs. Supports fragment plans (fills GPUs freed inside a round).
"""

from __future__ import annotations

from planner.eligible import confine
from planner.views import ClusterView, Config, JobView, Plan, Policy, freeze_config


def first_fit(cluster: ClusterView, free: dict[str, int], n: int) -> Config | None:
    """First single node with ``n`` free GPUs, else the first run of consecutive same-type nodes."""
    for node in cluster.nodes:
        if free[node.name] >= n:
            return freeze_config({node.name: n})
    nodes = cluster.nodes
    for i, first in enumerate(nodes):
        config: dict[str, int] = {}
        need = n
        for node in nodes[i:]:
            if node.gpu_type != first.gpu_type or free[node.name] == 0:
                break
            take = min(free[node.name], need)
            config[node.name] = take
            need -= take
            if need == 0:
                return freeze_config(config)
    return None


class FifoGreedy(Policy):
    name = "fifo-greedy"
    supports_fragment_plans = True

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        free = {n.name: n.free_gpus for n in cluster.nodes}
        assignments: dict[str, Config | None] = {}
        for job in jobs:
            if job.current is not None and not fragment:
                assignments[job.job_id] = job.current
                for node, g in job.current.items():
                    free[node] -= g
        order = sorted((j for j in jobs if j.current is None or fragment), key=lambda j: (j.submit_time, j.job_id))
        for job in order:
            choice = None
            for n in reversed(job.requirements):
                choice = first_fit(confine(cluster, job), free, n)  # only its allowed nodes
                if choice is not None:
                    break
            assignments[job.job_id] = choice
            for node, g in (choice or {}).items():
                free[node] -= g
        return Plan(assignments, {"order": [j.job_id for j in order]})
