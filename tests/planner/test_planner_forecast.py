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
    band = ErrorBand(floor=360.0, min_errors=3, low=0.0, high=1.0)
    band.add(0.0, 1000.0, 1100.0)  # 10% late
    band.add(0.0, 1000.0, 900.0)  # 10% early
    band.add(0.0, 100.0, 460.0)  # a start "now" one round late: scaled by the floor, +100%
    lo, hi = band.quantiles()
    assert lo == pytest.approx(-0.1) and hi == pytest.approx(1.0)
    got = band.band(0.0, Forecast(2000.0))
    assert got.early == pytest.approx(1800.0) and got.late == pytest.approx(4000.0)
    # never before the forecast was made
    assert band.band(500.0, Forecast(500.0)).early == 500.0


def test_a_forecast_without_a_start_has_no_band_and_bad_settings_are_refused() -> None:
    assert ErrorBand().band(0.0, Forecast(None)).early is None
    with pytest.raises(ValueError):
        ErrorBand(floor=0.0)
    with pytest.raises(ValueError):
        ErrorBand(low=0.9, high=0.1)


def test_the_errors_are_kept_apart_by_horizon() -> None:
    band = ErrorBand(floor=360.0, min_errors=2, low=0.0, high=1.0)
    for _ in range(2):  # a round ahead: right to the second
        band.add(0.0, 360.0, 360.0)
    for late in (0.5, 1.0):  # a day ahead: up to twice as long
        band.add(0.0, 86_400.0, 86_400.0 * (1 + late))
    near, far = band.band(0.0, Forecast(360.0)), band.band(0.0, Forecast(86_400.0))
    assert near.early == near.late == 360.0
    assert far.early == pytest.approx(86_400.0 * 1.5) and far.late == pytest.approx(86_400.0 * 2)
    # a horizon with too few errors of its own takes every horizon's
    mid = band.band(0.0, Forecast(1800.0))  # 5 rounds ahead: none measured there yet
    assert mid.early == pytest.approx(1800.0) and mid.late == pytest.approx(1800.0 * 2)
