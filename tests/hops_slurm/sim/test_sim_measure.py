"""What the simulated cluster reports to the production estimator: probes, calibrations, runtime records."""

import pytest

from estimator.estimate import Estimator
from estimator.store import ThroughputStore
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.measure import calibration, probe_result, runtime_record
from profiler.ingest import ingest_probe, ingest_runtime

R50 = "ResNet-50 (batch size 64)"


def test_probe_components_give_ground_truth_on_one_gpu(tmp_path):
    truth = GroundTruth()
    store = ThroughputStore(tmp_path / "s.sqlite")
    for t in ("k80", "v100"):
        ingest_probe(store, probe_result(truth, R50, t, "u/r50", at=0.0, probe_seconds=60.0))
        b_link, b_net = calibration(truth, t)
        assert 0 < b_link and 0 < b_net
        store.put_calibration(t, b_link=b_link, b_net=b_net, method="test", measured_at=0.0)
    est = Estimator(store, {"a": ("v100", "a"), "k": ("k80", "k")}, {"v100": 8, "k80": 8})
    fn = est.throughput_fn("u/r50")
    assert fn({"a": 1}) == pytest.approx(truth.samples_per_second(R50, "v100", 1, False))
    assert fn({"k": 1}) == pytest.approx(truth.samples_per_second(R50, "k80", 1, False))
    assert fn({"a": 2}) > fn({"a": 1})  # eq. 1-5 with the fitted bandwidths


def test_a_model_that_cannot_run_on_a_type_has_no_probe_there():
    truth = GroundTruth()
    zero = [(m, t) for m in truth.models for t in truth.gpu_types if truth.samples_per_second(m, t, 1, False) <= 0]
    for model, gpu_type in zero[:1]:
        assert probe_result(truth, model, gpu_type, "s", at=0.0, probe_seconds=1.0) is None


def test_runtime_records_are_valid_recorder_windows_and_teach_the_entity_layer(tmp_path):
    truth = GroundTruth()
    store = ThroughputStore(tmp_path / "s.sqlite")
    ingest_probe(store, probe_result(truth, R50, "v100", "u/r50", at=0.0, probe_seconds=60.0))
    one = truth.samples_per_second(R50, "v100", 1, False)
    rec = runtime_record("u/r50", R50, "v100", "slow", gpus=1, nodes=1, throughput=0.5 * one, window=300.0, at=10.0)
    assert rec.throughput == pytest.approx(0.5 * one, rel=1e-6) and rec.window_seconds == pytest.approx(300.0, rel=0.01)
    ingest_runtime(store, rec)
    assert store.entity_factors() == {"slow": pytest.approx(0.5, rel=1e-6)}
    # no progress at all (ground truth has no measurement there): one step in the longest window
    stuck = runtime_record("u/r50", R50, "v100", "slow", gpus=2, nodes=1, throughput=0.0, window=300.0, at=10.0)
    assert stuck.steps == 1 and stuck.throughput > 0


def test_the_variants_of_one_network_probe_as_one_family(tmp_path):
    """A probe names the model as a job's #HOPS model= does (the network, its batch size apart), so the
    store finds a variant's siblings (estimator.family)."""
    truth = GroundTruth()
    with ThroughputStore(tmp_path / "s.sqlite") as store:
        for model, sig in ((R50, "u/r50-64"), ("ResNet-50 (batch size 32)", "u/r50-32"),
                           ("ResNet-18 (batch size 64)", "u/r18-64")):
            result = probe_result(truth, model, "v100", sig, at=0.0, probe_seconds=60.0)
            assert result is not None and "batch size" not in result.model
            ingest_probe(store, result)
        store.add_runtime_samples("u/r50-32", "v100", "n1", gpus=2, nodes=1, throughput=100.0)
        store.add_runtime_samples("u/r18-64", "v100", "n1", gpus=2, nodes=1, throughput=100.0)
        snap = store.snapshot("u/r50-64")
        assert snap.family and snap.family == store.family_of("u/r50-32") != store.family_of("u/r18-64")
        assert [(s.signature, s.batch_size) for s in snap.siblings] == [("u/r50-32", 32)]


def test_an_entrypoints_family_is_its_owners_only(tmp_path):
    """A user's own code (an entrypoint) shares what its runs measured only with that user's jobs."""
    truth = GroundTruth()
    with ThroughputStore(tmp_path / "s.sqlite") as store:
        base = probe_result(truth, R50, "v100", "x", at=0.0, probe_seconds=60.0)
        assert base is not None
        for sig, batch in (("alice/a", 32), ("alice/b", 64), ("bob/c", 64)):
            ingest_probe(store, base.model_copy(update={"model": "pkg.net:build", "source": "entrypoint",
                                                        "signature": sig, "batch_size": batch}))
        assert store.family_of("alice/a") == store.family_of("alice/b") != store.family_of("bob/c")
