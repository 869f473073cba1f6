"""hops_slurm.tools.bench.forecast_scale: the forecast-speed document, with what the queue window and holding
running jobs far ahead change."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.tools.bench import forecast_scale
from hops_slurm.tools.bench.forecast_scale_window import check


def test_the_shortcut_checks_compare_every_job_that_waits() -> None:
    checks = check(120, 64, shorten=40.0)
    for got in (checks.window, checks.held, checks.both):
        assert got.compared + got.at_once == 120  # every job got a start in both forecasts
        assert 0.0 <= got.median <= got.p90
    got = checks.window
    assert got.widest[1] < got.widest[0] == 120  # without the window a planning saw the whole queue
    # holding running jobs far ahead, with the same window: its "without" is the window's "with", and no held
    # planning sees more jobs (how many plannings each makes depends on the instance: it is reported, not bounded)
    assert checks.held.plannings[0] == checks.window.plannings[1]
    assert checks.held.widest[1] <= checks.held.widest[0]
    assert checks.both.plannings == (checks.window.plannings[0], checks.held.plannings[1])


def test_the_document_has_the_speed_row_and_the_window_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("GPUS", "32"), ("JOBS", "40"), ("BUDGET", "60"), ("CHECK", "30:32")):
        monkeypatch.setenv(f"HOPS_BENCH_FORECAST_{name}", value)
    text = forecast_scale.run(tmp_path).read_text()
    assert "HOPS_BENCH_FORECAST_CHECK=30:32" in text.splitlines()[0]
    assert "| 40 | 32 | 60 |" in text and "## What the shortcuts change" in text
    assert sum("| 30 | 32 |" in line for line in text.splitlines()) == 3  # the window, holding, both
