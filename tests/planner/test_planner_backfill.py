"""Backfill behind the service window (planner.backfill, through HopsPolicy.plan)."""

from __future__ import annotations

import math

from planner.backfill import expected_end, reservation
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView


def rate_per_gpu(per_gpu: dict[str, float]):
    """Throughput: per-GPU rate of the config's type times its GPUs (nodes named by type prefix)."""
    def thr(cfg: Config) -> float:
        return sum(per_gpu[n.split("-")[0]] * g for n, g in cfg.items())
    return thr


def job(job_id: str, reqs, *, samples: float, wait: float = 0.0, current=None, done: float = 0.0,
        per_gpu=None, run_time: float = 0.0) -> JobView:
    return JobView(job_id, tuple(reqs), submit_time=0.0, wait=wait, age=60.0, sensitivity=1.0,
                   throughput=rate_per_gpu(per_gpu or {"a100": 10.0, "v100": 5.0}), total_samples=samples,
                   done_samples=done, current=current, run_time=run_time, placed_for=run_time)


def cluster(free: dict[str, int]) -> ClusterView:
    """a100-1, a100-2 (8 GPUs each), v100-1 (4 GPUs) with the given idle GPUs."""
    total = {"a100-1": 8, "a100-2": 8, "v100-1": 4}
    return ClusterView(tuple(NodeView(n, n.split("-")[0], n.split("-")[0], t, free.get(n, 0)) for n, t in total.items()))


def test_the_head_reserves_the_type_that_frees_first() -> None:
    # 2 idle A100s, 4 idle V100s; the head needs 8. One running job frees 4 A100s in 50 s, another 8 in 500 s
    idle = cluster({"a100-2": 2, "v100-1": 4})
    head = job("head", (8,), samples=1e6, wait=100.0)
    soon = job("soon", (4,), samples=2000, done=0.0, current={"a100-1": 4})   # 2000 / 40 = 50 s
    later = job("later", (8,), samples=40000, current={"a100-1": 4, "a100-2": 4})  # 40000 / 80 = 500 s
    assert expected_end(soon, 0.0) == 50.0
    res = reservation(head, idle, [soon, later], now=0.0)
    assert res is not None and res.gpu_type == "a100"
    assert res.start == 500.0  # 2 idle + 4 at 50 s = 6 < 8; + 8 at 500 s = 14
    assert res.spare == 6
    # nothing known to end: no start from what is known
    unknown = job("unknown", (4,), samples=0.0, current={"a100-1": 4})
    unknown = JobView(**{**unknown.__dict__, "age": 0.0})
    assert math.isinf(reservation(head, idle, [unknown], now=0.0).start)


def test_fragment_plan_backfills_only_jobs_that_do_not_delay_the_blocked_head() -> None:
    # 6 idle GPUs (a100-2:2, v100-1:4); the head needs 8 A100s, which free in 60 s (a running job on a100-1)
    idle = cluster({"a100-2": 2, "v100-1": 4})
    running = job("run", (6,), samples=3600, current={"a100-1": 6, }, run_time=10.0)  # 3600 / 60 = 60 s
    other = job("other", (8,), samples=1e7, current={"a100-2": 6, "a100-1": 2})  # ends much later
    head = job("head", (8,), samples=1e6, wait=500.0)
    short = job("short", (1,), samples=100.0, wait=10.0)  # 10 s on one A100: ends before the head starts
    long_a100 = job("long", (2,), samples=1e5, wait=9.0, per_gpu={"a100": 10.0, "v100": 0.0})  # A100 only, hours
    long_v100 = job("longv", (4,), samples=1e5, wait=8.0)  # long, but may run on the V100s the head never needs
    jobs = (running, other, head, short, long_a100, long_v100)
    plan = HopsPolicy().plan(idle, jobs, now=0.0, fragment=True)
    d = plan.diagnostics
    assert d["window"] == ["head"]
    assert set(d["backfilled"]) == {"short", "longv"}
    placed = plan.placed()
    assert "head" not in placed and "long" not in placed
    assert set(placed["longv"]) == {"v100-1"}
    assert "short" in placed
    # running jobs are context: never in the fragment plan's assignments
    assert "run" not in plan.assignments and "other" not in plan.assignments


def test_a_long_job_may_take_the_reserved_types_spare_gpus_only() -> None:
    # head needs 8 A100s; at its start 10 are free (spare 2): a long 2-GPU A100 job may fill, a 4-GPU one not
    idle = cluster({"a100-2": 4})
    running = job("run", (6,), samples=3600, current={"a100-1": 6})  # frees 6 at 60 s: 4 + 6 = 10 >= 8
    head = job("head", (8,), samples=1e6, wait=500.0)
    two = job("two", (2,), samples=1e6, wait=10.0, per_gpu={"a100": 10.0, "v100": 0.0})
    four = job("four", (4,), samples=1e6, wait=20.0, per_gpu={"a100": 10.0, "v100": 0.0})
    plan = HopsPolicy().plan(idle, (running, head, four, two), now=0.0, fragment=True)
    assert plan.diagnostics["backfilled"] == ["two"]
    assert plan.placed() == {"two": {"a100-2": 2}}


def test_round_plan_backfills_around_held_jobs_and_the_switch_turns_it_off() -> None:
    # a round: the running job is inside its minimum run time (held), 6 GPUs idle, the head needs 8
    idle = cluster({"a100-1": 8, "a100-2": 8, "v100-1": 4})
    running = job("run", (14,), samples=14 * 10 * 60.0, current={"a100-1": 8, "a100-2": 6}, run_time=5.0)
    head = job("head", (8,), samples=1e6, wait=500.0, per_gpu={"a100": 10.0, "v100": 0.0})
    short = job("short", (2,), samples=200.0, wait=10.0)  # 10 s on 2 A100s
    plan = HopsPolicy().plan(idle, (running, head, short), now=0.0)
    assert plan.diagnostics["in_place"] == {"run": plan.diagnostics["in_place"]["run"]}
    assert plan.diagnostics["window"] == ["head"]
    assert plan.diagnostics["backfilled"] == ["short"]
    assert plan.placed()["short"] and plan.placed()["run"] == {"a100-1": 8, "a100-2": 6}
    off = HopsPolicy(PlannerParams(backfill=False)).plan(idle, (running, head, short), now=0.0)
    assert off.diagnostics["backfilled"] == [] and "short" not in off.placed()
