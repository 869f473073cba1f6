"""Bandwidth calibration (Hops §3.5, eq. 2): all-reduce time versus message size with
torch.distributed (NCCL on GPUs, gloo on the CPU), within one node (B_link) or across nodes (B_net).

``hops-slurm calibrate`` runs it, writes a :class:`profiler.records.CalibrationRecord` JSON file and
the engine ingests it into the estimator's store (:func:`profiler.ingest.ingest_calibration`).

Two launches: ``local`` spawns N processes on this node (scope "link"); ``env`` joins a process group
already described by the environment (``srun``/``torchrun``: RANK/WORLD_SIZE or SLURM_PROCID/
SLURM_NTASKS, MASTER_ADDR, MASTER_PORT), and the scope is "net" when the ranks span several nodes.

The fit: a least-squares line t(m) = latency + slope * m through the median all-reduce times of
messages of m float32 values. Eq. 2 models T_c = params / B_link * (N-1)/N inside a node and
T_c = params / B_net across nodes, so B_link = (N-1)/N / slope and B_net = 1 / slope (params/s).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.distributed as dist

from hops_slurm.errors import HopsError
from profiler.records import CalibrationPoint, CalibrationRecord

log = logging.getLogger(__name__)


class CalibrationError(HopsError):
    """Calibration could not run or its measurements do not fit a bandwidth."""


def default_sizes(min_params: int = 1 << 16, max_params: int = 1 << 22, steps: int = 5) -> list[int]:
    """Geometrically spaced message sizes (float32 values) from ``min_params`` to ``max_params``."""
    if min_params <= 0 or max_params < min_params or steps < 2:
        raise CalibrationError("need 0 < min_params <= max_params and at least 2 sizes")
    ratio = (max_params / min_params) ** (1 / (steps - 1))
    return sorted({int(round(min_params * ratio**i)) for i in range(steps)})


def measure_allreduce(sizes: Sequence[int], reps: int, device: torch.device) -> list[CalibrationPoint]:
    """Median all-reduce time per message size, in an initialised process group (every rank calls it)."""
    points: list[CalibrationPoint] = []
    for m in sizes:
        buf = torch.ones(int(m), dtype=torch.float32, device=device)
        for _ in range(2):  # warm-up: connections, buffers
            dist.all_reduce(buf)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times: list[float] = []
        for _ in range(reps):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buf)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - start)
        # All ranks leave the all-reduce together; take the slowest rank's median.
        med = torch.tensor([statistics.median(times)], dtype=torch.float64, device=device)
        dist.all_reduce(med, op=dist.ReduceOp.MAX)
        points.append(CalibrationPoint(params=int(m), seconds=float(med.item())))
    return points


def fit_bandwidth(points: Sequence[CalibrationPoint], scope: str, world_size: int) -> tuple[float, float, float]:
    """(slope s/param, latency s, bandwidth params/s in the sense of eq. 2 for ``scope``)."""
    if len(points) < 2:
        raise CalibrationError("need at least two message sizes to fit a bandwidth")
    xs = [float(p.params) for p in points]
    ys = [p.seconds for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var
    if slope <= 0:
        raise CalibrationError(
            f"all-reduce time does not grow with message size (slope {slope:.3g} s/param); "
            "use larger messages (--max-params) or more repetitions (--reps)"
        )
    latency = my - slope * mx
    factor = (world_size - 1) / world_size if scope == "link" else 1.0
    return slope, latency, factor / slope


def _record(points: list[CalibrationPoint], scope: str, backend: str, world: int, nodes: int, gpu_type: str, method: str) -> CalibrationRecord:
    slope, latency, bandwidth = fit_bandwidth(points, scope, world)
    return CalibrationRecord(
        gpu_type=gpu_type, scope=scope, backend=backend, world_size=world, nodes=nodes,  # type: ignore[arg-type]
        points=points, slope=slope, latency=latency, bandwidth=bandwidth, method=method,
    )


def _device_for(backend: str, local_rank: int) -> torch.device:
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def _local_worker(rank: int, world: int, init_method: str, backend: str, sizes: list[int], reps: int, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world)
    try:
        points = measure_allreduce(sizes, reps, _device_for(backend, rank))
        if rank == 0:
            Path(out).write_text(json.dumps([p.model_dump() for p in points]), encoding="utf-8")
    finally:
        dist.destroy_process_group()


def pick_backend(backend: str) -> str:
    if backend == "auto":
        return "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl" and not torch.cuda.is_available():
        raise CalibrationError("backend nccl needs CUDA GPUs; none are visible here (use --backend gloo)")
    if backend not in ("gloo", "nccl"):
        raise CalibrationError(f"unknown backend {backend!r}; use auto, gloo or nccl")
    return backend


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def calibrate_local(
    world_size: int, *, backend: str = "auto", sizes: Sequence[int] | None = None, reps: int = 5, gpu_type: str = "cpu"
) -> CalibrationRecord:
    """Spawn ``world_size`` processes on this node and fit B_link."""
    import torch.multiprocessing as mp

    backend = pick_backend(backend)
    if world_size < 2:
        raise CalibrationError("calibration needs at least 2 processes")
    if backend == "nccl" and world_size > torch.cuda.device_count():
        raise CalibrationError(f"{world_size} processes need {world_size} GPUs; {torch.cuda.device_count()} visible")
    sizes = list(sizes or default_sizes())
    with tempfile.TemporaryDirectory(prefix="hops-calib-") as tmp:
        out = Path(tmp) / "points.json"
        init = f"tcp://127.0.0.1:{_free_port()}"
        mp.spawn(_local_worker, args=(world_size, init, backend, sizes, reps, str(out)), nprocs=world_size, join=True)
        points = [CalibrationPoint(**p) for p in json.loads(out.read_text(encoding="utf-8"))]
    method = f"all_reduce {backend} x{world_size} on one node, {len(sizes)} sizes x {reps} reps, median, least squares"
    return _record(points, "link", backend, world_size, 1, gpu_type, method)


def calibrate_env(*, backend: str = "auto", sizes: Sequence[int] | None = None, reps: int = 5, gpu_type: str = "cpu") -> CalibrationRecord | None:
    """Join the process group the launcher describes; rank 0 returns the record, the others None."""
    env = os.environ
    rank = env.get("RANK", env.get("SLURM_PROCID"))
    world = env.get("WORLD_SIZE", env.get("SLURM_NTASKS"))
    local = int(env.get("LOCAL_RANK", env.get("SLURM_LOCALID", "0")))
    missing = [k for k in ("MASTER_ADDR", "MASTER_PORT") if not env.get(k)]
    if rank is None or world is None or missing:
        raise CalibrationError(
            "launch env needs RANK/WORLD_SIZE (or SLURM_PROCID/SLURM_NTASKS) and MASTER_ADDR, MASTER_PORT; "
            f"missing: {', '.join(missing + ([] if rank is not None else ['RANK']) + ([] if world is not None else ['WORLD_SIZE']))}"
        )
    backend = pick_backend(backend)
    sizes = list(sizes or default_sizes())
    dist.init_process_group(backend, init_method="env://", rank=int(rank), world_size=int(world))
    try:
        hosts: list[str | None] = [None] * int(world)
        dist.all_gather_object(hosts, socket.gethostname())
        points = measure_allreduce(sizes, reps, _device_for(backend, local))
    finally:
        dist.destroy_process_group()
    if int(rank) != 0:
        return None
    nodes = len(set(hosts))
    scope = "net" if nodes > 1 else "link"
    method = f"all_reduce {backend} x{world} on {nodes} node(s), {len(sizes)} sizes x {reps} reps, median, least squares"
    return _record(points, scope, backend, int(world), nodes, gpu_type, method)
