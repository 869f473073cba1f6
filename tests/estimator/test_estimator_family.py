"""A job's family (the same network at other batch sizes, estimator.family) in the store, and the rule that
carries the family's measured scaling to a count the job has not run (estimator.family_refine)."""

from __future__ import annotations

import math

import pytest

from estimator.estimate import per_gpu_estimate
from estimator.family import MAX_SIBLINGS
from estimator.family_refine import FAMILY, OWN_WEIGHT, batch_weight, family_per_gpu
from estimator.mixture import Mixture
from estimator.model import TimeComponents
from estimator.refine import carried_per_gpu, refined_per_gpu
from estimator.snapshot import CachedSource, Calibration, JobSnapshot, Sibling, TypeTheory
from estimator.store import ThroughputStore
from profiler.signature import family_signature, job_signature

TC = TimeComponents(0.01, 0.02, 0.005, pattern=1, params=1e8, batch_size=32)
THEORY = TypeTheory(TC, Mixture.constant(0.0))
CALS = {"v100": Calibration("v100", b_link=1e10, b_net=1e9)}


def _probe(store: ThroughputStore, signature: str, batch: int, family: str) -> None:
    store.put_theory(signature, "v100", t_f=TC.t_f, t_b=TC.t_b, t_u=TC.t_u, pattern=1, params=TC.params,
                     batch_size=batch, family=family)


def test_the_family_key_is_the_signature_without_the_batch_size():
    a, b = job_signature("resnet50", 25_600_000, 32, (3, 224, 224)), job_signature("resnet50", 25_600_000, 64, (3, 224, 224))
    assert a != b
    fam = family_signature("resnet50", 25_600_000, (3, 224, 224))
    assert fam and fam == family_signature("resnet50", 25_600_000, [3, 224, 224])
    assert fam != family_signature("resnet18", 25_600_000, (3, 224, 224))
    assert fam != family_signature("resnet50", 11_170_000, (3, 224, 224))
    assert family_signature("", 1, ()) == ""
    assert family_signature("pkg.mod:build", 1, (), "alice") != family_signature("pkg.mod:build", 1, (), "bob")


def test_a_snapshot_carries_what_the_family_measured_and_nothing_of_other_families(tmp_path):
    with ThroughputStore(tmp_path / "s.db") as store:
        _probe(store, "u/a", 32, "fam-x")
        _probe(store, "u/b", 64, "fam-x")
        _probe(store, "u/c", 32, "fam-y")
        _probe(store, "u/d", 16, "fam-x")  # probed, never ran: nothing to carry
        store.add_runtime_samples("u/b", "v100", "n1", gpus=2, nodes=1, throughput=200.0)
        store.add_runtime_samples("u/b", "v100", "n2", gpus=4, nodes=1, throughput=360.0)
        store.add_runtime_samples("u/b", "v100", "n3", gpus=2, nodes=2, throughput=150.0)
        store.add_runtime_samples("u/c", "v100", "n1", gpus=2, nodes=1, throughput=999.0)
        snap = store.snapshot("u/a")
        assert snap.family == "fam-x" and store.family_of("u/a") == "fam-x"
        assert [s.signature for s in snap.siblings] == ["u/b"]
        sib = snap.siblings[0]
        assert sib.batch_size == 64
        assert sib.type_aggregated == {("v100", 2): 100.0, ("v100", 4): 90.0}
        assert sib.type_distributed == {("v100", 2): 75.0}
        assert store.snapshot("u/c").siblings == ()
        _probe(store, "u/a", 32, "")  # a profile that names no family: the job leaves it
        assert store.snapshot("u/a").family == "" and store.snapshot("u/a").siblings == ()


def test_a_snapshot_reads_a_bounded_number_of_siblings_nearest_in_batch_size(tmp_path):
    with ThroughputStore(tmp_path / "s.db") as store:
        _probe(store, "u/a", 32, "f")
        for i in range(MAX_SIBLINGS + 5):
            _probe(store, f"u/s{i:02d}", 32 + i, "f")
            store.add_runtime_samples(f"u/s{i:02d}", "v100", "n1", gpus=2, nodes=1, throughput=100.0)
        got = [s.batch_size for s in store.snapshot("u/a").siblings]
        assert got == list(range(32, 32 + MAX_SIBLINGS))


def test_a_cached_view_rereads_the_family_when_a_sibling_learns(tmp_path):
    with ThroughputStore(tmp_path / "s.db") as store:
        _probe(store, "u/a", 32, "f")
        _probe(store, "u/b", 64, "f")
        _probe(store, "u/c", 64, "g")
        source = CachedSource(store)
        first = source.snapshot("u/a")
        assert first.siblings == ()
        other = source.snapshot("u/c")
        store.add_runtime_samples("u/b", "v100", "n1", gpus=2, nodes=1, throughput=200.0)
        source.forget("u/b")  # never read through this view: its family comes from the store
        again = source.snapshot("u/a")
        assert [s.signature for s in again.siblings] == ["u/b"]
        assert again.theory["v100"] is first.theory["v100"]  # only the siblings were read again
        assert source.snapshot("u/a") is again
        assert source.snapshot("u/c") is other  # another family's snapshot is kept
        store.add_runtime_samples("u/a", "v100", "n1", gpus=2, nodes=1, throughput=90.0)
        source.forget("u/a")
        assert source.snapshot("u/a").type_aggregated == {("v100", 2): 45.0}


def _snap(own: dict[int, float], siblings: tuple[Sibling, ...]) -> JobSnapshot:
    return JobSnapshot("job", theory={"v100": THEORY}, type_aggregated={("v100", n): v for n, v in own.items()},
                       family="f", siblings=siblings)


def test_the_estimate_is_the_weighted_geometric_mean_of_the_siblings_and_the_own_carry():
    near = Sibling("near", 64, {("v100", 2): 100.0, ("v100", 4): 120.0})  # per-GPU rises 1.2x from 2 to 4
    far = Sibling("far", 128, {("v100", 2): 100.0, ("v100", 4): 90.0})
    snap = _snap({2: 50.0}, (near, far))
    own = carried_per_gpu(TC, THEORY.data, 50.0, 2, gpus=4, nodes=1)
    assert own is not None
    w_near, w_far = batch_weight(32, 64), batch_weight(32, 128)
    assert (w_near, w_far) == (0.25, 1 / 16)
    want = math.exp((w_near * math.log(60.0) + w_far * math.log(45.0) + OWN_WEIGHT * math.log(own))
                    / (w_near + w_far + OWN_WEIGHT))
    got = per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=4, nodes=1)
    assert got.layer == FAMILY
    assert got.per_gpu == pytest.approx(want, rel=1e-12)
    # the family says the rate rises with the count; the ring share alone can only lower it
    assert got.per_gpu > own


def test_a_sibling_at_the_same_batch_size_carries_half_way():
    sib = Sibling("twin", 32, {("v100", 2): 100.0, ("v100", 8): 150.0})
    snap = _snap({2: 50.0}, (sib,))
    own = carried_per_gpu(TC, THEORY.data, 50.0, 2, gpus=8, nodes=1)
    assert own is not None
    assert family_per_gpu(snap, "v100", gpus=8, nodes=1) == pytest.approx(math.sqrt(75.0 * own), rel=1e-12)


def test_without_a_sibling_at_both_counts_the_refinement_answers():
    snap = _snap({2: 50.0}, (Sibling("s", 64, {("v100", 4): 120.0}),  # never ran at 2
                             Sibling("t", 64, {("v100", 2): 100.0, ("v100", 4): 90.0}, )))
    assert family_per_gpu(snap, "v100", gpus=8, nodes=1) is None  # nobody ran 8
    got = per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=8, nodes=1)
    assert got.layer == "refined" and got.per_gpu == refined_per_gpu(snap, "v100", gpus=8, nodes=1)
    # across servers the siblings' one-server runs say nothing
    spread = JobSnapshot("job", theory={"v100": THEORY}, type_distributed={("v100", 2): 40.0}, family="f",
                         siblings=snap.siblings)
    assert family_per_gpu(spread, "v100", gpus=4, nodes=4) is None
    assert per_gpu_estimate(spread, CALS, gpu_type="v100", gpus=4, nodes=4).layer == "refined"
    assert per_gpu_estimate(_snap({2: 50.0}, snap.siblings), CALS, gpu_type="v100", gpus=4, nodes=1,
                            refine=False).layer == "theory"


def test_the_own_count_nearest_with_a_sibling_anchors_the_carry():
    sib = Sibling("s", 32, {("v100", 2): 100.0, ("v100", 8): 160.0})
    snap = _snap({2: 50.0, 4: 45.0}, (sib,))  # 4 is nearer 8, but no sibling ran 4 and 8
    own = carried_per_gpu(TC, THEORY.data, 50.0, 2, gpus=8, nodes=1)
    assert own is not None
    assert family_per_gpu(snap, "v100", gpus=8, nodes=1) == pytest.approx(math.sqrt(80.0 * own), rel=1e-12)


def test_batch_weight_is_symmetric_and_rejects_nonsense():
    assert batch_weight(16, 64) == batch_weight(64, 16) == 1 / 16
    assert batch_weight(7, 7) == 1.0
    with pytest.raises(ValueError):
        batch_weight(0, 4)
