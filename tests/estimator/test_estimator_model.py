"""Eq. (1)-(5) with hand-computed values, both patterns."""

from __future__ import annotations

import pytest

from estimator.mixture import Mixture
from estimator.model import (
    TimeComponents,
    comm_time,
    expected_iter_time,
    iter_time,
    per_gpu_theory_throughput,
    throughput,
)

TC1 = TimeComponents(t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1e8, batch_size=32)
TC2 = TimeComponents(t_f=0.01, t_b=0.02, t_u=0.005, pattern=2, params=1e8, batch_size=32)
# p_cache 0.7: T_d ~ 0.002 s (cache) / 0.08 s (load); T_w 0.001 / 0.01 under the same condition.
MIX = Mixture(0.7, 0.002, 0.0005, 0.08, 0.01, 2, wait_cache=0.001, wait_load=0.01)


def test_comm_time_within_node_is_ring_allreduce():
    # 1e8 params / 1e10 params/s = 0.01 s; x (N-1)/N
    assert comm_time(1e8, 4, 1, b_link=1e10, b_net=1e9) == pytest.approx(0.0075)
    assert comm_time(1e8, 2, 1, b_link=1e10, b_net=1e9) == pytest.approx(0.005)
    assert comm_time(1e8, 8, 1, b_link=1e10, b_net=1e9) == pytest.approx(0.00875)


def test_comm_time_across_nodes_uses_network_bandwidth_only():
    # 1e8 / 1e9 = 0.1 s regardless of GPU count
    assert comm_time(1e8, 2, 2, b_link=1e10, b_net=1e9) == pytest.approx(0.1)
    assert comm_time(1e8, 16, 4, b_link=1e10, b_net=1e9) == pytest.approx(0.1)


def test_comm_time_single_gpu_is_zero_and_needs_no_bandwidth():
    assert comm_time(1e8, 1, 1, b_link=0.0, b_net=0.0) == 0.0


@pytest.mark.parametrize("gpus,nodes", [(2, 3), (0, 1), (2, 0)])
def test_comm_time_rejects_impossible_layouts(gpus, nodes):
    with pytest.raises(ValueError):
        comm_time(1e8, gpus, nodes, 1e10, 1e9)


def test_iter_time_pattern_1_data_time_hidden_behind_backward_or_not():
    # backward branch = max(0.02 + 0.2*0.0075, 0.0075) + 0.005 = 0.0265
    common = dict(t_f=0.01, t_b=0.02, t_u=0.005, t_c=0.0075, t_w=0.001)
    assert iter_time(1, t_d=0.05, **common) == pytest.approx(0.05 + 0.01 + 0.001)  # data dominates
    assert iter_time(1, t_d=0.001, **common) == pytest.approx(0.0265 + 0.01 + 0.001)  # backward dominates


def test_iter_time_pattern_2_adds_data_time():
    common = dict(t_f=0.01, t_b=0.02, t_u=0.005, t_c=0.0075, t_w=0.001)
    assert iter_time(2, t_d=0.05, **common) == pytest.approx(0.05 + 0.0265 + 0.01 + 0.001)  # 0.0875


def test_iter_time_communication_bound_backward():
    # T_c = 0.1 > T_b + 0.2 T_c = 0.04: backward branch = 0.1 + 0.005
    assert iter_time(1, t_d=0.05, t_f=0.01, t_b=0.02, t_u=0.005, t_c=0.1, t_w=0.0) == pytest.approx(0.115)
    assert iter_time(2, t_d=0.05, t_f=0.01, t_b=0.02, t_u=0.005, t_c=0.1, t_w=0.0) == pytest.approx(0.165)


def test_iter_time_rejects_unknown_pattern():
    with pytest.raises(ValueError):
        iter_time(3, t_d=0, t_f=0, t_b=0, t_u=0, t_c=0, t_w=0)


def test_expected_iter_time_pattern_1():
    # cache: max(0.002, 0.0265) + 0.01 + 0.001 = 0.0375; load: max(0.08, 0.0265) + 0.01 + 0.01 = 0.1
    # E = 0.7 * 0.0375 + 0.3 * 0.1 = 0.05625
    assert expected_iter_time(TC1, MIX, 0.0075, gpus=4) == pytest.approx(0.05625)


def test_expected_iter_time_pattern_2():
    # cache: 0.002 + 0.0265 + 0.01 + 0.001 = 0.0395; load: 0.08 + 0.0265 + 0.01 + 0.01 = 0.1265
    # E = 0.7 * 0.0395 + 0.3 * 0.1265 = 0.0656
    assert expected_iter_time(TC2, MIX, 0.0075, gpus=4) == pytest.approx(0.0656)


def test_single_gpu_has_no_sync_wait():
    # gpus = 1: T_c = 0, T_w = 0. cache: max(0.002, 0.025) + 0.01 = 0.035; load: 0.08 + 0.01 = 0.09
    assert expected_iter_time(TC1, MIX, 0.0, gpus=1) == pytest.approx(0.7 * 0.035 + 0.3 * 0.09)


def test_throughput_is_batch_over_expected_time():
    assert throughput(32, 0.05625) == pytest.approx(568.8888889)
    with pytest.raises(ValueError):
        throughput(32, 0.0)


def test_per_gpu_theory_throughput_chains_eq_2_to_5():
    # 4 GPUs on one node: T_c = 0.0075 -> E = 0.05625 (above) -> 32 / 0.05625
    assert per_gpu_theory_throughput(TC1, MIX, gpus=4, nodes=1, b_link=1e10, b_net=1e9) == pytest.approx(32 / 0.05625)
    # 2 GPUs over 2 nodes, pattern 2: T_c = 0.1, backward = 0.105
    # cache 0.002 + 0.105 + 0.01 + 0.001 = 0.118; load 0.08 + 0.105 + 0.01 + 0.01 = 0.205
    e = 0.7 * 0.118 + 0.3 * 0.205
    assert per_gpu_theory_throughput(TC2, MIX, gpus=2, nodes=2, b_link=1e10, b_net=1e9) == pytest.approx(32 / e)


def test_time_components_validate():
    with pytest.raises(ValueError):
        TimeComponents(0.01, 0.02, 0.0, pattern=3, params=1.0, batch_size=1)
    with pytest.raises(ValueError):
        TimeComponents(-0.01, 0.02, 0.0, pattern=1, params=1.0, batch_size=1)
    with pytest.raises(ValueError):
        TimeComponents(0.01, 0.02, 0.0, pattern=1, params=1.0, batch_size=0)


def test_expected_maximum_of_standard_normals_matches_known_values():
    from estimator.model import expected_max_normal

    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / 3.141592653589793 ** 0.5, rel=1e-6)  # 1/sqrt(pi)
    assert expected_max_normal(3) == pytest.approx(0.846284, rel=1e-5)
    assert expected_max_normal(4) == pytest.approx(1.029375, rel=1e-5)
    assert expected_max_normal(8) == pytest.approx(1.423600, rel=1e-5)
    with pytest.raises(ValueError, match="n >= 1"):
        expected_max_normal(0)


def test_latency_adds_one_start_up_per_ring_step_in_each_scope():
    # 0.0075 s of bandwidth term in one node, plus 3 steps of 1 ms; across nodes 0.1 s plus 15 steps
    assert comm_time(1e8, 4, 1, b_link=1e10, b_net=1e9, latency=0.001) == pytest.approx(0.0105)
    assert comm_time(1e8, 16, 4, b_link=1e10, b_net=1e9, latency=0.001) == pytest.approx(0.115)
    assert comm_time(1e8, 1, 1, b_link=0.0, b_net=0.0, latency=0.001) == 0.0  # one GPU: no ring
    for bad in (-1e-3, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="latency"):
            comm_time(1e8, 2, 1, b_link=1e10, b_net=1e9, latency=bad)


def test_straggler_wait_slows_multi_gpu_only_and_grows_with_the_count():
    from estimator.model import straggler_wait

    base = dict(b_link=1e10, b_net=1e9)
    one = per_gpu_theory_throughput(TC1, MIX, gpus=1, nodes=1, straggler=0.5, **base)
    assert one == per_gpu_theory_throughput(TC1, MIX, gpus=1, nodes=1, **base)  # nobody to wait for
    rates = [per_gpu_theory_throughput(TC1, MIX, gpus=n, nodes=1, straggler=0.2, **base) for n in (2, 4, 8)]
    plain = [per_gpu_theory_throughput(TC1, MIX, gpus=n, nodes=1, **base) for n in (2, 4, 8)]
    assert all(r < p for r, p in zip(rates, plain)) and rates[0] > rates[1] > rates[2]
    # the wait is spread x compute x E[max of N]: added to E[T_iter] as it is
    compute = TC1.t_f + TC1.t_b + TC1.t_u
    assert 32 / rates[1] - 32 / plain[1] == pytest.approx(straggler_wait(0.2 * compute, 4))
    assert straggler_wait(0.0, 8) == 0.0
    with pytest.raises(ValueError, match="straggler"):
        per_gpu_theory_throughput(TC1, MIX, gpus=2, nodes=1, straggler=-0.1, **base)


def test_without_the_added_terms_the_model_is_the_papers():
    # defaults 0: eq. (1)-(2) exactly (hand value of the pattern-1 test above, T_d = 0)
    tc = TimeComponents(t_f=0.01, t_b=0.02, t_u=0.0, pattern=1, params=1e8, batch_size=1)
    t_c = 1e8 / 1e10 * 0.5
    want = 1 / (0.01 + max(0.02 + 0.2 * t_c, t_c))
    assert per_gpu_theory_throughput(tc, Mixture.constant(0.0), gpus=2, nodes=1, b_link=1e10, b_net=1e9) == \
        pytest.approx(want)
