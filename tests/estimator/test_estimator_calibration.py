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


@pytest.mark.parametrize("rate", [float("nan"), float("inf"), -5.0, 0.0, 1e-9, 0.1, "fast", None])
def test_a_record_that_says_nothing_of_the_bandwidth_implies_none(rate):
    from estimator.calibration import implied_bandwidth
    from estimator.model import TimeComponents

    tc = TimeComponents(t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1e8, batch_size=32)
    # 0.1 samples/s per GPU against ~914 alone: a stall (estimator.progress), not communication
    assert implied_bandwidth(tc, rate, gpus=2, nodes=1) is None  # type: ignore[arg-type]
    assert implied_bandwidth(tc, 100.0, gpus=1, nodes=1) is None  # one GPU communicates nothing


def test_a_record_as_fast_as_free_communication_implies_an_unbounded_bandwidth_capped_by_what_was_measured():
    from estimator.calibration import implied_bandwidth, refit
    from estimator.model import TimeComponents

    tc = TimeComponents(t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1e8, batch_size=32)
    assert implied_bandwidth(tc, 1e12, gpus=2, nodes=1) == math.inf
    fit = refit((3e8, 1e8), [math.inf, math.inf, math.inf], [])
    assert fit.b_link == pytest.approx(3e8) and fit.b_net == pytest.approx(1e8)  # the highest finite point
    assert refit(None, [math.inf], [math.inf]) == fit_physical([], [])  # nothing finite: nothing fitted


def test_refit_moves_with_many_consistent_records_not_with_a_few_wild_ones():
    from estimator.calibration import refit

    measured = (1.2e8, 2.6e8)  # issue 22's V100: in-server calibrated below cross-server
    few = refit(measured, [1e3, 1e3, 1e3], [1e15, 1e15])  # forged records: absurdly slow in-server, fast across
    assert few.b_link is not None and few.b_net is not None and few.b_link >= few.b_net
    assert 1.2e8 <= few.b_net <= few.b_link <= 2.6e8  # the measured pair, made physical, holds
    many = refit(measured, [6e8] * 20, [1.5e8] * 20)  # the records of jobs that ran on V100s
    assert many.b_link == pytest.approx(6e8) and many.b_net == pytest.approx(1.5e8) and not many.constrained


@pytest.mark.parametrize("seed", range(20))
def test_refit_stays_physical_and_within_what_was_measured_on_random_adversarial_records(seed):
    import random

    from estimator.calibration import refit

    rng = random.Random(seed)
    junk = [float("nan"), -1.0, 0.0, math.inf, "x", None]

    def point():
        return rng.choice(junk) if rng.random() < 0.2 else 10 ** rng.uniform(2, 14)

    measured = (10 ** rng.uniform(6, 11), 10 ** rng.uniform(6, 11)) if rng.random() < 0.7 else None
    links = [point() for _ in range(rng.randrange(0, 30))]
    nets = [point() for _ in range(rng.randrange(0, 30))]
    fit = refit(measured, links, nets)  # type: ignore[arg-type]
    finite = [p for p in ([*measured] if measured else []) + links + nets
              if isinstance(p, float) and math.isfinite(p) and p > 0]
    if fit.b_link is not None and fit.b_net is not None:
        assert fit.b_link >= fit.b_net
    for value in (fit.b_link, fit.b_net):
        if value is not None:
            assert min(finite) * (1 - 1e-9) <= value <= max(finite) * (1 + 1e-9)


PROFILE = dict(t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1e8, batch_size=32)


def _store_with_v100_job(tmp_path, *, b_link: float, b_net: float):
    from estimator.store import ThroughputStore
    from estimator.model import TimeComponents

    store = ThroughputStore(tmp_path / "store.sqlite")
    store.put_calibration("v100", b_link=b_link, b_net=b_net, method="calibrate", measured_at=0.0)
    return store, TimeComponents(**PROFILE)


def test_the_store_refits_the_calibration_as_runtime_records_arrive(tmp_path):
    from estimator.mixture import Mixture
    from estimator.model import per_gpu_theory_throughput

    store, tc = _store_with_v100_job(tmp_path, b_link=1.17e8, b_net=2.64e8)  # issue 22's calibrated V100
    with store:
        before = store.calibration("v100")
        assert before is not None and before.b_link >= before.b_net  # what readers get is physical, even unrefitted
        true_link, true_net = 6e8, 1.5e8
        for i in range(12):  # twelve jobs ran on V100s, in one server on 2 GPUs and across two servers
            sig = f"job{i}"
            store.put_theory(sig, "v100", **PROFILE)
            for gpus, nodes in ((2, 1), (4, 2)):
                rate = per_gpu_theory_throughput(tc, Mixture.constant(0.0), gpus=gpus, nodes=nodes,
                                                 b_link=true_link, b_net=true_net)
                store.put_type_throughput(sig, "v100", gpus=gpus, nodes=nodes, throughput=rate * gpus)
        after = store.calibration("v100")
        assert after is not None
        assert after.b_link == pytest.approx(true_link, rel=1e-6) and after.b_net == pytest.approx(true_net, rel=1e-6)
        assert "refit with 12 in-server and 12 cross-server runtime record(s)" in after.method
        assert store.measured_calibrations()["v100"].b_link == pytest.approx(1.17e8)  # the table is kept


def test_stalled_records_do_not_drag_the_calibration_down(tmp_path):
    store, tc = _store_with_v100_job(tmp_path, b_link=6e8, b_net=1.5e8)
    with store:
        for i in range(10):  # a model that does not run on 2 GPUs: one step in a long window
            store.put_theory(f"stuck{i}", "v100", **PROFILE)
            store.put_type_throughput(f"stuck{i}", "v100", gpus=2, nodes=1, throughput=1e-4)
        cal = store.calibration("v100")
        assert cal is not None and cal.b_link == pytest.approx(6e8) and cal.b_net == pytest.approx(1.5e8)


def test_a_cached_source_reads_the_refit_again_after_a_record(tmp_path):
    from estimator.mixture import Mixture
    from estimator.model import per_gpu_theory_throughput
    from estimator.snapshot import CachedSource

    store, tc = _store_with_v100_job(tmp_path, b_link=1.5e8, b_net=1.5e8)
    with store:
        source = CachedSource(store)
        assert source.calibrations()["v100"].b_link == pytest.approx(1.5e8)
        rate = per_gpu_theory_throughput(tc, Mixture.constant(0.0), gpus=2, nodes=1, b_link=9e8, b_net=1.5e8)
        for i in range(15):
            store.put_theory(f"job{i}", "v100", **PROFILE)
            store.put_type_throughput(f"job{i}", "v100", gpus=2, nodes=1, throughput=rate * 2)
        assert source.calibrations()["v100"].b_link == pytest.approx(1.5e8)  # cached until told
        source.forget("job0")
        assert source.calibrations()["v100"].b_link == pytest.approx(9e8, rel=1e-6)


@pytest.mark.parametrize("bad", [(float("nan"), 1e8), (-1.0, 1e8), (1e8, 0.0)])
def test_a_measured_pair_that_is_not_two_positive_numbers_is_ignored_by_the_refit(bad):
    from estimator.calibration import refit

    assert refit(bad, [], []).b_link is None or refit(bad, [], []).b_net is None
    fit = refit(bad, [4e8] * 3, [2e8] * 3)
    assert fit.b_link is not None and fit.b_net is not None and fit.b_link >= fit.b_net
