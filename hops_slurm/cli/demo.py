"""``hops-slurm demo``: the end-to-end demonstration that ``make demo`` runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hops_slurm.demo import run_demo
from hops_slurm.minicluster.spec import load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the demo on a local fake-GPU Slurm cluster")
    p.add_argument("--spec", type=Path, default=None, help="minicluster spec (default etc/minicluster/default.toml)")
    p.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    p.set_defaults(func=lambda a: run_demo(sys.stdout, load_spec(a.spec), a.keep))
