"""What the forecast's queue window changes: one instance forecast with and without it, job by job.

Data flow: the solver bench's instance (:func:`hops_slurm.tools.bench.solver_speeds.instance`) at a smaller
size (``pending`` jobs on ``gpus`` GPUs, each job's run time divided by ``shorten`` so the forecast reaches
its last start in minutes here) -> two forecasts on the long queue's timetable (:meth:`Timetable.for_queue`
with the queue counted as long, whatever its length), each planning seeing the whole queue, then only its
window (:mod:`hops_slurm.sim.forecast_window`) -> per job, |start with the window - start without| as a
fraction of the wait without it (the jobs that wait at all), median and 90th percentile; the jobs that
start at once without it are counted apart. Used by :mod:`hops_slurm.tools.bench.forecast_scale`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from hops_slurm.sim.forecast_run import LARGE_QUEUE, Outcome, Timetable, forecast, window_for
from hops_slurm.tools.bench.solver_instances import pct
from hops_slurm.tools.bench.solver_speeds import instance
from planner.policies import make_policy


@dataclass(frozen=True)
class WindowCheck:
    """The two forecasts' difference (see the module docstring)."""

    pending: int
    gpus: int
    shorten: float
    compared: int  # jobs with a start in both and a positive wait without the window
    median: float
    p90: float
    same_at_once: int  # jobs starting at once without the window that do so with it too
    at_once: int  # jobs starting at once without the window
    plannings: tuple[int, int]  # (without, with)
    cpu: tuple[float, float]  # CPU seconds (without, with)
    widest: tuple[int, int]  # the most jobs a planning saw (without, with)


def _run(pending: int, gpus: int, shorten: float, *, windowed: bool, seed: int = 7) -> tuple[Outcome, float]:
    cluster, views = instance(gpus, pending, seed)
    views = tuple(dataclasses.replace(v, age=v.age / shorten) for v in views)
    policy = make_policy("hops")
    c0 = time.process_time()
    out = forecast(policy, cluster, views, 0.0, timetable=Timetable.for_queue(LARGE_QUEUE + 1),
                   window=window_for(policy, LARGE_QUEUE + 1) if windowed else None)
    return out, time.process_time() - c0


def check(pending: int, gpus: int, shorten: float = 8.0) -> WindowCheck:
    """Forecast the instance with and without the window (see the module docstring)."""
    plain, cpu_plain = _run(pending, gpus, shorten, windowed=False)
    windowed, cpu_windowed = _run(pending, gpus, shorten, windowed=True)
    errors: list[float] = []
    at_once = same = 0
    for job, f in plain.forecasts.items():
        g = windowed.forecasts[job]
        if f.start is None or g.start is None:
            continue
        wait = f.start - plain.made
        if wait <= 0.0:
            at_once += 1
            same += g.start == f.start
            continue
        errors.append(abs(g.start - f.start) / wait)
    return WindowCheck(pending, gpus, shorten, len(errors), pct(errors, 0.5) if errors else 0.0,
                       pct(errors, 0.9) if errors else 0.0, same, at_once, (plain.plannings, windowed.plannings),
                       (cpu_plain, cpu_windowed), (plain.widest, windowed.widest))


__all__ = ["WindowCheck", "check"]
