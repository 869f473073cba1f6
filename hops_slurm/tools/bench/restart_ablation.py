"""Benchmark ``restart-ablation``: the price of a move (``restart_penalty``) on three workloads.

Data flow: hops_slurm.sim.runner.compare (through :func:`hops_slurm.tools.bench.paper_tables.section`) on
paper-512 and paper-64 with the paper workload and on paper-64 with Gavel's ->
docs/results/restart-ablation.md, plots and per-run records under docs/results/restart-ablation/.

Why: the paper's objective (eq. 11) does not price a restart, so a round moves running jobs for any gain,
and in our simulator each move costs the job 60 s. ``hops:restart_penalty=p`` (planner.params, not in
the paper) makes a running job's other configs worth (1 - p) of their gain: a move must win by that margin.
The default (planner.params) is the penalty these tables support.
sia-lr and gavel-lr run beside it as the paper ran them. ``HOPS_BENCH_SEEDS`` (default ``0,1,2``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from hops_slurm.tools.bench.paper_tables import section, write_report
from hops_slurm.tools import results_header

NAME = "restart-ablation"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_SEEDS", "HOPS_BENCH_POLICIES", "HOPS_BENCH_WORKERS")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


PENALTIES = [0.0, 0.1, 0.2, 0.3]
POLICIES = [f"hops:restart_penalty={p:g}" for p in PENALTIES] + ["sia-lr"]
#: (title, cluster, workload): the evidence for the default comes from more than one workload
SETUPS = [
    ("Table 4 setup (512 GPUs, paper workload)", "paper-512", "paper"),
    ("Table 3 setup (64 GPUs, paper workload)", "paper-64", "paper"),
    ("Gavel's workload on 64 GPUs", "paper-64", "gavel"),
]


INTRO = [
    "# Priced moves: the planner's restart penalty on three workloads",
    "",
    "Written by `hops-slurm bench restart-ablation`. `hops:restart_penalty=p` keeps (1 - p) of the gain G",
    "of every config of a running job other than its current one in round plans: a move (another node,",
    "class or GPU count) must win by that margin to pay for its restart (docs/design.md; p = 0 is eq. 11",
    "as printed). Running jobs are pinned to their nodes against equivalent moves in every row",
    "(`pin_running`). Each preemption costs the job 60 s in the simulator. Same columns as",
    "docs/results/paper-tables.md.",
    "",
]


def run(out_dir: Path) -> Path:
    return write_report(out_dir, NAME, INTRO, lambda seeds, data: [
        section(title, cluster, workload, POLICIES, seeds, data, f"{cluster}-{workload}")
        for title, cluster, workload in SETUPS], generator=f"{__name__}:run", command=command(os.environ))
