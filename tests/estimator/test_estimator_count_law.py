"""The learned count law (estimator.count_law): how a GPU type's communication grows with the count, read
from its jobs' runs at two counts, and a job's one run carried with it."""

from __future__ import annotations

import math

import pytest

from estimator.count_law import ALPHA_MAX, COUNT_LAW, MIN_JOBS, exponents, law_per_gpu, pair_exponent
from estimator.estimate import Estimator, per_gpu_estimate
from estimator.mixture import Mixture
from estimator.model import TimeComponents
from estimator.peers import Peer, PeerTable
from estimator.refine import REFINED, ring_share
from estimator.snapshot import CachedSource, JobSnapshot, TypeTheory
from estimator.store import ThroughputStore

TC = TimeComponents(0.01, 0.02, 0.005, pattern=1, params=1e8, batch_size=32)
THEORY = TypeTheory(TC, Mixture.constant(0.0))
ONE = 32 / 0.035  # the probe's 1-GPU rate: batch / (T_f + T_b + T_u)


def _rate(one: float, comm2: float, count: int, alpha: float) -> float:
    """Per-GPU rate at ``count`` of a job whose communication per sample is ``comm2`` at 2 and grows as s^alpha."""
    return 1.0 / (1.0 / one + comm2 * (ring_share(count) / ring_share(2)) ** alpha)


def _peer(name: str, comm2: float, alpha: float, counts=(2, 4, 8), one: float = 1000.0) -> Peer:
    return Peer(name, one, {c: _rate(one, comm2, c, alpha) for c in counts})


def test_a_pair_of_counts_gives_the_exponent_of_its_communication():
    one = 1000.0
    assert pair_exponent(one, 2, _rate(one, 2e-4, 2, 2.0), 8, _rate(one, 2e-4, 8, 2.0)) == pytest.approx(2.0)
    assert pair_exponent(one, 4, _rate(one, 2e-4, 4, 1.0), 2, _rate(one, 2e-4, 2, 1.0)) == pytest.approx(1.0)
    assert pair_exponent(one, 2, 1000.0, 4, 900.0) is None  # no communication cost at 2: says nothing
    assert pair_exponent(one, 2, 1100.0, 4, 900.0) is None  # super-linear point
    assert pair_exponent(one, 1, 1000.0, 4, 900.0) is None  # one GPU is no multi-GPU count
    assert pair_exponent(one, 2, math.nan, 4, 900.0) is None


def test_a_type_learns_the_median_exponent_once_enough_jobs_ran_two_counts():
    peers = tuple(_peer(f"u/p{i}", 1e-4 * (i + 1), a) for i, a in enumerate((1.5, 2.0, 2.5)))
    laws = exponents(PeerTable({("p100", True): peers, ("p100", False): peers[:MIN_JOBS - 1]}))
    assert laws == {("p100", True): pytest.approx(2.0)}  # too few jobs across servers: the ring share there


def test_the_learned_exponent_stays_between_flat_and_n_minus_1_communication():
    steep = tuple(_peer(f"u/s{i}", 1e-4, 9.0) for i in range(MIN_JOBS))
    flat = tuple(_peer(f"u/f{i}", 1e-4, -2.0) for i in range(MIN_JOBS))
    laws = exponents(PeerTable({("k80", True): steep, ("k80", False): flat}))
    assert laws[("k80", True)] == pytest.approx(ALPHA_MAX)
    assert laws[("k80", False)] == 0.0
    # the bound is communication growing with N - 1: from 2 to 8 members, 7 times
    assert (ring_share(8) / ring_share(2)) ** ALPHA_MAX == pytest.approx(7.0)


def test_one_run_is_carried_with_the_types_law_not_the_ring_share():
    comm2 = 0.3 / ONE  # the job spends 30 % of a 1-GPU sample's time communicating on 2 GPUs
    job = JobSnapshot("u/job", theory={"v100": THEORY}, type_aggregated={("v100", 2): _rate(ONE, comm2, 2, 2.0)})
    truth = _rate(ONE, comm2, 8, 2.0)
    got = law_per_gpu(job, {("v100", True): 2.0}, "v100", gpus=8, nodes=1)
    assert got == pytest.approx(truth)
    ring = law_per_gpu(job, {("v100", True): 1.0}, "v100", gpus=8, nodes=1)
    assert ring is not None and ring > truth * 1.1  # the ring share carries too little communication
    assert law_per_gpu(job, {("v100", False): 2.0}, "v100", gpus=8, nodes=1) is None  # no law in one server
    assert law_per_gpu(job, {("v100", True): 2.0}, "v100", gpus=2, nodes=1) is None  # no other count ran
    assert law_per_gpu(job, {("v100", True): 2.0}, "v100", gpus=8, nodes=8) is None  # no run across servers


def test_the_estimator_carries_with_the_law_its_stores_jobs_show(tmp_path):
    with ThroughputStore(tmp_path / "s.db") as store:
        for i, sig in enumerate(("u/a", "u/b", "u/c", "u/job")):
            store.put_theory(sig, "v100", t_f=TC.t_f, t_b=TC.t_b, t_u=TC.t_u, pattern=1, params=TC.params,
                             batch_size=TC.batch_size)
            comm2 = (0.2 + 0.1 * i) / ONE
            for gpus in (2, 8) if sig != "u/job" else (2,):
                store.add_runtime_samples(sig, "v100", "n1", gpus=gpus, nodes=1,
                                          throughput=gpus * _rate(ONE, comm2, gpus, 2.0))
        store.put_calibration("v100", b_link=1e10, b_net=1e9, measured_at=0.0, method="test")
        source = CachedSource(store)
        learned = Estimator(source, {"n2": ("v100", "n2")})
        ring = Estimator(source, {"n2": ("v100", "n2")}, count_law=False)
        truth = _rate(ONE, 0.5 / ONE, 8, 2.0)
        got = learned.per_gpu_throughput("u/job", "v100", 8, 1)
        assert got == pytest.approx(truth, rel=1e-6)
        assert abs(ring.per_gpu_throughput("u/job", "v100", 8, 1) / truth - 1) > 0.05
        snap = source.snapshot("u/job")
        layer = per_gpu_estimate(snap, source.calibrations(), gpu_type="v100", gpus=8, nodes=1,
                                 laws=learned.laws()).layer
        assert layer == COUNT_LAW
        assert per_gpu_estimate(snap, source.calibrations(), gpu_type="v100", gpus=8, nodes=1,
                                laws=ring.laws()).layer == REFINED
