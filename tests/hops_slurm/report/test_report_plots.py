"""Report plots: non-empty PNGs of the promised pixel size, for one series and for several."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.report import plots
from hops_slurm.report.source import RecordSet

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk (right after the signature)."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def distinct_colours(path: Path) -> int:
    """How many different pixel values the image has (a blank canvas has one)."""
    from matplotlib.image import imread

    img = imread(path)
    return len({tuple(px) for px in img.reshape(-1, img.shape[-1])[::7]})


def test_write_plots_gives_three_sized_pngs(sim: RecordSet, tmp_path: Path) -> None:
    paths = plots.write_plots(tmp_path / "out", {"hops": (sim.jobs, sim.rounds)}, now=5400)
    assert [p.name for p in paths] == ["lr_jct_cdf.png", "wait_vs_age.png", "gpu_use.png"]
    for p in paths:
        assert png_size(p) == plots.PIXELS == (800, 450)
        assert p.stat().st_size > 10_000
        assert distinct_colours(p) > 20  # axes, text and data, not a blank canvas


def test_several_series_and_empty_data(sim: RecordSet, tmp_path: Path) -> None:
    half = sim.jobs[:3]
    p = plots.plot_cdfs({"hops": sim.jobs, "gavel": half}, tmp_path / "cdf.png")
    assert png_size(p) == plots.PIXELS
    empty = plots.plot_gpu_use({"none": ((), ())}, tmp_path / "empty.png", now=0)
    assert png_size(empty) == plots.PIXELS  # drawn with a "no data" note, not an error


def test_cli_plot_option(capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path) -> None:
    rc = main(["report", "--records", str(data_dir / "sim_records.jsonl"), "--plot", str(tmp_path), "-n"])
    err = capsys.readouterr().err
    assert rc == 0
    for name in ("lr_jct_cdf.png", "wait_vs_age.png", "gpu_use.png"):
        assert png_size(tmp_path / name) == plots.PIXELS
        assert f"wrote {tmp_path / name}" in err


def test_markdown_example_page(sim: RecordSet, tmp_path: Path) -> None:
    from hops_slurm.report.markdown import write_markdown

    md = write_markdown(sim, tmp_path, now=5400, simulated=True, max_rows=4)
    text = md.read_text()
    assert "first 4 of 6 jobs" in text
    assert "RAQLR (eq. 7)        0.722" in text
    table = text.split("```text\n")[1].split("```")[0].splitlines()
    assert len(table) == 2 + 4  # header, rule, four jobs
    assert table[0].split()[:3] == ["JobID", "User", "Submit"]
    for name in ("lr_jct_cdf.png", "wait_vs_age.png", "gpu_use.png"):
        assert f"]({name})" in text
        assert png_size(tmp_path / name) == plots.PIXELS


# ----- the unit of the time axes (issue 26) ------------------------------------------------------------
def _run(minutes: float, epoch: float = 1.7e9) -> list:
    """Three jobs of one run lasting ``minutes`` from the first submission to the last end."""
    from hops_slurm.records import JobRecord, PlacementRecord

    span = minutes * 60.0
    jobs = []
    for i, (sub, start, end) in enumerate(((0.0, 0.05, 0.5), (0.1, 0.3, 0.8), (0.2, 0.4, 1.0))):
        s, b, e = epoch + sub * span, epoch + start * span, epoch + end * span
        jobs.append(JobRecord(job_id=str(i + 1), submit=s, start=b, end=e, state="COMPLETED", age_estimate=(e - b),
                              placements=[PlacementRecord(start=b, end=e, config={"n1": 2})]))
    return jobs


def test_the_unit_is_minutes_under_two_hours_and_hours_from_there() -> None:
    assert plots.time_unit(0.0) == "seconds"
    assert plots.time_unit(119.0) == "seconds"
    assert plots.time_unit(120.0) == "minutes"
    assert plots.time_unit(4 * 60.0) == "minutes"
    assert plots.time_unit(2 * 3600.0 - 1) == "minutes"
    assert plots.time_unit(2 * 3600.0) == "hours"
    assert plots.time_unit(30 * 3600.0) == "hours"


@pytest.mark.parametrize(("minutes", "unit"), [(0.5, "seconds"), (4.0, "minutes"), (100.0, "minutes"), (300.0, "hours")])
def test_every_time_axis_of_a_report_is_in_the_runs_unit(minutes: float, unit: str) -> None:
    jobs = _run(minutes)
    now = max(j.end for j in jobs)
    assert plots.time_unit(plots.run_span({"cluster": jobs}, now)) == unit
    labels = [
        plots.cdf_figure({"cluster": jobs}).axes[1].get_xlabel(),
        plots.wait_vs_age_figure({"cluster": jobs}, now).axes[0].get_xlabel(),
        plots.wait_vs_age_figure({"cluster": jobs}, now).axes[0].get_ylabel(),
        plots.jct_cdf_figure({"cluster": jobs}).axes[0].get_xlabel(),
        plots.gpu_use_figure({"cluster": (jobs, ())}, now).axes[0].get_xlabel(),
    ]
    assert all(f"({unit})" in label or label.startswith(f"{unit} ") for label in labels), labels
    assert not any(other in label for label in labels for other in plots.UNITS if other != unit), labels


def test_a_four_minute_run_is_drawn_in_minutes_not_hundredths_of_an_hour() -> None:
    jobs = _run(4.0)
    fig = plots.gpu_use_figure({"cluster": (jobs, ())}, max(j.end for j in jobs))
    xs = [x for line in fig.axes[0].get_lines() for x in line.get_xdata()]
    assert max(xs) == pytest.approx(4.0)  # the run's 4 minutes, not 0.066 h
    jct = plots.jct_cdf_figure({"cluster": jobs})
    assert max(x for line in jct.axes[0].get_lines() for x in line.get_xdata()) == pytest.approx(0.8 * 4.0)


def test_write_plots_shares_one_unit_though_the_jobs_are_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2.5-hour run of 30-minute jobs: the JCT axis is in hours too, like the GPU-use axis beside it."""
    jobs = _run(240.0)
    for j in jobs:  # each job 30 minutes from submission to end; the run 150 minutes
        j.submit = j.start = j.end - 1800.0
        j.placements[0].start = j.start
    seen: list[str | None] = []
    real = plots.cdf_figure
    monkeypatch.setattr(plots, "cdf_figure", lambda series, unit=None: (seen.append(unit), real(series, unit))[1])
    plots.write_plots(tmp_path, {"cluster": (jobs, ())}, max(j.end for j in jobs))
    assert seen == ["hours"]
    assert plots.cdf_figure({"cluster": jobs}).axes[1].get_xlabel() == "JCT (minutes)"  # alone: its own JCTs
