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
