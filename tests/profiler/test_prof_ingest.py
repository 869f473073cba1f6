"""Ingestion of probe, runtime and calibration records into the real estimator store (SQLite)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from collections.abc import Iterator

import pytest

from estimator.store import ThroughputStore
from profiler.ingest import IngestError, ingest_calibration, ingest_files
from profiler.probe import run_probe
from profiler.signature import family_signature
from profiler.records import CalibrationPoint, CalibrationRecord, ProbeFailure, write_record
from profiler.runtime import Recorder
from profiler.zoo import build_zoo_job


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ThroughputStore]:
    with ThroughputStore(tmp_path / "store.sqlite") as st:
        yield st


def _cal(scope: str, bandwidth: float, gpu: str = "v100", age: float = 0.0) -> CalibrationRecord:
    return CalibrationRecord(
        gpu_type=gpu, scope=scope, backend="nccl", world_size=2, nodes=1 if scope == "link" else 2,  # type: ignore[arg-type]
        points=[CalibrationPoint(params=1, seconds=1.0), CalibrationPoint(params=2, seconds=2.0)],
        slope=1.0, latency=0.0, bandwidth=bandwidth, method=f"{scope} test",
        measured_at=datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=age),
    )


def test_probe_runtime_and_failure_files(tmp_path: Path, store: ThroughputStore) -> None:
    probe = run_probe(build_zoo_job("gpt2", "tiny"), size="tiny", iterations=10, warmup=1, device="cpu")
    write_record(probe, tmp_path / "probe.json")
    write_record(ProbeFailure(model="x", gpu_type="k80", node="n", error="out_of_memory", reason="too big"),
                 tmp_path / "fail.json")
    rec = Recorder(tmp_path / "metrics.jsonl", signature=probe.signature, gpu_type="cpu", batch_size=4, node="n2",
                   flush_every=2)
    for _ in rec.wrap(range(4)):
        with rec.step():
            pass
    summary = ingest_files(store, [tmp_path / "probe.json", tmp_path / "fail.json", tmp_path / "metrics.jsonl"])
    assert (summary.probes, summary.runtime, summary.calibrations) == (1, 2, 0)
    assert [f.error for f in summary.failures] == ["out_of_memory"]
    assert store.signatures() == [probe.signature]
    theory = store.theory(probe.signature, "cpu")
    assert theory is not None
    assert (theory.t_f, theory.t_b, theory.t_u) == pytest.approx((probe.t_forward, probe.t_backward, probe.t_update))
    assert (theory.pattern, theory.params, theory.batch_size) == (probe.pattern, probe.params, 4)
    # the probe's model, parameters and input shape name its family (estimator.family)
    assert store.family_of(probe.signature) == family_signature(probe.model, int(probe.params), probe.input_shape) != ""
    data, _, _ = store.samples(probe.signature, "cpu")
    assert len(data) == len(probe.data_samples) + 4  # the probe's samples, then 2 x 2 runtime iterations
    assert data[: len(probe.data_samples)] == pytest.approx(probe.data_samples)
    counts = store.record_counts(probe.signature)
    assert counts["entity_aggregated"] == 2 and counts["type_aggregated"] == 2  # one throughput row per flush


def test_calibration_newest_per_scope_wins(store: ThroughputStore) -> None:
    assert ingest_calibration(store, [_cal("link", 1e9, age=0), _cal("link", 2e9, age=10), _cal("net", 3e8)]) == ["v100"]
    cal = store.calibration("v100")
    assert cal is not None
    assert (cal.b_link, cal.b_net) == (2e9, 3e8)
    assert cal.measured_at.startswith("2026-01-01T00:00:10")
    assert cal.method == "link test; net test"


def test_calibration_fills_missing_scope_from_the_store(store: ThroughputStore) -> None:
    store.put_calibration("v100", b_link=5e9, b_net=7e8, method="earlier", measured_at=0.0)
    ingest_calibration(store, [_cal("link", 1e9)])
    cal = store.calibration("v100")
    assert cal is not None and (cal.b_link, cal.b_net) == (1e9, 7e8)


def test_calibration_without_any_b_net_is_an_error(store: ThroughputStore) -> None:
    with pytest.raises(IngestError, match=r"B_net \(run `hops-slurm calibrate --launch env` across two nodes\)"):
        ingest_calibration(store, [_cal("link", 1e9)])
    assert store.calibration("v100") is None
