"""Properties that hold for any inputs: the EM keeps the sample mean, more communication never helps."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.mixture import Mixture, fit_mixture
from estimator.model import TimeComponents, per_gpu_theory_throughput

times = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(times, min_size=1, max_size=80))
def test_mixture_preserves_sample_mean_and_orders_components(xs):
    m = fit_mixture(xs)
    assert 0.0 <= m.p_cache <= 1.0
    assert m.mu_cache <= m.mu_load + 1e-12
    assert math.isclose(m.mean, sum(xs) / len(xs), rel_tol=1e-6, abs_tol=1e-9)


comp = st.floats(min_value=1e-4, max_value=1.0)


@settings(max_examples=60, deadline=None)
@given(comp, comp, st.floats(min_value=0.0, max_value=0.5), st.sampled_from([1, 2]),
       st.floats(min_value=1e5, max_value=1e9), st.floats(min_value=1e7, max_value=1e11),
       st.floats(min_value=1e-3, max_value=1.0), st.floats(min_value=0.0, max_value=0.2))
def test_more_gpus_or_slower_links_never_raise_per_gpu_throughput(
    t_f, t_b, t_u, pattern, params, b_link, net_ratio, t_d
):
    tc = TimeComponents(t_f, t_b, t_u, pattern, params, 32)
    data = Mixture.constant(t_d)
    b_net = b_link * net_ratio  # the network is no faster than the in-node link
    agg = [per_gpu_theory_throughput(tc, data, gpus=n, nodes=1, b_link=b_link, b_net=b_net) for n in (1, 2, 4, 8)]
    assert all(a >= b * (1 - 1e-12) for a, b in zip(agg, agg[1:]))
    dis = per_gpu_theory_throughput(tc, data, gpus=2, nodes=2, b_link=b_link, b_net=b_net)
    assert dis <= agg[1] * (1 + 1e-12)
