"""Stretch weights (planner/stretch.py through HopsPolicy): eq. 11 weighs a job by its slowdown so far,
1 + latency ratio, so a job that just started waiting no longer outweighs a running job many times over;
a job that has waited long still takes a running job's GPUs."""

from __future__ import annotations

from planner.hops import HopsPolicy
from planner.stretch import stretch_priors
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

ONE = ClusterView((NodeView("n0", "t", "A", 8, 8),))


def linear(cfg: Config) -> float:
    return float(sum(cfg.values()))


def job(job_id: str, wait: float, age: float, running: bool = False) -> JobView:
    """A rigid 8-GPU job with latency ratio wait / age; running on n0 when ``running``."""
    return JobView(job_id, (8,), 0.0, wait, age, 1.1, linear, total_samples=1e6,
                   current=freeze_config({"n0": 8}) if running else None,
                   placed_for=10_000.0 if running else 0.0, run_time=10_000.0 if running else 0.0)


def plan(jobs: tuple[JobView, ...], **params: object) -> dict[str, object]:
    return dict(HopsPolicy(rules_off(gap=0.0, lambda_=1.0, **params)).plan(ONE, jobs, 20_000.0).assignments)  # type: ignore[arg-type]


def test_priors_are_one_plus_the_latency_ratio() -> None:
    assert stretch_priors({"a": 0.0, "b": 0.5, "c": -1.0}) == {"a": 1.0, "b": 1.5, "c": 1.0}


def test_a_job_that_just_started_waiting_does_not_preempt_a_running_one() -> None:
    # R never waited (LR 0: weight bias 0.01), W waited a tenth of its age (LR 0.1): by LR, W weighs 11x R
    # and the 2.5x premium does not keep R; by slowdown W weighs 1.1 against R's 1.0 x 2.5
    jobs = (job("R", 0.0, 10_000.0, running=True), job("W", 1000.0, 10_000.0))
    assert plan(jobs)["R"] is None  # the default: eq. 11's LR weights
    on = plan(jobs, stretch_weights=True)
    assert on["R"] == {"n0": 8} and on["W"] is None


def test_a_job_slowed_down_more_than_the_premium_still_preempts() -> None:
    # W has waited twice its age: slowdown 3 > 1 x 2.5
    jobs = (job("R", 0.0, 10_000.0, running=True), job("W", 20_000.0, 10_000.0))
    on = plan(jobs, stretch_weights=True)
    assert on["R"] is None and on["W"] == {"n0": 8}


def test_on_by_default() -> None:
    assert PlannerParams().stretch_weights is True
