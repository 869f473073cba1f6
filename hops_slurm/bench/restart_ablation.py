"""Benchmark ``restart-ablation``: Hops with a restart-aware objective vs the paper's, on Table 4's setup.

Data flow: hops_slurm.sim.runner.compare (through :func:`hops_slurm.bench.paper_tables.section`) on
paper-512 with the paper workload -> docs/results/restart-ablation.md, plots and per-run records under
docs/results/restart-ablation/.

Why: the paper's objective (eq. 11) does not price a restart, so a round moves running jobs for any gain,
and in our simulator each move costs the job 60 s. ``hops:restart_penalty=p`` (planner.params, not in
the paper) makes a running job's other configs worth (1 - p) of their gain: a move must win by that margin.
sia-lr and gavel-lr run beside it as the paper ran them. ``HOPS_BENCH_SEEDS`` (default ``0,1,2``).
"""

from __future__ import annotations

import os
from pathlib import Path

from hops_slurm.bench.paper_tables import section

NAME = "restart-ablation"
PENALTIES = [0.05, 0.1, 0.2, 0.3]
POLICIES = ["hops", *[f"hops:restart_penalty={p:g}" for p in PENALTIES], "sia-lr", "gavel-lr"]


def run(out_dir: Path) -> Path:
    seeds = [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "0,1,2").split(",")]
    data = out_dir / "restart-ablation"
    data.mkdir(parents=True, exist_ok=True)
    text = "\n".join([
        "# Restart-aware Hops: the planner's restart penalty on the 512-GPU paper workload",
        "",
        "Written by `hops-slurm bench restart-ablation`. `hops` is the paper's objective (eq. 11);",
        "`hops:restart_penalty=p` scales the gain G of every config of a running job other than its current one",
        "by (1 - p) in round plans (not in the paper; planner/params.py). Each preemption costs the job 60 s",
        "in the simulator. Same columns as docs/results/paper-tables.md.",
        "",
        section("Table 4 setup with restart penalties", "paper-512", "paper", POLICIES, seeds, data, "restart"),
    ])
    path = out_dir / "restart-ablation.md"
    path.write_text(text + "\n")
    return path
