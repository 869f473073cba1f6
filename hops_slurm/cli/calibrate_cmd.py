"""``hops-slurm calibrate``: measure all-reduce bandwidth (B_link within a node, B_net across nodes)
for one GPU type and write a calibration record that the engine ingests into the estimator's store.

The record goes into the ``[paths] calibrations`` folder of the site configuration (``--config``, else the
daemon's: :func:`hops_slurm.config_path.find_config`), where the engine takes it at its next refresh
(:mod:`hops_slurm.engine.calibration_files`): from then on the estimator uses the measured B_link / B_net of
that GPU type instead of ``[engine] default_b_link`` / ``default_b_net``. ``--out`` writes elsewhere (a file, or
a folder for the default name), e.g. on a node without the configuration; copy it into that folder then.

Within a node: ``hops-slurm calibrate --gpu-type v100 --procs 4``. Across nodes, one task per node:
``srun -N2 --ntasks-per-node=1 hops-slurm calibrate --gpu-type v100 --launch env`` (MASTER_ADDR and
MASTER_PORT set by the batch script).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hops_slurm.cli._args import bounded_int
from hops_slurm.cli.daemon_cmd import add_config_arg, site_config
from profiler.records import write_record


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="measure all-reduce bandwidth (B_link / B_net) for a GPU type",
                       description="Measure all-reduce bandwidth inside a node (B_link) and across nodes (B_net) "
                                   "for one GPU type, as a calibration record the engine ingests into its throughput store.")
    p.add_argument("--gpu-type", default=None, help="GPU type the measurement is stored under (default: cpu, or the local GPU)")
    p.add_argument("--launch", choices=("local", "env"), default="local",
                   help="local: spawn --procs processes here; env: join the group srun/torchrun describe")
    p.add_argument("--procs", type=bounded_int(2, 1024), default=None, help="processes for --launch local (default: GPUs here, or 2)")
    p.add_argument("--backend", default="auto", choices=("auto", "gloo", "nccl"), help="auto (nccl on GPUs, else gloo), gloo or nccl")
    p.add_argument("--min-params", type=bounded_int(1, 1 << 28), default=1 << 16, help="smallest message, float32 values")
    p.add_argument("--max-params", type=bounded_int(1, 1 << 28), default=1 << 22, help="largest message, float32 values")
    p.add_argument("--steps", type=bounded_int(2, 64), default=5, help="number of message sizes")
    p.add_argument("--reps", type=bounded_int(1, 1000), default=5, help="repetitions per size")
    add_config_arg(p)
    p.add_argument("--out", type=Path, default=None,
                   help="record file or folder (default: the configuration's [paths] calibrations folder, where the "
                        "engine reads it; the file is calibration-<type>-<scope>.json)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import torch

    from profiler.calibrate import calibrate_env, calibrate_local, default_sizes

    where = _destination(args)  # before measuring: a missing configuration fails at once
    sizes = default_sizes(args.min_params, args.max_params, args.steps)
    gpu_type = args.gpu_type or (_local_type() if torch.cuda.is_available() and args.backend != "gloo" else "cpu")
    if args.launch == "local":
        procs = args.procs or (torch.cuda.device_count() if torch.cuda.is_available() and args.backend != "gloo" else 2)
        record = calibrate_local(max(procs, 2), backend=args.backend, sizes=sizes, reps=args.reps, gpu_type=gpu_type)
    else:
        maybe = calibrate_env(backend=args.backend, sizes=sizes, reps=args.reps, gpu_type=gpu_type)
        if maybe is None:
            return 0  # not rank 0
        record = maybe
    out = where / f"calibration-{record.gpu_type}-{record.scope}.json" if where.is_dir() or args.out is None else where
    write_record(record, out)
    name = "B_link" if record.scope == "link" else "B_net"
    print(f"{record.gpu_type}: {name} = {record.bandwidth:.4g} params/s ({record.bandwidth * 4 / 1e9:.3g} GB/s of float32), "
          f"latency {record.latency * 1e3:.3f} ms, {record.backend} x{record.world_size} on {record.nodes} node(s) -> {out}")
    return 0


def _destination(args: argparse.Namespace) -> Path:
    """``--out`` (a file, or a folder for the default name), else the configuration's calibrations folder."""
    if args.out is not None:
        return args.out
    cfg = site_config(args)
    return cfg.paths.resolve(cfg.paths.calibrations)


def _local_type() -> str:
    import torch

    from profiler.probe import _cuda_type_name

    return _cuda_type_name(torch.device("cuda", 0))
