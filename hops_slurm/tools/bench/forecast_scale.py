"""Benchmark ``forecast-scale`` (issue 35): 10,000 pending jobs on 4096 GPUs forecast within a round?

Data flow: the solver bench's instance (:func:`hops_slurm.tools.bench.solver_speeds.instance`: 4096 GPUs of
five classes, every node its own speed, a third of them partly held outside the planning; 10,000 pending
jobs of 1-16 GPUs, 0.2-40 h each) -> one forecast as the daemon's worker makes it
(:func:`hops_slurm.engine.forecaster.run_forecast`: the round loop run forward in the simulator, 360 s
rounds, a budget of ``HOPS_BENCH_FORECAST_BUDGET`` wall seconds, default 324 = 90% of a round) -> how
long it took, how many plannings it made, how many of the 10,000 got a start, how far ahead it got.
Writes ``forecast-scale.md``. In ``make bench`` (``all``); also ``HOPS_BENCH_PARTS=scale hops-slurm bench forecast``.
"""

from __future__ import annotations

import datetime
import os
import resource
import subprocess
import time
from pathlib import Path

from hops_slurm.engine.forecaster import run_forecast
from hops_slurm.tools.bench.solver_speeds import instance
from planner.policies import make_policy

NAME = "forecast-scale"
IN_ALL = True


def results_header(generator: str, command: str) -> str:
    """The first line of a results document (the lead's format)."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=False, timeout=10).stdout.strip() or "unknown"
    except OSError:
        sha = "unknown"
    return (f'<!-- results: generator={generator} command="{command}" commit={sha} '
            f'date={datetime.date.today().isoformat()} -->')


def run(out_dir: Path) -> Path:
    gpus = int(os.environ.get("HOPS_BENCH_FORECAST_GPUS", "4096"))
    jobs = int(os.environ.get("HOPS_BENCH_FORECAST_JOBS", "10000"))
    budget = float(os.environ.get("HOPS_BENCH_FORECAST_BUDGET", "324"))
    cluster, views = instance(gpus, jobs, 7)
    c0, t0 = time.process_time(), time.perf_counter()
    out = run_forecast(make_policy("hops"), cluster, views, 0.0, timetable=None, budget=budget)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    got = [f.start for f in out.forecasts.values() if f.start is not None]
    load = os.getloadavg()[0]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    command = (f"HOPS_BENCH_PARTS=scale HOPS_BENCH_FORECAST_GPUS={gpus} HOPS_BENCH_FORECAST_JOBS={jobs} "
               f"HOPS_BENCH_FORECAST_BUDGET={budget:g} hops-slurm bench forecast-scale")
    lines = [results_header("hops_slurm.tools.bench.forecast_scale:run", command),
             f"# Forecast speed: {jobs:,} pending jobs on {gpus} GPUs", "", f"Command: `{command}`.", "",
             "One forecast as the daemon's worker makes it (the round loop run forward in the simulator from "
             "the instance's state on the long queue's timetable, `Timetable.for_queue`; a copy of the Hops "
             "policy, solves capped at a twentieth of the budget).", "",
             "| pending | GPUs | budget (s) | wall (s) | CPU (s) | plannings | forecast a start | complete | "
             "reached (h ahead) | latest start (h) | peak RSS (MiB) | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|",
             f"| {jobs:,} | {gpus} | {budget:g} | {wall:.1f} | {cpu:.1f} | {out.plannings} | {len(got):,} | "
             f"{'yes' if out.complete else 'no'} | {out.after / 3600:.1f} | {(max(got) / 3600 if got else 0):.1f} | "
             f"{rss:.0f} | {load:.1f} |", "",
             "\"Complete\": every pending job got a start within the budget; otherwise the jobs not reached are "
             "shown as starting later than \"reached\". The forecast runs in a child process at nice 19 beside "
             "the rounds (`hops_slurm/engine/forecaster.py`): its length never adds to a round's."]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "forecast-scale.md"
    path.write_text("\n".join(lines) + "\n")
    return path
