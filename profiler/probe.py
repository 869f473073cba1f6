"""Probe runner (profiling mode, Hops §3.2): ``python -m profiler.probe ...``.

What the profiler partition runs for a new job, once per GPU type. Builds the job (a zoo model or a
user entrypoint ``pkg.module:build``), runs a few tens of iterations and writes one
:class:`profiler.records.ProbeResult` as JSON, which the engine ingests (:mod:`profiler.ingest`).

Three measured phases after ``warmup`` iterations, ``iterations`` each:

1. *components*: every phase synchronised; T_f (forward + loss), T_b (backward, and the job's
   ``after_backward`` hook), T_u (optimizer step + zero_grad) timed with CUDA events on a GPU or the
   wall clock on the CPU;
2. *free-running loop*: the loop as the job would run it, no extra synchronisation; its wall time
   per iteration T_obs and, within it, the wait for the next batch;
3. *loader alone*: batches pulled back to back (with the copy to the device); the median is the
   intrinsic data time T_d.

The pattern (:mod:`profiler.pattern`) follows from T_d, T_f, T_b, T_u and T_obs. With ``--data-parallel
K ...`` (a zoo model, ``engine.probe_data_parallel``) the probe then runs the model data-parallel on K GPUs
of its node for each K and reports each run's throughput (:func:`data_parallel`). On failure the CLI
writes a :class:`profiler.records.ProbeFailure` and exits non-zero: 2 bad entrypoint or arguments,
3 out of memory, 4 time limit, 1 anything else.
"""

from __future__ import annotations

import argparse
import logging
import math
import resource
import signal
import socket
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from hops_slurm.errors import HopsError
from profiler.job import EntrypointError, ProbeJob, load_entrypoint
from profiler.pattern import detect_pattern
from profiler.records import MAX_DATA_PARALLEL, DataParallelPoint, ProbeFailure, ProbeResult, write_record
from profiler.signature import job_signature
from profiler.timing import PhaseClock, synchronize

log = logging.getLogger(__name__)

EXIT_ERROR, EXIT_BAD_ENTRYPOINT, EXIT_OOM, EXIT_TIME_LIMIT = 1, 2, 3, 4


class ProbeTimeLimit(HopsError):
    """The probe ran past its time limit."""


class ProbeOutOfMemory(HopsError):
    """The job does not fit in memory at this batch size on this device."""


class _Deadline:
    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.end = time.monotonic() + limit if limit else math.inf

    def check(self, where: str) -> None:
        if time.monotonic() > self.end:
            raise ProbeTimeLimit(
                f"probe exceeded its time limit of {self.limit:.0f} s during {where}; "
                "give it more time (--time-limit), fewer iterations, or a smaller batch"
            )


def _cycle(loader: Any) -> Iterator[Any]:
    """Endless batches from ``loader`` (a new pass starts when one ends)."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise EntrypointError("the job's loader yields no batches")


def _to_device(obj: Any, device: torch.device) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _split(batch: Any) -> tuple[Any, Any]:
    if isinstance(batch, (list, tuple)) and len(batch) == 2:
        return batch[0], batch[1]
    raise EntrypointError("batches must be (inputs, targets) pairs")


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def run_probe(
    job: ProbeJob,
    *,
    source: str = "zoo",
    size: str = "",
    iterations: int = 15,
    warmup: int = 3,
    device: str | torch.device = "auto",
    gpu_type: str | None = None,
    time_limit: float | None = None,
) -> ProbeResult:
    """Measure ``job`` and return its probe result (raises ProbeOutOfMemory / ProbeTimeLimit)."""
    if iterations < 1 or warmup < 0:
        raise ValueError("iterations must be >= 1 and warmup >= 0")
    started = time.perf_counter()
    dev = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else ("cpu" if device == "auto" else device))
    gpu = gpu_type or (_cuda_type_name(dev) if dev.type == "cuda" else "cpu")
    deadline = _Deadline(time_limit)
    try:
        return _measure(job, source, size, iterations, warmup, dev, gpu, deadline, started)
    except (ProbeTimeLimit, EntrypointError):
        raise
    except BaseException as exc:
        if _is_oom(exc):
            raise ProbeOutOfMemory(
                f"{job.name} at batch size {job.batch_size} ran out of memory on {dev} ({gpu}): "
                f"{str(exc).splitlines()[0][:200]}; try a smaller per-GPU batch size"
            ) from exc
        raise


def _cuda_type_name(dev: torch.device) -> str:
    name = torch.cuda.get_device_name(dev).lower()
    for known in ("h200", "h100", "a100", "a40", "a10", "l40", "l4", "v100", "t4", "p100", "k80"):
        if known in name:
            return known
    return name.replace(" ", "-")


def _measure(
    job: ProbeJob, source: str, size: str, n: int, warmup: int, dev: torch.device, gpu: str,
    deadline: _Deadline, started: float,
) -> ProbeResult:
    model = job.model.to(dev)
    model.train()
    opt, loss_fn, hook = job.optimizer, job.loss_fn, job.after_backward
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    batches = _cycle(job.loader)

    def step(batch: Any, clock: PhaseClock | None) -> None:
        x, y = _split(batch)
        if clock:
            clock.start()
        loss = loss_fn(model(x), y)
        if clock:
            clock.mark("forward")
        loss.backward()
        if hook is not None:
            hook(model)
        if clock:
            clock.mark("backward")
        opt.step()
        opt.zero_grad(set_to_none=True)
        if clock:
            clock.mark("update")

    for i in range(warmup):
        step(_to_device(next(batches), dev), None)
        synchronize(dev)
        deadline.check(f"warm-up iteration {i + 1}")

    # Phase 1: components, every phase synchronised.
    clock = PhaseClock(dev)
    fwd: list[float] = []
    bwd: list[float] = []
    upd: list[float] = []
    for i in range(n):
        batch = _to_device(next(batches), dev)
        synchronize(dev)
        step(batch, clock)
        times = clock.finish()
        fwd.append(times["forward"])
        bwd.append(times["backward"])
        upd.append(times["update"])
        deadline.check(f"measured iteration {i + 1}")

    # Phase 2: the free-running loop.
    # Per-iteration wall time between loop heads (exact on the CPU, the steady-state period on a GPU),
    # split into the wait for the next batch and the rest of the iteration.
    synchronize(dev)
    periods: list[float] = []
    waits: list[float] = []
    head = time.perf_counter()
    for i in range(n):
        batch = _to_device(next(batches), dev)
        got = time.perf_counter()
        step(batch, None)
        if i == n - 1:
            synchronize(dev)
        now = time.perf_counter()
        periods.append(now - head)
        waits.append(got - head)
        head = now
        deadline.check(f"free-running iteration {i + 1}")
    t_obs = statistics.median(periods)
    t_wait = statistics.median(waits)
    rest = statistics.median(p - w for p, w in zip(periods, waits))

    # Phase 3: the loader alone.
    data: list[float] = []
    for i in range(max(n, 8)):
        t = time.perf_counter()
        _to_device(next(batches), dev)
        synchronize(dev)
        data.append(time.perf_counter() - t)
        deadline.check(f"loader pull {i + 1}")
    t_data = statistics.median(data)

    t_f, t_b, t_u = statistics.median(fwd), statistics.median(bwd), statistics.median(upd)
    if dev.type == "cuda":
        # The GPU runs behind the host; its compute comes from the CUDA-event phase times.
        verdict = detect_pattern(t_data, t_f, t_b, t_u, t_obs)
    else:
        # On the CPU the main process's compute cannot overlap anything of its own, so the rest of
        # each free-running iteration *is* its compute, measured under the same load as the loop;
        # the phase split comes from the synchronised phase.
        scale = rest / (t_f + t_b + t_u) if t_f + t_b + t_u > 0 else 1.0
        verdict = detect_pattern(t_data, t_f * scale, t_b * scale, t_u * scale, t_obs)
    if dev.type == "cuda":
        peak, mem_source = int(torch.cuda.max_memory_allocated(dev)), "cuda_max_allocated"
    else:
        peak, mem_source = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "process_max_rss"
    params = job.params
    return ProbeResult(
        model=job.name, source=source, size=size,  # type: ignore[arg-type]
        signature=job_signature(job.name, params, job.batch_size, job.input_shape),
        gpu_type=gpu, device=str(dev), node=socket.gethostname(), batch_size=job.batch_size,
        input_shape=job.input_shape, params=params, iterations=n, warmup=warmup,
        t_data=t_data, t_forward=t_f, t_backward=t_b, t_update=t_u, t_iter_observed=t_obs, t_wait_observed=t_wait,
        data_samples=data, forward_samples=fwd, backward_samples=bwd, update_samples=upd,
        pattern=verdict.pattern, pattern_determined=verdict.determined, pattern_margin=verdict.margin,  # type: ignore[arg-type]
        peak_memory_bytes=peak, memory_source=mem_source,  # type: ignore[arg-type]
        timing=PhaseClock(dev).method,  # type: ignore[arg-type]
        threads=torch.get_num_threads(), torch_version=torch.__version__,
        probe_seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m profiler.probe", description="Profile a training job for a few iterations.")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", help="zoo model name (resnet18, resnet50, vgg11, mobilenetv2, vit, bert, gpt2)")
    what.add_argument("--entrypoint", help="user job as pkg.module:build")
    p.add_argument("--size", default="default", choices=("tiny", "default", "full"), help="zoo size setting")
    p.add_argument("--batch-size", type=int, default=None, help="per-GPU batch size (zoo models)")
    p.add_argument("--iterations", type=int, default=15, help="measured iterations per phase (default 15)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", default="auto", help="auto (cuda when available), cpu, cuda, cuda:N")
    p.add_argument("--gpu-type", default=None, help="GPU type name for the store (default: from the device)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds before the probe gives up (default 300)")
    p.add_argument("--data-parallel", type=int, nargs="+", default=[], metavar="GPUS",
                   help="also run the zoo model data-parallel on this many GPUs of this node (each 2..16, at most "
                        f"{MAX_DATA_PARALLEL}; torch DDP, nccl on GPUs, gloo on the CPU) and report its throughput")
    p.add_argument("--out", type=Path, default=None, help="result JSON file (default: stdout)")
    return p


def data_parallel(result: ProbeResult, model: str, counts: list[int], *, size: str, iterations: int,
                  warmup: int) -> ProbeResult:
    """``result`` with the throughput of a data-parallel run of zoo ``model`` (the one probed) on each of
    ``counts`` GPUs of this node (:func:`profiler.ddp_run.measure_ddp`: the running-mode recorder's figure, as a job's)."""
    from profiler.ddp_run import measure_ddp

    if result.source != "zoo":
        raise EntrypointError("--data-parallel runs zoo models only (--model)")
    if len(set(counts)) != len(counts) or len(counts) > MAX_DATA_PARALLEL or any(not 2 <= k <= 16 for k in counts):
        raise EntrypointError(f"--data-parallel takes at most {MAX_DATA_PARALLEL} distinct counts in 2..16")
    on_gpu = result.device.startswith("cuda")
    if on_gpu and torch.cuda.device_count() < max(counts):
        raise EntrypointError(f"--data-parallel {max(counts)} needs that many GPUs on this node; "
                              f"{torch.cuda.device_count()} visible")
    points = [DataParallelPoint(gpus=k, throughput=measure_ddp(
        model, size, world_size=k, backend="nccl" if on_gpu else "gloo", batch_size=result.batch_size,
        iterations=iterations, warmup=warmup).throughput) for k in counts]
    return result.model_copy(update={"data_parallel": points})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    name = args.model or args.entrypoint
    gpu = args.gpu_type or ("cpu" if args.device == "cpu" or not torch.cuda.is_available() else None)
    if args.time_limit and args.time_limit > 0:
        def _alarm(_sig: int, _frame: FrameType | None) -> None:
            raise ProbeTimeLimit(f"probe exceeded its time limit of {args.time_limit:.0f} s; give it more time (--time-limit)")

        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(int(math.ceil(args.time_limit)) + 5)  # hard stop behind the per-iteration checks
    try:
        if args.model:
            from profiler.zoo import build_zoo_job

            try:
                job = build_zoo_job(args.model, args.size, batch_size=args.batch_size)
            except KeyError as exc:
                raise EntrypointError(str(exc.args[0])) from exc
            source = "zoo"
        else:
            sys.path.insert(0, str(Path.cwd()))
            job = load_entrypoint(args.entrypoint)
            source = "entrypoint"
        result = run_probe(
            job, source=source, size=args.size if args.model else "", iterations=args.iterations, warmup=args.warmup,
            device=args.device, gpu_type=args.gpu_type, time_limit=args.time_limit,
        )
        if args.data_parallel:
            result = data_parallel(result, args.model or "", args.data_parallel, size=args.size,
                                   iterations=args.iterations, warmup=args.warmup)
    except (EntrypointError, ProbeOutOfMemory, ProbeTimeLimit, Exception) as exc:  # noqa: BLE001
        code, kind = _classify(exc)
        print(f"profiler.probe: error: {exc}", file=sys.stderr)
        failure = ProbeFailure(model=name, gpu_type=gpu or "unknown", node=socket.gethostname(), error=kind, reason=str(exc))  # type: ignore[arg-type]
        if args.out:
            write_record(failure, args.out)
        else:
            print(failure.model_dump_json(indent=2))
        if code == EXIT_ERROR:
            log.debug("probe failed", exc_info=exc)
        return code
    finally:
        signal.alarm(0)
    if args.out:
        write_record(result, args.out)
        print(f"{result.model}: T_f={result.t_forward * 1e3:.1f} ms T_b={result.t_backward * 1e3:.1f} ms "
              f"T_u={result.t_update * 1e3:.1f} ms T_d={result.t_data * 1e3:.1f} ms pattern={result.pattern} "
              f"params={result.params} -> {args.out}", file=sys.stderr)
    else:
        print(result.model_dump_json(indent=2))
    return 0


def _classify(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, EntrypointError):
        return EXIT_BAD_ENTRYPOINT, "bad_entrypoint"
    if isinstance(exc, ProbeOutOfMemory) or _is_oom(exc):
        return EXIT_OOM, "out_of_memory"
    if isinstance(exc, ProbeTimeLimit):
        return EXIT_TIME_LIMIT, "time_limit"
    return EXIT_ERROR, "error"


if __name__ == "__main__":
    sys.exit(main())
