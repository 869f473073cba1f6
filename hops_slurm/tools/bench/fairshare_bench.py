"""Benchmark ``fairshare`` (issue 23): one heavy user and ten light ones, with and without fair share.

Data flow: a Gavel-generator workload (:func:`hops_slurm.sim.workload.load_workload`, ``gavel``) whose
jobs are given owners (:func:`heavy_and_light`: two of every three jobs to the heavy user, the rest to
ten light users in turn, so the heavy user has most of the queue at every moment) ->
:func:`hops_slurm.sim.runner.simulate` with the Hops policy at ``fairshare_weight`` 0 (latency ratio
only) and at :data:`WEIGHTS`, and the baselines ``slurm-backfill`` and ``slurm-multifactor`` (when
the simulator has it) -> per group (heavy, light): max LR, avg wait, avg JCT and the share of GPU-hours
-> ``docs/results/fairshare.md``.

The simulator's fair-share standing is the classic 2^(-usage/shares) over GPU usage decayed with a
7-day half-life (:mod:`hops_slurm.sim.fairshare`), every user with an equal share.
``HOPS_BENCH_SEED`` (default 0) picks the workload's seed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from hops_slurm.records import JobRecord
from hops_slurm.report.metrics import jct, job_latency_ratio, wait_time
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.runner import simulate
from hops_slurm.sim.workload import JobSpec, load_workload
from planner.policies import policy_names
from hops_slurm.tools import results_header

NAME = "fairshare"
IN_ALL = False  # minutes: run by name
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_SEED",)


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


CLUSTER = "paper-64"
WORKLOAD = "gavel:jobs=120,rate=60"
WEIGHTS = (1.0, 10.0)
HEAVY = "heavy"
LIGHT = tuple(f"light{k}" for k in range(10))


def heavy_and_light(jobs: tuple[JobSpec, ...]) -> tuple[JobSpec, ...]:
    """Two of every three jobs (in arrival order) to :data:`HEAVY`, the third to the light users in turn."""
    out = []
    for i, job in enumerate(sorted(jobs, key=lambda j: (j.arrival, j.job_id))):
        user = LIGHT[(i // 3) % len(LIGHT)] if i % 3 == 2 else HEAVY
        out.append(replace(job, user=user))
    return tuple(out)


@dataclass(frozen=True)
class Group:
    jobs: int
    max_lr: float
    avg_wait: float  # seconds
    avg_jct: float  # seconds
    gpu_hours_share: float  # of all GPU-hours of the run


def gpu_seconds(job: JobRecord) -> float:
    return sum(sum(p.config.values()) * max((p.end or p.start) - p.start, 0.0) for p in job.placements)


def groups(records: list[JobRecord]) -> dict[str, Group]:
    """Heavy and light users' numbers over the ended jobs of one run."""
    total = sum(gpu_seconds(r) for r in records) or 1.0
    out: dict[str, Group] = {}
    for name, pick in (("heavy", lambda r: r.user == HEAVY), ("light", lambda r: r.user != HEAVY)):
        mine = [r for r in records if pick(r) and r.end is not None]
        lrs = [lr for r in mine if (lr := job_latency_ratio(r, r.end or 0.0)) is not None]
        waits = [wait_time(r, r.end or 0.0) for r in mine]
        jcts = [x for r in mine if (x := jct(r)) is not None]
        out[name] = Group(len(mine), max(lrs, default=0.0), sum(waits) / max(len(waits), 1),
                          sum(jcts) / max(len(jcts), 1), sum(gpu_seconds(r) for r in mine) / total)
    return out


def policies() -> list[str]:
    names = ["hops"] + [f"hops:fairshare_weight={w:g}" for w in WEIGHTS] + ["slurm-backfill"]
    return names + (["slurm-multifactor"] if "slurm-multifactor" in policy_names() else [])


def run(out_dir: Path) -> Path:
    seed = int(os.environ.get("HOPS_BENCH_SEED", "0"))
    cluster = load_cluster(CLUSTER)
    jobs = heavy_and_light(load_workload(WORKLOAD, seed, cluster_gpus=cluster.total_gpus))
    n_heavy = sum(1 for j in jobs if j.user == HEAVY)
    rows = []
    for name in policies():
        t0 = time.perf_counter()
        result = simulate(cluster, jobs, name, seed)
        g = groups(result.jobs)
        rows.append((name, g, time.perf_counter() - t0))
    lines = [
        "# Fair share: one heavy user and ten light ones (issue 23)",
        "",
        f"Made by `hops-slurm bench fairshare` (seed {seed}): cluster `{CLUSTER}`, workload `{WORKLOAD}` with "
        f"two of every three jobs (in arrival order) owned by one heavy user ({n_heavy} jobs) and the rest by "
        f"ten light users in turn ({len(jobs) - n_heavy} jobs). `hops` ranks by latency ratio only "
        "(`fairshare_weight = 0`, the default); `hops:fairshare_weight=W` adds W times the owner's fair-share "
        "factor (the classic 2^(-usage/shares) over GPU usage decayed with a 7-day half-life, equal shares: "
        "`hops_slurm/sim/fairshare.py`). LR = wait / the eq. 9 age; wait summed over preemptions.",
        "",
        "| policy | light: max LR | light: avg wait | light: avg JCT | light: GPU-h share | heavy: max LR | "
        "heavy: avg wait | heavy: avg JCT | heavy: GPU-h share |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, g, _ in rows:
        lt, hv = g["light"], g["heavy"]
        lines.append(f"| `{name}` | {lt.max_lr:.2f} | {lt.avg_wait / 60:.1f} min | {lt.avg_jct / 3600:.2f} h | "
                     f"{lt.gpu_hours_share:.1%} | {hv.max_lr:.2f} | {hv.avg_wait / 60:.1f} min | "
                     f"{hv.avg_jct / 3600:.2f} h | {hv.gpu_hours_share:.1%} |")
    lines += ["", "Wall time per run: " + ", ".join(f"`{n}` {s:.0f} s" for n, _, s in rows) + ".", ""]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "fairshare.md"
    return results_header.write(path, "\n".join(lines), generator=f"{__name__}:run",
                                 command=command(os.environ))
