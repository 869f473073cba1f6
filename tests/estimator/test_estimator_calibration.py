"""Bandwidth calibration stays physical on adversarial records (estimator.calibration)."""

from __future__ import annotations

import math

import pytest

from estimator.calibration import fit_physical, physical_pair


def test_in_server_below_cross_server_is_projected_onto_equal_and_stays_within_what_was_measured():
    links = [1.0e3, 2.0e3, 5.0e3]  # adversarial: in-server a million times slower than the network
    nets = [1.0e9, 2.0e9]
    fit = fit_physical(links, nets)
    assert fit.constrained and fit.b_link is not None and fit.b_net is not None
    assert fit.b_link >= fit.b_net
    assert min(links + nets) <= fit.b_net <= fit.b_link <= max(links + nets)
    # the points-weighted mean in log space: three link points, two net points
    want = math.exp((3 * math.log(2.0e3) + 2 * math.log(math.sqrt(2.0e18))) / 5)
    assert fit.b_link == pytest.approx(want) and fit.b_net == pytest.approx(want)


def test_a_physical_fit_is_left_alone_and_wild_records_do_not_move_the_median():
    fit = fit_physical([6e8, 5.9e8, 6.1e8, 1e15], [1.5e8, 1.4e8, 1e-3])
    assert not fit.constrained
    assert fit.b_link == pytest.approx(math.sqrt(6e8 * 6.1e8))
    assert fit.b_net == pytest.approx(1.4e8)


@pytest.mark.parametrize("junk", [float("nan"), float("inf"), -1.0, 0.0, "fast", None])
def test_points_that_are_not_positive_finite_numbers_are_ignored(junk):
    fit = fit_physical([junk, 4e8], [junk])  # type: ignore[list-item]
    assert fit.b_link == pytest.approx(4e8) and fit.b_net is None
    assert fit_physical([junk], [junk]) == fit_physical([], [])  # type: ignore[list-item]


def test_one_measurement_per_scope():
    assert physical_pair(2e9, 3e8) == (2e9, 3e8)
    link, net = physical_pair(1e8, 4e8)
    assert link == net == pytest.approx(2e8)
    with pytest.raises(ValueError, match="B_link"):
        physical_pair(float("nan"), 1e8)


def test_ingested_calibration_records_stay_physical(tmp_path):
    from estimator.store import ThroughputStore
    from profiler.ingest import ingest_calibration
    from profiler.records import CalibrationPoint, CalibrationRecord

    def record(scope: str, bandwidth: float) -> CalibrationRecord:
        return CalibrationRecord(gpu_type="v100", scope=scope, backend="nccl", world_size=2,  # type: ignore[arg-type]
                                 nodes=1 if scope == "link" else 2, points=[CalibrationPoint(params=1, seconds=1.0)],
                                 slope=1.0, latency=0.0, bandwidth=bandwidth, method=scope)

    with ThroughputStore(tmp_path / "store.sqlite") as store:
        ingest_calibration(store, [record("link", 1e8), record("net", 4e8)])  # in-server "slower" than the network
        cal = store.calibration("v100")
        assert cal is not None and cal.b_link >= cal.b_net and cal.b_link == pytest.approx(2e8)


def test_the_simulators_calibration_is_physical_for_every_type():
    from hops_slurm.sim.groundtruth import GroundTruth
    from hops_slurm.sim.measure import calibration

    truth = GroundTruth()
    for gpu_type in ("k80", "p100", "v100"):
        b_link, b_net = calibration(truth, gpu_type)
        assert b_link >= b_net > 0


def test_the_bandwidth_a_record_implies_is_the_one_that_produced_it():
    from estimator.calibration import implied_bandwidth
    from estimator.mixture import Mixture
    from estimator.model import TimeComponents, per_gpu_theory_throughput

    tc = TimeComponents(t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1e8, batch_size=32)
    for gpus, nodes, b_link, b_net in ((2, 1, 3e9, 5e8), (8, 1, 7e8, 1e8), (8, 2, 3e9, 2e8)):
        rate = per_gpu_theory_throughput(tc, Mixture.constant(0.0), gpus=gpus, nodes=nodes, b_link=b_link, b_net=b_net)
        implied = implied_bandwidth(tc, rate, gpus=gpus, nodes=nodes)
        assert implied == pytest.approx(b_link if nodes == 1 else b_net, rel=1e-6)


@pytest.mark.parametrize("rate", [1e12, float("nan"), float("inf"), -5.0, 0.0, "fast", None])
def test_a_record_no_bandwidth_explains_implies_none(rate):
    from estimator.calibration import implied_bandwidth
    from estimator.model import TimeComponents

    tc = TimeComponents(t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1e8, batch_size=32)
    # 1e12 samples/s per GPU: faster than one GPU alone, i.e. than free communication
    assert implied_bandwidth(tc, rate, gpus=2, nodes=1) is None  # type: ignore[arg-type]
    assert implied_bandwidth(tc, 100.0, gpus=1, nodes=1) is None  # one GPU communicates nothing
