"""Gains per GPU under saturation and shortest-remaining weights (planner/jct_gain.py through HopsPolicy,
``gpu_efficiency`` and ``remaining_weight``): a job that has waited long no longer takes 8 GPUs at poor scaling
while others wait, and a short waiting job outweighs a long running one."""

from __future__ import annotations

import pytest

from planner.hops import HopsPolicy
from planner.jct_gain import (CLIP, SHORTEST, efficiency_gains, remaining_time, remaining_weights, saturated,
                              slowest_remaining_time)
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config
from planner.params import PlannerParams
from tests.planner.rules_off import rules_off

ONE = ClusterView((NodeView("n0", "t", "A", 8, 8),))


def linear(cfg: Config) -> float:
    return float(sum(cfg.values()))


def poor(cfg: Config) -> float:
    """4 GPUs: 4 samples/s; 8 GPUs: 5 (62.5 % per GPU)."""
    return 4.0 if sum(cfg.values()) <= 4 else 5.0


def plan(jobs: tuple[JobView, ...], **params: object) -> dict[str, Config | None]:
    policy = HopsPolicy(rules_off(gap=0.0, lambda_=1.0, explore=False, backfill=False, **params))  # type: ignore[arg-type]
    return dict(policy.plan(ONE, jobs, 20_000.0).assignments)


def wide() -> JobView:
    """Waited ten times its age: eq. 11 weight 1 against ~0.001 for jobs that never waited."""
    return JobView("A", (4, 8), 0.0, 10_000.0, 1000.0, 1.1, poor, total_samples=1e6)


def narrow(job_id: str) -> JobView:
    return JobView(job_id, (4,), 0.0, 0.0, 1000.0, 1.1, linear, total_samples=1e6)


def test_saturated_counts_running_gpus_and_smallest_requirements() -> None:
    assert not saturated((wide(), narrow("B")), 8)  # 4 + 4
    assert saturated((wide(), narrow("B"), narrow("C")), 8)  # 4 + 4 + 4
    run = JobView("R", (4, 8), 0.0, 0.0, 1000.0, 1.1, linear, current=freeze_config({"n0": 8}))
    assert saturated((run, narrow("B")), 8)  # 8 held + 4


def test_efficiency_scales_each_gain_by_its_share_of_the_best_gain_per_gpu() -> None:
    four, eight = freeze_config({"n0": 4}), freeze_config({"n0": 8})
    cands = [Candidate("A", four, 1.0), Candidate("A", eight, 1.25), Candidate("B", four, 1.0)]
    out = {(c.job_id, sum(c.config.values())): c.gain for c in efficiency_gains(cands, 1.0)}
    assert out[("A", 4)] == pytest.approx(1.0) and out[("B", 4)] == pytest.approx(1.0)
    assert out[("A", 8)] == pytest.approx(1.25 * 0.625)
    half = {(c.job_id, sum(c.config.values())): c.gain for c in efficiency_gains(cands, 0.5)}
    assert half[("A", 8)] == pytest.approx(1.25 * 0.625 ** 0.5)
    assert [c.gain for c in efficiency_gains(cands, 0.0)] == [1.0, 1.25, 1.0]


def test_a_long_waiting_job_takes_fewer_gpus_when_others_wait() -> None:
    jobs = (wide(), narrow("B"), narrow("C"))
    assert plan(jobs)["A"] == {"n0": 8}  # eq. 11: A's 1.25 x 1 beats A on 4 plus B's ~0.001
    on = plan(jobs, gpu_efficiency=1.0)
    assert on["A"] == {"n0": 4} and sum(1 for j in ("B", "C") if on[j]) == 1


def test_unsaturated_plannings_keep_eq_11() -> None:
    jobs = (wide(), narrow("B"))  # 4 + 4 GPUs fit: nothing waits, eq. 11 as before
    assert plan(jobs, gpu_efficiency=1.0) == plan(jobs)


def test_remaining_time_is_age_times_the_share_left() -> None:
    j = JobView("J", (1,), 0.0, 0.0, 1000.0, 1.1, linear, total_samples=100.0, done_samples=75.0)
    assert remaining_time(j) == pytest.approx(250.0)
    assert remaining_time(JobView("K", (1,), 0.0, 0.0, 10.0, 1.1, linear)) == SHORTEST


def test_remaining_weights_favour_short_remaining_work_within_the_clip() -> None:
    jobs = [JobView("S", (1,), 0.0, 0.0, 1000.0, 1.1, linear), JobView("L", (1,), 0.0, 0.0, 3000.0, 1.1, linear),
            JobView("X", (1,), 0.0, 0.0, 1e9, 1.1, linear)]
    out = remaining_weights({"S": 1.0, "L": 1.0}, jobs, 1.0)
    assert out == {"S": pytest.approx(2.0), "L": pytest.approx(2.0 / 3.0)}  # mean 2000 s
    far = remaining_weights({"S": 1.0, "X": 1.0}, jobs, 1.0)
    assert far["S"] == pytest.approx(CLIP) and far["X"] == pytest.approx(0.5)
    assert remaining_weights({"S": 1.0, "L": 1.0}, jobs, 0.0) == {"S": 1.0, "L": 1.0}


def test_the_slowest_basis_reads_remaining_time_off_the_slowest_candidate() -> None:
    # 1000 samples left at 1 sample/s on its slowest candidate (1 GPU, gain 1): 1000 s, whatever its age says
    j = JobView("J", (1, 2), 0.0, 0.0, 50_000.0, 1.1, linear, total_samples=1000.0)
    k = JobView("K", (1,), 0.0, 0.0, 3000.0, 1.1, linear, total_samples=3000.0)
    cands = [Candidate("J", freeze_config({"n0": 2}), 2.0), Candidate("J", freeze_config({"n0": 1}), 1.0),
             Candidate("K", freeze_config({"n0": 1}), 1.0)]
    assert slowest_remaining_time(j, cands) == pytest.approx(1000.0)
    assert slowest_remaining_time(j, []) == pytest.approx(50_000.0)  # no candidates: the age-based time
    by_age = remaining_weights({"J": 1.0, "K": 1.0}, [j, k], 1.0)
    by_slowest = remaining_weights({"J": 1.0, "K": 1.0}, [j, k], 1.0, cands)
    assert by_age["J"] < by_age["K"] and by_slowest["J"] > by_slowest["K"]  # 50,000 s vs 3000 s; 1000 s vs 3000 s


def test_a_short_waiting_job_outweighs_a_long_running_one() -> None:
    run = JobView("R", (8,), 0.0, 0.0, 100_000.0, 1.1, linear, total_samples=1e6, current=freeze_config({"n0": 8}),
                  placed_for=10_000.0, run_time=10_000.0)
    short = JobView("W", (8,), 0.0, 1.0, 1000.0, 1.1, linear, total_samples=1e6)
    jobs = (run, short)
    before = plan(jobs)  # W's weight (LR 0.001) is below R's premium x bias: R keeps its GPUs
    assert before["R"] == {"n0": 8} and before["W"] is None
    on = plan(jobs, remaining_weight=1.0)
    assert on["W"] == {"n0": 8} and on["R"] is None


def test_off_by_default() -> None:
    assert PlannerParams().gpu_efficiency == 0.0 and PlannerParams().remaining_weight == 0.5
    with pytest.raises(ValueError):
        rules_off(gpu_efficiency=-1.0)
    with pytest.raises(ValueError):
        rules_off().with_settings("remaining_weight=11")


TWO = ClusterView((NodeView("n0", "k", "K", 4, 4), NodeView("n1", "v", "V", 4, 4)))


def faster_on_n1(cfg: Config) -> float:
    return sum(g * (1.5 if n == "n1" else 1.0) for n, g in cfg.items())


def on_slow() -> JobView:
    return JobView("R", (4,), 0.0, 0.0, 1000.0, 1.1, faster_on_n1, total_samples=1e6, current=freeze_config({"n0": 4}),
                   placed_for=10_000.0, run_time=10_000.0)


def plan_two(jobs: tuple[JobView, ...], **params: object) -> dict[str, Config | None]:
    policy = HopsPolicy(rules_off(gap=0.0, explore=False, backfill=False, **params))  # type: ignore[arg-type]
    return dict(policy.plan(TWO, jobs, 20_000.0).assignments)


def test_idle_moves_drop_the_restart_penalty_when_nothing_waits() -> None:
    # a free move to 1.5x faster GPUs: 1.5 x (1 - 0.4) < 1 with the penalty, 1.5 > 1 without
    assert plan_two((on_slow(),))["R"] == {"n0": 4}
    assert plan_two((on_slow(),), idle_moves=True)["R"] == {"n1": 4}


def test_idle_moves_keep_the_penalty_when_jobs_wait() -> None:
    # R's 4 GPUs and two waiting 4-GPU jobs on 8 GPUs: saturated, so the move keeps (1 - 0.4) of its gain and R
    # stays (2.5 + W on n1 1.5 beats 2.25 + 1); without the penalty R would move (3.75 + 1)
    w1, w2 = (JobView(k, (4,), 0.0, 0.0, 1000.0, 1.1, faster_on_n1, total_samples=1e6) for k in ("W1", "W2"))
    on = plan_two((on_slow(), w1, w2), idle_moves=True)
    assert on["R"] == {"n0": 4} and [c for c in (on["W1"], on["W2"]) if c] == [{"n1": 4}]
    assert plan_two((on_slow(), w1, w2), restart_penalty=0.0)["R"] == {"n1": 4}
