"""``hops-slurm bench solver``, part ``speeds``: round plans on a long queue with every node its own speed.

Data flow: :func:`hops_slurm.tools.bench.solver.make_cluster` / :func:`~hops_slurm.tools.bench.solver.make_jobs` (the
solver bench's instances) with a 10,000-job queue and each node its own speed factor drawn from
0.8-1.2 (as the estimator's entity layer would learn each server) -> :class:`planner.hops.HopsPolicy`
twice with the defaults (cold: a new policy; warm: its second plan of the same instance) and once with
today's full model (``spans=every,columns=0``: every spanning start, every column from the start) ->
plan times and the objective gap, measured with today's objective (eq. 11 with the gains the full model
normalises by: each job's smallest candidate throughput over every span) -> ``solver-speeds.md``.
``HOPS_BENCH_SEEDS`` (default ``7``) picks the instances; each is a seed of ``random.Random``.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.tools.bench.machine import load, machine_line
from hops_slurm.tools.bench.solver_instances import make_cluster, make_jobs, pct as _pct
from planner.entities import entity_classes
from planner.hops import HopsPolicy, candidates_for
from planner.params import PlannerParams
from planner.priorities import weights
from planner.views import ClusterView, JobView, Plan
from hops_slurm.tools import results_header

SIZES = ((512, 10_000), (4096, 10_000))
TODAY = PlannerParams(spans="every", columns=0)


#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_PARTS", "HOPS_BENCH_SEEDS")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command("solver", ENV, env)


def instance(gpus: int, n_jobs: int, seed: int) -> tuple[ClusterView, tuple[JobView, ...]]:
    rng = random.Random(seed)
    cluster = make_cluster(gpus, rng)
    srng = random.Random(seed * 104729 + gpus)
    speeds = {n.name: srng.uniform(0.8, 1.2) for n in cluster.nodes}
    return cluster, make_jobs(cluster, n_jobs, rng, speeds)


def todays_objective(cluster: ClusterView, jobs: tuple[JobView, ...], reference: Plan, plan: Plan,
                     params: PlannerParams = TODAY) -> float:
    """Eq. 11 of ``plan`` with the weights and gains of today's model on the window of ``reference``."""
    by = {j.job_id: j for j in jobs}
    d = reference.diagnostics
    planned = [by[j] for j in d["window"]]  # type: ignore[union-attr]
    ent = entity_classes(cluster, planned, params.entity_tolerance)
    low: dict[str, float] = {}
    for c in candidates_for(planned, ent, params.sigma, compact=True, spans="every"):
        low[c.job_id] = min(low.get(c.job_id, float("inf")), float(by[c.job_id].throughput(c.config)))
    prios: dict[str, float] = d["priorities"]  # type: ignore[assignment]
    w = weights({j.job_id: prios[j.job_id] for j in planned}, float(d["lambda"]))  # type: ignore[arg-type]
    return sum(w[j] * float(by[j].throughput(c)) / low[j] for j, c in plan.placed().items() if j in low)


@dataclass
class SpeedRow:
    gpus: int
    jobs: int
    cold: list[float]
    warm: list[float]
    cold_cpu: list[float]
    warm_cpu: list[float]
    today: list[float]
    gaps: list[float]
    classes: list[int]
    columns: list[int]
    signatures: list[int]
    window: list[int]


def measure_speeds(gpus: int, n_jobs: int, seeds: list[int]) -> SpeedRow:
    row = SpeedRow(gpus, n_jobs, [], [], [], [], [], [], [], [], [], [])
    for seed in seeds:
        cluster, jobs = instance(gpus, n_jobs, seed)
        policy = HopsPolicy(PlannerParams())
        t0, c0 = time.perf_counter(), time.process_time()
        policy.plan(cluster, jobs, now=0.0)
        t1, c1 = time.perf_counter(), time.process_time()
        plan = policy.plan(cluster, jobs, now=0.0)
        t2, c2 = time.perf_counter(), time.process_time()
        row.cold_cpu.append(c1 - c0)
        row.warm_cpu.append(c2 - c1)
        ref = HopsPolicy(TODAY).plan(cluster, jobs, now=0.0)
        t3 = time.perf_counter()
        row.cold.append(t1 - t0)
        row.warm.append(t2 - t1)
        row.today.append(t3 - t2)
        old = todays_objective(cluster, jobs, ref, ref)
        row.gaps.append((old - todays_objective(cluster, jobs, ref, plan)) / old if old else 0.0)
        d = plan.diagnostics
        extra: dict[str, object] = d.get("solve_extra") or {}  # type: ignore[assignment]
        row.classes.append(int(d["entity_classes"]))  # type: ignore[call-overload]
        row.columns.append(int(extra.get("columns") or d["n_vars"]))  # type: ignore[call-overload]
        row.signatures.append(int(extra.get("signatures") or 0))  # type: ignore[call-overload]
        row.window.append(len(d["window"]))  # type: ignore[arg-type]
    return row


def run_speeds(out_dir: Path) -> Path:
    seeds = [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "7").split(",") if s.strip()]
    load0 = load()
    rows = [measure_speeds(gpus, n_jobs, seeds) for gpus, n_jobs in SIZES]
    path = out_dir / "solver-speeds.md"
    return results_header.write(path, report(rows, seeds, machine_line(load0)), generator=f"{__name__}:run_speeds",
                                 command=command(os.environ))


def report(rows: list[SpeedRow], seeds: list[int], machine: str = "") -> str:
    lines = [
        "# Placement ILP with every node its own speed, 10,000 jobs queued",
        "",
        "Written by `hops-slurm bench solver` (part `speeds`: `HOPS_BENCH_PARTS=speeds hops-slurm bench solver`; "
        f"seeds {','.join(map(str, seeds))}, `HOPS_BENCH_SEEDS` picks).",
        "",
        "Instances: the solver bench's clusters and queues (`make_cluster`, `make_jobs`), 10,000 jobs, each node",
        "its own speed factor drawn from 0.8-1.2 (the entity layer having learned every server). *cold*: the",
        "first plan of a new `HopsPolicy` with the defaults (spans per speed bucket, column generation, `solver=auto`);",
        "*warm*: its second plan of the same instance; *today*: one plan with today's full model",
        "(`spans=every,columns=0`). Gap: (today's objective of today's plan - today's objective of the",
        "default plan) / the former, both measured with today's gains (docs/design.md, \"Spans per speed",
        "bucket and column generation\"); negative = the default plan is better. Single-threaded; p95 over",
        "the seeds (one seed: that seed's time). *CPU*: the process's CPU time for the same plan, the",
        "figure to read when the machine is shared (the machine line below gives the load).",
        "",
        "| GPUs | queue | entity classes | window jobs | signatures | columns in the model | cold p95 (s) "
        "| cold CPU p95 (s) | warm p95 (s) | warm CPU p95 (s) | today's model, this code (s) | objective gap max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r.gpus} | {r.jobs} | {max(r.classes)} | {max(r.window)} | {max(r.signatures)} "
                     f"| {max(r.columns)} | {_pct(r.cold, 0.95):.2f} | {_pct(r.cold_cpu, 0.95):.2f} | {_pct(r.warm, 0.95):.2f} "
                     f"| {_pct(r.warm_cpu, 0.95):.2f} "
                     f"| {_pct(r.today, 0.95):.2f} | {max(r.gaps):+.4f} |")
    lines += ["", "## Target", ""]
    for r in rows:
        target = 5.0 if r.gpus >= 4096 else 1.0
        ok = _pct(r.cold, 0.95) <= target and max(r.gaps) <= 0.01
        lines.append(f"- {r.gpus} GPUs, {r.jobs} queued: cold p95 {_pct(r.cold, 0.95):.2f} s, CPU "
                     f"{_pct(r.cold_cpu, 0.95):.2f} s (target ≤ {target:g} s), "
                     f"gap {max(r.gaps):+.4f} (target ≤ 0.01): {'met' if ok else 'NOT met'}")
    lines += ["", machine or "Machine: not recorded.", ""]
    return "\n".join(lines)
