"""Hops metrics on hand-built records, with hand-computed expected values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hops_slurm.records import JobRecord, PlacementRecord, RoundRecord
from hops_slurm.report import metrics
from hops_slurm.report.source import RecordSet


def _job(**kw) -> JobRecord:
    return JobRecord(job_id=kw.pop("job_id", "j"), submit=kw.pop("submit", 0.0), **kw)


def test_wait_sums_queued_stretches_over_preemptions() -> None:
    job = _job(
        submit=100,
        end=1000,
        placements=[
            PlacementRecord(start=250, end=400, config={"a": 1}, preempted=True),
            PlacementRecord(start=700, end=1000, config={"a": 2}),
        ],
    )
    # queued 100..250 (150) and 400..700 (300)
    assert metrics.wait_time(job, now=5000) == 450
    # at 500 the job is queued again since 400: 150 + 100
    assert metrics.wait_time(job, now=500) == 250
    # at 300 it runs: only the first 150
    assert metrics.wait_time(job, now=300) == 150


def test_wait_of_pending_running_and_cancelled_jobs() -> None:
    assert metrics.wait_time(_job(submit=10), now=70) == 60
    running = _job(submit=10, placements=[PlacementRecord(start=40, config={"a": 1})])
    assert metrics.wait_time(running, now=1000) == 30
    cancelled = _job(submit=10, end=55, state="CANCELLED")
    assert metrics.wait_time(cancelled, now=1000) == 45
    # preempted, then cancelled while queued: 10..20 and 30..50
    requeued = _job(
        submit=10, end=50, placements=[PlacementRecord(start=20, end=30, config={"a": 1}, preempted=True)]
    )
    assert metrics.wait_time(requeued, now=1000) == 30
    # only a start time, no placements
    assert metrics.wait_time(_job(submit=5, start=25), now=1000) == 20


def test_latency_ratio_and_ftf_rho() -> None:
    assert metrics.latency_ratio(600, 3600) == pytest.approx(1 / 6)
    assert metrics.latency_ratio(600, None) is None
    assert metrics.latency_ratio(600, 0) is None
    assert metrics.ftf_rho(4200, 2100) == 2.0
    assert metrics.ftf_rho(None, 2100) is None
    assert metrics.ftf_rho(100, None) is None


def test_job_values_on_recorded_data(sim: RecordSet) -> None:
    jobs = {j.job_id: j for j in sim.jobs}
    now = 5400
    # job 2: queued 300..900 and 1800..2700 = 1500 s, age 1000 -> LR 1.5; JCT 5100 / ideal 1700 = 3
    assert metrics.wait_time(jobs["2"], now) == 1500
    assert metrics.job_latency_ratio(jobs["2"], now) == pytest.approx(1.5)
    assert metrics.job_ftf_rho(jobs["2"]) == pytest.approx(3.0)
    # job 4 still pending since 3000: 2400 / 600
    assert metrics.job_latency_ratio(jobs["4"], now) == pytest.approx(4.0)
    assert metrics.run_time(jobs["2"], now) == 900 + 2700


def test_raqlr_is_the_mean_lr_of_jobs_ended_in_the_window(sim: RecordSet) -> None:
    # ended by 5400 with an age: job 1 (1/6), 3 (0.5), 2 (1.5); job 6 has no age
    assert metrics.raqlr(sim.jobs, now=5400, window=86400) == pytest.approx((1 / 6 + 0.5 + 1.5) / 3)
    # window (3400, 5400]: jobs 1 and 2 only
    assert metrics.raqlr(sim.jobs, now=5400, window=2000) == pytest.approx((1 / 6 + 1.5) / 2)
    assert metrics.raqlr(sim.jobs, now=100, window=50) is None


def test_percentile_interpolates_like_numpy() -> None:
    assert metrics.percentile([1.5, 1 / 6, 0.5], 95) == pytest.approx(1.4)
    assert metrics.percentile([3.0], 95) == 3.0
    assert metrics.percentile([], 95) is None
    assert metrics.percentile([0, 10], 50) == 5.0
    with pytest.raises(ValueError):
        metrics.percentile([1.0], 101)


def test_fragments_are_averaged_over_rounds_not_plans(sim: RecordSet) -> None:
    # rounds at 0, 1800 (two plans, last leaves 1), 3600, 5400: 0, 1, 0, 4
    assert len(metrics.rounds_of(sim.rounds)) == 4
    assert metrics.fragments_per_round(sim.rounds) == pytest.approx(1.25)
    assert metrics.fragments_per_round([]) is None
    # idle GPUs with nobody waiting are not fragments
    assert RoundRecord(time=0, idle_gpus_after=3, unassigned_jobs=0).fragments == 0


def test_gpu_utilisation_from_placements(sim: RecordSet) -> None:
    # GPU-seconds: job1 4*3600 + job2 2*(900+2700) + job3 2*1200 + job5 4*1200 = 28800 of 8*5400
    assert metrics.gpu_utilisation(sim.jobs, 8, 0, 5400) == pytest.approx(28800 / 43200)
    # (3400, 5400]: job1 4*800 + job2 2*2000 + job5 4*1200 = 12000 of 16000
    assert metrics.gpu_utilisation(sim.jobs, 8, 3400, 5400) == pytest.approx(0.75)
    assert metrics.gpu_utilisation(sim.jobs, 0, 0, 5400) is None


def test_gpu_use_steps(sim: RecordSet) -> None:
    steps = dict(metrics.gpus_in_use_steps(sim.jobs, until=5400))
    assert steps[600] == 4  # job 1
    assert steps[900] == 6  # + job 2
    assert steps[1800] == 6  # job 2 preempted, job 3 starts
    assert steps[2700] == 8
    assert steps[3000] == 6
    assert steps[4200] == 6  # job 1 ends, job 5 starts
    assert steps[5400] == 4  # job 2 ends; job 5 still runs at the horizon
    assert metrics.gpus_in_use_steps(sim.jobs, until=5000)[-1] == (5000, 6)  # jobs 2 and 5 running


@st.composite
def finished_jobs(draw) -> JobRecord:
    """A job queued and run in alternation: gaps and run stretches of whole seconds."""
    submit = draw(st.integers(0, 10_000))
    pieces = draw(st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 5000)), min_size=1, max_size=5))
    t = submit
    placements = []
    for i, (gap, run) in enumerate(pieces):
        start = t + gap
        t = start + run
        placements.append(PlacementRecord(start=start, end=t, config={"n": 1}, preempted=i < len(pieces) - 1))
    return JobRecord(job_id="h", submit=submit, end=t, state="COMPLETED", placements=placements)


@settings(max_examples=60, deadline=None)
@given(finished_jobs(), st.integers(0, 20_000))
def test_wait_plus_run_is_the_jct(job: JobRecord, later: int) -> None:
    assert job.end is not None
    now = job.end + later
    assert metrics.wait_time(job, now) + metrics.run_time(job, now) == metrics.jct(job)
    # part-way through, wait + run is the time since submission
    mid = (job.submit + job.end) / 2
    assert metrics.wait_time(job, mid) + metrics.run_time(job, mid) == pytest.approx(mid - job.submit)
