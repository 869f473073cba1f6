"""Running-mode recorder: a real (small) training loop with the recorder's lines in it."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import nn

from profiler.records import RuntimeRecord, read_records
from profiler.runtime import Recorder

LOAD = 0.02  # seconds the loader blocks per batch


def _loader(batches: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    for _ in range(batches):
        time.sleep(LOAD)
        yield torch.randn(8, 16), torch.randint(0, 4, (8,))


def _train(rec: Recorder, batches: int) -> None:
    model = nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in rec.wrap(_loader(batches)):
        with rec.step():
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    rec.close()


def test_records_windows_of_steps(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    rec = Recorder(path, signature="sig", gpu_type="cpu", batch_size=8, node="n1", flush_every=5)
    _train(rec, 12)
    records = read_records(path)
    assert [r.steps for r in records] == [5, 5, 2]  # two full windows and the rest at close()
    for r in records:
        assert isinstance(r, RuntimeRecord)
        assert (r.signature, r.gpu_type, r.node, r.gpus, r.nodes, r.rank) == ("sig", "cpu", "n1", 1, 1, 0)
        assert len(r.data_times) == len(r.step_times) == r.steps
        assert all(d >= LOAD for d in r.data_times)  # the wait for each batch is seen
        assert r.sync_waits == []  # not distributed
        # throughput = samples / window, and the window holds at least the data waits and the steps
        assert r.throughput == pytest.approx(r.steps * 8 / r.window_seconds)
        assert r.window_seconds >= sum(r.data_times) + sum(r.step_times)
        assert r.window_seconds < sum(r.data_times) + sum(r.step_times) + 0.05
    assert rec.records_written == 3


def test_a_resumed_job_s_records_carry_its_own_count(tmp_path: Path) -> None:
    """A job resumed from a checkpoint at 400 samples: each record says its count at the window's end (the
    engine counts the samples it redoes once); a job that does not say has no count in its records."""
    path = tmp_path / "metrics.jsonl"
    _train(Recorder(path, signature="sig", gpu_type="cpu", batch_size=8, node="n1", flush_every=5, done_samples=400), 12)
    assert [r.done_samples for r in read_records(path)] == [440.0, 480.0, 496.0]
    other = tmp_path / "other.jsonl"
    _train(Recorder(other, signature="sig", gpu_type="cpu", batch_size=8, node="n1", flush_every=5), 3)
    assert [r.done_samples for r in read_records(other)] == [None]
    with pytest.raises(ValueError, match="done_samples"):
        Recorder(path, signature="sig", gpu_type="cpu", batch_size=8, done_samples=-1)
    good = read_records(path)[0].model_dump()
    for bad in (-1.0, float("nan"), float("inf"), 1e16):  # a record's count is bounded like every number in it
        with pytest.raises(ValueError, match="done_samples"):
            RuntimeRecord.model_validate({**good, "done_samples": bad})


def test_without_metrics_file_it_does_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPS_METRICS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    rec = Recorder.from_env(batch_size=8)
    assert not rec.enabled
    _train(rec, 3)
    assert rec.flush() is None and list(tmp_path.iterdir()) == []


def test_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.jsonl"
    for key, value in {"HOPS_METRICS_FILE": str(path), "HOPS_JOB_SIGNATURE": "abc", "HOPS_GPU_TYPE": "v100",
                       "SLURMD_NODENAME": "gpu07", "SLURM_JOB_NUM_NODES": "1"}.items():
        monkeypatch.setenv(key, value)
    rec = Recorder.from_env(batch_size=4, flush_every=100)
    _train(rec, 3)
    (r,) = read_records(path)
    assert isinstance(r, RuntimeRecord)
    assert (r.signature, r.gpu_type, r.node, r.steps, r.batch_size) == ("abc", "v100", "gpu07", 3, 4)


def test_sync_wait_is_sampled_in_a_process_group(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        path = tmp_path / "m-{rank}.jsonl"
        rec = Recorder(path, signature="s", gpu_type="cpu", batch_size=8, flush_every=100, sync_every=2)
        _train(rec, 6)
    finally:
        dist.destroy_process_group()
    (r,) = read_records(tmp_path / "m-0.jsonl")
    assert isinstance(r, RuntimeRecord)
    assert len(r.sync_waits) == 3 and all(w >= 0 for w in r.sync_waits)  # one barrier every 2 of 6 steps
