"""A probe's data-parallel runs (``--data-parallel``): bounded in its record, stored as runtime windows of
that many GPUs on the probe's node, asked only of zoo models with distinct counts of 2..16."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from estimator.store import ThroughputStore
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.measure import probe_result
from profiler.ingest import ingest_probe
from profiler.job import EntrypointError
from profiler.probe import data_parallel
from profiler.records import DataParallelPoint, ProbeResult

MODEL = "ResNet-50 (batch size 64)"


def _probe(counts: tuple[int, ...] = ()) -> ProbeResult:
    result = probe_result(GroundTruth(), MODEL, "v100", "alice/k1", at=0.0, probe_seconds=60.0, data_parallel=counts)
    assert result is not None
    return result


def test_the_runs_are_stored_as_windows_of_that_many_gpus_on_the_probes_node(tmp_path: Path) -> None:
    truth = GroundTruth()
    with ThroughputStore(tmp_path / "store.db") as store:
        ingest_probe(store, _probe((2, 8)))
        snap = store.snapshot("alice/k1")
    assert set(snap.entity_aggregated) == {("profiler-v100", 2), ("profiler-v100", 8)}
    for k in (2, 8):
        per_gpu = truth.samples_per_second(MODEL, "v100", k, False) / k
        assert snap.type_aggregated[("v100", k)] == pytest.approx(per_gpu, rel=1e-9)


def test_a_probe_without_runs_stores_no_window(tmp_path: Path) -> None:
    with ThroughputStore(tmp_path / "store.db") as store:
        ingest_probe(store, _probe())
        assert store.snapshot("alice/k1").entity_aggregated == {}


@pytest.mark.parametrize("point", [{"gpus": 1, "throughput": 10.0}, {"gpus": 2, "throughput": float("nan")},
                                   {"gpus": 2, "throughput": 0.0}, {"gpus": 2, "throughput": 1e12}])
def test_a_record_refuses_a_run_out_of_bounds(point: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        DataParallelPoint.model_validate(point)


def test_a_record_refuses_more_than_four_runs() -> None:
    runs = [{"gpus": k, "throughput": 1.0} for k in (2, 3, 4, 5, 6)]
    with pytest.raises(ValidationError):
        ProbeResult.model_validate({**_probe().model_dump(), "data_parallel": runs})


@pytest.mark.parametrize("counts", [[1], [17], [2, 2], [2, 3, 4, 5, 6]])
def test_the_probe_refuses_bad_counts_before_running_anything(counts: list[int]) -> None:
    with pytest.raises(EntrypointError):
        data_parallel(_probe(), "resnet18", counts, size="tiny", iterations=1, warmup=0)


def test_the_probe_refuses_an_entrypoint() -> None:
    entry = _probe().model_copy(update={"source": "entrypoint"})
    with pytest.raises(EntrypointError, match="zoo models only"):
        data_parallel(entry, "", [2], size="", iterations=1, warmup=0)
