"""Forecast starts: the policy run forward over the jobs of now, round after round, on their estimates.

Where it sits: after a round, off the plannings themselves (the engine's ``summary`` step calls it when
``[engine] forecast`` is on: :mod:`hops_slurm.engine.reasons`). It takes what the round planned with: the
cluster of a round plan, the job views (each with its throughput estimate, remaining samples, current
config) and a *fresh* policy of the same parameters (the engine's own keeps its state), and replays
rounds on a virtual clock from ``now``:

* each round the policy plans every job left (running jobs with their current config, as the engine
  does); a waiting job placed for the first time starts then (its forecast start);
* a placed job progresses for the round at its estimated rate for the config (times ``speed``), after its
  restart cost when the config is new; one whose remaining work ends inside the round ends then (its
  forecast end) and gives its GPUs back at the next round; a job the plan leaves out waits (its wait grows,
  so its latency ratio does, as live);
* until every waiting job has started, ``max_rounds`` rounds have passed or ``stop()`` says so (the
  caller's wall-clock budget: nothing here reads a clock).

Granularity is the round (live, fragment plans at refresh ticks start jobs sooner). New arrivals are not
foreseen. The band: the same replay with every rate times ``speed`` above and below 1 (:func:`band`).
Pure: no Slurm, no clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from planner.moves import remaining_seconds
from planner.views import ClusterView, JobView, Policy, freeze_config

#: rounds replayed at most per forecast
MAX_ROUNDS = 500


@dataclass(frozen=True)
class Forecast:
    """A waiting job's forecast on one replay: its start and end (None: not within the replay)."""

    start: float | None
    end: float | None = None


@dataclass(frozen=True)
class Banded:
    """The forecast and its band: the earliest and latest start of the faster and slower replays."""

    start: float | None
    end: float | None
    early: float | None
    late: float | None


def _rate(job: JobView, config: Mapping[str, int], speed: float) -> float:
    try:
        return max(float(job.throughput(config)), 0.0) * speed
    except Exception:  # noqa: BLE001 - an estimate that fails is no progress
        return 0.0


def replay(policy: Policy, cluster: ClusterView, jobs: Sequence[JobView], now: float, *, round_seconds: float,
           speed: float = 1.0, max_rounds: int = MAX_ROUNDS, stop: Callable[[], bool] = lambda: False) -> dict[str, Forecast]:
    """Job id -> forecast for every waiting job of ``jobs`` (see the module docstring)."""
    if round_seconds <= 0 or speed <= 0:
        raise ValueError("round_seconds and speed must be positive")
    views = {j.job_id: j for j in jobs}
    waiting = [j.job_id for j in jobs if not j.current]
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    t = now
    for _ in range(max_rounds):
        if not views or all(j in starts for j in waiting) or stop():
            break
        plan = policy.plan(cluster, tuple(views.values()), t)
        for job_id, view in list(views.items()):
            cfg = plan.assignments.get(job_id)
            if not cfg:
                views[job_id] = dataclasses.replace(view, current=None, placed_for=0.0, wait=view.wait + round_seconds)
                continue
            moved = not view.current or dict(view.current) != dict(cfg)
            if not view.current and job_id not in starts and job_id in waiting:
                starts[job_id] = t
            rate = _rate(view, cfg, speed)
            delay = min(view.restart_cost if moved else 0.0, round_seconds)
            runs = round_seconds - delay
            if view.measured and view.total_samples > 0.0 and rate > 0.0:
                left: float | None = view.remaining_samples / rate
            else:  # what its age says is left (planner.moves.remaining_seconds), at this replay's speed
                aged = remaining_seconds(view, 0.0)
                left = None if aged is None else aged / speed
            if left is not None and left <= runs:
                ends[job_id] = t + delay + left
                del views[job_id]
                continue
            views[job_id] = dataclasses.replace(
                view, current=freeze_config(cfg), done_samples=view.done_samples + rate * runs,
                run_time=view.run_time + runs, placed_for=(0.0 if moved else view.placed_for) + round_seconds,
                preemptions=view.preemptions + (1 if moved and view.current else 0))
        t += round_seconds
    return {j: Forecast(starts.get(j), ends.get(j)) for j in waiting}


def band(make_policy: Callable[[], Policy], cluster: ClusterView, jobs: Sequence[JobView], now: float, *,
         round_seconds: float, spread: float = 0.25, max_rounds: int = MAX_ROUNDS,
         stop: Callable[[], bool] = lambda: False) -> dict[str, Banded]:
    """The forecast (rates as estimated) and its band (every rate times 1 + ``spread`` and 1 / (1 +
    ``spread``)), each replay on a fresh policy from ``make_policy``; a replay cut short by ``stop``
    leaves the starts it did not reach None."""
    mid = replay(make_policy(), cluster, jobs, now, round_seconds=round_seconds, max_rounds=max_rounds, stop=stop)
    fast = replay(make_policy(), cluster, jobs, now, round_seconds=round_seconds, speed=1.0 + spread,
                  max_rounds=max_rounds, stop=stop)
    slow = replay(make_policy(), cluster, jobs, now, round_seconds=round_seconds, speed=1.0 / (1.0 + spread),
                  max_rounds=max_rounds, stop=stop)
    out: dict[str, Banded] = {}
    for job_id, f in mid.items():
        known = [x for x in (f.start, fast[job_id].start, slow[job_id].start) if x is not None]
        out[job_id] = Banded(f.start, f.end, min(known) if known else None,
                             max(known) if len(known) == 3 else None)  # a replay that never started it: no upper bound
    return out


__all__ = ["Banded", "Forecast", "MAX_ROUNDS", "band", "replay"]
