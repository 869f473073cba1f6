"""tools.bench.forecast_bench: the band given after the run as the daemon gives it, and its coverage."""

from __future__ import annotations

import pytest

from hops_slurm.tools.bench.forecast_bench import ROUND, JobOutcome, Made, covered, replay_band, width
from planner.forecast import ErrorBand


def _job(job_id: str, submit: float, start: float, forecasts: list[tuple[float, float]]) -> JobOutcome:
    return JobOutcome(job_id, submit, start, [Made(at, s) for at, s in forecasts])


def test_a_forecast_gets_its_band_from_the_jobs_started_before_it_was_made() -> None:
    # two jobs forecast one round ahead each start two rounds late (relative error +2 in their class)
    early = [_job(f"a{i}", 0.0, 3 * ROUND, [(0.0, ROUND)]) for i in range(2)]
    # made at the boundary when they start, and after: a forecast one round ahead, right on time
    late = _job("b", 3 * ROUND, 4 * ROUND, [(3 * ROUND, 4 * ROUND)])
    jobs = early + [late]
    replay_band(jobs, ErrorBand(floor=ROUND, min_errors=2, low=0.0, high=1.0, gain=0.0))
    for j in early:  # made before any start: the prior (half the horizon earlier, twice it later)
        assert (j.first.early, j.first.late) == pytest.approx((0.5 * ROUND, 2 * ROUND))  # type: ignore[union-attr]
    assert (late.first.early, late.first.late) == pytest.approx((6 * ROUND, 6 * ROUND))  # type: ignore[union-attr]
    assert covered(jobs) == pytest.approx(0.0)  # none of the three started inside its band
    assert covered(jobs, "every") == pytest.approx(0.0)
    assert width(jobs) == pytest.approx(1.5 / 3)  # the prior's 1.5 rounds over a 3-round wait, twice of three


def test_coverage_counts_only_forecasts_with_a_band_and_the_start_inside_counts() -> None:
    inside = JobOutcome("x", 0.0, 500.0, [Made(0.0, 400.0, 300.0, 600.0), Made(360.0, 450.0, 400.0, 480.0)])
    no_band = JobOutcome("y", 0.0, 700.0, [Made(0.0, None)])
    assert covered([inside, no_band]) == 1.0
    assert covered([inside, no_band], "every") == 0.5
