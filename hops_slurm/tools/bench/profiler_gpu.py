"""The GPU check of the profiler (``hops-slurm bench profiler --device cuda``): writes ``profiler-gpu.md``.

Where it sits: beside :mod:`hops_slurm.tools.bench.profiler` (the CPU benchmark), run by hand on a machine with
a GPU, never in CI. For every zoo model at full size it probes the job on the GPU (``profiler.probe``),
predicts its 1-GPU throughput with eq. 1 (T_c = 0: one GPU has nothing to all-reduce) and compares the
prediction with a long free-running measurement of the same job (``profiler.ddp_run.measure_ddp``, one
process, NCCL, the running-mode recorder, CUDA synchronised at the end of its window). The probe's own
free-running period (its ``t_iter_observed``, a few iterations) is shown beside the long one. Without
CUDA, :func:`require_cuda` refuses in one line before anything runs. :func:`check_model` runs on any
device (the unit tests run it on the CPU with gloo at the tiny size).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from hops_slurm.tools.bench.profiler import predict_ddp
from hops_slurm.errors import HopsError
from hops_slurm.tools import results_header
from profiler.ddp_run import measure_ddp
from profiler.probe import run_probe
from profiler.zoo import build_zoo_job, zoo_names

#: Steps of the long free-running measurement (after its warm-up), and its warm-up.
LONG_ITERATIONS = 100
LONG_WARMUP = 10


class NoGpu(HopsError):
    """The GPU check was asked for on a machine without a usable CUDA device."""


def command(env: Mapping[str, str]) -> str:
    """The command that writes profiler-gpu.md (its results header); it reads no environment variable."""
    return "hops-slurm bench profiler --device cuda"


def require_cuda() -> None:
    """Refuse (one line) unless torch sees a CUDA device."""
    if not torch.cuda.is_available():
        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a CPU-only build")
        raise NoGpu(f"--device cuda: CUDA is not available on this machine ({build}); "
                    "the GPU check runs only where a GPU is present")


@dataclass(frozen=True)
class GpuCheck:
    model: str
    batch: int
    probe_seconds: float  # wall time of the probe, model build included
    predicted: float  # samples/s, eq. 1 with T_c = 0
    probe_free_running: float  # samples/s from the probe's own short free-running loop
    measured: float  # samples/s, long free-running run

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured

    @property
    def probe_period_error(self) -> float:
        return (self.probe_free_running - self.measured) / self.measured


def check_model(name: str, *, size: str = "full", device: str = "cuda", iterations: int = LONG_ITERATIONS,
                warmup: int = LONG_WARMUP) -> GpuCheck:
    """Probe ``name`` on ``device``, predict one device's throughput (eq. 1, T_c = 0), measure it long."""
    t0 = time.perf_counter()
    probe = run_probe(build_zoo_job(name, size), size=size, device=device)
    probe_seconds = time.perf_counter() - t0
    _t_c, _t_iter, predicted = predict_ddp(probe, 1.0, 1)  # n = 1: T_c = 0 whatever the link
    backend = "nccl" if torch.device(device).type == "cuda" else "gloo"
    long = measure_ddp(name, size, world_size=1, backend=backend, iterations=iterations, warmup=warmup, threads=1)
    return GpuCheck(name, probe.batch_size, probe_seconds, predicted, probe.batch_size / probe.t_iter_observed,
                    long.throughput)


def run_gpu(out_dir: Path, *, size: str = "full") -> Path:
    """The check over the whole zoo on this machine's GPU; ``profiler-gpu.md`` in ``out_dir``."""
    require_cuda()
    checks = [check_model(name, size=size) for name in zoo_names()]
    lines = [
        "# Profiler GPU check", "",
        f"Machine: {platform.machine()}, {torch.cuda.get_device_name(0)}, torch {torch.__version__} "
        f"(CUDA {torch.version.cuda}). Command: `hops-slurm bench profiler --device cuda`. Zoo size: {size}.", "",
        f"Predicted: eq. 1 from the probe with T_c = 0 (one GPU). Measured: {LONG_ITERATIONS} free-running steps "
        f"after {LONG_WARMUP} warm-up steps of the same job (one process, NCCL, the running-mode recorder). "
        "Probe free-running: the probe's own short loop. Error = (predicted - measured) / measured.", "",
        "| model | batch | probe s | **predicted** samples/s | **measured** samples/s | **error** "
        "| probe free-running samples/s (error) |",
        "|---|---|---|---|---|---|---|",
        *[f"| {c.model} | {c.batch} | {c.probe_seconds:.1f} | {c.predicted:.1f} | {c.measured:.1f} | {c.error:+.1%} "
          f"| {c.probe_free_running:.1f} ({c.probe_period_error:+.1%}) |" for c in checks],
        "",
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "profiler-gpu.md"
    return results_header.write(path, "\n".join(lines), generator=f"{__name__}:run_gpu",
                                 command=command(os.environ))
