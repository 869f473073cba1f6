"""A job's own communication time carried to another count (estimator.refine): one run on the type moves
the estimate of the counts it has not run to what the job really does there."""

from __future__ import annotations

import pytest

from estimator.estimate import Estimator, per_gpu_estimate
from estimator.model import expected_iter_time, throughput
from estimator.mixture import Mixture
from estimator.model import TimeComponents
from estimator.refine import own_comm_time, ring_share
from estimator.snapshot import Calibration, JobSnapshot, TypeTheory
from estimator.store import ThroughputStore

TC = TimeComponents(0.01, 0.02, 0.005, pattern=1, params=1e8, batch_size=32)
THEORY = TypeTheory(TC, Mixture.constant(0.0))
CALS = {"v100": Calibration("v100", b_link=1e10, b_net=1e9)}
# the job really communicates 8x slower than the type's calibration says (e.g. an unbucketed model)
REAL_LINK, REAL_NET = 1.25e9, 1.25e8


def true_per_gpu(gpus: int, nodes: int) -> float:
    """What the job really does: a ring all-reduce at its own bandwidth, share (N-1)/N of the scope."""
    t_c = TC.params * (ring_share(gpus) / REAL_LINK if nodes == 1 else ring_share(nodes) / REAL_NET)
    return throughput(TC.batch_size, expected_iter_time(TC, THEORY.data, t_c, gpus=gpus))


def _rel(a: float, b: float) -> float:
    return abs(a - b) / b


@pytest.mark.parametrize("gpus", [4, 8])
def test_one_in_server_run_makes_the_other_counts_exact(tmp_path, gpus):
    with ThroughputStore(tmp_path / "s.db") as store:
        store.put_theory("job", "v100", t_f=TC.t_f, t_b=TC.t_b, t_u=TC.t_u, pattern=1, params=TC.params,
                         batch_size=TC.batch_size)
        store.put_calibration("v100", b_link=1e10, b_net=1e9, method="test", measured_at=0)
        est = Estimator(store, {"a": ("v100", "a"), "b": ("v100", "b")})
        before = est.per_gpu_throughput("job", "v100", gpus, server="b")
        store.add_runtime_samples("job", "v100", "a", gpus=2, nodes=1, throughput=2 * true_per_gpu(2, 1))
        after = est.per_gpu_throughput("job", "v100", gpus, server="b")
        truth = true_per_gpu(gpus, 1)
        assert _rel(before, truth) > 0.3  # the formula with the type's bandwidth is far off
        assert after == pytest.approx(truth, rel=1e-6)
        snap = store.snapshot("job")
        assert per_gpu_estimate(snap, store.calibrations(), gpu_type="v100", gpus=gpus, nodes=1).layer == "refined"


def test_across_servers_the_node_count_takes_the_ring_share():
    snap = JobSnapshot("job", theory={"v100": THEORY}, type_distributed={("v100", 2): true_per_gpu(2, 2)})
    for nodes in (3, 4, 8):
        got = per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=nodes, nodes=nodes)
        assert got.layer == "refined"
        assert got.per_gpu == pytest.approx(true_per_gpu(nodes, nodes), rel=1e-6)
        # eq. 2 as printed keeps T_c = params / B_net at any node count: per-GPU constant, so wrong here
        plain = per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=nodes, nodes=nodes, refine=False)
        assert plain.layer == "theory" and _rel(plain.per_gpu, true_per_gpu(nodes, nodes)) > 0.2


def test_the_nearest_count_is_carried():
    """Two counts measured: the one nearest the asked count (ratio distance) is the one carried."""
    far = true_per_gpu(2, 1) * 0.5  # a record that says something else about the job at 2 GPUs
    snap = JobSnapshot("job", theory={"v100": THEORY},
                       type_aggregated={("v100", 2): far, ("v100", 8): true_per_gpu(8, 1)})
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=6, nodes=1).per_gpu == \
        pytest.approx(true_per_gpu(6, 1), rel=1e-6)


def test_what_carries_nothing_leaves_the_formula():
    formula = per_gpu_estimate(JobSnapshot("job", theory={"v100": THEORY}), CALS, gpu_type="v100", gpus=4, nodes=1)
    # the other scope, one GPU, and a record of no progress say nothing of this scope's communication
    for layers in ({"type_distributed": {("v100", 2): 100.0}}, {"type_aggregated": {("v100", 1): 900.0}},
                   {"type_aggregated": {("v100", 2): 1e-6}}):
        snap = JobSnapshot("job", theory={"v100": THEORY}, **layers)
        got = per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=4, nodes=1)
        assert (got.layer, got.per_gpu) == ("theory", pytest.approx(formula.per_gpu))


def test_a_run_as_fast_as_free_communication_carries_none():
    free = throughput(TC.batch_size, expected_iter_time(TC, THEORY.data, 0.0, gpus=2))
    snap = JobSnapshot("job", theory={"v100": THEORY}, type_aggregated={("v100", 2): free * 1.2})
    assert own_comm_time(snap, "v100", gpus=8, nodes=1) == 0.0
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=8, nodes=1).per_gpu == pytest.approx(free)
