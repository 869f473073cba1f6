"""``hops-slurm bench engine``: round latency of the live engine with 100 pending Hops jobs.

Brings up its own minicluster (4 nodes, 24 fake GPUs: 2 x 8 a100 + 2 x 4 v100; own ports and state
directory), submits 100 ``#HOPS`` jobs of three models, lets the engine profile them (real PyTorch probes
at the tiny zoo size; not timed), then times three rounds as the daemon runs them: *read* (the refresh:
squeue/sinfo, holds, settle, bookkeeping), *plan* (job views with estimates + the Hops ILP) and *enact*
(hold / place / reserve / release / read back). Needs root and the Debian Slurm packages. Writes
``engine.md`` under the output folder.
"""

from __future__ import annotations

import logging
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from hops_slurm.tools import results_header
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hops_slurm.engine.engine import Engine

NAME = "engine"
#: brings up its own minicluster (root, the Slurm packages): ``bench --on-slurm`` runs it here, not as a task
ON_SLURM = False
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


log = logging.getLogger(__name__)

JOBS = 100
SPEC = """cluster_name = "hopsbench"
state_dir = "/var/tmp/hops-minicluster-bench-engine"
[ports]
slurmctld = 7317
slurmd_base = 17801
slurmdbd = 7319
mariadb = 13716
[[nodes]]
prefix = "a100-"
count = 2
gpu_type = "a100"
gpus = 8
cpus = 16
memory_mb = 64000
[[nodes]]
prefix = "v100-"
count = 2
gpu_type = "v100"
gpus = 4
cpus = 8
memory_mb = 32000
[[partitions]]
name = "hops"
default = true
[[partitions]]
name = "profiler"
"""
SCRIPT = """#!/bin/bash
#HOPS gpus={gpus} samples={samples} batch-size=8 model={model} lr=0.1@{top}
sleep 3600
"""
SHAPES = (("1,2,4", "resnet18"), ("1,2", "mobilenetv2"), ("1", "vgg11"), ("2,4", "resnet18"))


def wait_profiled(engine: Engine, jobs: int, timeout: float) -> float:
    """Refresh ``engine`` until ``jobs`` Hops jobs are profiled (schedulable); the seconds it took (not a
    round: the first refreshes hold the new jobs and run the probes)."""
    start = time.monotonic()
    while True:
        engine.refresh()
        if len(engine.schedulable()) >= jobs:  # type: ignore[union-attr]
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"probes did not finish in {timeout:.0f} s")
        time.sleep(2.0)


def timed_round(engine: Engine, number: int) -> dict[str, float | int | str]:
    """One round as the daemon runs it (refresh, then plan and enact), timed by phase: one table row."""
    before = slurm_processes(engine)
    t0 = time.perf_counter()
    engine.refresh()
    t1 = time.perf_counter()
    planning = engine.round()
    t2 = time.perf_counter()
    res = engine.backend.last_result  # type: ignore[union-attr]
    processes = slurm_processes(engine) - before
    if planning is None or res is None:
        raise RuntimeError("the round planned nothing (no profiled jobs)")
    return {"round": number, "read": t1 - t0, "views": planning.read_seconds, "plan": planning.plan_seconds,
            "enact": planning.enact_seconds, "total": t2 - t0, "placed": len(planning.plan.placed()),
            "gpus": f"{planning.record.gpus_in_use}/{planning.record.total_gpus}", "started": len((planning.enactment or res).started),  # the round plan's (res: the last fragment plan's)
            "preempted": len(res.preempted), "kept": len(res.kept), "refused": len(res.refused),
            "mismatched": len(res.mismatched), "processes": processes}


def slurm_processes(engine: Engine) -> int:
    """Slurm commands the engine's CLI backend ran so far (each one process; 0 for another backend)."""
    api = getattr(engine.api, "inner", engine.api)  # the engine wraps it in RetryingReads
    calls = getattr(api, "calls", None)
    return int(sum(calls.values())) if hasattr(calls, "values") else 0


ROUND_HEADER = [
    "| round | read (refresh) | job views | plan (ILP) | enact | total | jobs placed | GPUs in use | started | preempted | kept | refused | mismatched | Slurm processes |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def round_line(row: dict[str, float | int | str]) -> str:
    return (f"| {row['round']} | {row['read']:.2f} | {row['views']:.2f} | {row['plan']:.2f} | {row['enact']:.2f} | "
            f"{row['total']:.2f} | {row['placed']} | {row['gpus']} | {row['started']} | {row['preempted']} | {row['kept']} | "
            f"{row['refused']} | {row['mismatched']} | {row.get('processes', '')} |")


def run(out_dir: Path) -> Path:
    from hops_slurm.bundled import bundle_root
    from hops_slurm.config import parse_config
    from hops_slurm.engine.engine import Engine
    from hops_slurm.tools.minicluster.cluster import Minicluster
    from hops_slurm.tools.minicluster.spec import load_spec
    from hops_slurm.slurm.cli import CliSlurm

    from hops_slurm.tools.bench.machine import load, machine_line

    load0 = load()
    work = Path(tempfile.mkdtemp(prefix="hops-bench-engine-"))
    (work / "spec.toml").write_text(SPEC)
    hook = bundle_root() / "hooks" / "job_submit.lua"
    cluster = Minicluster(load_spec(work / "spec.toml"), job_submit_lua=hook if hook.exists() else None)
    cluster.down()
    cluster.up()
    rows: list[dict[str, float | int | str]] = []
    try:
        env = cluster.env()
        cfg = parse_config({
            "scheduler": {"round_length": 360, "queue_refresh": 30},
            "engine": {"probe_size": "tiny", "probe_iterations": 3, "probe_device": "cpu", "settle_timeout": 10},
            "paths": {"state_dir": str(work / "state")},
        })
        for i in range(JOBS):
            gpus, model = SHAPES[i % len(SHAPES)]
            script = work / f"job{i}.sh"
            script.write_text(SCRIPT.format(gpus=gpus, samples=(1 + i % 7) * 100000, model=model, top=gpus.split(",")[-1]))
            subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-D", str(work), str(script)], env=env,
                           check=True, capture_output=True, timeout=30)
        with Engine(cfg, api=CliSlurm(env), env=env) as engine:
            profiling = wait_profiled(engine, JOBS, timeout=600)
            for r in range(3):
                rows.append(timed_round(engine, r + 1))
                time.sleep(2.0)
    finally:
        cluster.down()
    out = out_dir / "engine.md"
    lines = [
        "# Engine round latency (live minicluster)",
        "",
        f"{JOBS} `#HOPS` jobs pending at the start (three zoo models, requirement sets of 1-4 GPUs), 24 fake GPUs "
        "(2 x 8 a100, 2 x 4 v100), Slurm 22.05, CLI backend, CBC, one in-process engine running rounds as the "
        f"daemon does. Profiling before the first round (real probes, tiny zoo size, not timed): {profiling:.1f} s.",
        "Produced by `hops-slurm bench engine` (hops_slurm/tools/bench/engine_bench.py). Seconds per round:",
        "",
        *ROUND_HEADER,
    ]
    lines += [round_line(row) for row in rows]
    lines += ["", f"Median total: {statistics.median(float(r['total']) for r in rows):.2f} s per round. "
              "read = squeue/sinfo + admin holds of new jobs + settle + bookkeeping; job views = estimator "
              "snapshots per job; enact = journaled scontrol steps and the wait (at most settle_timeout) "
              "for released jobs to start and be read back (a re-placed job also waits the 2 s requeue grace). "
              + machine_line(load0), ""]
    return results_header.write(out, "\n".join(lines), generator=f"{__name__}:run",
                                 command=command(os.environ))
