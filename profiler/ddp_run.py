"""A real data-parallel training run of a zoo model (torch DDP, N processes on this node), measured
with the running-mode recorder. It is the ground truth the benchmark compares the estimator's
prediction (from a single-process probe plus calibration) against.
"""

from __future__ import annotations

import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from profiler.records import RuntimeRecord, read_records
from profiler.runtime import Recorder


@dataclass(frozen=True)
class DdpMeasurement:
    world_size: int
    backend: str
    throughput: float  # samples/s of the whole job
    step_time: float  # mean wall time per step (rank 0)
    records: tuple[RuntimeRecord, ...]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world: int, init: str, backend: str, model: str, size: str, batch: int | None,
            iterations: int, warmup: int, threads: int, metrics: str) -> None:
    from torch.nn.parallel import DistributedDataParallel

    from profiler.zoo import build_zoo_job

    torch.set_num_threads(threads)
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=world)
    try:
        device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
        job = build_zoo_job(model, size, batch_size=batch, seed=0)
        net = DistributedDataParallel(job.model.to(device), device_ids=[rank] if device.type == "cuda" else None)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        batches = iter(job.loader)

        def step(x: torch.Tensor, y: torch.Tensor) -> None:
            loss = job.loss_fn(net(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(warmup):
            step(*next(batches))
        dist.barrier()
        rec = Recorder(metrics, signature=f"ddp-{model}", gpu_type=device.type, batch_size=job.batch_size,
                       flush_every=iterations, sync_every=max(iterations // 4, 1))
        for i, (x, y) in enumerate(rec.wrap(batches)):
            with rec.step():
                step(x, y)
            if i + 1 == iterations:  # every rank stops after the same number of steps
                break
    finally:
        dist.destroy_process_group()


def measure_ddp(model: str, size: str = "default", *, world_size: int = 2, backend: str = "gloo",
                batch_size: int | None = None, iterations: int = 10, warmup: int = 3, threads: int = 1) -> DdpMeasurement:
    """Train zoo ``model`` with DDP on ``world_size`` local processes and measure its throughput."""
    with tempfile.TemporaryDirectory(prefix="hops-ddp-") as tmp:
        metrics = str(Path(tmp) / "metrics.jsonl")
        mp.spawn(_worker, args=(world_size, f"tcp://127.0.0.1:{_free_port()}", backend, model, size, batch_size,
                                iterations, warmup, threads, metrics), nprocs=world_size, join=True)
        records = tuple(r for r in read_records(Path(metrics)) if isinstance(r, RuntimeRecord))
    if not records:
        raise RuntimeError("the DDP run wrote no runtime record")
    rec = records[0]
    return DdpMeasurement(world_size, backend, rec.throughput, sum(rec.step_times) / len(rec.step_times), records)
