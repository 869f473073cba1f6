"""``hops-slurm bench scale``: the planner's cold plan on long queues with every node its own speed.

Data flow: the solver bench's instances (:mod:`hops_slurm.tools.bench.solver_instances`) with a speed
factor per node, drawn by two generators ("speeds": 0.8-1.2, :func:`hops_slurm.tools.bench.solver_speeds.instance`;
"entity": 0.6-1.0, :func:`hops_slurm.tools.bench.solver_instances.node_speeds`), at two rungs (4,096 GPUs
and 10,000 queued; 16,384 GPUs and 50,000 queued) -> one fresh process per instance (so its peak
memory is its own) plans it twice with a new :class:`planner.hops.HopsPolicy` (cold, then warm: the
same instance again) and prints one JSON line -> ``scale-targets.md``. Not in ``all`` (minutes).
``HOPS_BENCH_SEEDS`` (default ``11,7,3``) picks the seeds of the 4,096-GPU rung; the 16,384-GPU rung
runs the first one, cold only (a warm plan there costs as much again).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.tools import results_header
from hops_slurm.tools.bench.machine import load, machine_line

NAME = "scale"
IN_ALL = False  # a 16,384-GPU plan takes tens of seconds: run it by name
ENV = ("HOPS_BENCH_SEEDS",)  # the HOPS_BENCH_* variables it reads


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this bench as ``env`` ran it (:mod:`hops_slurm.tools.results_header`)."""
    return results_header.bench_command(NAME, ENV, env)


GENERATORS = ("speeds", "entity")
#: (GPUs, queued jobs, cold-plan target in seconds, peak memory target in MiB or None)
RUNGS = ((4096, 10_000, 5.0, None), (16_384, 50_000, 15.0, 4096.0))


def instance(gpus: int, n_jobs: int, seed: int, generator: str):  # noqa: ANN201 (bench-local tuple)
    """The cluster and queue of one instance (see the module docstring)."""
    from hops_slurm.tools.bench.solver_instances import make_cluster, make_jobs, node_speeds
    from hops_slurm.tools.bench.solver_speeds import instance as speeds_instance

    if generator == "speeds":
        return speeds_instance(gpus, n_jobs, seed)
    rng = random.Random(seed)
    cluster = make_cluster(gpus, rng)
    return cluster, make_jobs(cluster, n_jobs, rng, node_speeds(cluster, seed + 1))


def plan_digest(assignments: Mapping[str, Mapping[str, int] | None]) -> str:
    """The first 12 hex digits of the SHA-1 of a plan's per-job assignments (job -> sorted (node, GPUs) pairs,
    or None): equal plans, equal digests; a speed change must leave it as it was."""
    text = json.dumps({j: sorted(dict(c).items()) if c else None for j, c in assignments.items()}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def measure_one(gpus: int, n_jobs: int, seed: int, generator: str, warm: bool = True) -> dict[str, object]:
    """Plan one instance cold (and warm) in this process (call it in a fresh one)."""
    from planner.hops import HopsPolicy
    from planner.params import PlannerParams

    cluster, jobs = instance(gpus, n_jobs, seed, generator)
    policy = HopsPolicy(PlannerParams())
    t0, c0 = time.perf_counter(), time.process_time()
    plan = policy.plan(cluster, jobs, now=0.0)
    t1, c1 = time.perf_counter(), time.process_time()
    if warm:
        policy.plan(cluster, jobs, now=0.0)
    t2, c2 = time.perf_counter(), time.process_time()
    d = plan.diagnostics
    extra: dict[str, object] = d.get("solve_extra") or {}  # type: ignore[assignment]
    return {"gpus": gpus, "jobs": n_jobs, "seed": seed, "generator": generator,
            "cold": t1 - t0, "cold_cpu": c1 - c0, "warm": t2 - t1 if warm else None,
            "warm_cpu": c2 - c1 if warm else None,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "objective": d.get("objective"), "plan": plan_digest(plan.assignments), "placed": len(plan.placed()), "window": len(d["window"]),  # type: ignore[arg-type]
            "signatures": extra.get("signatures"), "columns": extra.get("columns"), "method": extra.get("method"),
            "solver": d.get("solver"), "lp_bound": extra.get("lp_bound")}


@dataclass
class Rung:
    gpus: int
    jobs: int
    target: float
    memory: float | None
    runs: list[dict[str, object]]


def _in_child(gpus: int, n_jobs: int, seed: int, generator: str, warm: bool) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-m", __name__, str(gpus), str(n_jobs), str(seed), generator,
                          "warm" if warm else "cold"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(out_dir: Path) -> Path:
    seeds = [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "11,7,3").split(",") if s.strip()]
    load0 = load()
    rungs: list[Rung] = []
    for gpus, n_jobs, target, memory in RUNGS:
        picked = seeds if gpus <= 4096 else seeds[:1]
        runs = [_in_child(gpus, n_jobs, seed, gen, gpus <= 4096) for gen in GENERATORS for seed in picked]
        rungs.append(Rung(gpus, n_jobs, target, memory, runs))
    return results_header.write(out_dir / "scale-targets.md", report(rungs, machine_line(load0), command(os.environ)),
                                generator=f"{__name__}:run", command=command(os.environ))


def _opt(value: object) -> str:
    return "–" if value is None else f"{float(value):.2f}"  # type: ignore[arg-type]


def _lp(value: object) -> str:
    return "–" if value is None else f"{float(value):.10g}"  # type: ignore[arg-type]


def _f(runs: list[dict[str, object]], key: str) -> list[float]:
    return [float(r[key]) for r in runs]  # type: ignore[arg-type]


def report(rungs: list[Rung], machine: str, cmd: str) -> str:
    """The document's text below its header line."""
    lines = [
        "# The planner at scale: cold plans with every node its own speed",
        "",
        f"Written by `{cmd}` (`HOPS_BENCH_SEEDS` picks the seeds; the 16,384-GPU rung runs the first, cold only).",
        "",
        "Instances: the solver bench's clusters and queues (five server classes over three GPU types, 8 GPUs per",
        "node, about a third of the nodes partly or fully held, requirement sets of 1-16 GPUs), each node its own",
        "speed factor from one of two generators: *speeds* (0.8-1.2, the solver bench's) and *entity* (0.6-1.0).",
        "Each instance is planned in a fresh process by a new `HopsPolicy` with the defaults: *cold* is its",
        "first plan, *warm* the second plan of the same instance; *CPU* the process's CPU time for the same plan",
        "(the figure to read when the machine is shared); *peak* the process's peak resident memory; *plan* the",
        "first 12 hex digits of the SHA-1 of the cold plan's per-job assignments (equal plans, equal digests: a",
        "speed change leaves this column as it was); *solver* the one that solved the cold plan's model",
        "(`solver = auto`: HiGHS for a model priced in rounds with 200,000 columns or more, CBC otherwise);",
        "*LP bound* the optimum of its LP relaxation over every column (a change of LP solver or of its options",
        "may move the plan, never this).",
        "",
        "| GPUs | queued | generator | seed | window jobs | signatures | columns | cold (s) | cold CPU (s) "
        "| warm (s) | warm CPU (s) | peak (MiB) | placed | plan | solver | LP bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rung in rungs:
        for r in rung.runs:
            lines.append(f"| {r['gpus']} | {r['jobs']} | {r['generator']} | {r['seed']} | {r['window']} "
                         f"| {r['signatures']} | {r['columns']} | {float(r['cold']):.2f} "  # type: ignore[arg-type]
                         f"| {float(r['cold_cpu']):.2f} | {_opt(r['warm'])} "  # type: ignore[arg-type]
                         f"| {_opt(r['warm_cpu'])} | {float(r['peak_mib']):.0f} | {r['placed']} "  # type: ignore[arg-type]
                         f"| {r.get('plan', '–')} | {r.get('solver') or '–'} | {_lp(r.get('lp_bound'))} |")
    lines += ["", "## Targets", ""]
    for rung in rungs:
        worst, worst_cpu = max(_f(rung.runs, "cold")), max(_f(rung.runs, "cold_cpu"))
        ok = worst_cpu <= rung.target
        text = (f"- {rung.gpus:,} GPUs, {rung.jobs:,} queued: cold plan at most {worst:.2f} s wall, {worst_cpu:.2f} s "
                f"CPU over {len(rung.runs)} instances (median {statistics.median(_f(rung.runs, 'cold_cpu')):.2f} s CPU; "
                f"target ≤ {rung.target:g} s)")
        if rung.memory is not None:
            peak = max(_f(rung.runs, "peak_mib"))
            ok = ok and peak <= rung.memory
            text += f", peak memory {peak:.0f} MiB (target ≤ {rung.memory / 1024:g} GiB)"
        lines.append(text + f": {'met' if ok else 'NOT met'} (CPU time; wall time adds the machine's other work).")
    lines += ["", machine, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(measure_one(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                                 warm=sys.argv[5:] != ["cold"])))
