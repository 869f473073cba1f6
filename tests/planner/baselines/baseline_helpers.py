"""Small builders for the baseline tests: clusters, jobs with simple throughput models, a round loop."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from planner.views import ClusterView, Config, JobView, NodeView, Plan, Policy


def cluster(spec: list[tuple[str, str, int]], free: Mapping[str, int] | None = None) -> ClusterView:
    """Nodes from (name, gpu_type, total GPUs); ``free`` overrides free GPUs per node."""
    free = free or {}
    return ClusterView(tuple(
        NodeView(name, t, t, g, free.get(name, g)) for name, t, g in spec
    ))


def typed_throughput(view: ClusterView, per_gpu: Mapping[str, float], spread_penalty: float = 1.0) -> Callable[[Config], float]:
    """Linear in GPUs at a per-type rate; ``spread_penalty`` multiplies multi-node configs; 0 if types mix."""
    types = {n.name: n.gpu_type for n in view.nodes}

    def thr(config: Config) -> float:
        kinds = {types[n] for n in config}
        if len(kinds) != 1:
            return 0.0
        rate = per_gpu.get(kinds.pop(), 0.0) * sum(config.values())
        return rate * (spread_penalty if len(config) > 1 else 1.0)

    return thr


def job(job_id: str, reqs: tuple[int, ...], thr: Callable[[Config], float], *, submit: float = 0.0,
        wait: float = 0.0, age: float = 3600.0, total: float = 1e6, done: float = 0.0,
        current: Config | None = None, run_time: float = 0.0) -> JobView:
    return JobView(job_id=job_id, requirements=reqs, submit_time=submit, wait=wait, age=age, sensitivity=1.0,
                   throughput=thr, total_samples=total, done_samples=done, current=current, run_time=run_time)


def check_plan(view: ClusterView, jobs: tuple[JobView, ...], plan: Plan) -> None:
    """Every placement is on known nodes and no node gives more than its free GPUs."""
    names = {n.name for n in view.nodes}
    assert set(plan.assignments) <= {j.job_id for j in jobs}
    for node in view.nodes:
        assert plan.gpus_used_on(node.name) <= node.free_gpus, (node.name, plan.assignments)
    for c in plan.placed().values():
        assert set(c) <= names and all(g > 0 for g in c.values())


def run_rounds(policy: Policy, view: ClusterView, jobs: list[JobView], rounds: int, length: float = 360.0) -> dict[str, float]:
    """A tiny round loop (not the project simulator): enact each plan for one round, advance progress,
    and return each job's completion time. Running jobs' GPUs count as free in round plans."""
    active = {j.job_id: j for j in jobs}
    finished: dict[str, float] = {}
    now = 0.0
    for _ in range(rounds):
        if not active:
            break
        snapshot = tuple(active.values())
        plan = policy.plan(view, snapshot, now)
        check_plan(view, snapshot, plan)
        for jid, j in list(active.items()):
            config = plan.assignments.get(jid)
            if config:
                rate = j.throughput(config)
                done = j.done_samples + rate * length
                j = replace(j, current=config, done_samples=done, run_time=j.run_time + length)
                if done >= j.total_samples:
                    finished[jid] = now + length
                    del active[jid]
                    continue
            else:
                j = replace(j, current=None, wait=j.wait + length)
            active[jid] = j
        now += length
    return finished
