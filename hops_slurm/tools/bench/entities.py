"""Benchmark ``entities``: does Hops learn server entities that Slurm does not show? (issue 14)

Data flow: cluster ``etc/clusters/entities-80.toml`` (two half-speed V100 servers hidden in the
class ``v100-dgx``) x the paper workload -> each policy through the simulator, which feeds the
production estimator with probes and runtime records -> per run: GPU-hours placed on the two
degraded nodes after the first hours (from the job records' placements), and for Hops, every round,
the estimator's error on each node -> ``docs/results/entities.md``, ``entities/estimate-error.csv``
and ``entities/estimate-error.png``.

Error: for every job active at that time, its smallest request placed on one node (what
:mod:`planner.entities` compares) estimated by :class:`estimator.estimate.Estimator` against ground
truth, |estimate - truth| / truth, averaged over jobs, for the degraded nodes and the healthy
``v100-dgx`` nodes. ``HOPS_BENCH_SEEDS`` (default ``0,1,2``) picks the seeds.
"""

from __future__ import annotations

import csv
import os
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from hops_slurm.records import JobRecord
from hops_slurm.sim.sim_backend import SimBackend, SimSettings
from hops_slurm.sim.bound import physical_bound
from hops_slurm.sim.cluster_spec import ClusterSpec, load_cluster
from hops_slurm.core.rounds import LoopSettings, run_rounds
from planner.policies import make_policy
from hops_slurm.sim.workload import load_workload
from hops_slurm.report.metrics import summarize
from planner.views import freeze_config
from hops_slurm.tools import results_header

NAME = "entities"
IN_ALL = True
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_SEEDS",)


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


CLUSTER = "entities-80"
WORKLOAD = "paper:jobs=150,rate=5"
#: Hops; Hops planning by the declared class only (entity classes off); a type-level baseline
POLICIES = ["hops", "hops:entity_tolerance=0", "gavel-lr"]
WARMUP_HOURS = 3.0


def _gpu_hours(jobs: list[JobRecord], nodes: set[str], start: float, end: float) -> float:
    total = 0.0
    for j in jobs:
        for p in j.placements:
            lo, hi = max(p.start, start), min(p.end if p.end is not None else end, end)
            if hi > lo:
                total += (hi - lo) * sum(g for n, g in p.config.items() if n in nodes) / 3600.0
    return total


Trace = list[tuple[float, float, float, int, float, float]]


def _errors(backend: SimBackend, degraded: set[str], healthy: list[str]) -> tuple[float, float, int, float, float]:
    """Mean relative estimate error over active jobs on the degraded and on the healthy nodes, the
    number of active jobs, and the mean learned entity factor of the degraded and of the healthy
    nodes (1.0 where nothing is learned yet)."""
    err: dict[bool, list[float]] = defaultdict(list)
    jobs = [j for j in backend.active.values() if j.ready_at <= backend.t]
    for job in jobs:
        fn = backend.knowledge.throughput_fn(job.signature)
        n = min(job.spec.requirements[0], 8)
        for node in (*degraded, *healthy):
            config = freeze_config({node: n})
            truth = backend.truth.throughput(job.spec.model, config, backend.speeds)
            if truth <= 0:
                continue
            err[node in degraded].append(abs(float(fn(config)) - truth) / truth)
    mean = {k: (sum(v) / len(v) if v else 0.0) for k, v in err.items()}
    factors = backend.knowledge.estimator.entity_factors()
    f_bad = sum(factors.get(n, 1.0) for n in degraded) / len(degraded)
    f_ok = sum(factors.get(n, 1.0) for n in healthy) / len(healthy)
    return mean.get(True, 0.0), mean.get(False, 0.0), len(jobs), f_bad, f_ok


def one_run(cluster: ClusterSpec, policy: str, seed: int, track: bool) -> tuple[dict[str, float], Trace]:
    jobs = load_workload(WORKLOAD, seed, cluster_gpus=cluster.total_gpus)
    backend = SimBackend(cluster, jobs, SimSettings())
    degraded = {d.node for d in cluster.degraded}
    kinds = {k.name for n, k in cluster.nodes() if n in degraded}
    healthy = [n for n, k in cluster.nodes() if k.name in kinds and n not in degraded]
    trace: Trace = []

    def on_round(now: float) -> None:
        if track:
            d, h, n, fb, fo = _errors(backend, degraded, healthy)
            trace.append((now / 3600.0, d, h, n, fb, fo))

    try:
        rounds = run_rounds(backend, make_policy(policy), LoopSettings(), on_round=on_round)
        records = backend.job_records()
    finally:
        backend.close()
    m = summarize(records, rounds)
    last_arrival = max(j.arrival for j in jobs)
    start, end = WARMUP_HOURS * 3600.0, last_arrival
    on_bad = _gpu_hours(records, degraded, start, end)
    on_healthy = _gpu_hours(records, set(healthy), start, end)
    row = {"degraded_gpu_h": on_bad, "healthy_gpu_h": on_healthy,
           "degraded_share": on_bad / (on_bad + on_healthy) if on_bad + on_healthy else 0.0,
           "avg_jct_h": m.avg_jct / 3600.0, "makespan_h": m.makespan / 3600.0, "window_h": (end - start) / 3600.0,
           "bound_avg_jct_h": physical_bound(cluster, jobs).avg_jct / 3600.0}
    row["slowdown"] = row["avg_jct_h"] / row["bound_avg_jct_h"]
    return row, trace


def _plot(traces: dict[int, Trace], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hops_slurm.report.plots import UNITS, time_unit  # the one rule for the unit of a time axis

    unit = time_unit(3600.0 * max((t[0] for trace in traces.values() for t in trace), default=0.0))
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    for seed, trace in traces.items():
        xs = [t[0] * 3600.0 / UNITS[unit] for t in trace]  # the trace keeps hours (its CSV's column)
        first = seed == min(traces)
        ax.plot(xs, [100 * t[1] for t in trace], color="tab:red", alpha=0.7, label="degraded nodes" if first else None)
        ax.plot(xs, [100 * t[2] for t in trace], color="tab:blue", alpha=0.7, label="healthy v100-dgx nodes" if first else None)
        bx.plot(xs, [t[4] for t in trace], color="tab:red", alpha=0.7, label="degraded nodes (truth 0.5)" if first else None)
        bx.plot(xs, [t[5] for t in trace], color="tab:blue", alpha=0.7, label="healthy nodes (truth 1.0)" if first else None)
    ax.set_ylabel("mean |estimate - truth| / truth (%)")
    ax.set_title("Hops' estimates per node (active jobs' smallest request), one line per seed")
    ax.legend()
    bx.set_xlabel(f"simulated {unit}")
    bx.set_ylabel("learned entity factor (mean)")
    bx.set_ylim(0, 1.2)
    bx.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(out_dir: Path) -> Path:
    seeds = [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "0,1,2").split(",")]
    cluster = load_cluster(CLUSTER)
    data = out_dir / "entities"
    data.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    traces: dict[int, Trace] = {}
    start = time.perf_counter()
    for seed in seeds:
        for policy in POLICIES:
            row, trace = one_run(cluster, policy, seed, track=policy == "hops")
            rows[policy].append(row)
            if trace:
                traces[seed] = trace
    with (data / "estimate-error.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["seed", "hours", "degraded_error", "healthy_error", "active_jobs", "degraded_factor",
                    "healthy_factor"])
        for seed, trace in traces.items():
            for t in trace:
                w.writerow([seed, f"{t[0]:.2f}", f"{t[1]:.4f}", f"{t[2]:.4f}", t[3], f"{t[4]:.4f}", f"{t[5]:.4f}"])
    _plot(traces, data / "estimate-error.png")

    def mean(policy: str, key: str) -> float:
        return sum(r[key] for r in rows[policy]) / len(rows[policy])

    degraded = ", ".join(f"{d.node} (speed {d.speed})" for d in cluster.degraded)
    lines = [
        "# Server entities Slurm does not show (issue 14)", "",
        "Written by `hops-slurm bench entities` (`HOPS_BENCH_SEEDS=" + ",".join(map(str, seeds)) + "`). "
        f"Cluster `{CLUSTER}` (etc/clusters/entities-80.toml): the class `v100-dgx` (6 servers x 8 V100, one "
        f"administrator feature) hides two degraded nodes, {degraded}; policies see only the GPU type and "
        f"the feature. Workload `{WORKLOAD}`. Each run feeds the production estimator (a temporary "
        "throughput store): probes on the profiler partition (best servers), runtime records of running jobs "
        "(the first 5 min after each start, then hourly), ingested by profiler.ingest.", "",
        f"## GPU-hours on the degraded nodes, from hour {WARMUP_HOURS:g} to the last arrival", "",
        "Share = GPU-hours on the two degraded nodes / GPU-hours on the whole `v100-dgx` class "
        "(capacity share 2/6 = 33%). Means over seeds; per seed in brackets.", "",
        "| policy | degraded GPU-h | healthy v100-dgx GPU-h | degraded share | avg JCT (h) | slowdown vs bound "
        "| makespan (h) |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in POLICIES:
        per_seed = ", ".join(f"{100 * r['degraded_share']:.0f}%" for r in rows[p])
        lines.append(f"| {p} | {mean(p, 'degraded_gpu_h'):.1f} | {mean(p, 'healthy_gpu_h'):.1f} | "
                     f"{100 * mean(p, 'degraded_share'):.1f}% [{per_seed}] | {mean(p, 'avg_jct_h'):.2f} | "
                     f"{mean(p, 'slowdown'):.3f} | {mean(p, 'makespan_h'):.2f} |")
    lines += ["", f"Physical bound (`hops_slurm/sim/bound.py`: each job alone on its fastest allowed configuration, "
              f"healthy servers included, from its submission; no wait, no restart): avg JCT "
              f"{mean(POLICIES[0], 'bound_avg_jct_h'):.2f} h, mean over seeds; slowdown = avg JCT / the bound's."]
    lines += ["", "## Hops' estimate error over time", "",
              "Mean |estimate - truth| / truth of the active jobs' smallest request on one node, sampled every "
              "round (entities/estimate-error.csv); the table takes the sample nearest each hour, mean over seeds.", "",
              "| hour | error, degraded nodes | error, healthy v100-dgx nodes | learned factor, degraded (truth 0.5) "
              "| learned factor, healthy (truth 1.0) | active jobs |", "|---|---|---|---|---|---|"]
    horizon = int(max((t[0] for tr in traces.values() for t in tr), default=0))
    for hour in [h for h in (0.5, 1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21, 24, 30, 36, 42, 48) if h <= horizon]:
        picks = [min(tr, key=lambda t: abs(t[0] - hour)) for tr in traces.values() if tr]
        d = sum(p[1] for p in picks) / len(picks)
        h = sum(p[2] for p in picks) / len(picks)
        n = sum(p[3] for p in picks) / len(picks)
        fb = sum(p[4] for p in picks) / len(picks)
        fo = sum(p[5] for p in picks) / len(picks)
        lines.append(f"| {hour:g} | {100 * d:.1f}% | {100 * h:.1f}% | {fb:.2f} | {fo:.2f} | {n:.0f} |")
    lines += ["", "![estimate error](entities/estimate-error.png)", "",
              f"Wall time {time.perf_counter() - start:.0f} s.", ""]
    path = out_dir / "entities.md"
    return results_header.write(path, "\n".join(lines) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))
