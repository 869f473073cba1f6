"""Benchmark ``baselines-round``: time of one planning round of every baseline policy at scale.

Where it sits: measures :mod:`planner.baselines` alone (no simulator) on the Hops paper's simulated
scale — 512 GPUs (64 eight-GPU servers, V100/P100/K80 in turn) and 500 queued jobs — with job
throughputs from the bundled Gavel measurements (``hops_slurm/data/gavel``). Multi-node configs use
the ``*_unconsolidated`` measurements where Gavel has them (else 0.8 × consolidated); GPU counts Gavel
did not measure (3, 6, 12, 16) scale the per-GPU rate of the largest measured count below them. This
throughput model serves the timing only; the simulator owns ground truth.
"""

from __future__ import annotations

import ast
import json
import os
import random
import time
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path

from planner.policies import BASELINES, make_policy
from planner.views import ClusterView, Config, JobView, NodeView
from hops_slurm.tools import results_header

NAME = "baselines-round"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


TYPES = ("v100", "p100", "k80")


def _tables() -> dict[str, dict[tuple[str, int], float]]:
    raw = json.loads(resources.files("hops_slurm").joinpath("data/gavel/simulation_throughputs.json").read_text())
    out: dict[str, dict[tuple[str, int], float]] = {}
    for worker, rows in raw.items():
        out[worker] = {}
        for key, row in rows.items():
            model, sf = ast.literal_eval(key)
            out[worker][model, int(sf)] = float(row["null"])
    return out


def _throughput(tables, types: dict[str, str], model: str) -> Callable[[Config], float]:
    def thr(config: Config) -> float:
        kinds = {types[n] for n in config}
        if len(kinds) != 1:
            return 0.0
        t = kinds.pop()
        gpus = sum(config.values())
        sf = max(s for s in (1, 2, 4, 8) if s <= gpus)
        spread = len(config) > 1
        table = tables.get(f"{t}_unconsolidated") if spread else None
        base = (table or tables[t]).get((model, sf), 0.0)
        if spread and table is None:
            base *= 0.8
        return base / sf * gpus

    return thr


def scenario(n_nodes: int = 64, n_jobs: int = 500, seed: int = 0) -> tuple[ClusterView, tuple[JobView, ...]]:
    tables = _tables()
    nodes = tuple(NodeView(f"{TYPES[i % 3]}-{i}", TYPES[i % 3], TYPES[i % 3], 8, 8) for i in range(n_nodes))
    view = ClusterView(nodes)
    types = {n.name: n.gpu_type for n in nodes}
    models = sorted({m for (m, sf) in tables["v100"] if sf == 8})
    rng = random.Random(seed)
    jobs = []
    for i in range(n_jobs):
        reqs = tuple(sorted(rng.sample([1, 2, 3, 4, 6, 8, 12, 16], rng.randint(1, 8))))
        jobs.append(JobView(job_id=f"j{i}", requirements=reqs, submit_time=float(i), wait=rng.uniform(0, 3600),
                            age=rng.uniform(600, 36000), sensitivity=1.0,
                            throughput=_throughput(tables, types, rng.choice(models)), total_samples=1e6))
    return view, tuple(jobs)


def run(out_dir: Path) -> Path:
    view, jobs = scenario()
    lines = [
        "# baselines-round: one planning round of each baseline",
        "",
        f"{view.total_gpus} GPUs ({len(view.nodes)} servers), {len(jobs)} pending jobs, Gavel-measured throughputs;"
        " first round (all jobs pending). CBC via python-mip.",
        "",
        "| policy | plan time (s) | jobs placed | GPUs used |",
        "|---|---|---|---|",
    ]
    for name in BASELINES:
        policy = make_policy(name)
        start = time.perf_counter()
        plan = policy.plan(view, jobs, 3600.0)
        took = time.perf_counter() - start
        used = sum(sum(c.values()) for c in plan.placed().values())
        lines.append(f"| {name} | {took:.2f} | {len(plan.placed())} | {used}/{view.total_gpus} |")
    out = out_dir / "baselines-round.md"
    return results_header.write(out, "\n".join(lines) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))
