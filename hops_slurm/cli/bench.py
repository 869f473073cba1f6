"""``hops-slurm bench NAME|all``: run benchmarks from :mod:`hops_slurm.bench`, results as Markdown."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hops_slurm.bench import discover
from hops_slurm.errors import HopsError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run benchmarks and write their results (Markdown) to --out")
    p.add_argument("name", help="benchmark name, or 'all'; 'list' shows the names")
    p.add_argument("--out", type=Path, default=Path("docs/results"), help="result folder (default docs/results)")
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
    args.out.mkdir(parents=True, exist_ok=True)
    if not chosen:
        print("no benchmarks defined yet")
    for name in chosen:
        start = time.perf_counter()
        path = benches[name].run(args.out)
        print(f"{name}: wrote {path} in {time.perf_counter() - start:.1f} s")
    return 0
