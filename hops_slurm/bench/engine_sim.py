"""Benchmark: the production engine on a simulated slurmctld against the simulator's fast path (issue 14).

Both paths share the planner, the estimator and its store, the job-view pipeline, the accounting and the
metrics; the engine path (:mod:`hops_slurm.sim.engine_run`) adds everything the daemon does with Slurm:
jobs held and released through ``scontrol``-shaped calls, node reservations, probe jobs whose record files
are read back and validated, runtime record files, the journal, engine.sqlite and records.sqlite. Same
workload, same seeds: the paper-tables bench's Table 3; writes ``engine-sim.md``. ``HOPS_BENCH_SEEDS`` (default
``0,1,2``) and ``HOPS_BENCH_POLICIES`` shorten it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from hops_slurm.sim.cluster import load_cluster
from hops_slurm.sim.engine_run import simulate_engine
from hops_slurm.sim.output import markdown_table
from hops_slurm.sim.runner import Options, RunResult, compare, simulate

NAME = "engine-sim"
CLUSTER = "paper-64"
WORKLOAD = "paper"
POLICIES = ("hops", "sia-lr", "gavel-lr", "sia", "gavel", "themis", "slurm-backfill")  # Table 3's


def run(out_dir: Path) -> Path:
    seeds = [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "0,1,2").split(",")]
    policies = [p for p in os.environ.get("HOPS_BENCH_POLICIES", ",".join(POLICIES)).split(",") if p]
    cluster = load_cluster(CLUSTER)
    for noisy in ("hops_slurm.slurm.enact", "hops_slurm.engine.honesty", "hops_slurm.engine.engine"):
        logging.getLogger(noisy).setLevel(logging.ERROR)  # refused splits and re-aged jobs show in the numbers
    lines = [
        "# Table 3 through the production engine on a simulated slurmctld (issue 14)", "",
        f"Written by `hops-slurm bench engine-sim` (`HOPS_BENCH_SEEDS={','.join(map(str, seeds))}`) on commit "
        f"`{_commit()}`. Cluster `{CLUSTER}`, workload `{WORKLOAD}` (25 jobs): the paper-tables bench's Table 3, "
        "with the simulator's defaults (360 s rounds, 30 s refresh, 60 s restart cost). *engine*: "
        "`hops-slurm simulate --engine`, the daemon's `Engine` against `hops_slurm/sim/slurmctld.py`; *fast*: "
        "`hops-slurm simulate`, `SimBackend` (what docs/results/paper-tables.md runs). Max.ρ is ∞ on the engine "
        "path: its records carry no Themis ideal time. Per-run records under engine-sim/.", "",
    ]
    paths = {}
    for label, runner in (("engine", simulate_engine), ("fast", simulate)):
        start = time.perf_counter()
        results = compare(cluster, WORKLOAD, policies, seeds, out_dir / "engine-sim" / label, Options(),
                          progress=False, run=runner)
        paths[label] = results
        lines += [f"## {label}", "", markdown_table(results),
                  f"Wall time {time.perf_counter() - start:.0f} s for {len(policies)} policies x {len(seeds)} seeds.", ""]
    lines += ["## The two paths side by side", "",
              "| policy | avg JCT engine / fast | Hops' avg JCT / the policy's, engine | same, fast |", "|---|---|---|---|"]
    mean = {label: _means(results) for label, results in paths.items()}
    for policy in policies:
        e, f = mean["engine"].get(policy), mean["fast"].get(policy)
        he, hf = mean["engine"].get("hops"), mean["fast"].get("hops")
        if e and f and he and hf:
            lines.append(f"| {policy} | {e / f:.3f} | {he / e:.3f} | {hf / f:.3f} |")
    lines += ["", "Means over the seeds. Where the paths differ, by construction:", "",
              "- A new job is profiled by probe jobs the engine submits at its first refresh after arrival and "
              "collects at the first refresh after they end (up to two 30 s ticks later than the fast path, "
              "which hands the probe results over at once).",
              "- The enactor refuses a placement Slurm would not make exactly (an uneven split over nodes, "
              "`greedy_split`: Slurm 22.05 splits `--gpus` greedily in node order); the fast path enacts any "
              "plan. The refused job waits for the next plan.",
              "- The engine accounts jobs at its refreshes (every 30 s), the fast path at every event; the "
              "engine's processed samples are its runtime records plus uncovered run time x the estimated "
              "rate (restart time after a preemption counts), the fast path's the true progress, so under "
              "heavy preemption the engine may re-age honest jobs (docs/design.md, \"One engine\").", "",
              "The engine path's wall time is its SQLite writes (journal, engine state, records), the file round "
              "trips and the estimates made afresh at every refresh.", ""]
    path = out_dir / "engine-sim.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _means(results: Sequence[RunResult]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for r in results:
        if r.metrics.unfinished == 0:
            by.setdefault(r.policy, []).append(r.metrics.avg_jct)
    return {p: sum(v) / len(v) for p, v in by.items()}


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"
