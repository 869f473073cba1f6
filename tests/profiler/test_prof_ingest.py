"""Ingestion into the estimator's store API.

``RecordingStore`` below is a FAKE: it only records the calls, with the real
``estimator.store.ThroughputStore`` method signatures (put_theory, add_runtime_samples,
put_calibration, calibration). The real store lives on the estimator branch; at merge these tests
should be pointed at it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from profiler.ingest import IngestError, ingest_calibration, ingest_files
from profiler.probe import run_probe
from profiler.records import CalibrationPoint, CalibrationRecord, ProbeFailure, write_record
from profiler.runtime import Recorder
from profiler.zoo import build_zoo_job


class RecordingStore:
    """FAKE store: records calls; ``known`` is what ``calibration(gpu_type)`` answers."""

    def __init__(self, known: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.known = known or {}

    def put_theory(self, signature: str, gpu_type: str, **kw: Any) -> None:
        self.calls.append(("put_theory", (signature, gpu_type), kw))

    def add_runtime_samples(self, signature: str, gpu_type: str, node: str, **kw: Any) -> None:
        self.calls.append(("add_runtime_samples", (signature, gpu_type, node), kw))

    def put_calibration(self, gpu_type: str, **kw: Any) -> None:
        self.calls.append(("put_calibration", (gpu_type,), kw))

    def calibration(self, gpu_type: str) -> Any:
        return self.known.get(gpu_type)


def _cal(scope: str, bandwidth: float, gpu: str = "v100", age: float = 0.0) -> CalibrationRecord:
    return CalibrationRecord(
        gpu_type=gpu, scope=scope, backend="nccl", world_size=2, nodes=1 if scope == "link" else 2,  # type: ignore[arg-type]
        points=[CalibrationPoint(params=1, seconds=1.0), CalibrationPoint(params=2, seconds=2.0)],
        slope=1.0, latency=0.0, bandwidth=bandwidth, method=f"{scope} test",
        measured_at=datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=age),
    )


def test_probe_runtime_and_failure_files(tmp_path: Path) -> None:
    probe = run_probe(build_zoo_job("gpt2", "tiny"), size="tiny", iterations=10, warmup=1, device="cpu")
    write_record(probe, tmp_path / "probe.json")
    write_record(ProbeFailure(model="x", gpu_type="k80", node="n", error="out_of_memory", reason="too big"),
                 tmp_path / "fail.json")
    rec = Recorder(tmp_path / "metrics.jsonl", signature=probe.signature, gpu_type="cpu", batch_size=4, node="n2",
                   flush_every=2)
    for _ in rec.wrap(range(4)):
        with rec.step():
            pass
    store = RecordingStore()
    summary = ingest_files(store, [tmp_path / "probe.json", tmp_path / "fail.json", tmp_path / "metrics.jsonl"])
    assert (summary.probes, summary.runtime, summary.calibrations) == (1, 2, 0)
    assert [f.error for f in summary.failures] == ["out_of_memory"]
    name, args, kw = store.calls[0]
    assert (name, args) == ("put_theory", (probe.signature, "cpu"))
    assert kw == {"t_f": probe.t_forward, "t_b": probe.t_backward, "t_u": probe.t_update, "pattern": probe.pattern,
                  "params": probe.params, "batch_size": 4, "data_samples": probe.data_samples, "sync_samples": []}
    runtime = [c for c in store.calls if c[0] == "add_runtime_samples"]
    assert [c[1] for c in runtime] == [(probe.signature, "cpu", "n2")] * 2
    assert all(c[2]["gpus"] == 1 and c[2]["nodes"] == 1 and len(c[2]["data_times"]) == 2 for c in runtime)
    assert all(c[2]["throughput"] > 0 for c in runtime)


def test_calibration_newest_per_scope_wins() -> None:
    store = RecordingStore()
    assert ingest_calibration(store, [_cal("link", 1e9, age=0), _cal("link", 2e9, age=10), _cal("net", 3e8)]) == ["v100"]
    ((_, args, kw),) = store.calls
    assert args == ("v100",)
    assert (kw["b_link"], kw["b_net"]) == (2e9, 3e8)
    assert kw["measured_at"] == datetime(2026, 1, 1, 0, 0, 10, tzinfo=timezone.utc)
    assert kw["method"] == "link test; net test"


def test_calibration_fills_missing_scope_from_the_store() -> None:
    class Known:
        b_link, b_net = 5e9, 7e8

    store = RecordingStore({"v100": Known()})
    ingest_calibration(store, [_cal("link", 1e9)])
    assert (store.calls[0][2]["b_link"], store.calls[0][2]["b_net"]) == (1e9, 7e8)


def test_calibration_without_any_b_net_is_an_error() -> None:
    with pytest.raises(IngestError, match=r"B_net \(run `hops-slurm calibrate --launch env` across two nodes\)"):
        ingest_calibration(RecordingStore(), [_cal("link", 1e9)])
