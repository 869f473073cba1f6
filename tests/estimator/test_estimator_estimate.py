"""Estimates: top-down lookup, min-throughput rule, eq. (9), eq. (10), the Estimator's ThroughputFn."""

from __future__ import annotations

import pytest

from estimator.errors import CalibrationMissing, EstimateUnavailable
from estimator.estimate import (
    Estimator,
    config_throughput,
    expected_age,
    per_gpu_estimate,
    per_gpu_throughput,
    sensitivity,
)
from estimator.mixture import Mixture
from estimator.model import TimeComponents
from estimator.snapshot import Calibration, JobSnapshot, MemorySource, TypeTheory
from estimator.store import ThroughputStore
from planner.views import ClusterView, NodeView

# Stable data time 0.001 s, no sync wait: 1 GPU iteration = max(0.001, 0.02 + 0.005) + 0.01 = 0.035 s.
V100 = TypeTheory(TimeComponents(0.01, 0.02, 0.005, pattern=1, params=1e8, batch_size=32), Mixture.constant(0.001))
# Three times slower compute: 1 GPU iteration = max(0.001, 0.06 + 0.015) + 0.03 = 0.105 s.
K80 = TypeTheory(TimeComponents(0.03, 0.06, 0.015, pattern=1, params=1e8, batch_size=32), Mixture.constant(0.001))
CALS = {
    "v100": Calibration("v100", b_link=1e10, b_net=1e9),
    "k80": Calibration("k80", b_link=5e9, b_net=1e9),
}
NODES = {"a": ("v100", "a"), "b": ("v100", "b"), "c": ("k80", "c")}


def snap(**layers) -> JobSnapshot:
    return JobSnapshot("job", theory={"v100": V100, "k80": K80}, **layers)


def test_theory_layer_hand_values():
    s = snap()
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=1) == pytest.approx(32 / 0.035)
    # 4 GPUs on one node: T_c = 1e8/1e10 * 3/4 = 0.0075; backward = max(0.02 + 0.0015, 0.0075) + 0.005
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=4) == pytest.approx(32 / (0.0265 + 0.01))
    # 2 nodes: T_c = 0.1; backward = 0.105; iteration 0.115
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=2, nodes=2) == pytest.approx(32 / 0.115)


def test_lookup_order_entity_then_type_then_theory():
    s = snap()
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=2, nodes=1, server="a").layer == "theory"
    s = snap(type_aggregated={("v100", 2): 700.0})
    e = per_gpu_estimate(s, CALS, gpu_type="v100", gpus=2, nodes=1, server="a")
    assert (e.layer, e.per_gpu) == ("type", 700.0)
    s = snap(type_aggregated={("v100", 2): 700.0}, entity_aggregated={("a", 2): 650.0})
    e = per_gpu_estimate(s, CALS, gpu_type="v100", gpus=2, nodes=1, server="a")
    assert (e.layer, e.per_gpu) == ("entity", 650.0)
    # another server of the same type falls back to the type layer; another GPU count to the profile's
    # eq. 1-5 with the job's own communication time from its 2-GPU record (estimator.refine)
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=2, nodes=1, server="b").per_gpu == 700.0
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=4, nodes=1, server="a").layer == "refined"
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=4, nodes=1, server="a", refine=False).layer == "theory"


def test_distributed_tables_are_keyed_by_node_count():
    s = snap(type_distributed={("v100", 2): 200.0}, entity_distributed={("b", 3): 150.0})
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=8, nodes=2, server="a").per_gpu == 200.0
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=6, nodes=3, server="b").layer == "entity"
    # 3 nodes: the 2-node record's communication time carried (estimator.refine), not the record itself
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=6, nodes=3, server="a").layer == "refined"
    # an aggregated record for 2 GPUs does not answer a 2-node config
    s = snap(type_aggregated={("v100", 2): 700.0})
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=2, nodes=2).layer == "theory"


def test_lookup_order_through_the_store(tmp_path):
    with ThroughputStore(tmp_path / "t.db") as store:
        store.put_theory("job", "v100", t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1e8, batch_size=32,
                         data_samples=[0.001] * 5)
        store.put_calibration("v100", b_link=1e10, b_net=1e9, method="test", measured_at=0)
        est = Estimator(store, {"a": ("v100", "a"), "b": ("v100", "b")})
        # 2 GPUs, one node: T_c = 0.005, backward = max(0.02 + 0.001, 0.005) + 0.005; + T_f 0.01
        assert est.per_gpu_throughput("job", "v100", 2, server="a") == pytest.approx(32 / (0.021 + 0.005 + 0.01))
        store.put_type_throughput("job", "v100", gpus=2, nodes=1, throughput=1000.0)
        assert est.per_gpu_throughput("job", "v100", 2, server="a") == pytest.approx(500.0)
        store.add_runtime_samples("job", "v100", "a", gpus=2, nodes=1, throughput=900.0)
        assert est.per_gpu_throughput("job", "v100", 2, server="a") == pytest.approx(450.0)  # entity
        assert est.per_gpu_throughput("job", "v100", 2, server="b") == pytest.approx(475.0)  # type: mean(500, 450)


def test_missing_profile_or_calibration_is_an_error_not_a_default():
    s = JobSnapshot("job", theory={"v100": V100})
    with pytest.raises(EstimateUnavailable, match="no profile"):
        per_gpu_throughput(s, CALS, gpu_type="k80", gpus=1)
    assert per_gpu_throughput(s, {}, gpu_type="v100", gpus=1) == pytest.approx(32 / 0.035)  # 1 GPU: no comm
    with pytest.raises(EstimateUnavailable, match="calibration"):
        per_gpu_throughput(s, {}, gpu_type="v100", gpus=2)


def test_min_throughput_rule_on_mixed_speed_config():
    s = snap()
    # {a: 2, c: 2}: 4 GPUs over 2 nodes, T_c = 1e8 / 1e9 = 0.1 on both types.
    # v100 node: backward max(0.02 + 0.02, 0.1) + 0.005 = 0.105 -> 0.115 s -> 278.26/GPU
    # k80 node: backward max(0.06 + 0.02, 0.1) + 0.015 = 0.115 -> 0.145 s -> 220.69/GPU (slowest)
    assert config_throughput({"a": 2, "c": 2}, s, CALS, NODES) == pytest.approx(32 / 0.145 * 4)
    # measured per-GPU values: the slower node paces everything
    s = snap(entity_distributed={("a", 2): 300.0, ("c", 2): 90.0})
    assert config_throughput({"a": 3, "c": 1}, s, CALS, NODES) == pytest.approx(90.0 * 4)
    assert config_throughput({}, s, CALS, NODES) == 0.0
    assert config_throughput({"a": 0, "b": 1}, s, CALS, NODES) == pytest.approx(32 / 0.035)
    with pytest.raises(EstimateUnavailable, match="zz"):
        config_throughput({"zz": 1}, s, CALS, NODES)


def test_sensitivity_eq_10():
    # thr({0:1}) = 32/0.035; per-GPU thr({0:1, 1:1}) = 32/0.115 -> rho = 0.115/0.035
    assert sensitivity(snap(), CALS, "v100") == pytest.approx(0.115 / 0.035)
    # k80: 1 GPU 0.105 s; 2 nodes: max(0.06 + 0.02, 0.1) + 0.015 + 0.03 = 0.145 s
    assert sensitivity(snap(), CALS, "k80") == pytest.approx(0.145 / 0.105)


def test_expected_age_eq_9():
    # R_avg = 2; P(v100) = 8/32, P(k80) = 24/32
    # 0.25 * 1e6 / (1000 * 2) + 0.75 * 1e6 / (250 * 2) = 125 + 1500
    assert expected_age(1e6, {"v100": 1000.0, "k80": 250.0}, {"v100": 8, "k80": 24}, [1, 2, 3]) == pytest.approx(1625)
    # a type the job cannot use is left out and P renormalised
    assert expected_age(1e6, {"v100": 1000.0, "k80": 0.0}, {"v100": 8, "k80": 24}, [1, 3]) == pytest.approx(500)
    with pytest.raises(EstimateUnavailable):
        expected_age(1e6, {}, {"v100": 8}, [1])
    with pytest.raises(ValueError):
        expected_age(1e6, {"v100": 1.0}, {"v100": 8}, [])


def test_estimator_throughput_fn_for_cluster():
    cluster = ClusterView((
        NodeView("a", "v100", "v100-dgx", 4, 4),
        NodeView("b", "v100", "v100-dgx", 4, 4),
        NodeView("c", "k80", "k80-old", 8, 8),
        NodeView("d", "p100", "p100-x", 4, 4),
    ))
    source = MemorySource({"job": snap()}, dict(CALS))
    est = Estimator.for_cluster(source, cluster)
    fn = est.throughput_fn("job")
    assert fn({"a": 1}) == pytest.approx(32 / 0.035)
    assert fn({"a": 2, "c": 2}) == pytest.approx(32 / 0.145 * 4)
    assert fn({"d": 2}) == 0.0  # never profiled on p100: cannot run there
    assert fn({"a": 1, "d": 1}) == 0.0
    with pytest.raises(EstimateUnavailable, match="zz"):
        fn({"zz": 1})
    uncalibrated = Estimator.for_cluster(MemorySource({"job": snap()}, {}), cluster).throughput_fn("job")
    assert uncalibrated({"a": 1}) == pytest.approx(32 / 0.035)  # one GPU needs no bandwidth
    with pytest.raises(CalibrationMissing, match="calibration"):
        uncalibrated({"a": 2})
    assert est.sensitivity("job") == pytest.approx(0.115 / 0.035)  # first type of the cluster: v100
    # eq. 9 with 1-GPU throughputs: v100 8/16 GPUs at 32/0.035, k80 8/16 at 32/0.105, p100 unusable
    age = est.expected_age("job", 1e5, [1, 2])
    v, k = 32 / 0.035, 32 / 0.105
    assert age == pytest.approx(0.5 * 1e5 / (v * 1.5) + 0.5 * 1e5 / (k * 1.5))
    # entity key by server class: a record for "v100-dgx" answers both v100 nodes
    source.jobs["job"] = snap(entity_aggregated={("v100-dgx", 1): 123.0})
    by_class = Estimator.for_cluster(source, cluster, entity="server_class").throughput_fn("job")
    assert by_class({"b": 1}) == 123.0


def test_entity_factor_scales_the_layers_below_the_entity_layer_only():
    s = snap(type_aggregated={("v100", 2): 800.0}, entity_aggregated={("b", 2): 300.0})
    factors = {"a": 0.5}
    # a: no record of this job there -> type layer x the server's learned factor; theory likewise
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=2, server="a", entity_factors=factors) == 400.0
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=1, server="a", entity_factors=factors) == \
        pytest.approx(0.5 * 32 / 0.035)
    # b: the job's own record wins; unknown servers have factor 1
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=2, server="b", entity_factors=factors) == 300.0
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=2, server="c", entity_factors=factors) == 800.0
    fn = Estimator(MemorySource({"job": s}, dict(CALS), {"a": 0.5}), NODES).throughput_fn("job")
    assert fn({"a": 1, "b": 1}) == pytest.approx(2 * min(0.5, 1.0) * per_gpu_throughput(
        s, CALS, gpu_type="v100", gpus=2, nodes=2))


def test_store_entity_factors_from_one_gpu_records_and_peers(tmp_path):
    store = ThroughputStore(tmp_path / "s.sqlite")
    store.put_theory("j", "v100", t_f=0.01, t_b=0.02, t_u=0.01, pattern=1, params=1e6, batch_size=40)  # probe 1000/s
    store.add_runtime_samples("j", "v100", "slow", gpus=1, nodes=1, throughput=600.0)
    store.add_runtime_samples("j", "v100", "fast", gpus=1, nodes=1, throughput=1000.0)
    # 4 GPUs on one node: compared with the fastest other server that ran the job on 4 GPUs
    store.add_runtime_samples("j", "v100", "slow", gpus=4, nodes=1, throughput=1600.0)
    store.add_runtime_samples("j", "v100", "fast", gpus=4, nodes=1, throughput=3200.0)
    # multi-node records name one node for a run paced by the slowest: left out
    store.add_runtime_samples("j", "v100", "other", gpus=2, nodes=2, throughput=10.0)
    f = store.entity_factors()
    assert f == {"slow": pytest.approx(0.55), "fast": pytest.approx(1.0)}


# ----- a job measured in place (runtime records, no probe): estimator.extrapolate ---------------------
def test_a_job_measured_on_one_type_only_is_answered_on_every_type_and_count():
    """Runtime records on v100 at 2 GPUs, no probe: other counts of v100 carry that per-GPU value, other
    types too (every type alike, the fallback's assumption); nothing answers 0 for lack of data."""
    s = JobSnapshot("job", type_aggregated={("v100", 2): 400.0})
    got = per_gpu_estimate(s, CALS, gpu_type="v100", gpus=2, nodes=1)
    assert (got.layer, got.per_gpu) == ("type", 400.0)  # measured: the type layer, as before
    for gpu_type, gpus, nodes in (("v100", 1, 1), ("v100", 4, 1), ("v100", 4, 2), ("k80", 1, 1), ("k80", 8, 2)):
        e = per_gpu_estimate(s, CALS, gpu_type=gpu_type, gpus=gpus, nodes=nodes)
        assert (e.layer, e.per_gpu) == ("extrapolated", 400.0), (gpu_type, gpus, nodes)
    cluster = ClusterView((NodeView("a", "v100", "v100-dgx", 4, 4), NodeView("c", "k80", "k80-old", 8, 8)))
    est = Estimator.for_cluster(MemorySource({"job": s}, dict(CALS)), cluster)
    fn = est.throughput_fn("job")
    assert fn({"a": 2}) == pytest.approx(800.0) and fn({"c": 4}) == pytest.approx(1600.0)
    assert fn({"a": 1, "c": 1}) == pytest.approx(800.0)  # a mixed config: the slower per-GPU value paces it
    assert est.sensitivity("job") == pytest.approx(1.0)  # nothing measured across nodes: not sensitive
    assert est.expected_age("job", 8e5, [1, 2]) == pytest.approx(8e5 / (400.0 * 1.5))


def test_extrapolation_prefers_the_same_type_layout_and_the_nearest_count():
    s = JobSnapshot("job", type_aggregated={("v100", 1): 500.0, ("v100", 4): 300.0, ("k80", 1): 100.0},
                    type_distributed={("v100", 2): 150.0})
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=8) == 300.0  # nearest one-node count: 4
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=2) == 300.0  # 1 and 4 equally near: the larger
    assert per_gpu_throughput(s, CALS, gpu_type="v100", gpus=8, nodes=4) == 150.0  # a multi-node measurement
    assert per_gpu_throughput(s, CALS, gpu_type="k80", gpus=4, nodes=2) == 100.0  # only one-node data on k80
    # a type it never ran on: the mean over the types it ran on, each at its nearest count
    assert per_gpu_throughput(s, CALS, gpu_type="p100", gpus=1) == pytest.approx((500.0 + 100.0) / 2)
    # records of a job placed across types say nothing about one type
    mixed = JobSnapshot("job", type_distributed={("mixed", 2): 90.0})
    with pytest.raises(EstimateUnavailable):
        per_gpu_throughput(mixed, CALS, gpu_type="v100", gpus=1)


def test_a_probed_job_keeps_cannot_run_on_a_type_without_a_profile():
    """A job with probe profiles was probed on every type: no profile on k80 means its probe failed
    there, so k80 stays unavailable even with runtime records on v100; v100's other counts come from
    the profile (eq. 1-5), never from the extrapolation."""
    s = JobSnapshot("job", theory={"v100": V100}, type_aggregated={("v100", 2): 700.0})
    with pytest.raises(EstimateUnavailable, match="no profile"):
        per_gpu_throughput(s, CALS, gpu_type="k80", gpus=1)
    assert per_gpu_estimate(s, CALS, gpu_type="v100", gpus=4, nodes=1).layer == "refined"  # eq. 1-5, own T_c
    # runtime records on a type it has no profile on (its probe failed there, yet it ran): that type
    # is answered from them at every count
    s = JobSnapshot("job", theory={"v100": V100}, type_aggregated={("k80", 2): 60.0})
    assert per_gpu_estimate(s, CALS, gpu_type="k80", gpus=4, nodes=1).per_gpu == 60.0
