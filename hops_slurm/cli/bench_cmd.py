"""``hops-slurm bench NAME|all``: run benchmarks from :mod:`hops_slurm.tools.bench`, results as Markdown (a\nprogress bar on stderr when it is a terminal, :mod:`hops_slurm.progress`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hops_slurm.tools.bench import discover
from hops_slurm.errors import HopsError
from hops_slurm.progress import StepBar


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run benchmarks and write their results (Markdown) to --out",
                       description="Run one benchmark (or all) and write its results as Markdown under --out; "
                                   "`hops-slurm bench list` names them.")
    p.add_argument("name", help="benchmark name, or 'all'; 'list' shows the names")
    p.add_argument("--out", type=Path, default=Path("docs/results"), help="result folder (default docs/results)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="profiler only: cuda = check the 1-GPU predictions on this machine's GPU (profiler-gpu.md; never in CI)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    benches = discover()
    if args.name == "list":
        for name in benches:
            print(name)
        return 0
    if args.name == "all":  # all but the long ones, which say IN_ALL = False (run those by name)
        chosen = [name for name, module in benches.items() if getattr(module, "IN_ALL", True)]
    elif args.name in benches:
        chosen = [args.name]
    else:
        raise HopsError(f"unknown benchmark {args.name!r}; known: {', '.join(benches) or 'none'}")
    if getattr(args, "device", "cpu") == "cuda":  # a Namespace built by hand may lack it
        if chosen != ["profiler"]:
            raise HopsError("--device cuda: only the profiler benchmark has a GPU check (hops-slurm bench profiler --device cuda)")
        from hops_slurm.tools.bench.profiler_gpu import require_cuda, run_gpu

        require_cuda()
        start = time.perf_counter()
        path = run_gpu(args.out)
        print(f"profiler --device cuda: wrote {path} in {time.perf_counter() - start:.1f} s")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    if not chosen:
        print("no benchmarks defined yet")
    with StepBar(len(chosen), "benchmarks") as bar:  # on a terminal only
        for name in chosen:
            bar.start(name)
            start = time.perf_counter()
            path = benches[name].run(args.out)
            bar.done()
            bar.print(f"{name}: wrote {path} in {time.perf_counter() - start:.1f} s")
    return 0
