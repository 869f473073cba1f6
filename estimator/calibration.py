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
that are not positive finite numbers are ignored. Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


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


__all__ = ["BandwidthFit", "fit_physical", "physical_pair"]
