"""``make demo``'s side-by-side table: both runs summarised by one function over the report's metrics."""

from __future__ import annotations

import pytest

from hops_slurm.tools.demo.compare import (
    ROWS,
    comparison_markdown,
    comparison_text,
    summarise_run,
    with_hops_ages,
)
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report import metrics


def _jobs() -> list[JobRecord]:
    return [
        JobRecord(job_id="1", name="a", submit=0.0, start=10.0, end=70.0, state="COMPLETED", age_estimate=30.0,
                  placements=[PlacementRecord(start=10.0, end=70.0, config={"a100-1": 4})]),
        JobRecord(job_id="2", name="b", submit=5.0, start=20.0, end=100.0, state="COMPLETED", age_estimate=50.0,
                  placements=[PlacementRecord(start=20.0, end=40.0, config={"v100-1": 2}, preempted=True),
                              PlacementRecord(start=50.0, end=100.0, config={"a100-2": 2})]),
    ]


def test_run_summary_by_hand() -> None:
    s = summarise_run("Hops", _jobs(), total_gpus=8)
    assert (s.jobs, s.completed) == (2, 2)
    assert s.avg_jct == pytest.approx((70 + 95) / 2)
    assert s.avg_wait == pytest.approx((10 + (15 + 10)) / 2)  # b waited 5->20 and 40->50
    assert s.max_lr == pytest.approx(max(10 / 30, 25 / 50))
    assert s.makespan == pytest.approx(100.0)
    assert s.gpu_utilisation == pytest.approx((60 * 4 + 20 * 2 + 50 * 2) / (8 * 100))
    assert s.peak_gpus == 6  # a on 4 from 10, b on 2 from 20 (and again from 50, after its move)
    assert s.raqlr == pytest.approx((10 / 30 + 25 / 50) / 2)  # eq. 7: the mean final LR of the jobs that ended


def test_the_latency_ratio_is_the_reports_own() -> None:
    jobs = _jobs()
    assert summarise_run("x", jobs, 8).max_lr == max(metrics.job_latency_ratio(j, j.end or 0) or 0 for j in jobs)


def test_slurm_jobs_take_the_age_hops_estimated_for_the_same_script() -> None:
    slurm = [j.model_copy(update={"job_id": str(100 + i), "age_estimate": None}) for i, j in enumerate(_jobs())]
    aged = with_hops_ages(slurm, {"100": "a", "101": "b"}, {"a": 20.0, "b": None})
    assert [j.age_estimate for j in aged] == [20.0, None]
    s = summarise_run("Slurm", aged, 8)
    assert s.max_lr == pytest.approx(10 / 20)  # b has no age, so no ratio: left out as in the report
    assert summarise_run("Slurm", slurm, 8).max_lr is None


def test_a_run_without_an_ended_job_has_no_numbers() -> None:
    s = summarise_run("Slurm", [JobRecord(job_id="9", submit=0.0)], 8)
    assert (s.jobs, s.completed, s.avg_jct, s.max_lr, s.makespan, s.gpu_utilisation) == (1, 0, None, None, None, None)
    rows = comparison_text([s]).splitlines()[2:]
    assert [r.rsplit(None, 1)[-1] for r in rows] == ["1", "-", "-", "-", "-", "-", "-", "-", "-"]
    assert rows[0].split()[-3:] == ["0", "of", "1"]


def test_side_by_side_text_and_markdown() -> None:
    hops = summarise_run("Hops", _jobs(), 8)
    slurm = summarise_run("Slurm backfill (rigid)", _jobs()[:1], 8)
    text = comparison_text([hops, slurm]).splitlines()
    assert text[0].split() == ["Hops", "Slurm", "backfill", "(rigid)"]
    assert text[2].split() == ["Jobs", "completed", "2", "of", "2", "1", "of", "1"]
    assert text[3].split() == ["Avg", "JCT", "00:01:22", "00:01:10"]  # 82.5 s rounds to 82
    assert text[5].split() == ["RAQLR", "(eq.", "7)", "0.417", "0.333"]
    assert text[6].split() == ["Max", "latency", "ratio", "0.50", "0.33"]
    assert text[7].split() == ["GPU", "utilisation", "47.5%", "42.9%"]  # 240 GPU-s of 8 x 70 s
    assert text[8].split() == ["Makespan", "00:01:40", "00:01:10"]
    assert text[9].split() == ["Peak", "GPUs", "in", "use", "6", "of", "8", "4", "of", "8"]
    md = comparison_markdown([hops, slurm]).splitlines()
    assert md[0] == "| | Hops | Slurm backfill (rigid) |" and len(md) == 2 + len(ROWS)
    assert md[2] == "| Jobs completed | 2 of 2 | 1 of 1 |"
