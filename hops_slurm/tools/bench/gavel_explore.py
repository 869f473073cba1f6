"""Benchmark ``gavel-explore`` (issue 22): on Gavel's workload, does a pessimistic estimate hold a job back?

Data flow: Gavel's workload on paper-64 (``--workload gavel``), policies hops, sia-lr and gavel-lr, seeds
``HOPS_BENCH_SEEDS`` (default 0,1,2) -> :func:`hops_slurm.sim.runner.simulate` (or, with
``HOPS_BENCH_FROM=DIR``, the ``DIR/<policy>/seed<N>/jobs.jsonl`` of an earlier ``hops-slurm simulate
--out DIR``) -> per run: makespan, jobs whose time in the cluster is above 1.5x their Themis ideal time
(FTF rho > 1.5), and :func:`idle_faster_rounds` over the run's job records -> ``docs/results/gavel-explore.md``.

The check over a run's records (the issue's): a job held on a slower GPU type while a faster one it could
use stayed idle for a whole round. For every round window [t, t + round) inside one of a job's
placements, on type A with n GPUs: some other type B where ground truth runs the job's model on n GPUs
faster by :data:`FASTER` than where it is (one server of B with n GPUs idle the whole window, or, for more
GPUs than a server has, n idle GPUs of B over its servers) counts the window. A GPU counts as busy in a
window when any placement on its node overlaps the window (so "idle" is idle throughout; usage within a
window is over-counted, never under-counted). Jobs above 1.5x their ideal time with such windows are the
ones a pessimistic estimate may have held back.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hops_slurm.records import JobRecord
from hops_slurm.report.metrics import ftf_rho
from hops_slurm.sim.cluster_spec import ClusterSpec, load_cluster
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.tools import results_header

NAME = "gavel-explore"
IN_ALL = False  # nine simulations: run by name
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_SEEDS", "HOPS_BENCH_FROM")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


POLICIES = ("hops", "sia-lr", "gavel-lr")
ROUND_SECONDS = 360.0
FASTER = 1.1  # a type counts as faster when ground truth is this much faster there
RHO_LIMIT = 1.5
MAKESPAN_TARGET = 1.05  # hops' makespan within 5% of the best baseline's


@dataclass(frozen=True)
class HeldBack:
    """One job's windows on a slower type while a faster one stayed idle."""

    job_id: str
    model: str
    windows: int
    rho: float | None


def _usage(jobs: Sequence[JobRecord], nodes: Sequence[str], horizon: float, round_seconds: float) -> dict[str, np.ndarray]:
    """Per node, the GPUs of placements overlapping each round window (window i: [i·round, (i+1)·round))."""
    count = int(math.ceil(horizon / round_seconds)) + 1
    used = {n: np.zeros(count, dtype=np.int64) for n in nodes}
    for job in jobs:
        for p in job.placements:
            end = p.end if p.end is not None else horizon
            first, last = int(p.start // round_seconds), int(math.ceil(end / round_seconds))
            for node, g in p.config.items():
                if node in used:
                    used[node][first:max(last, first + 1)] += g
    return used


def idle_faster_rounds(jobs: Sequence[JobRecord], cluster: ClusterSpec, truth: GroundTruth,
                       round_seconds: float = ROUND_SECONDS) -> dict[str, int]:
    """Per job id, the round windows it spent on a slower type while a faster one stayed idle (module
    docstring); jobs with none are left out."""
    kinds = dict(cluster.nodes())
    nodes_of: dict[str, list[str]] = defaultdict(list)
    for name, kind in kinds.items():
        nodes_of[kind.gpu_type].append(name)
    ends = [p.end if p.end is not None else (j.end or p.start) for j in jobs for p in j.placements]
    horizon = max(ends, default=0.0)
    used = _usage(jobs, list(kinds), horizon, round_seconds)
    out: dict[str, int] = {}
    for job in jobs:
        held = 0
        for p in job.placements:
            types = {kinds[n].gpu_type for n in p.config if n in kinds}
            if len(types) != 1:
                continue
            (here,) = types
            n = sum(p.config.values())
            now = truth.samples_per_second(job.name, here, n, len(p.config) > 1)
            faster = [t for t in nodes_of if t != here
                      and max(truth.samples_per_second(job.name, t, n, False) if n <= max(kinds[x].gpus for x in nodes_of[t])
                              else 0.0, truth.samples_per_second(job.name, t, n, True)) > FASTER * now]
            if not faster:
                continue
            end = p.end if p.end is not None else horizon
            for w in range(int(math.ceil(p.start / round_seconds)), int(end // round_seconds)):
                for t in faster:
                    idle = [kinds[x].gpus - int(used[x][w]) for x in nodes_of[t]]
                    one = truth.samples_per_second(job.name, t, n, False) > FASTER * now and max(idle) >= n
                    spread = truth.samples_per_second(job.name, t, n, True) > FASTER * now and sum(idle) >= n
                    if one or spread:
                        held += 1
                        break
        if held:
            out[job.job_id] = held
    return out


def check_run(jobs: Sequence[JobRecord], cluster: ClusterSpec, truth: GroundTruth) -> dict[str, object]:
    """A run's makespan (h), its jobs above :data:`RHO_LIMIT` x ideal, and the held-back ones among them."""
    done = [j for j in jobs if j.end is not None]
    makespan = (max(j.end for j in done) - min(j.submit for j in jobs)) / 3600.0 if done else math.nan  # type: ignore[type-var]
    rhos = {j.job_id: ftf_rho((j.end - j.submit) if j.end is not None else None, j.ideal_time) for j in jobs}
    over = sorted(k for k, r in rhos.items() if r is not None and r > RHO_LIMIT)
    names = {j.job_id: j.name for j in jobs}
    held = idle_faster_rounds(jobs, cluster, truth)
    return {
        "makespan_h": makespan,
        "over": over,
        "held": [HeldBack(k, names[k], w, rhos.get(k)) for k, w in sorted(held.items(), key=lambda kv: -kv[1])],
        "held_over": sorted(set(over) & set(held)),
        "over_detail": [f"{k} {names[k]} {rhos[k]:.2f}x ideal, {held.get(k, 0)} held round(s)" for k in over],
    }


def _runs(seeds: Sequence[int], cluster: ClusterSpec) -> dict[tuple[str, int], list[JobRecord]]:
    source = os.environ.get("HOPS_BENCH_FROM")
    out: dict[tuple[str, int], list[JobRecord]] = {}
    for seed in seeds:
        for policy in POLICIES:
            if source:
                path = Path(source) / policy / f"seed{seed}" / "jobs.jsonl"
                if path.exists():
                    out[(policy, seed)] = [JobRecord.model_validate_json(line) for line in path.read_text().splitlines()
                                           if line.strip()]
                continue
            from hops_slurm.sim.runner import simulate
            from hops_slurm.sim.workload import load_workload

            jobs = load_workload("gavel", seed)
            out[(policy, seed)] = list(simulate(cluster, jobs, policy, seed).jobs)
    return out


def run(out_dir: Path) -> Path:
    seeds = [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "0,1,2").split(",") if s.strip()]
    cluster, truth = load_cluster("paper-64"), GroundTruth()
    checks = {key: check_run(jobs, cluster, truth) for key, jobs in _runs(seeds, cluster).items()}
    lines = [
        "# Gavel's workload: pessimistic estimates and exploration (issue 22)",
        "",
        "Generated by `hops-slurm bench gavel-explore` (source `hops_slurm/tools/bench/gavel_explore.py`; "
        + (f"from the runs in `{os.environ['HOPS_BENCH_FROM']}`" if os.environ.get("HOPS_BENCH_FROM") else
           "simulated here") + f"). paper-64, `--workload gavel`, seeds {', '.join(map(str, seeds))}.",
        "",
        f"Targets: Hops' makespan within {100 * (MAKESPAN_TARGET - 1):.0f}% of the best baseline's; no job above "
        f"{RHO_LIMIT}x its ideal time because of a pessimistic estimate (held on a slower type while a faster "
        f"one it could use stayed idle for a whole {ROUND_SECONDS:.0f} s round; the check is in the module "
        "docstring).",
        "",
        "| seed | " + " | ".join(f"{p} makespan (h)" for p in POLICIES) + " | hops / best baseline | "
        + " | ".join(f"{p}: jobs > {RHO_LIMIT}x ideal (held back among them)" for p in POLICIES) + " |",
        "|---" * (2 + 2 * len(POLICIES)) + "|",
    ]
    notes: list[str] = []
    over_lines: list[str] = []
    for seed in seeds:
        row = [str(seed)]
        spans = {p: checks[(p, seed)]["makespan_h"] for p in POLICIES if (p, seed) in checks}
        row += [f"{spans[p]:.2f}" if p in spans else "not run" for p in POLICIES]
        base = [spans[p] for p in POLICIES[1:] if p in spans]
        row.append(f"{spans['hops'] / min(base):.3f}x" if "hops" in spans and base else "n/a")
        for p in POLICIES:
            c = checks.get((p, seed))
            row.append("not run" if c is None else f"{len(c['over'])} ({len(c['held_over'])})")  # type: ignore[arg-type]
            if c is not None:
                for h in c["held"][:3]:  # type: ignore[index]
                    notes.append(f"- {p} seed {seed}: {h.job_id} {h.model}: {h.windows} round(s) on a slower type "
                                 f"with a faster one idle; time in cluster {h.rho:.2f}x ideal" if h.rho is not None else
                                 f"- {p} seed {seed}: {h.job_id} {h.model}: {h.windows} round(s)")
        lines.append("| " + " | ".join(row) + " |")
        for p in POLICIES:
            c = checks.get((p, seed))
            if c is not None and c["over"]:
                over_lines.append(f"- {p} seed {seed}: " + "; ".join(c["over_detail"]))  # type: ignore[arg-type]
    lines += ["", f"Jobs above {RHO_LIMIT}x their ideal time (time in cluster / Themis ideal), with their held rounds:",
              ""]
    lines += over_lines or ["- none"]
    lines += ["", "Jobs with the most rounds held on a slower type while a faster one stayed idle (three per run):", ""]
    lines += notes or ["- none"]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "gavel-explore.md"
    results_header.write(path, "\n".join(lines) + "\n", generator=f"{__name__}:run", command=command(os.environ))
    (out_dir / "gavel-explore.json").write_text(json.dumps(
        {f"{p}/{s}": {"makespan_h": c["makespan_h"], "over": c["over"], "held_over": c["held_over"]}
         for (p, s), c in checks.items()}, indent=1) + "\n")
    return path


__all__ = ["HeldBack", "check_run", "idle_faster_rounds", "run"]

