"""Forecast starts and how sure they are: the forecast's data and its band from its own measured errors.

Where it sits: a forecast is made by running the round loop forward from now in the simulator
(:func:`hops_slurm.sim.forecast_run.forecast`, over the engine's views and a copy of its policy); this
module holds what the engine keeps of it (:class:`Forecast`, :class:`Banded`) and how its band is made
(:class:`ErrorBand`): from the errors the engine's own forecasts made on the jobs that have since started.

The error of a forecast made at ``made`` for a job forecast to start at ``start`` that started at
``actual`` is ``(actual - start) / scale``, ``scale = max(start - made, floor)`` (the forecast's horizon,
at least one round: a job forecast to start now that waits a round is one round off, not infinitely).
The band of a new forecast is ``start + q * scale`` for the ``low`` and ``high`` quantiles ``q`` of the last
``window`` errors (never before ``made``); until ``min_errors`` are known it is the ``prior`` pair. So the
band is as wide as the forecasts have been wrong on this cluster and workload, horizon for horizon.
Pure: no clock, no Slurm.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Forecast:
    """A waiting job's forecast: its start and end (None: not within the forecast)."""

    start: float | None
    end: float | None = None


@dataclass(frozen=True)
class Banded:
    """The forecast and its band: the earliest and latest start it expects (None: unknown)."""

    start: float | None
    end: float | None
    early: float | None
    late: float | None


def _quantile(sorted_xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``sorted_xs`` (linear between ranks)."""
    if len(sorted_xs) == 1:
        return sorted_xs[0]
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


@dataclass
class ErrorBand:
    """The band from measured errors (see the module docstring)."""

    floor: float = 360.0  # seconds: the smallest horizon an error is scaled by (one round)
    window: int = 1000
    min_errors: int = 20
    low: float = 0.1
    high: float = 0.9
    prior: tuple[float, float] = (-0.5, 1.0)  # before enough errors: half the horizon earlier, twice it later
    errors: deque[float] = field(default_factory=deque)

    def __post_init__(self) -> None:
        if self.floor <= 0 or self.window < 1 or not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError("an error band needs a positive floor and window and 0 <= low <= high <= 1")
        self.errors = deque(self.errors, maxlen=self.window)
        self._sorted: list[float] | None = None

    def scale(self, made: float, start: float) -> float:
        return max(start - made, self.floor)

    def add(self, made: float, start: float, actual: float) -> None:
        """A job forecast at ``made`` to start at ``start`` started at ``actual``."""
        self.errors.append((actual - start) / self.scale(made, start))
        self._sorted = None

    def quantiles(self) -> tuple[float, float]:
        """The (low, high) relative errors the band uses now."""
        if len(self.errors) < self.min_errors:
            return self.prior
        if self._sorted is None:
            self._sorted = sorted(self.errors)
        return _quantile(self._sorted, self.low), _quantile(self._sorted, self.high)

    def band(self, made: float, f: Forecast) -> Banded:
        """``f`` (made at ``made``) with its band."""
        if f.start is None:
            return Banded(None, f.end, None, None)
        lo, hi = self.quantiles()
        s = self.scale(made, f.start)
        return Banded(f.start, f.end, max(made, f.start + lo * s), max(made, f.start + hi * s))


__all__ = ["Banded", "ErrorBand", "Forecast"]
