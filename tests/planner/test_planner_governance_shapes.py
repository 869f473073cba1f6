"""planner.governance: the shape of the configs a partition and a QOS let a job start in (MaxNodes,
MaxTRESPerNode) and jobs a partition refuses whatever their placement (issue 23)."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.baselines import FifoGreedy, SlurmBackfillPolicy
from planner.governance import Limits, Shape, governed_plan, over_caps, trim
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config

ONE_NODE = Shape(max_nodes=1, nodes_label="PartitionNodeLimit: partition=hops MaxNodes=1")
FOUR_PER_NODE = Shape(max_per_node=4, per_node_label="QOSMaxGRESPerNode: qos=p gres/gpu=4 per node")


def thr(cfg: Config) -> float:
    return float(sum(cfg.values())) ** 0.9


def job(i: int, reqs: tuple[int, ...], *, wait: float = 10.0, current: dict[str, int] | None = None) -> JobView:
    return JobView(f"j{i}", reqs, submit_time=float(i), wait=wait, age=100.0, sensitivity=1.0, throughput=thr,
                   current=freeze_config(current) if current else None)


def cluster(free: tuple[int, ...] = (8, 8), total: int = 8) -> ClusterView:
    return ClusterView(tuple(NodeView(f"n{i}", "a100", "a100", total, f) for i, f in enumerate(free)))


def test_shape_names_the_limit_a_config_breaks() -> None:
    both = Shape(max_nodes=1, nodes_label=ONE_NODE.nodes_label, max_per_node=4, per_node_label=FOUR_PER_NODE.per_node_label)
    assert both.refusal({"n0": 4}) == ""
    assert both.refusal({"n0": 2, "n1": 2}).startswith("PartitionNodeLimit")
    assert both.refusal({"n0": 5}).startswith("QOSMaxGRESPerNode")
    assert both.most_gpus(cluster()) == 4 and ONE_NODE.most_gpus(cluster()) == 8
    assert FOUR_PER_NODE.most_gpus(cluster()) is None  # no node count: no bound from the shape


def test_a_job_larger_than_its_partition_allows_is_blocked_with_the_limit() -> None:
    """MaxNodes=1 on 8-GPU nodes: a 16-GPU job never starts (Slurm: PartitionNodeLimit); one that may
    also run on 8 is trimmed to 8."""
    limits = Limits(shapes=MappingProxyType({"j0": ONE_NODE, "j1": ONE_NODE}))
    kept, blocked = trim((job(0, (16,)), job(1, (8, 16))), limits, cluster())
    assert blocked == {"j0": "PartitionNodeLimit: partition=hops MaxNodes=1"}
    assert [j.requirements for j in kept] == [(8,)]
    per_node = Limits(shapes=MappingProxyType({"j2": Shape(max_nodes=1, nodes_label=ONE_NODE.nodes_label, max_per_node=4,
                                                            per_node_label=FOUR_PER_NODE.per_node_label)}))
    assert trim((job(2, (5,)),), per_node, cluster())[1] == {"j2": FOUR_PER_NODE.per_node_label}


def test_the_planner_never_spreads_a_job_over_more_nodes_than_its_partition_allows() -> None:
    """2 + 2 GPUs free on two nodes: unlimited, Hops and first fit both spread a 4-GPU job over them; with
    MaxNodes=1 none places it (Hops and slurm-backfill read the two-node config's throughput as 0 and
    pass it over; fifo-greedy, which reads no estimate, proposes the spread, and it is cut and named),
    and with 4 free on a third node Hops puts it there."""
    one = Limits(shapes=MappingProxyType({"j0": ONE_NODE}))
    for policy in (HopsPolicy(PlannerParams(time_limit=5.0)), SlurmBackfillPolicy(), FifoGreedy()):
        free = governed_plan(policy, cluster((2, 2, 0)), (job(0, (4,)),), 0.0, fragment=True, limits=None)
        assert dict(free.assignments["j0"] or {}) == {"n0": 2, "n1": 2}  # the checks below can fail
        plan = governed_plan(policy, cluster((2, 2, 0)), (job(0, (4,)),), 0.0, fragment=True, limits=one)
        assert plan.assignments["j0"] is None
        if policy.name == "fifo-greedy":
            assert plan.diagnostics["limited"] == {"j0": ONE_NODE.nodes_label}
    hops = governed_plan(HopsPolicy(PlannerParams(time_limit=5.0)), cluster((2, 2, 4)), (job(0, (4,)),), 0.0,
                         fragment=True, limits=one)
    assert dict(hops.assignments["j0"] or {}) == {"n2": 4}


def test_a_running_job_outside_its_shape_is_never_cut() -> None:
    running = job(0, (4,), current={"n0": 2, "n1": 2})
    plan = Plan({"j0": freeze_config({"n0": 2, "n1": 2})})
    assert over_caps(plan, (running,), Limits(shapes=MappingProxyType({"j0": ONE_NODE}))) == {}
    waiting = job(1, (4,))
    plan2 = Plan({"j1": freeze_config({"n0": 2, "n1": 2})})
    assert over_caps(plan2, (waiting,), Limits(shapes=MappingProxyType({"j1": ONE_NODE}))) == {"j1": ONE_NODE.nodes_label}


def test_a_time_limit_over_max_time_is_never_placed() -> None:
    limits = Limits(blocked=MappingProxyType({"j0": "PartitionTimeLimit: partition=hops MaxTime=02:00:00"}))
    plan = governed_plan(HopsPolicy(PlannerParams(time_limit=5.0)), cluster(), (job(0, (1,)), job(1, (1,))), 0.0,
                         fragment=False, limits=limits)
    assert plan.assignments["j0"] is None and plan.assignments["j1"] is not None
    assert plan.diagnostics["limited"] == {"j0": "PartitionTimeLimit: partition=hops MaxTime=02:00:00"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([(1,), (2,), (4,), (2, 4), (4, 8), (8,), (12,)]), st.booleans(), st.booleans()),
                min_size=1, max_size=8),
       st.lists(st.integers(0, 8), min_size=2, max_size=4), st.sampled_from(["hops", "backfill"]))
def test_no_waiting_job_is_ever_placed_outside_its_shape(spec, free, which: str) -> None:
    jobs = tuple(job(i, reqs, wait=float(10 - i)) for i, (reqs, _, _) in enumerate(spec))
    shapes = {}
    for i, (_, one_node, four) in enumerate(spec):
        if one_node or four:
            shapes[f"j{i}"] = Shape(max_nodes=1 if one_node else None, nodes_label="PartitionNodeLimit",
                                    max_per_node=4 if four else None, per_node_label="QOSMaxGRESPerNode")
    policy = HopsPolicy(PlannerParams(time_limit=5.0)) if which == "hops" else SlurmBackfillPolicy()
    plan = governed_plan(policy, cluster(tuple(free)), jobs, 0.0, fragment=True, limits=Limits(shapes=MappingProxyType(shapes)))
    for job_id, config in plan.placed().items():
        if job_id in shapes:
            assert shapes[job_id].refusal(config) == "", (job_id, dict(config))
    assert set(plan.assignments) == {j.job_id for j in jobs}
