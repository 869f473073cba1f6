"""Bandwidth calibration that stays physical: B_link and B_net of one GPU type from what was measured.

Where it sits: between the measurements of eq. (2)'s bandwidths (``hops-slurm calibrate``'s all-reduce
records, :func:`profiler.ingest.ingest_calibration`; in simulation the bandwidths each model's 2-GPU
run implies, :func:`hops_slurm.sim.measure.calibration`) and the store's ``calibration`` table that
:mod:`estimator.estimate` reads. :func:`fit_physical` turns the measured points of one GPU type into
the pair the estimator uses, under two constraints a cluster always satisfies:

1. **in-server at least cross-server**: GPUs of one server talk over NVLink/PCIe, servers over the
   network; for one type B_link >= B_net. Measured points can say otherwise (noise, a model whose
   2-GPU run in one server was slow for another reason, an adversarial record): the fit is then the
   least-squares pair in log space under the constraint, i.e. both at the points-weighted mean of the
   two log fits (the projection onto B_link = B_net);
2. **bounded by what was measured**: each value stays within the range of the points measured for the
   type (either scope), so no rule invents a bandwidth nothing showed.

Each scope's own fit is the median in log space of its points (robust to a few wild records); points
that are not positive finite numbers are ignored.

:func:`implied_bandwidth` turns one measured multi-GPU throughput (a runtime record, a benchmark's
measurement) into a point: the bandwidth under which eq. (1)-(2) give exactly that throughput from the
job's profile; infinity where the measurement shows no communication cost at all (as fast as
communication-free scaling, or faster), None where it says nothing (one GPU, no progress).

**Refit as records arrive** (:func:`refit`): the store (:meth:`estimator.store.ThroughputStore.calibrations`)
refits each type's pair from the measured calibration (:data:`CALIBRATION_WEIGHT` points per scope: a
dedicated all-reduce measurement is worth several jobs' records) and the points its newest multi-GPU
runtime records imply, through :func:`fit_physical`: the median in log space, so a handful of wild or
forged records cannot move it while many consistent ones do; physical and within what was measured as
above (a record as fast as free communication counts as the highest finite point measured). Many
forged records of one owner can move a type's calibration within that range; what that costs others
is a pessimistic model-only estimate, which the planner's exploration corrects (its optimistic bound
reads no bandwidth, :mod:`estimator.explore`). Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from estimator.mixture import Mixture
from estimator.model import TimeComponents, expected_iter_time
from estimator.progress import NO_PROGRESS_RATE, NO_PROGRESS_SHARE


@dataclass(frozen=True)
class BandwidthFit:
    """One GPU type's fitted bandwidths (parameters/s); None where a scope had no usable point."""

    b_link: float | None
    b_net: float | None
    constrained: bool = False  # the raw fits had B_link < B_net and were projected


def _usable(points: Sequence[float]) -> list[float]:
    out = []
    for p in points:
        try:
            v = float(p)
        except (TypeError, ValueError):
            continue
        if math.isfinite(v) and v > 0.0:
            out.append(v)
    return out


def fit_physical(link_points: Sequence[float], net_points: Sequence[float]) -> BandwidthFit:
    """B_link and B_net of one GPU type from its measured points (module docstring)."""
    links, nets = _usable(link_points), _usable(net_points)
    log_link = statistics.median(math.log(v) for v in links) if links else None
    log_net = statistics.median(math.log(v) for v in nets) if nets else None
    constrained = False
    if log_link is not None and log_net is not None and log_link < log_net:
        both = (len(links) * log_link + len(nets) * log_net) / (len(links) + len(nets))
        log_link = log_net = both
        constrained = True
    every = links + nets
    low, high = (math.log(min(every)), math.log(max(every))) if every else (0.0, 0.0)

    def bounded(x: float | None) -> float | None:
        return None if x is None else math.exp(min(max(x, low), high))

    return BandwidthFit(bounded(log_link), bounded(log_net), constrained)


def physical_pair(b_link: float, b_net: float) -> tuple[float, float]:
    """One measured B_link and one B_net (one point each) made physical: unchanged when B_link >= B_net,
    else both at their geometric mean."""
    fit = fit_physical([b_link], [b_net])
    if fit.b_link is None or fit.b_net is None:
        raise ValueError(f"bandwidths must be positive finite numbers, got B_link={b_link!r}, B_net={b_net!r}")
    return (float(b_link), float(b_net)) if not fit.constrained else (fit.b_link, fit.b_net)


def implied_bandwidth(tc: TimeComponents, per_gpu: float, *, gpus: int, nodes: int,
                      data: Mixture | None = None) -> float | None:
    """The B_link (``nodes == 1``) or B_net (``nodes > 1``) under which eq. (1)-(2) give ``per_gpu``
    samples/s per GPU for a job of profile ``tc`` (data time ``data``, T_d = 0 by default) on ``gpus``
    GPUs; None for one GPU, a job without parameters, a throughput that is not a positive finite number,
    or no measurable progress (below :data:`estimator.progress.NO_PROGRESS_SHARE` of the profile's own
    single-GPU rate: a stall, not communication); infinity for one at least as fast as with free
    communication (no finite bandwidth explains it)."""
    if gpus < 2 or not 1 <= nodes <= gpus or tc.params <= 0:
        return None
    try:
        rate = float(per_gpu)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(rate) and rate > 0.0):
        return None
    mixture = data if data is not None else Mixture.constant(0.0)
    target = tc.batch_size / rate  # the measured iteration time

    def iteration(t_c: float) -> float:
        return expected_iter_time(tc, mixture, t_c, gpus=gpus)

    compute = tc.t_f + tc.t_b + tc.t_u
    if rate < NO_PROGRESS_RATE or (compute > 0 and rate < NO_PROGRESS_SHARE * tc.batch_size / compute):
        return None
    if target <= iteration(0.0) * (1.0 + 1e-12):
        return math.inf
    low, high = 0.0, max(target, 1e-12)
    for _ in range(200):  # eq. (1) grows at least as T_c for large T_c: a bracket is found quickly
        if iteration(high) >= target:
            break
        low, high = high, high * 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if iteration(mid) < target else (low, mid)
        if high - low <= 1e-12 * high:
            break
    t_c = 0.5 * (low + high)
    share = (gpus - 1) / gpus if nodes == 1 else 1.0
    return tc.params * share / t_c if t_c > 0 else None


#: how many record points one measured calibration counts as, per scope, in :func:`refit`
CALIBRATION_WEIGHT = 5


def refit(measured: tuple[float, float] | None, link_points: Sequence[float], net_points: Sequence[float]) -> BandwidthFit:
    """One type's (B_link, B_net) from its measured calibration (``measured``, :data:`CALIBRATION_WEIGHT`
    points per scope; None when only records are known) and the bandwidths its runtime records imply
    (:func:`implied_bandwidth`, infinity allowed): :func:`fit_physical` over both, a record as fast as free
    communication counted at the highest finite point measured for the type."""
    if measured and not link_points and not net_points:
        try:
            pair = physical_pair(*measured)  # nothing to refit with: the measured pair itself, made physical
        except ValueError:
            pass  # not positive finite numbers: ignored below like any such point
        else:
            return BandwidthFit(pair[0], pair[1], pair != tuple(measured))
    links = ([measured[0]] * CALIBRATION_WEIGHT if measured else []) + list(link_points)
    nets = ([measured[1]] * CALIBRATION_WEIGHT if measured else []) + list(net_points)
    finite = _usable(links + nets)
    top = max(finite) if finite else None

    def capped(points: list[float]) -> list[float]:
        out = []
        for p in points:
            if isinstance(p, (int, float)) and p == math.inf:
                if top is not None:
                    out.append(top)
            else:
                out.append(p)
        return out

    return fit_physical(capped(links), capped(nets))


__all__ = ["CALIBRATION_WEIGHT", "BandwidthFit", "fit_physical", "implied_bandwidth", "physical_pair", "refit"]
