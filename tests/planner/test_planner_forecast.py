"""planner.forecast: the band of a forecast comes from the measured errors of earlier forecasts."""

from __future__ import annotations

import pytest

from planner.forecast import ErrorBand, Forecast


def test_before_enough_errors_the_band_is_the_prior() -> None:
    band = ErrorBand(floor=360.0, min_errors=3, prior=(-0.5, 1.0))
    got = band.band(1000.0, Forecast(1000.0 + 3600.0, 9000.0))
    assert (got.start, got.end) == (4600.0, 9000.0)
    assert got.early == pytest.approx(4600.0 - 1800.0) and got.late == pytest.approx(4600.0 + 3600.0)


def test_the_band_follows_the_errors_measured_horizon_for_horizon() -> None:
    band = ErrorBand(floor=360.0, min_errors=3, low=0.0, high=1.0, gain=0.0)
    band.add(0.0, 2400.0, 2640.0)  # 10% late
    band.add(0.0, 2400.0, 2160.0)  # 10% early
    band.add(0.0, 2400.0, 4800.0)  # 100% late
    assert band.quantiles() == pytest.approx((-0.1, 1.0))
    got = band.band(0.0, Forecast(3000.0))  # the same class (3 to 10 rounds ahead)
    assert got.early == pytest.approx(2700.0) and got.late == pytest.approx(6000.0)
    # a start "now" one round late: scaled by the floor, +100%
    band.add(0.0, 100.0, 460.0)
    assert band.quantiles()[1] == pytest.approx(1.0)
    # never before the forecast was made
    assert band.band(500.0, Forecast(500.0)).early == 500.0


def test_a_forecast_without_a_start_has_no_band_and_bad_settings_are_refused() -> None:
    assert ErrorBand().band(0.0, Forecast(None)).early is None
    with pytest.raises(ValueError):
        ErrorBand(floor=0.0)
    with pytest.raises(ValueError):
        ErrorBand(low=0.9, high=0.1)


def test_the_errors_are_kept_apart_by_horizon() -> None:
    band = ErrorBand(floor=360.0, min_errors=2, low=0.0, high=1.0, gain=0.0)
    for _ in range(2):  # a round ahead: right to the second
        band.add(0.0, 360.0, 360.0)
    for late in (0.5, 1.0):  # a day ahead: up to twice as long
        band.add(0.0, 86_400.0, 86_400.0 * (1 + late))
    near, far = band.band(0.0, Forecast(360.0)), band.band(0.0, Forecast(86_400.0))
    assert near.early == near.late == 360.0
    assert far.early == 86_400.0 and far.late == pytest.approx(86_400.0 * 2)  # from the start it names


def test_a_horizon_not_yet_measured_is_never_narrower_than_the_prior() -> None:
    """Near forecasts are right to the second far more often than far ones: a horizon with too few errors
    of its own takes every horizon's errors, but never a band narrower than the prior (the band was too
    narrow when the many exact near starts set the far forecasts' band)."""
    band = ErrorBand(floor=360.0, min_errors=5, prior=(-0.5, 1.0))
    for _ in range(50):  # forecast to start at the next round, and started then
        band.add(0.0, 360.0, 360.0)
    assert band.band(0.0, Forecast(360.0)).late == 360.0  # the near horizon: measured exact
    far = band.band(0.0, Forecast(7200.0))  # 20 rounds ahead: nothing measured there
    assert far.early == pytest.approx(3600.0) and far.late == pytest.approx(14_400.0)


def test_the_errors_are_kept_apart_by_the_jobs_ahead_when_known() -> None:
    """Within one horizon, a job with few jobs forecast ahead of it starts on time far more often than one
    far back in the queue: given the jobs ahead, each gets the band of its own."""
    band = ErrorBand(floor=360.0, min_errors=2, low=0.0, high=1.0, gain=0.0, ahead_edge=4)
    for _ in range(2):
        band.add(0.0, 3600.0, 3600.0, ahead=1)  # next in line: on time
        band.add(0.0, 3600.0, 7200.0, ahead=30)  # far back: twice as late
    front, back = band.band(0.0, Forecast(3600.0), ahead=0), band.band(0.0, Forecast(3600.0), ahead=10)
    assert front.early == front.late == 3600.0
    assert back.early == 3600.0 and back.late == pytest.approx(7200.0)
    unknown = band.band(0.0, Forecast(3600.0))  # not known: the horizon's own class (none measured yet)
    assert unknown.early == pytest.approx(1800.0) and unknown.late == pytest.approx(7200.0)


def _stream(n: int) -> list[float]:
    """``n`` relative errors, spread evenly over [-1, 1] and growing in size along the stream."""
    return [((i * 0.6180339887) % 1.0 * 2.0 - 1.0) * (0.1 + i / n) for i in range(n)]


def test_the_band_widens_while_its_coverage_falls_short_of_nominal() -> None:
    """Errors that grow along the stream: the quantiles of the past errors alone are too narrow for the
    next ones; the quantile levels follow the coverage seen so far and bring it back near 80%."""

    def coverage(gain: float) -> float:
        band = ErrorBand(floor=360.0, min_errors=20, gain=gain)
        inside = []
        for err in _stream(2000):
            start = 3600.0
            b = band.band(0.0, Forecast(start))
            actual = start + err * start
            inside.append(b.early <= actual <= b.late)  # type: ignore[operator]
            band.add(0.0, start, actual)
        return sum(inside[200:]) / len(inside[200:])

    assert coverage(0.0) < 0.72
    assert 0.77 <= coverage(0.02) <= 0.85


def test_a_start_now_and_a_start_later_in_the_round_are_kept_apart() -> None:
    """A start now is the plan of the round about to start; one later in the round waits for a running job
    to end on its estimate and slips a round when the estimate is short: the exact starts now never narrow
    the band of those later in the round."""
    band = ErrorBand(floor=360.0, min_errors=4, low=0.0, high=1.0, gain=0.0)
    for _ in range(40):  # forecast to start now, and started at once
        band.add(0.0, 0.0, 0.0)
    for late in (0.0, 0.0, 0.0, 360.0):  # forecast 3 minutes ahead: one of four slipped to the next round
        band.add(0.0, 180.0, 180.0 + late)
    assert band.horizon(0.0, 0.0) != band.horizon(0.0, 180.0)
    now, later = band.band(0.0, Forecast(0.0)), band.band(0.0, Forecast(180.0))
    assert now.early == now.late == 0.0
    assert later.early == 180.0 and later.late == pytest.approx(540.0)


def test_the_band_always_holds_the_start_it_names() -> None:
    band = ErrorBand(floor=360.0, min_errors=2, low=0.0, high=1.0, gain=0.0)
    for _ in range(2):  # every job a day ahead started two hours late, every one 10 rounds ahead early
        band.add(0.0, 86_400.0, 93_600.0)
        band.add(0.0, 3600.0, 1800.0)
    late, early = band.band(0.0, Forecast(86_400.0)), band.band(0.0, Forecast(3600.0))
    assert late.early == 86_400.0 and late.late == pytest.approx(93_600.0)
    assert early.early == pytest.approx(1800.0) and early.late == 3600.0


def test_the_quantile_levels_stay_within_bounds() -> None:
    band = ErrorBand(floor=360.0, min_errors=2, gain=0.5)
    for _ in range(40):
        band.add(0.0, 3600.0, 3600.0 * 5)  # every start far outside the band
    lo, hi = band.levels[band.horizon(0.0, 3600.0)]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    with pytest.raises(ValueError):
        ErrorBand(gain=1.5)
