"""Forecast starts and how sure they are: the forecast's data and its band from its own measured errors.

Where it sits: a forecast is made by running the round loop forward from now in the simulator
(:func:`hops_slurm.sim.forecast_run.forecast`, over the engine's views and a copy of its policy); this
module holds what the engine keeps of it (:class:`Forecast`, :class:`Banded`) and how its band is made
(:class:`ErrorBand`): from the errors the engine's own forecasts made on the jobs that have since started.

The error of a forecast made at ``made`` for a job forecast to start at ``start`` that started at
``actual`` is ``(actual - start) / scale``, ``scale = max(start - made, floor)`` (the forecast's horizon,
at least one round: a job forecast to start now that waits a round is one round off, not infinitely).
The errors are kept apart by horizon (``horizons``, in rounds: a start now, later within 1 round, 3, 10,
30, later): a forecast a round ahead is far closer, relative to its horizon, than one a day ahead. A start
"now" (within ``horizons[0]`` of a round of when the forecast was made) is one the plan of the round about to
start makes; a start later in that round waits for a running job to end when its estimate says, and slips a
round when the estimate is short. Kept together, the many exact starts "now" (most jobs start at once) gave
the starts later in the round a band a few seconds wide, and the jobs that slipped, the ones that waited,
were all outside it. The band of a new forecast is ``start + q * scale`` for the quantiles ``q`` of the
last ``window`` errors of its horizon class, never before ``made``, and it always holds the forecast start
itself (a band of the starts it expects that left out the one it names would tell a user two things).
Three things keep it honest (as often outside as ``low`` and ``high`` say):

* A class with fewer than ``min_errors`` errors of its own takes every class's quantiles, widened to at
  least the ``prior``; the prior alone until all classes together have ``min_errors``. The errors come
  mostly from near forecasts (each started job gives its latest forecast's, made a round before its
  start, and most jobs start at once), and those are right to the second: the far classes, filled last,
  were given a band of almost no width from them.
* The quantile levels follow the coverage seen so far, class by class (adaptive conformal inference,
  Gibbs and Candes 2021): a start below its class's band moves the low level down by ``gain * (1 - low)``,
  one inside up by ``gain * low``; the same above. Over many starts each side is missed about as often
  as nominal, also when the errors drift (a queue growing through the day) and the past ones alone
  would be too narrow.
* Errors are relative to the horizon, so one class holds forecasts hours and days ahead alike.
* Given the jobs forecast to start before it (``ahead``), a forecast's class is apart also by those: fewer
  than ``ahead_edge``, or more (in the simulator, within a horizon, the median error of the first is
  near 0, of the second a third of the horizon). Without it (None), the horizon's class alone.

So the band is as wide as the forecasts have been wrong on this cluster and workload, horizon for horizon.
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
    horizons: tuple[float, ...] = (0.01, 1.0, 3.0, 10.0, 30.0)  # rounds: the edges between the horizon classes
    gain: float = 0.02  # how far one start inside or outside its band moves its class's quantile levels
    ahead_edge: int = 4  # jobs forecast to start before it: fewer, or this many and more (two classes)
    errors: deque[float] = field(default_factory=deque)  # every horizon's, the last ``window``

    def __post_init__(self) -> None:
        if self.floor <= 0 or self.window < 1 or not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError("an error band needs a positive floor and window and 0 <= low <= high <= 1")
        if self.prior[0] > 0.0 or self.prior[1] < 0.0 or not 0.0 <= self.gain < 1.0:
            raise ValueError("an error band needs a prior around 0 and 0 <= gain < 1")
        self.errors = deque(self.errors, maxlen=self.window)
        n = 3 * (len(self.horizons) + 1)  # per horizon: the jobs ahead unknown, fewer than the edge, more
        self.by_horizon: list[deque[float]] = [deque(maxlen=self.window) for _ in range(n)]
        #: per horizon class, the quantile levels the band uses now (they follow its coverage so far)
        self.levels: list[tuple[float, float]] = [(self.low, self.high)] * n
        self._sorted: dict[int, list[float]] = {}

    def scale(self, made: float, start: float) -> float:
        return max(start - made, self.floor)

    def horizon(self, made: float, start: float, ahead: int | None = None) -> int:
        """The class of a forecast made at ``made`` for ``start`` with ``ahead`` jobs forecast to start
        before it (None: not known): its horizon class, apart by the jobs ahead when known."""
        rounds = (start - made) / self.floor
        h = sum(1 for edge in self.horizons if rounds >= edge)
        if ahead is None:
            return h
        return h + (len(self.horizons) + 1) * (1 if ahead < self.ahead_edge else 2)

    def add(self, made: float, start: float, actual: float, ahead: int | None = None) -> None:
        """A job forecast at ``made`` to start at ``start`` started at ``actual``: its error is kept, and
        its class's quantile levels move by ``gain`` towards the nominal coverage (out of the band below:
        the low level down by ``gain * (1 - low)``, inside it: up by ``gain * low``; the same above)."""
        err = (actual - start) / self.scale(made, start)
        h = self.horizon(made, start, ahead)
        if self._measured(h):
            lo, hi = self.quantiles(h)
            lv_lo, lv_hi = self.levels[h]
            lv_lo -= self.gain * ((1.0 if err < lo else 0.0) - self.low)
            lv_hi += self.gain * ((1.0 if err > hi else 0.0) - (1.0 - self.high))
            self.levels[h] = (min(max(lv_lo, 0.0), 0.5), min(max(lv_hi, 0.5), 1.0))
        self.errors.append(err)
        self.by_horizon[h].append(err)
        self._sorted = {}

    def _measured(self, horizon: int) -> bool:
        return len(self.by_horizon[horizon]) >= self.min_errors

    def _quantiles_of(self, key: int, errors: deque[float], levels: tuple[float, float]) -> tuple[float, float]:
        if key not in self._sorted:
            self._sorted[key] = sorted(errors)
        got = self._sorted[key]
        return _quantile(got, levels[0]), _quantile(got, levels[1])

    def quantiles(self, horizon: int | None = None) -> tuple[float, float]:
        """The (low, high) relative errors the band uses now: for a horizon class with ``min_errors`` of
        its own, their quantiles at the class's levels; for one with fewer, every class's quantiles
        widened to at least the prior (a class not yet measured is not trusted to be as good as the
        others); without a class, every class's; the prior until all of them together have ``min_errors``."""
        if horizon is not None and self._measured(horizon):
            return self._quantiles_of(horizon, self.by_horizon[horizon], self.levels[horizon])
        if len(self.errors) < self.min_errors:
            return self.prior
        lo, hi = self._quantiles_of(-1, self.errors, (self.low, self.high))
        if horizon is None:
            return lo, hi
        return min(lo, self.prior[0]), max(hi, self.prior[1])

    def band(self, made: float, f: Forecast, ahead: int | None = None) -> Banded:
        """``f`` (made at ``made``, ``ahead`` jobs forecast to start before it) with its band (never before
        ``made``, always holding ``f.start``)."""
        if f.start is None:
            return Banded(None, f.end, None, None)
        lo, hi = self.quantiles(self.horizon(made, f.start, ahead))
        s = self.scale(made, f.start)
        return Banded(f.start, f.end, max(made, min(f.start, f.start + lo * s)), max(made, f.start, f.start + hi * s))


__all__ = ["Banded", "ErrorBand", "Forecast"]
