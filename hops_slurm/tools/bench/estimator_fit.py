"""The fits of ``hops-slurm bench estimator``: eq. (1)-(2)'s per-type constants from the fitting half.

Where it sits: :mod:`hops_slurm.tools.bench.estimator` splits Gavel's measured variants in two halves, calls
:func:`fit_type` on the fitting half of each GPU type and :func:`predict` on the held-out half. Two
model forms:

- ``paper``: eq. (1)-(5) as printed, one B_link and one B_net per type (the earlier bench's fit);
- ``extended``: the same plus the two terms :mod:`estimator.model` adds (per-step latency in eq. 2 in
  and across servers, the straggler wait for T_w), all fitted per type together.

Both fits are physical, as :mod:`estimator.calibration` keeps the live ones: B_link >= B_net and
latency in-server <= latency across servers (in-server at least as good as cross-server), bandwidths
within the range the fitting half's points imply on their own (:func:`estimator.calibration.implied_bandwidth`,
"bounded by what was measured"). Objective: squared log error of predicted vs measured throughput.
Nothing here reads the held-out half.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from estimator.calibration import implied_bandwidth
from estimator.mixture import Mixture
from estimator.model import TimeComponents, expected_max_normal, per_gpu_theory_throughput

#: Backward ≈ 2 × forward (the usual FLOP ratio for dense layers); update and data time are folded
#: into the 1-GPU time (T_u = T_d = 0), pattern 1. Gavel's data has no breakdown.
FORWARD_SHARE = 1.0 / 3.0
B_GRID = np.logspace(4, 13, 2701)  # parameters/s searched by the paper form's grid
LATENCY_MAX = 1.0  # seconds per ring step: a bound no interconnect comes near
STRAGGLER_MAX = 2.0  # spread of a process's iteration time, as a fraction of it

#: (variant params, GPUs, 1-GPU steps/s, measured steps/s): one measured point
Point = tuple[float, int, float, float]


@dataclass(frozen=True)
class TypeFit:
    """One GPU type's fitted constants (parameters/s, seconds, fraction)."""

    b_link: float
    b_net: float
    latency_link: float = 0.0
    latency_net: float = 0.0
    straggler: float = 0.0

    def physical(self) -> bool:
        return self.b_link >= self.b_net > 0 and 0 <= self.latency_link <= self.latency_net and self.straggler >= 0


def components(params: float, thr1: float) -> TimeComponents:
    """The bench's stand-in profile of a variant from its 1-GPU steps/s (batch 1: per-GPU iterations/s)."""
    tau1 = 1.0 / thr1
    return TimeComponents(t_f=tau1 * FORWARD_SHARE, t_b=tau1 * (1 - FORWARD_SHARE), t_u=0.0, pattern=1,
                          params=params, batch_size=1)


def predict(params: float, thr1: float, gpus: int, consolidated: bool, fit: TypeFit) -> float:
    """Predicted job steps/s (Gavel's unit: steps summed over workers) on ``gpus`` GPUs, through
    :func:`estimator.model.per_gpu_theory_throughput` (the estimator's own code)."""
    per_gpu = per_gpu_theory_throughput(
        components(params, thr1), Mixture.constant(0.0), gpus=gpus, nodes=1 if consolidated else 2,
        b_link=fit.b_link, b_net=fit.b_net, latency_link=fit.latency_link, latency_net=fit.latency_net,
        straggler=fit.straggler)
    return per_gpu * gpus


def _arrays(points: Sequence[Point]) -> tuple[np.ndarray, ...]:
    params = np.array([p for p, _, _, _ in points], dtype=float)
    gpus = np.array([n for _, n, _, _ in points], dtype=float)
    tau1 = 1.0 / np.array([t for _, _, t, _ in points], dtype=float)
    meas = np.array([m for _, _, _, m in points], dtype=float)
    return params, gpus, tau1, meas


def _predictions(points: Sequence[Point], consolidated: bool, b: np.ndarray, latency: float = 0.0,
                 straggler: float = 0.0) -> np.ndarray:
    """Predicted steps/s of every point (columns) for every bandwidth of ``b`` (rows): eq. (1)-(2) written
    out in numpy, the closed form of :func:`predict` (:func:`check_closed_form` verifies they agree)."""
    params, gpus, tau1, _ = _arrays(points)
    share = (gpus - 1) / gpus if consolidated else np.ones_like(gpus)
    t_c = params[None, :] / b[:, None] * share[None, :] + latency * (gpus - 1)[None, :]
    t_f, t_b = tau1 * FORWARD_SHARE, tau1 * (1 - FORWARD_SHARE)
    wait = straggler * tau1 * np.array([expected_max_normal(int(n)) for n in gpus])
    tau = t_f[None, :] + np.maximum(t_b[None, :] + 0.2 * t_c, t_c) + wait[None, :]
    return gpus[None, :] / tau


def _log_errors(points: Sequence[Point], consolidated: bool, b: np.ndarray, latency: float = 0.0,
                straggler: float = 0.0) -> np.ndarray:
    """Each bandwidth of ``b``'s sum of squared log errors over ``points``."""
    if not points:
        return np.zeros(len(b))
    meas = _arrays(points)[3]
    return (np.log(_predictions(points, consolidated, b, latency, straggler) / meas[None, :]) ** 2).sum(axis=1)


def implied_range(points: Sequence[Point], consolidated: bool) -> tuple[float, float]:
    """The range of the finite bandwidths the points imply one by one (eq. 1-2 inverted, no latency, no
    straggler); points as fast as communication-free scaling imply no finite one. The whole grid where no point
    implies one."""
    values = []
    for params, n, thr1, meas in points:
        b = implied_bandwidth(components(params, thr1), meas / n, gpus=n, nodes=1 if consolidated else 2)
        if b is not None and math.isfinite(b):
            values.append(b)
    return (min(values), max(values)) if values else (float(B_GRID[0]), float(B_GRID[-1]))


def _clip(x: float, bounds: tuple[float, float]) -> float:
    return min(max(x, bounds[0]), bounds[1])


def fit_paper(link_points: Sequence[Point], net_points: Sequence[Point], *, physical: bool = True) -> TypeFit:
    """(B_link, B_net) minimising both layouts' squared log errors together; ``physical``: under
    B_link >= B_net (for each B_link on the grid the best B_net not above it), else each layout alone."""
    link, net = _log_errors(link_points, True, B_GRID), _log_errors(net_points, False, B_GRID)
    if not physical:
        return TypeFit(float(B_GRID[int(np.argmin(link))]), float(B_GRID[int(np.argmin(net))]))
    at = np.array([int(np.argmin(net[: i + 1])) for i in range(len(net))])
    best_net = np.array([net[j] for j in at])
    i = int(np.argmin(link + best_net))
    return TypeFit(float(B_GRID[i]), float(B_GRID[at[i]]))


def _nelder_mead(f: Callable[[np.ndarray], float], x0: Sequence[float], iters: int = 700) -> tuple[np.ndarray, float]:
    """A plain Nelder-Mead minimiser (reflection 1, expansion 2, contraction and shrink 1/2), unit steps."""
    simplex = [np.array(x0, dtype=float)]
    for i in range(len(x0)):
        x = np.array(x0, dtype=float)
        x[i] += 1.0
        simplex.append(x)
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        centre = np.mean(simplex[:-1], axis=0)
        xr = centre + (centre - simplex[-1])
        fr = f(xr)
        if fr < values[0]:
            xe = centre + 2.0 * (centre - simplex[-1])
            fe = f(xe)
            simplex[-1], values[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = xr, fr
        else:
            xc = centre + 0.5 * (simplex[-1] - centre)
            fc = f(xc)
            if fc < values[-1]:
                simplex[-1], values[-1] = xc, fc
            else:
                simplex = [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex]
                values = [f(x) for x in simplex]
    i = int(np.argmin(values))
    return simplex[i], values[i]


def fit_extended(link_points: Sequence[Point], net_points: Sequence[Point], *, latency: bool = True,
                 straggler: bool = True) -> TypeFit:
    """B_link, B_net, the two latencies and the straggler spread of one type together (Nelder-Mead in
    log space from several starts, the paper fit's among them), physical and bounded (module docstring).
    ``latency`` / ``straggler`` False: that term stays 0 (the ablations of the bench)."""
    link_range, net_range = implied_range(link_points, True), implied_range(net_points, False)

    def unpack(x: np.ndarray) -> TypeFit:
        x = np.clip(x, -60.0, 60.0)  # exp() stays finite; every value is clipped to its bound below
        b_link = _clip(math.exp(x[0]), link_range)
        b_net = min(_clip(math.exp(x[1]), net_range), b_link)  # in-server at least cross-server
        lat_net = min(math.exp(x[3]), LATENCY_MAX) if latency else 0.0
        lat_link = min(math.exp(x[2]), lat_net)  # in-server start-up no slower than across servers
        return TypeFit(b_link, b_net, lat_link, lat_net, min(math.exp(x[4]), STRAGGLER_MAX) if straggler else 0.0)

    def prepared(points: Sequence[Point], consolidated: bool) -> tuple[np.ndarray, ...]:
        params, gpus, tau1, meas = _arrays(points) if points else (np.zeros(0),) * 4
        share = (gpus - 1) / gpus if consolidated else np.ones_like(gpus)
        wait = tau1 * np.array([expected_max_normal(int(n)) for n in gpus])
        return params * share, gpus - 1, tau1 * FORWARD_SHARE, tau1 * (1 - FORWARD_SHARE), wait, np.log(gpus / meas)

    link_arrays, net_arrays = prepared(link_points, True), prepared(net_points, False)

    def scope_loss(arrays: tuple[np.ndarray, ...], b: float, latency: float, straggler: float) -> float:
        volume, steps, t_f, t_b, wait, log_rate = arrays  # the closed form of _predictions, one bandwidth
        t_c = volume / b + latency * steps
        tau = t_f + np.maximum(t_b + 0.2 * t_c, t_c) + straggler * wait
        return float(((log_rate - np.log(tau)) ** 2).sum()) if len(tau) else 0.0

    def loss(x: np.ndarray) -> float:
        f = unpack(x)
        return (scope_loss(link_arrays, f.b_link, f.latency_link, f.straggler)
                + scope_loss(net_arrays, f.b_net, f.latency_net, f.straggler))

    paper = fit_paper(link_points, net_points)
    starts = [[math.log(paper.b_link), math.log(paper.b_net), -12.0, -12.0, -6.0]]
    starts += [[math.log(paper.b_link) + db, math.log(paper.b_net) + db, la, la + 1.0, s]
               for db, la, s in ((0.0, -9.0, -3.0), (0.0, -6.0, -1.5), (1.0, -9.0, -1.5), (1.0, -6.0, -3.0))]
    best = None
    for x0 in starts:
        x, value = _nelder_mead(loss, x0)
        x, value = _nelder_mead(loss, x)  # a restart from the best vertex escapes a collapsed simplex
        if best is None or value < best[1]:
            best = (x, value)
    assert best is not None
    return unpack(best[0])


def check_closed_form(points: Sequence[Point], consolidated: bool, fit: TypeFit) -> None:
    """The numpy closed form of the fits and :func:`predict` (the estimator's code) agree on every point."""
    if not points:
        return
    closed = _predictions(points, consolidated, np.array([fit.b_link if consolidated else fit.b_net]),
                          fit.latency_link if consolidated else fit.latency_net, fit.straggler)[0]
    for (params, n, thr1, _), value in zip(points, closed):
        if not math.isclose(float(value), predict(params, thr1, n, consolidated, fit), rel_tol=1e-6):
            raise AssertionError(f"closed form and estimator.model disagree on {n} GPUs (params {params:g})")


__all__ = ["FORWARD_SHARE", "TypeFit", "check_closed_form", "fit_extended", "fit_paper", "implied_range", "predict"]
