"""The cross-model layer (estimator.peers): the type's other jobs' scaling from one GPU count to another,
read from the store and carried to a job that ran once on the type."""

from __future__ import annotations

import math

import pytest

import estimator.peers as peers_mod
from estimator.estimate import Estimator, per_gpu_estimate
from estimator.mixture import Mixture
from estimator.model import TimeComponents
from estimator.peers import OWN_WEIGHT, PEERS, WIDTH, Peer, PeerTable, one_gpu_rate, peer_per_gpu
from estimator.refine import REFINED, carried_per_gpu
from estimator.snapshot import CachedSource, Calibration, JobSnapshot, TypeTheory
from estimator.store import ThroughputStore

TC = TimeComponents(0.01, 0.02, 0.005, pattern=1, params=1e8, batch_size=32)
THEORY = TypeTheory(TC, Mixture.constant(0.0))
CALS = {"v100": Calibration("v100", b_link=1e10, b_net=1e9)}
ONE = 32 / 0.035  # the probe's 1-GPU rate: batch / (T_f + T_b + T_u)


def _probe(store: ThroughputStore, signature: str) -> None:
    store.put_theory(signature, "v100", t_f=TC.t_f, t_b=TC.t_b, t_u=TC.t_u, pattern=1, params=TC.params,
                     batch_size=TC.batch_size)


def _job(rate2: float) -> JobSnapshot:
    return JobSnapshot("u/job", theory={"v100": THEORY}, type_aggregated={("v100", 2): rate2})


def test_the_peer_table_holds_every_signature_measured_at_two_multi_gpu_counts(tmp_path):
    with ThroughputStore(tmp_path / "s.db") as store:
        for sig in ("u/a", "u/b", "u/c"):
            _probe(store, sig)
        store.add_runtime_samples("u/a", "v100", "n1", gpus=2, nodes=1, throughput=1200.0)
        store.add_runtime_samples("u/a", "v100", "n2", gpus=4, nodes=1, throughput=2000.0)
        store.add_runtime_samples("u/a", "v100", "n3", gpus=2, nodes=2, throughput=1000.0)  # one count across
        store.add_runtime_samples("u/b", "v100", "n1", gpus=2, nodes=1, throughput=999.0)  # one count only
        store.add_runtime_samples("u/c", "v100", "n1", gpus=1, nodes=1, throughput=800.0)
        store.add_runtime_samples("u/c", "v100", "n1", gpus=2, nodes=2, throughput=1400.0)
        store.add_runtime_samples("u/c", "v100", "n3", gpus=4, nodes=4, throughput=2400.0)
        table = store.peers()
    assert set(table.peers) == {("v100", True), ("v100", False)}
    (a,) = table.peers[("v100", True)]
    assert a.signature == "u/a" and a.rates == {2: 600.0, 4: 500.0} and a.one_gpu == pytest.approx(ONE)
    (c,) = table.peers[("v100", False)]
    assert c.signature == "u/c" and c.rates == {2: 700.0, 4: 600.0}  # the 1-GPU record is not a count to carry
    assert table.answers("v100", True, 2, 4, exclude="u/x") == [(pytest.approx(600.0 / ONE), pytest.approx(500 / 600))]
    assert table.answers("v100", True, 2, 4, exclude="u/a") == []  # a job is not its own peer
    assert table.answers("v100", True, 2, 8, exclude="u/x") == []


def test_the_peer_table_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(peers_mod, "MAX_PEERS", 3)
    with ThroughputStore(tmp_path / "s.db") as store:
        for i in range(5):
            _probe(store, f"u/p{i}")
            for gpus in (2, 4) if i < 4 else (2, 4, 8):
                store.add_runtime_samples(f"u/p{i}", "v100", "n1", gpus=gpus, nodes=1, throughput=100.0 * gpus)
        got = [p.signature for p in store.peers().peers[("v100", True)]]
    assert got == ["u/p4", "u/p0", "u/p1"]  # the most counts first, then by signature


def test_a_run_at_one_count_is_carried_with_the_scaling_of_peers_of_like_efficiency():
    rate2 = 0.8 * ONE  # the job runs at 80 % of its 1-GPU rate per GPU on 2 GPUs
    near = Peer("u/near", 1000.0, {2: 800.0, 4: 720.0})  # same efficiency at 2 GPUs: loses 10 % going to 4
    far = Peer("u/far", 1000.0, {2: 400.0, 4: 200.0})  # efficiency 0.4: halves
    table = PeerTable({("v100", True): (near, far)})
    got = peer_per_gpu(_job(rate2), table, "v100", gpus=4, nodes=1)
    own = carried_per_gpu(TC, THEORY.data, rate2, 2, gpus=4, nodes=1)
    assert own is not None
    w_far = math.exp(-abs(math.log(0.4 / 0.8)) / WIDTH)
    expected = math.exp((math.log(rate2 * 0.9) + w_far * math.log(rate2 * 0.5) + OWN_WEIGHT * math.log(own))
                        / (1 + w_far + OWN_WEIGHT))
    assert got == pytest.approx(expected)
    assert abs(math.log(got / (rate2 * 0.9))) < abs(math.log(own / (rate2 * 0.9)))  # moved toward the near peer
    assert w_far < 1e-2  # a peer of another efficiency barely speaks


def test_the_estimate_takes_the_peers_layer_where_no_sibling_answers_and_refine_where_no_peer_does():
    snap = _job(0.8 * ONE)
    table = PeerTable({("v100", True): (Peer("u/p", 1000.0, {2: 800.0, 4: 600.0}),)})
    est = per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=4, nodes=1, peers=table)
    assert est.layer == PEERS
    assert est.per_gpu == pytest.approx(peer_per_gpu(snap, table, "v100", gpus=4, nodes=1))
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=4, nodes=1).layer == REFINED  # no table: no layer
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=8, nodes=1, peers=table).layer == REFINED
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=4, nodes=4, peers=table).layer != PEERS  # other scope
    assert per_gpu_estimate(snap, CALS, gpu_type="v100", gpus=2, nodes=1, peers=table).layer == "type"


def test_one_gpu_rate_is_the_probe_else_a_one_gpu_record():
    assert one_gpu_rate(_job(1.0), "v100") == pytest.approx(ONE)
    measured = JobSnapshot("u/m", type_aggregated={("v100", 1): 700.0, ("v100", 2): 600.0})
    assert one_gpu_rate(measured, "v100") == 700.0
    assert one_gpu_rate(JobSnapshot("u/z"), "v100") is None


def test_the_estimator_reads_the_peers_through_a_cached_view_that_rereads_after_a_write(tmp_path):
    with ThroughputStore(tmp_path / "s.db") as store:
        for sig in ("u/job", "u/p"):
            _probe(store, sig)
        store.put_calibration("v100", b_link=1e10, b_net=1e9, measured_at=0.0, method="test")
        store.add_runtime_samples("u/job", "v100", "n1", gpus=2, nodes=1, throughput=2 * 0.8 * ONE)
        source = CachedSource(store)
        nodes = {"n1": ("v100", "n1"), "n2": ("v100", "n2")}
        est = Estimator(source, nodes, cross_model=True)
        before = est.throughput_fn("u/job")({"n2": 4})
        assert source.peers() == PeerTable({})
        store.add_runtime_samples("u/p", "v100", "n1", gpus=2, nodes=1, throughput=2 * 0.8 * ONE)
        store.add_runtime_samples("u/p", "v100", "n1", gpus=4, nodes=1, throughput=4 * 0.4 * ONE)
        source.forget("u/p")
        after = est.throughput_fn("u/job")({"n2": 4})
        default = Estimator(source, nodes)  # off unless asked for (estimator.peers' module docstring)
        assert default.peers() is None and default.throughput_fn("u/job")({"n2": 4}) == pytest.approx(before)
    assert [p.signature for p in source.peers().peers[("v100", True)]] == ["u/p"]
    assert after < before  # the peer that halved going to 4 GPUs pulls the job's estimate down
