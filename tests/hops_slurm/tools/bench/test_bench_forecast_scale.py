"""hops_slurm.tools.bench.forecast_scale: the forecast-speed document, with what the queue window changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.tools.bench import forecast_scale
from hops_slurm.tools.bench.forecast_scale_window import check


def test_the_window_check_compares_every_job_that_waits() -> None:
    got = check(120, 64, shorten=40.0)
    assert got.compared + got.at_once == 120  # every job got a start in both forecasts
    assert 0.0 <= got.median <= got.p90
    assert got.widest[1] < got.widest[0] == 120  # without the window a planning saw the whole queue


def test_the_document_has_the_speed_row_and_the_window_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("GPUS", "32"), ("JOBS", "40"), ("BUDGET", "60"), ("CHECK", "30:32")):
        monkeypatch.setenv(f"HOPS_BENCH_FORECAST_{name}", value)
    text = forecast_scale.run(tmp_path).read_text()
    assert "HOPS_BENCH_FORECAST_CHECK=30:32" in text.splitlines()[0]
    assert "| 40 | 32 | 60 |" in text and "## What the window changes" in text and "| 30 | 32 |" in text
