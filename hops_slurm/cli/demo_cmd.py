"""``hops-slurm demo``: the end-to-end demonstration that ``make demo`` runs (see :mod:`hops_slurm.tools.demo.run`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hops_slurm.cli._args import bounded_float
from hops_slurm.tools.demo.multifactor import PRIORITIES
from hops_slurm.tools.demo.run import JOBS_DIR, REPORT_DIR, SITE_CONFIG, WORKLOAD, run_demo
from hops_slurm.tools.minicluster.roots import RELEASES
from hops_slurm.tools.minicluster.spec import load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run a real workload under the Hops daemon on a local fake-GPU Slurm cluster, then under Slurm's backfill",
                       description="Run #HOPS jobs under the Hops daemon on a local fake-GPU Slurm cluster, then "
                                   "the same jobs under Slurm's backfill; at its end it prints the commands that "
                                   "look at what it made.")
    p.add_argument("--spec", type=Path, default=None, help="minicluster spec (default etc/minicluster/default.toml)")
    p.add_argument("--slurm", choices=RELEASES, default=None,
                   help="Slurm release of the cluster (default the spec's, 22.05); 24.11 / 26.05 run in a Debian root")
    p.add_argument("--jobs", type=Path, default=JOBS_DIR, help="folder of #HOPS job scripts (default etc/demo/jobs)")
    p.add_argument("--workload", type=Path, default=WORKLOAD, help="arrival times of the scripts (default etc/demo/workload.toml)")
    p.add_argument("--config", type=Path, default=SITE_CONFIG, help="site config for the daemon (default etc/demo/hops.toml)")
    p.add_argument("--out", type=Path, default=REPORT_DIR,
                   help="where report.md, the plots and the runs' records go (default var/demo, git-ignored; "
                        "--out docs/demo rewrites the README's pictures)")
    p.add_argument("--timeout", type=bounded_float(0, 86400, low_open=True), default=900.0, help="give up when the workload has not ended after this many seconds")
    p.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    p.add_argument("--hops-only", action="store_true",
                   help="run the jobs under Hops only (skip the second run under Slurm's own backfill, rigid GPU counts)")
    p.add_argument("--slurm-priority", choices=PRIORITIES, default="backfill",
                   help="the Slurm half's priority: backfill (Slurm's default, first come first served; the default) or "
                        "multifactor (PriorityType=priority/multifactor with fair share and age, the weights and "
                        "half-life the minicluster's slurm.conf sets, on an accounting cluster: slurmdbd + MariaDB; "
                        "one account per model family)")
    p.set_defaults(func=lambda a: run_demo(sys.stdout, load_spec(a.spec, slurm=a.slurm), jobs_dir=a.jobs, workload=a.workload,
                                           site_config=a.config, report_dir=a.out, timeout=a.timeout, keep=a.keep,
                                           hops_only=a.hops_only, slurm_priority=a.slurm_priority))
