"""Job signatures and the JSON records the profiler hands to the engine."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from profiler.records import CalibrationPoint, CalibrationRecord, ProbeFailure, parse_record, read_records, write_record
from profiler.signature import job_signature


def test_signature_is_sha256_of_the_canonical_text() -> None:
    canonical = '{"batch_size":16,"input_shape":[3,64,64],"model":"resnet18","params":11689512}'
    expected = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert job_signature("resnet18", 11689512, 16, (3, 64, 64)) == expected
    assert job_signature("resnet18", 11689512, 16, [3, 64, 64]) == expected  # sequence type does not matter


@pytest.mark.parametrize(
    "other",
    [("resnet50", 11689512, 16, (3, 64, 64)), ("resnet18", 11689513, 16, (3, 64, 64)),
     ("resnet18", 11689512, 32, (3, 64, 64)), ("resnet18", 11689512, 16, (64, 64, 3))],
)
def test_signature_changes_with_each_fact(other: tuple[str, int, int, tuple[int, ...]]) -> None:
    assert job_signature(*other) != job_signature("resnet18", 11689512, 16, (3, 64, 64))


def test_signature_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        job_signature("", 1, 1, ())
    with pytest.raises(ValueError):
        job_signature("m", 1, 0, ())


def test_records_round_trip_through_files(tmp_path: Path) -> None:
    cal = CalibrationRecord(gpu_type="cpu", scope="link", backend="gloo", world_size=2, nodes=1,
                            points=[CalibrationPoint(params=10, seconds=1.0), CalibrationPoint(params=20, seconds=2.0)],
                            slope=0.1, latency=0.0, bandwidth=5.0, method="test")
    fail = ProbeFailure(model="m", gpu_type="cpu", node="n", error="time_limit", reason="slow")
    write_record(cal, tmp_path / "cal.json")
    assert read_records(tmp_path / "cal.json") == [cal]
    lines = tmp_path / "m.jsonl"
    lines.write_text(cal.model_dump_json() + "\n" + fail.model_dump_json() + "\n")
    assert read_records(lines) == [cal, fail]
    assert parse_record(fail.model_dump_json()) == fail
    with pytest.raises(ValueError):
        parse_record('{"kind": "probe", "model": "x"}')  # missing fields are refused, not defaulted
