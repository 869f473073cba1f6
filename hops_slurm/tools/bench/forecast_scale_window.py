"""What a long queue's shortcuts change: one instance forecast with and without each, job by job.

Data flow: the solver bench's instance (:func:`hops_slurm.tools.bench.solver_speeds.instance`) at a smaller
size (``pending`` jobs on ``gpus`` GPUs, each job's run time divided by ``shorten`` so the forecast reaches
its last start in minutes here) -> three forecasts on the long queue's timetable (:meth:`Timetable.for_queue`
with the queue counted as long, whatever its length): a round plan at every round and each planning seeing
the whole queue; the same with the queue's window (:mod:`hops_slurm.sim.forecast_window`); the window and
running jobs held in place after the first rounds (``Timetable.planned_rounds``: what the daemon's worker
runs) -> for each pair, per job, |start with - start without| as a fraction of the wait without (the jobs
that wait at all), median and 90th percentile; the jobs that start at once without are counted apart.
Used by :mod:`hops_slurm.tools.bench.forecast_scale`.
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
    """Two forecasts' difference (see the module docstring): without a shortcut, then with it."""

    pending: int
    gpus: int
    shorten: float
    compared: int  # jobs with a start in both and a positive wait without the shortcut
    median: float
    p90: float
    same_at_once: int  # jobs starting at once without the shortcut that do so with it too
    at_once: int  # jobs starting at once without the shortcut
    plannings: tuple[int, int]  # (without, with)
    cpu: tuple[float, float]  # CPU seconds (without, with)
    widest: tuple[int, int]  # the most jobs a planning saw (without, with)


@dataclass(frozen=True)
class Checks:
    """The three forecasts compared: the window alone (every round planned), holding running jobs far
    ahead on top of the window, and both shortcuts against neither."""

    window: WindowCheck
    held: WindowCheck
    both: WindowCheck


def _run(pending: int, gpus: int, shorten: float, *, windowed: bool, held: bool,
         seed: int = 7) -> tuple[Outcome, float]:
    cluster, views = instance(gpus, pending, seed)
    views = tuple(dataclasses.replace(v, age=v.age / shorten) for v in views)
    policy = make_policy("hops")
    table = Timetable.for_queue(LARGE_QUEUE + 1)
    if not held:
        table = dataclasses.replace(table, planned_rounds=None)
    c0 = time.process_time()
    out = forecast(policy, cluster, views, 0.0, timetable=table,
                   window=window_for(policy, LARGE_QUEUE + 1) if windowed else None)
    return out, time.process_time() - c0


def compare(pending: int, gpus: int, shorten: float, without: tuple[Outcome, float],
            with_: tuple[Outcome, float]) -> WindowCheck:
    """Each job's |start with - start without| / its wait without (see the module docstring)."""
    (plain, cpu_plain), (other, cpu_other) = without, with_
    errors: list[float] = []
    at_once = same = 0
    for job, f in plain.forecasts.items():
        g = other.forecasts[job]
        if f.start is None or g.start is None:
            continue
        wait = f.start - plain.made
        if wait <= 0.0:
            at_once += 1
            same += g.start == f.start
            continue
        errors.append(abs(g.start - f.start) / wait)
    return WindowCheck(pending, gpus, shorten, len(errors), pct(errors, 0.5) if errors else 0.0,
                       pct(errors, 0.9) if errors else 0.0, same, at_once, (plain.plannings, other.plannings),
                       (cpu_plain, cpu_other), (plain.widest, other.widest))


def check(pending: int, gpus: int, shorten: float = 8.0) -> Checks:
    """Forecast the instance without shortcuts, with the window, with the window and held rounds (see the
    module docstring)."""
    plain = _run(pending, gpus, shorten, windowed=False, held=False)
    windowed = _run(pending, gpus, shorten, windowed=True, held=False)
    held = _run(pending, gpus, shorten, windowed=True, held=True)
    return Checks(compare(pending, gpus, shorten, plain, windowed), compare(pending, gpus, shorten, windowed, held),
                  compare(pending, gpus, shorten, plain, held))


__all__ = ["Checks", "WindowCheck", "check", "compare"]
