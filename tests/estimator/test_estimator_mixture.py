"""The EM fit of eq. (3): recovers known parameters, collapses unimodal data, conditions T_w."""

from __future__ import annotations

import math

import numpy as np
import pytest

from estimator.mixture import MIN_SAMPLES_FOR_TWO, Mixture, bic, cache_responsibility, fit_mixture


def _bimodal(rng: np.random.Generator, n: int, p: float, a: tuple[float, float], b: tuple[float, float]):
    hit = rng.random(n) < p
    x = np.where(hit, rng.normal(a[0], a[1], n), rng.normal(b[0], b[1], n))
    return x, hit


def test_recovers_known_parameters():
    rng = np.random.default_rng(7)
    x, _ = _bimodal(rng, 2000, 0.6, (0.010, 0.002), (0.200, 0.020))
    m = fit_mixture(x)
    assert m.components == 2
    assert m.p_cache == pytest.approx(0.6, abs=0.03)
    assert m.mu_cache == pytest.approx(0.010, abs=0.0005)
    assert m.mu_load == pytest.approx(0.200, abs=0.003)
    assert m.sigma_cache == pytest.approx(0.002, rel=0.15)
    assert m.sigma_load == pytest.approx(0.020, rel=0.15)
    assert m.mean == pytest.approx(0.6 * 0.010 + 0.4 * 0.200, rel=0.05)


def test_component_order_and_result_do_not_depend_on_sample_order():
    rng = np.random.default_rng(3)
    x, _ = _bimodal(rng, 400, 0.3, (0.05, 0.005), (0.02, 0.002))  # cache component drawn second
    m1 = fit_mixture(x)
    m2 = fit_mixture(rng.permutation(x))
    assert m1.mu_cache < m1.mu_load
    assert m1.p_cache == pytest.approx(0.7, abs=0.06)
    assert m2.p_cache == pytest.approx(m1.p_cache, abs=1e-6)
    assert m2.mu_load == pytest.approx(m1.mu_load, rel=1e-6)


def test_unimodal_data_collapses_to_one_component():
    rng = np.random.default_rng(11)
    x = rng.normal(0.05, 0.005, 500)
    m = fit_mixture(x)
    assert m.components == 1
    assert m.p_cache == 1.0 and m.p_load == 0.0
    assert m.mu_cache == pytest.approx(float(x.mean()))
    assert m.mu_load == m.mu_cache


def test_constant_and_tiny_samples_give_one_component():
    assert fit_mixture([0.01] * 50).components == 1
    few = [0.01, 0.5, 0.01, 0.5, 0.01][: MIN_SAMPLES_FOR_TWO - 1]
    m = fit_mixture(few)
    assert m.components == 1
    assert m.mu_cache == pytest.approx(sum(few) / len(few))


def test_bic_value():
    # k ln n - 2 ln L = 2 ln 100 + 20
    assert bic(-10.0, 2, 100) == pytest.approx(2 * math.log(100) + 20)


def test_sync_wait_is_conditioned_on_the_data_time_component():
    rng = np.random.default_rng(5)
    x, hit = _bimodal(rng, 600, 0.7, (0.005, 0.001), (0.100, 0.010))
    w = np.where(hit, rng.normal(0.002, 0.0002, 600), rng.normal(0.040, 0.002, 600))
    m = fit_mixture(x, w)
    assert m.wait_cache == pytest.approx(0.002, rel=0.05)
    assert m.wait_load == pytest.approx(0.040, rel=0.05)


def test_sync_waits_paired_through_their_own_data_times():
    rng = np.random.default_rng(9)
    x, _ = _bimodal(rng, 600, 0.5, (0.005, 0.001), (0.100, 0.010))
    # Only three iterations have a sync wait recorded: two cache hits and one load.
    m = fit_mixture(x, [0.001, 0.003, 0.05], sync_data_times=[0.005, 0.004, 0.1])
    assert m.wait_cache == pytest.approx(0.002, rel=1e-3)
    assert m.wait_load == pytest.approx(0.05, rel=1e-3)


def test_unpaired_sync_waits_use_one_mean():
    rng = np.random.default_rng(5)
    x, _ = _bimodal(rng, 300, 0.7, (0.005, 0.001), (0.100, 0.010))
    m = fit_mixture(x, [0.01, 0.03])
    assert m.components == 2
    assert m.wait_cache == m.wait_load == pytest.approx(0.02)


def test_responsibility_separates_components():
    m = Mixture(0.5, 0.01, 0.002, 0.2, 0.02, 2)
    r = cache_responsibility(m, [0.01, 0.2])
    assert r[0] > 0.999 and r[1] < 0.001
    assert np.all(cache_responsibility(Mixture.constant(0.1), [0.0, 5.0]) == 1.0)


@pytest.mark.parametrize("bad", [[], [float("nan"), 1.0], [-0.1, 0.2]])
def test_rejects_invalid_samples(bad):
    with pytest.raises(ValueError):
        fit_mixture(bad)
