"""hops_slurm.engine.forecaster: the forecast worker runs beside the round in a child process, hands back
each waiting job's start with a band, skips a round while it still runs, and is killed past its budget."""

from __future__ import annotations

import os
import time

from hops_slurm.engine.forecaster import Forecaster, policy_copy
from hops_slurm.sim.forecast_arrivals import ArrivalHistory
from hops_slurm.sim.forecast_run import Outcome
from planner.forecast import Forecast
from planner.hops import HopsPolicy
from planner.views import ClusterView, JobView, NodeView, Plan, Policy


def _job(job_id: str, gpus: int, samples: float, *, wait: float = 0.0) -> JobView:
    return JobView(job_id, (gpus,), submit_time=0.0, wait=wait, age=samples / (10.0 * gpus), sensitivity=1.0,
                   throughput=lambda cfg: 10.0 * sum(cfg.values()), total_samples=samples)


CLUSTER = ClusterView((NodeView("n0", "v100", "v100-a", 4, 4),))
JOBS = (_job("a", 4, 4_000.0, wait=300.0), _job("b", 4, 4_000.0, wait=200.0))


def _until_taken(f: Forecaster, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while f.child is not None and time.monotonic() < end:
        f.poll()
        time.sleep(0.02)


class Sleeper(Policy):
    """A policy that never answers in time."""

    name = "sleeper"

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        time.sleep(120.0)
        return Plan({})


def test_the_child_hands_back_every_waiting_jobs_start_and_the_first_is_kept() -> None:
    f = Forecaster(round_seconds=360.0, refresh_seconds=30.0, budget=30.0)
    policy = HopsPolicy()
    assert f.submit(policy, CLUSTER, JOBS, 100.0)
    assert not f.submit(policy, CLUSTER, JOBS, 100.0) or f.child is None  # one at a time
    _until_taken(f)
    assert f.child is None and f.outcome is not None and f.outcome.complete
    assert f.latest["a"].start == 100.0 and f.latest["b"].start is not None and f.latest["b"].start > 100.0
    for b in f.latest.values():
        assert b.early is not None and b.late is not None and b.early <= b.start <= b.late  # type: ignore[operator]
    assert f.first_start("b") == f.latest["b"].start
    assert policy._previous == {}  # the engine's policy is untouched: the child planned on its own copy
    # b started 100 s late: its forecasts' errors go into the band
    f.observe({"b": f.latest["b"].start + 100.0})  # type: ignore[operator]
    assert len(f.band.errors) == 1 and f.band.errors[0] > 0


def test_a_child_past_its_budget_is_killed_and_the_last_forecast_stays() -> None:
    f = Forecaster(round_seconds=360.0, refresh_seconds=30.0, budget=0.2, grace=0.2)
    f.latest = {"x": f.band.band(0.0, Forecast(10.0))}
    assert f.submit(Sleeper(), CLUSTER, JOBS, 0.0)
    pid = f.child.pid  # type: ignore[union-attr]
    _until_taken(f)
    assert f.child is None and f.outcome is None and set(f.latest) == {"x"}
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_inline_and_the_policy_copy() -> None:
    f = Forecaster(round_seconds=360.0, refresh_seconds=30.0, budget=30.0, inline=True)
    assert f.submit(HopsPolicy(), CLUSTER, JOBS, 0.0) and f.child is None
    assert set(f.latest) == {"a", "b"}
    p = HopsPolicy()
    p._previous["a"] = {"n0": 4}  # type: ignore[assignment]
    q = policy_copy(p)
    q._previous.clear()
    assert p._previous == {"a": {"n0": 4}}
    assert not f.submit(HopsPolicy(), CLUSTER, (), 0.0)  # nothing waits: nothing to forecast


def test_each_forecast_is_banded_and_measured_in_the_class_of_the_jobs_ahead_of_it() -> None:
    f = Forecaster(round_seconds=360.0, refresh_seconds=30.0, budget=30.0, inline=True)
    starts = {f"j{k}": 1000.0 * (k + 1) for k in range(6)}  # j5 has 5 jobs forecast to start before it
    f.take(Outcome(0.0, {j: Forecast(s) for j, s in starts.items()}, 6000.0, 1, True))
    assert f.latest["j5"] == f.band.band(0.0, Forecast(6000.0), 5)
    f.observe({"j5": 6500.0, "j0": 1000.0})
    by_class = {h: len(e) for h, e in enumerate(f.band.by_horizon) if e}
    assert by_class == {f.band.horizon(0.0, 6000.0, 5): 1, f.band.horizon(0.0, 1000.0, 0): 1}
    assert f.band.horizon(0.0, 6000.0, 5) != f.band.horizon(0.0, 6000.0, None)  # not the class of "unknown"


def test_a_forecasts_child_never_keeps_the_engines_lock(tmp_path) -> None:  # noqa: ANN001
    """The child drops its inherited copy of the instance lock (the engine's ``after_fork``): when the engine
    dies (its descriptor closed, no unlock) while a forecast still runs, a new engine takes the lock."""
    from hops_slurm.engine.lock import InstanceLock

    lock = InstanceLock(tmp_path / "engine.lock").acquire()
    f = Forecaster(round_seconds=360.0, refresh_seconds=30.0, budget=30.0, after_fork=lock.drop_inherited)
    assert f.submit(Sleeper(), CLUSTER, JOBS, 0.0)
    try:
        time.sleep(0.5)  # the child has forked and dropped its copy
        lock.drop_inherited()  # the engine's own descriptor closed without an unlock, as when it is killed
        assert f.child is not None and f.poll() is None  # the forecast still runs
        InstanceLock(tmp_path / "engine.lock").acquire().release()
    finally:
        f.close()


def test_the_worker_expects_the_jobs_submitted_of_late_again() -> None:
    # "a" (4 GPUs, 100 s of work) was submitted at -100 s; with a 400 s window it is expected again at 300 s
    # and 700 s; when the running job's GPUs free up (400 s) the short job goes before "late" (1000 s of work)
    seen = JobView("a", (4,), submit_time=-100.0, wait=0.0, age=100.0, sensitivity=1.0,
                   throughput=lambda cfg: 10.0 * sum(cfg.values()), total_samples=4_000.0)
    late = JobView("late", (4,), submit_time=200.0, wait=0.0, age=1000.0, sensitivity=1.0,
                   throughput=lambda cfg: 10.0 * sum(cfg.values()), total_samples=40_000.0)
    running = JobView("r", (4,), submit_time=0.0, wait=0.0, age=300.0, sensitivity=1.0, current={"n0": 4},
                      throughput=lambda cfg: 10.0 * sum(cfg.values()), total_samples=12_000.0, run_time=100.0,
                      placed_for=100.0, done_samples=4_000.0)
    starts = {}
    for window in (0.0, 400.0):
        f = Forecaster(round_seconds=360.0, refresh_seconds=30.0, budget=30.0, inline=True,
                       arrivals=ArrivalHistory(window=window, horizon=1000.0))
        f.arrivals.observe((seen,), 0.0)
        assert f.submit(HopsPolicy(), CLUSTER, (running, late), 200.0)
        assert set(f.latest) == {"late"}  # an expected job gets no forecast of its own
        starts[window] = f.latest["late"].start
    assert starts[0.0] is not None and starts[400.0] is not None and starts[400.0] > starts[0.0]
