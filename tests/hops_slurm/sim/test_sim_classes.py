"""GPU-type constraints in simulation: a job's classes give it the nodes of those server classes, and a
plan outside them is named."""

from hops_slurm.sim.classes import allowed_nodes, confine, outside
from hops_slurm.sim.cluster_spec import ClusterSpec, ServerKind
from planner.views import JobView

CLUSTER = ClusterSpec(name="c", server_kind=[
    ServerKind(name="old", gpu_type="p100", gpus=4, count=2, features=["P100"]),
    ServerKind(name="new", gpu_type="v100", gpus=8, count=1, features=["V100M32"]),
    ServerKind(name="plain", gpu_type="v100", gpus=8, count=1),  # no feature: its class is its GPU type
])


def view(job_id: str) -> JobView:
    return JobView(job_id, (1,), 0.0, 0.0, 60.0, 1.0, throughput=lambda c: 1.0)


def test_classes_select_nodes_by_feature_else_gpu_type():
    assert allowed_nodes(CLUSTER, ("P100",)) == {"old-00", "old-01"}
    assert allowed_nodes(CLUSTER, ("V100M32", "v100")) == {"new-00", "plain-00"}
    assert allowed_nodes(CLUSTER, ("A100",)) == frozenset()


def test_confine_sets_nodes_only_for_constrained_jobs():
    views = confine([view("a"), view("b")], {"a": ("P100",), "b": None}, CLUSTER)
    assert views[0].nodes == {"old-00", "old-01"} and views[1].nodes is None
    by_id = {v.job_id: v for v in views}
    assert outside({"a": {"old-01": 1}, "b": {"new-00": 8}}, by_id) is None
    assert outside({"a": {"old-01": 0, "new-00": 1}}, by_id) == (
        "plan puts job a on new-00, outside the nodes its GPU-type constraint allows (this policy ignores allowed nodes)")
