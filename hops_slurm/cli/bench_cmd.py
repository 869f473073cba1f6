"""``hops-slurm bench NAME|all``: run benchmarks from :mod:`hops_slurm.tools.bench`, results as Markdown (a\nprogress bar on stderr when it is a terminal, :mod:`hops_slurm.progress`); with --on-slurm each benchmark\nis a task of one Slurm job array (:mod:`hops_slurm.cli._sweep`)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from types import ModuleType

from hops_slurm.cli._sweep import add_slurm_arguments, self_argv, submit_cells
from hops_slurm.tools.bench import discover
from hops_slurm.errors import HopsError
from hops_slurm.progress import StepBar
from hops_slurm.tools.sweep import bench_cells
from hops_slurm.tools.sweep.job_array import SlurmClients, cluster_name


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run benchmarks and write their results (Markdown) to --out",
                       description="Run one benchmark (or all) and write its results as Markdown under --out; "
                                   "`hops-slurm bench list` names them.")
    p.add_argument("name", help="benchmark name, or 'all'; 'list' shows the names")
    p.add_argument("--out", type=Path, default=Path("docs/results"), help="result folder (default docs/results)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="profiler only: cuda = check the 1-GPU predictions on this machine's GPU (profiler-gpu.md; never in CI)")
    add_slurm_arguments(p, "each benchmark")
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
    if getattr(args, "on_slurm", False) and chosen:
        return _on_slurm(args, chosen, benches)
    with StepBar(len(chosen), "benchmarks") as bar:  # on a terminal only
        for name in chosen:
            bar.start(name)
            start = time.perf_counter()
            path = benches[name].run(args.out)
            bar.done()
            bar.print(f"{name}: wrote {path} in {time.perf_counter() - start:.1f} s")
    return 0


def _on_slurm(args: argparse.Namespace, chosen: list[str], benches: dict[str, ModuleType]) -> int:
    """Each benchmark (or each part of one that has parts) a task of one job array; each writes its results
    under --out as run here, and a benchmark split in parts is assembled here once every task has ended
    (:mod:`hops_slurm.tools.sweep.bench_cells`)."""
    out = args.out.resolve()
    todo = bench_cells.cells(chosen, benches, os.environ)
    failed = False
    if todo:
        done = submit_cells(args, [bench_cells.argv(c, out, self_argv) for c in todo], [c.label for c in todo],
                            "hops-bench")
        for i, cell in enumerate(todo):
            where = f"failed; log {done.failed[i]}" if i in done.failed else f"done (array {','.join(done.job_ids)})"
            print(f"{cell.label}: {where}")
        for path in bench_cells.assemble(todo, benches, out, done.job_ids[0], cluster_name(SlurmClients())):
            print(f"assembled {path} from its parts")
        failed = bool(done.failed)
    for name in (n for n in chosen if bench_cells.local(benches[n])):
        start = time.perf_counter()
        path = benches[name].run(out)
        print(f"{name}: wrote {path} in {time.perf_counter() - start:.1f} s here (it starts its own minicluster)")
    return 1 if failed else 0
