"""Two-component 1-D normal mixture for the data time T_d (Hops eq. 3), fitted by EM with numpy.

Sits under :mod:`estimator.model`: the store hands over data-time samples (profile and running
mode), this module fits ``p_cache·N(mu_c, sigma_c) + p_load·N(mu_l, sigma_l)`` and the
conditional sync-wait means T_w | cache and T_w | load (eq. 3 and the T_w paragraph of §3.5).

Component choice: a one-component fit is kept unless the two-component fit lowers the Bayesian
information criterion (BIC = k·ln n − 2·ln L, k = 2 for one normal, 5 for two). A stable job
therefore collapses to one component (p_cache = 1). Fewer than ``MIN_SAMPLES_FOR_TWO`` samples
always give one component. The component with the smaller mean is called "cache".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_SAMPLES_FOR_TWO = 6
#: Floor on a component's standard deviation (seconds): keeps EM away from zero-variance spikes.
SIGMA_FLOOR = 1e-6
_EM_MAX_ITER = 200
_EM_TOL = 1e-9


@dataclass(frozen=True)
class Mixture:
    """T_d (and T_w conditioned on the same component), both components in seconds.

    With ``components == 1`` the load component equals the cache component and ``p_cache == 1``.
    """

    p_cache: float
    mu_cache: float
    sigma_cache: float
    mu_load: float
    sigma_load: float
    components: int
    wait_cache: float = 0.0  # E[T_w | cache]
    wait_load: float = 0.0  # E[T_w | load]
    n: int = 0

    @property
    def p_load(self) -> float:
        return 1.0 - self.p_cache

    @property
    def mean(self) -> float:
        return self.p_cache * self.mu_cache + self.p_load * self.mu_load

    @staticmethod
    def constant(data_time: float, wait: float = 0.0) -> Mixture:
        """A degenerate one-component mixture (a job whose data time is a known constant)."""
        return Mixture(1.0, data_time, 0.0, data_time, 0.0, 1, wait, wait, 0)


def _log_normal_pdf(x: np.ndarray, mu: float, sigma: float) -> np.ndarray:
    return -0.5 * ((x - mu) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2.0 * math.pi)


def _one_component(x: np.ndarray) -> tuple[float, float, float]:
    mu = float(x.mean())
    sigma = max(float(x.std()), SIGMA_FLOOR)
    loglik = float(_log_normal_pdf(x, mu, sigma).sum())
    return mu, sigma, loglik


def _em_two(x: np.ndarray) -> tuple[float, float, float, float, float, float]:
    """EM for two normals; returns (p1, mu1, s1, mu2, s2, loglik).

    Initialised by splitting the sorted samples at the largest gap-weighted split (the k-means-like
    two-cluster split that minimises within-cluster variance), so the result is deterministic.
    """
    xs = np.sort(x)
    n = len(xs)
    # Best 2-means split of sorted data: minimise the summed within-group squared deviation.
    csum = np.cumsum(xs)
    csq = np.cumsum(xs**2)
    ks = np.arange(1, n)
    left = csq[ks - 1] - csum[ks - 1] ** 2 / ks
    right = (csq[-1] - csq[ks - 1]) - (csum[-1] - csum[ks - 1]) ** 2 / (n - ks)
    best_k = int(ks[int(np.argmin(left + right))])
    lo, hi = xs[:best_k], xs[best_k:]
    p1 = best_k / n
    mu1, mu2 = float(lo.mean()), float(hi.mean())
    spread = max(float(xs.std()), SIGMA_FLOOR)
    s1 = max(float(lo.std()), spread * 1e-3, SIGMA_FLOOR)
    s2 = max(float(hi.std()), spread * 1e-3, SIGMA_FLOOR)
    prev = -math.inf
    loglik = prev
    for _ in range(_EM_MAX_ITER):
        l1 = math.log(max(p1, 1e-300)) + _log_normal_pdf(x, mu1, s1)
        l2 = math.log(max(1.0 - p1, 1e-300)) + _log_normal_pdf(x, mu2, s2)
        top = np.maximum(l1, l2)
        log_norm = top + np.log(np.exp(l1 - top) + np.exp(l2 - top))
        loglik = float(log_norm.sum())
        resp = np.exp(l1 - log_norm)
        w1 = float(resp.sum())
        w2 = n - w1
        if w1 < 1e-9 or w2 < 1e-9:  # one component emptied: two components do not fit
            return p1, mu1, s1, mu2, s2, -math.inf
        p1 = w1 / n
        mu1 = float((resp * x).sum() / w1)
        mu2 = float(((1.0 - resp) * x).sum() / w2)
        s1 = max(math.sqrt(float((resp * (x - mu1) ** 2).sum() / w1)), SIGMA_FLOOR)
        s2 = max(math.sqrt(float(((1.0 - resp) * (x - mu2) ** 2).sum() / w2)), SIGMA_FLOOR)
        if loglik - prev < _EM_TOL * max(1.0, abs(loglik)):
            break
        prev = loglik
    return p1, mu1, s1, mu2, s2, loglik


def bic(loglik: float, params: int, n: int) -> float:
    return params * math.log(n) - 2.0 * loglik


def cache_responsibility(mixture: Mixture, x: Sequence[float] | np.ndarray) -> np.ndarray:
    """P(cache | T_d = x) for each x under ``mixture`` (all ones for a one-component mixture)."""
    xs = np.asarray(x, dtype=float)
    if mixture.components == 1:
        return np.ones_like(xs)
    l1 = math.log(mixture.p_cache) + _log_normal_pdf(xs, mixture.mu_cache, max(mixture.sigma_cache, SIGMA_FLOOR))
    l2 = math.log(mixture.p_load) + _log_normal_pdf(xs, mixture.mu_load, max(mixture.sigma_load, SIGMA_FLOOR))
    top = np.maximum(l1, l2)
    return np.exp(l1 - top) / (np.exp(l1 - top) + np.exp(l2 - top))


def fit_mixture(
    data_times: Sequence[float],
    sync_waits: Sequence[float] | None = None,
    *,
    sync_data_times: Sequence[float] | None = None,
) -> Mixture:
    """Fit eq. (3) to ``data_times``; condition ``sync_waits`` on the same components.

    T_w conditioning: each sync wait is weighted by P(cache | its iteration's data time), giving
    E[T_w | cache] and E[T_w | load]. The data time of each sync wait's iteration is taken from
    ``sync_data_times`` when given (same length as ``sync_waits``), else from ``data_times`` when the
    two lists have equal length (same iterations); otherwise the sync waits are unpaired and one
    unconditional mean serves both components. Raises ValueError on empty or invalid data.
    """
    x = np.asarray(list(data_times), dtype=float)
    if x.size == 0:
        raise ValueError("fit_mixture: no data-time samples")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("fit_mixture: data times must be finite and non-negative")
    w = np.asarray([] if sync_waits is None else list(sync_waits), dtype=float)
    if w.size and (not np.all(np.isfinite(w)) or np.any(w < 0)):
        raise ValueError("fit_mixture: sync waits must be finite and non-negative")
    if sync_data_times is not None:
        wx = np.asarray(list(sync_data_times), dtype=float)
        if wx.size != w.size:
            raise ValueError("fit_mixture: sync_data_times must pair one-to-one with sync_waits")
    else:
        wx = x if w.size == x.size else None
    wait_all = float(w.mean()) if w.size else 0.0

    mu, sigma, ll1 = _one_component(x)
    one = Mixture(1.0, mu, sigma, mu, sigma, 1, wait_all, wait_all, int(x.size))
    if x.size < MIN_SAMPLES_FOR_TWO or float(x.std()) <= SIGMA_FLOOR:
        return one
    p1, mu1, s1, mu2, s2, ll2 = _em_two(x)
    if not math.isfinite(ll2) or bic(ll2, 5, x.size) >= bic(ll1, 2, x.size):
        return one
    if mu1 > mu2:  # keep "cache" as the faster component
        p1, mu1, s1, mu2, s2 = 1.0 - p1, mu2, s2, mu1, s1
    fitted = Mixture(p1, mu1, s1, mu2, s2, 2, wait_all, wait_all, int(x.size))
    if wx is None or not w.size:
        return fitted
    resp = cache_responsibility(fitted, wx)
    rc, rl = float(resp.sum()), float((1.0 - resp).sum())
    wait_c = float((resp * w).sum() / rc) if rc > 1e-12 else wait_all
    wait_l = float(((1.0 - resp) * w).sum() / rl) if rl > 1e-12 else wait_all
    return Mixture(p1, mu1, s1, mu2, s2, 2, wait_c, wait_l, int(x.size))
