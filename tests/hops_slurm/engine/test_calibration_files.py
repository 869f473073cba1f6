"""What ``hops-slurm calibrate`` measured takes effect: the engine reads the records in ``[paths] calibrations``
at its next refresh and its estimates change (:mod:`hops_slurm.engine.calibration_files`); a bad file is one
warning and the good ones are still taken."""

from __future__ import annotations

import logging
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine.calibration_files import CalibrationFiles
from hops_slurm.engine.engine import Engine
from profiler.records import CalibrationPoint, CalibrationRecord, write_record
from standin import StandInSlurm

SIGNATURE = "sig-bert"


def _record(scope: str, bandwidth: float, gpu_type: str = "a100") -> CalibrationRecord:
    return CalibrationRecord(
        gpu_type=gpu_type, scope=scope, backend="nccl", world_size=2, nodes=1 if scope == "link" else 2,  # type: ignore[arg-type]
        points=[CalibrationPoint(params=1 << 16, seconds=0.001), CalibrationPoint(params=1 << 20, seconds=0.016)],
        slope=1.5e-8, latency=0.0, bandwidth=bandwidth, method=f"hops-slurm calibrate ({scope}, test)",
        measured_at=datetime(2026, 11, 1, tzinfo=timezone.utc))


def _engine(tmp_path: Path) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.3, "probe_size": "tiny"},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    engine = Engine(config, api=StandInSlurm()).open()
    engine.store.put_theory(SIGNATURE, "a100", t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=1.1e8, batch_size=32)
    return engine


def test_an_estimate_changes_once_calibrate_has_measured_the_gpu_type(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    try:
        engine.refresh()  # the a100 nodes get the configured default bandwidths
        defaults = engine.store.measured_calibrations()["a100"]
        assert (defaults.b_link, defaults.b_net) == (1.0e10, 1.0e9)
        across, within = {"n1": 1, "n2": 1}, {"n1": 2}
        fn = engine.res.estimator().throughput_fn(SIGNATURE)
        before = fn(across), fn(within)

        folder = engine.config.paths.resolve(engine.config.paths.calibrations)
        assert folder == tmp_path / "state" / "calibrations"  # [paths] calibrations, under state_dir
        write_record(_record("link", 2.0e8), folder / "calibration-a100-link.json")
        write_record(_record("net", 5.0e7), folder / "calibration-a100-net.json")
        engine.refresh()

        measured = engine.store.measured_calibrations()["a100"]
        assert (measured.b_link, measured.b_net) == (2.0e8, 5.0e7) and "hops-slurm calibrate" in measured.method
        fn = engine.res.estimator().throughput_fn(SIGNATURE)
        after = fn(across), fn(within)
        # a slower all-reduce makes both multi-GPU configs slower, the one across nodes the most
        assert after[0] < before[0] and after[1] < before[1] and after[0] < after[1]
    finally:
        engine.close()


def test_a_new_measurement_of_one_scope_replaces_only_that_one(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    folder = engine.config.paths.resolve(engine.config.paths.calibrations)
    try:
        write_record(_record("link", 5.0e9), folder / "calibration-a100-link.json")
        engine.refresh()  # defaults first, then the link measured: B_net stays the default
        cal = engine.store.measured_calibrations()["a100"]
        assert (cal.b_link, cal.b_net) == (5.0e9, 1.0e9)
        engine.refresh()  # nothing new: nothing read again
        write_record(_record("net", 5.0e7), folder / "calibration-a100-net.json")
        engine.refresh()
        cal = engine.store.measured_calibrations()["a100"]
        assert (cal.b_link, cal.b_net) == (5.0e9, 5.0e7)
    finally:
        engine.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a file to another user (chown): root, as the engine runs")
def test_bad_files_are_one_warning_each_and_the_good_ones_are_taken(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "calibrations"
    folder.mkdir()
    (folder / "broken.json").write_text('{"kind": "calibration", "bandwidth": -1}')
    (folder / "huge.json").write_bytes(b" " * (2 << 20))
    os.symlink("/etc/passwd", folder / "link.json")
    write_record(_record("link", 3.0e8, "h100"), folder / "good.json")
    write_record(_record("link", 1.0e3, "h100"), folder / "planted.json")
    os.chown(folder / "planted.json", 65534, 65534)  # a user's file: not the administrator's measurement
    files = CalibrationFiles(folder)
    with caplog.at_level(logging.WARNING, logger="hops_slurm.engine.calibration_files"):
        records = files.new_records()
    assert [(r.gpu_type, r.bandwidth) for r in records] == [("h100", 3.0e8)]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 4 and all(str(folder) in w for w in warned), warned
    caplog.clear()
    assert files.new_records() == [] and not caplog.records  # unchanged files: not read, not warned again
