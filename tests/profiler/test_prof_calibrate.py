"""Bandwidth calibration: the eq. 2 fit by hand, and a real 2-process gloo run through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.cli import main as hops_main
from profiler.calibrate import CalibrationError, calibrate_env, default_sizes, fit_bandwidth
from profiler.records import CalibrationPoint, CalibrationRecord, read_records


def _points(latency: float, slope: float, sizes: list[int]) -> list[CalibrationPoint]:
    return [CalibrationPoint(params=m, seconds=latency + slope * m) for m in sizes]


def test_fit_by_hand() -> None:
    # t = 1 ms + m * 1e-8 s: B_net = 1e8 params/s; inside a node of 4, B_link = (3/4) / 1e-8 = 7.5e7.
    pts = _points(1e-3, 1e-8, [1000, 10_000, 100_000, 1_000_000])
    slope, latency, b_net = fit_bandwidth(pts, "net", 4)
    assert slope == pytest.approx(1e-8) and latency == pytest.approx(1e-3)
    assert b_net == pytest.approx(1e8)
    assert fit_bandwidth(pts, "link", 4)[2] == pytest.approx(7.5e7)
    assert fit_bandwidth(pts, "link", 2)[2] == pytest.approx(5e7)


def test_fit_refuses_flat_or_too_few_points() -> None:
    with pytest.raises(CalibrationError, match="does not grow with message size"):
        fit_bandwidth(_points(1e-3, 0.0, [10, 20, 30]), "link", 2)
    with pytest.raises(CalibrationError, match="at least two"):
        fit_bandwidth(_points(1e-3, 1e-8, [10]), "link", 2)


def test_default_sizes() -> None:
    assert default_sizes(1 << 10, 1 << 14, 3) == [1 << 10, 1 << 12, 1 << 14]
    with pytest.raises(CalibrationError):
        default_sizes(10, 5, 3)


def test_env_launch_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(CalibrationError, match="missing: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE"):
        calibrate_env(backend="gloo")


def test_cli_measures_gloo_link_bandwidth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --out the record goes where the engine reads it: the configuration's [paths] calibrations."""
    config = tmp_path / "hops.toml"
    config.write_text(f'[paths]\nstate_dir = "{tmp_path / "state"}"\n')
    out = tmp_path / "state" / "calibrations" / "calibration-cpu-link.json"
    code = hops_main(["calibrate", "--backend", "gloo", "--procs", "2", "--min-params", str(1 << 14),
                      "--max-params", str(1 << 20), "--steps", "3", "--reps", "3", "--config", str(config)])
    captured = capsys.readouterr()
    if code != 0:
        # On a loaded machine the all-reduce times can fail to grow with the message size; the command
        # must then refuse with one line naming the problem and write nothing (never a wrong bandwidth).
        assert code == 1 and not out.exists()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and "all-reduce time does not grow with message size" in lines[0], captured.err
        return
    assert "cpu: B_link =" in captured.out and str(out) in captured.out
    (record,) = read_records(out)
    assert isinstance(record, CalibrationRecord)
    assert (record.gpu_type, record.scope, record.backend, record.world_size, record.nodes) == ("cpu", "link", "gloo", 2, 1)
    assert [p.params for p in record.points] == [1 << 14, 1 << 17, 1 << 20]
    assert record.bandwidth == pytest.approx(0.5 / record.slope)
    # Behaviour, not speed (timings belong in benchmarks): every point was measured and the fit is positive.
    assert all(p.seconds > 0 for p in record.points) and record.slope > 0 and record.bandwidth > 0


def test_cli_without_a_configuration_fails_before_measuring(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.toml"
    assert hops_main(["calibrate", "--backend", "gloo", "--config", str(missing)]) == 1
    err = capsys.readouterr().err
    assert str(missing) in err and "no such file" in err and "Traceback" not in err
