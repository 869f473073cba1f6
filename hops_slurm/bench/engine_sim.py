"""Benchmark: the production engine on a simulated slurmctld against the simulator's fast path (issue 14).

Both paths share the planner, the estimator and its store, the job-view pipeline, the accounting and the
metrics; the engine path (:mod:`hops_slurm.sim.engine_run`) adds everything the daemon does with Slurm:
jobs held and released through ``scontrol``-shaped calls, node reservations, probe jobs whose record files
are read back and validated, runtime record files, the journal, engine.sqlite and records.sqlite. Same
workload, same seeds; writes ``engine-sim.md``. ``HOPS_BENCH_SEEDS`` (default ``0``) picks the seeds.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from hops_slurm.sim.cluster import load_cluster
from hops_slurm.sim.engine_run import simulate_engine
from hops_slurm.sim.runner import Options, RunResult, simulate
from hops_slurm.sim.workload import load_workload

NAME = "engine-sim"
CLUSTER = "paper-64"
WORKLOAD = "paper"
POLICIES = ("hops", "gavel-lr", "sia-lr", "themis")


def _row(r: RunResult) -> list[str]:
    m = r.metrics

    def h(v: float | None) -> str:
        return "-" if v is None else f"{v / 3600:.2f}"

    def f(v: float | None, fmt: str = "{:.2f}") -> str:
        return "-" if v is None else fmt.format(v)

    return [h(m.avg_jct), h(m.avg_wait), h(m.makespan), f(m.max_lr), f(m.avg_frag), f(m.preemptions, "{:.0f}"),
            f"{r.wall_seconds:.1f}"]


def run(out_dir: Path) -> Path:
    seeds = [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "0").split(",")]
    cluster = load_cluster(CLUSTER)
    logging.getLogger("hops_slurm.slurm.enact").setLevel(logging.ERROR)  # the refused splits are counted below
    lines = [
        "# The production engine on a simulated slurmctld (issue 14)", "",
        f"Written by `hops-slurm bench engine-sim` (`HOPS_BENCH_SEEDS={','.join(map(str, seeds))}`). Cluster "
        f"`{CLUSTER}`, workload `{WORKLOAD}` (25 jobs), the simulator's defaults (360 s rounds, 30 s refresh, 60 s "
        "restart cost). *engine*: `hops-slurm simulate --engine`, the daemon's `Engine` against "
        "`hops_slurm/sim/slurmctld.py`; *fast*: `hops-slurm simulate`, `SimBackend`. Times in hours; wall in "
        "seconds on the machine that ran it. Max.ρ is not compared: the engine's records carry no Themis "
        "ideal time.", "",
        "| policy | seed | path | avg JCT | avg wait | makespan | Max.LR | Avg.frag | preemptions | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    diffs: list[str] = []
    ratios: list[str] = []
    for seed in seeds:
        jobs = load_workload(WORKLOAD, seed, cluster_gpus=cluster.total_gpus)
        results: dict[str, tuple[float, float]] = {}
        for policy in POLICIES:
            engine = simulate_engine(cluster, jobs, policy, seed, Options())
            fast = simulate(cluster, jobs, policy, seed, Options())
            for name, r in (("engine", engine), ("fast", fast)):
                lines.append("| " + " | ".join([policy, str(seed), name, *_row(r)]) + " |")
            a, b = engine.metrics.avg_jct, fast.metrics.avg_jct
            if a and b:
                diffs.append(f"{policy} seed {seed}: {100 * (a - b) / b:+.1f}%")
            results[policy] = (a, b)
        for policy in POLICIES[1:]:
            (he, hf), (pe, pf) = results["hops"], results[policy]
            ratios.append(f"{policy} seed {seed}: {he / pe:.3f}x (engine) vs {hf / pf:.3f}x (fast)")
    lines += ["", "Avg JCT, engine path against fast path: " + "; ".join(diffs) + ".", "",
              "Hops' avg JCT as a multiple of each baseline's, on each path: " + "; ".join(ratios) + ".", "",
              "Where the paths differ, by construction:", "",
              "- A new job is profiled by probe jobs the engine submits at its first refresh after arrival and "
              "collects at the first refresh after they end (up to two 30 s ticks later than the fast path, "
              "which hands the probe results over at once).",
              "- The enactor refuses a placement Slurm would not make exactly (an uneven split over nodes, "
              "`greedy_split`: Slurm 22.05 splits `--gpus` greedily in node order); the fast path enacts any "
              "plan. The refused job waits for the next plan.",
              "- The engine accounts jobs at its refreshes (every 30 s), the fast path at every event.", "",
              "The engine path's wall time is its SQLite writes (journal, engine state, records), the file round "
              "trips and reading the store once per refresh.", ""]
    path = out_dir / "engine-sim.md"
    path.write_text("\n".join(lines) + "\n")
    return path
