"""Benchmark ``forecast-scale`` (issue 35): 10,000 pending jobs on 4096 GPUs forecast within a round?

Data flow: the solver bench's instance (:func:`hops_slurm.tools.bench.solver_speeds.instance`: 4096 GPUs of
five classes, every node its own speed, a third of them partly held outside the planning; 10,000 pending
jobs of 1-16 GPUs, 0.2-40 h each) -> one forecast as the daemon's worker makes it
(:func:`hops_slurm.engine.forecaster.run_forecast`: the round loop run forward in the simulator, 360 s
rounds, a budget of ``HOPS_BENCH_FORECAST_BUDGET`` wall seconds, default 300: the worker's, min(0.9 x round, 300 s)) -> how
long it took, how many plannings it made, how many of the 10,000 got a start, how far ahead it got.
Then what the long queue's shortcuts change (:mod:`hops_slurm.tools.bench.forecast_scale_window`): a
smaller instance (``HOPS_BENCH_FORECAST_CHECK``, ``pending:gpus``, default 1500:512; empty: skipped)
forecast with and without the queue window, and with and without running jobs held in place far ahead,
job by job. Writes ``forecast-scale.md``. In ``make bench`` (``all``); ``hops-slurm bench forecast`` runs it too when asked for the part ``scale``.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Mapping
from pathlib import Path

from hops_slurm.engine.forecaster import run_forecast
from hops_slurm.sim.forecast_run import HELD_AFTER
from hops_slurm.tools import results_header
from hops_slurm.tools.bench.forecast_scale_window import Checks, WindowCheck, check
from hops_slurm.tools.bench.solver_speeds import instance
from planner.policies import make_policy

NAME = "forecast-scale"
IN_ALL = True


#: the HOPS_BENCH_* variables it reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_FORECAST_GPUS", "HOPS_BENCH_FORECAST_JOBS", "HOPS_BENCH_FORECAST_BUDGET", "HOPS_BENCH_FORECAST_CHECK")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (:mod:`hops_slurm.tools.results_header`)."""
    return results_header.bench_command(NAME, ENV, env)


def run(out_dir: Path) -> Path:
    gpus = int(os.environ.get("HOPS_BENCH_FORECAST_GPUS", "4096"))
    jobs = int(os.environ.get("HOPS_BENCH_FORECAST_JOBS", "10000"))
    budget = float(os.environ.get("HOPS_BENCH_FORECAST_BUDGET", "300"))
    cluster, views = instance(gpus, jobs, 7)
    c0, t0 = time.process_time(), time.perf_counter()
    out = run_forecast(make_policy("hops"), cluster, views, 0.0, timetable=None, budget=budget)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    got = [f.start for f in out.forecasts.values() if f.start is not None]
    load = os.getloadavg()[0]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    check_text = os.environ.get("HOPS_BENCH_FORECAST_CHECK", "1500:512").strip()
    windows = check(*(int(x) for x in check_text.split(":", 1))) if check_text else None
    cmd = command(os.environ)
    lines = [f"# Forecast speed: {jobs:,} pending jobs on {gpus} GPUs", "", f"Command: `{cmd}`.", "",
             "One forecast as the daemon's worker makes it (`run_forecast`: the round loop run forward in the "
             "simulator from the instance's state with a copy of the Hops policy, solves capped at a twentieth of "
             "the budget). A queue this long is forecast on the long queue's timetable (`Timetable.for_queue`: "
             "2 rounds as the engine's, then each round twice as long as the one before, refresh ticks up to 32 "
             f"times the engine's; a round plan in the first {HELD_AFTER} rounds only, after them running jobs "
             "stay where they are and every planning is a fragment plan, made again only once a job has "
             "started or ended since one placed nothing) and each planning sees every running job and only the "
             "head of the waiting queue in the policy's order, 4 times the idle GPUs' worth of smallest "
             "requests, and as much again of the jobs behind it that fit the idle GPUs "
             "(`hops_slurm/sim/forecast_window.py`).", "",
             "| pending | GPUs | budget (s) | wall (s) | CPU (s) | plannings | most jobs in a planning | "
             "forecast a start | complete | reached (h ahead) | latest start (h) | peak RSS (MiB) | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
             f"| {jobs:,} | {gpus} | {budget:g} | {wall:.1f} | {cpu:.1f} | {out.plannings} | {out.widest:,} | "
             f"{len(got):,} | {'yes' if out.complete else 'no'} | {out.after / 3600:.1f} | "
             f"{(max(got) / 3600 if got else 0):.1f} | {rss:.0f} | {load:.1f} |", "",
             "\"Complete\": every pending job got a start within the budget; otherwise the jobs not reached are "
             "shown as starting later than \"reached\". The forecast runs in a child process at nice 19 beside "
             "the rounds (`hops_slurm/engine/forecaster.py`): its length never adds to a round's. Wall time "
             "depends on what else the machine runs (the load column); CPU time does not."]
    if windows is not None:
        lines += ["", *_window_section(windows)]
    return results_header.write(out_dir / "forecast-scale.md", "\n".join(lines) + "\n",
                                generator=f"{__name__}:run", command=cmd)


def _window_section(c: Checks) -> list[str]:
    w = c.window
    return [
        "## What the shortcuts change", "",
        f"The solver bench's instance at {w.pending:,} pending jobs on {w.gpus} GPUs, each job's run time divided "
        f"by {w.shorten:g} (so every forecast reaches its last start here), forecast on the long queue's "
        "timetable three times: a round plan at every round and each planning seeing the whole queue; the "
        f"same with the queue's window; the window with running jobs held in place after the first {HELD_AFTER} "
        "rounds (what the worker runs) (`hops_slurm/tools/bench/forecast_scale_window.py`). Difference per "
        "job: |start with the shortcut - start without| / the wait without it, over the jobs that wait.", "",
        "| shortcut | pending | GPUs | jobs compared | median difference | p90 difference | start at once (same "
        "with it) | plannings without / with | most jobs in a planning without / with | CPU (s) without / with |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(_row(name, x) for name, x in (("the window (every round planned)", c.window),
                                        ("holding far ahead (both with the window)", c.held),
                                        ("both (against neither)", c.both)))]


def _row(name: str, w: WindowCheck) -> str:
    return (f"| {name} | {w.pending:,} | {w.gpus} | {w.compared:,} | {w.median:.3f} | {w.p90:.3f} | "
            f"{w.at_once} ({w.same_at_once}) | {w.plannings[0]} / {w.plannings[1]} | "
            f"{w.widest[0]:,} / {w.widest[1]:,} | {w.cpu[0]:.1f} / {w.cpu[1]:.1f} |")
