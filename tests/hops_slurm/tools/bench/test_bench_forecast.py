"""tools.bench.forecast_bench: the band given after the run as the daemon gives it, and its coverage; runs beside
with other expected arrivals get a section of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.tools.bench.forecast_bench import (ROUND, JobOutcome, Made, Run, covered, load_run, record_path,
                                                   replay_band, run, save_run, summary, usable, width)
from hops_slurm.tools.bench.forecast_expected import Expected
from planner.forecast import ErrorBand


def _job(job_id: str, submit: float, start: float, forecasts: list[tuple[float, float]]) -> JobOutcome:
    return JobOutcome(job_id, submit, start, [Made(at, s) for at, s in forecasts])


def test_a_forecast_gets_its_band_from_the_jobs_started_before_it_was_made() -> None:
    # two jobs forecast one round ahead each start two rounds late (relative error +2 in their class)
    early = [_job(f"a{i}", 0.0, 3 * ROUND, [(0.0, ROUND)]) for i in range(2)]
    # made at the boundary when they start, and after: a forecast one round ahead, right on time
    late = _job("b", 3 * ROUND, 4 * ROUND, [(3 * ROUND, 4 * ROUND)])
    jobs = early + [late]
    replay_band(jobs, ErrorBand(floor=ROUND, min_errors=2, low=0.0, high=1.0, gain=0.0))
    for j in early:  # made before any start: the prior (half the horizon earlier, twice it later)
        assert (j.first.early, j.first.late) == pytest.approx((0.5 * ROUND, 2 * ROUND))  # type: ignore[union-attr]
    # two rounds late: from the start it names to two rounds after it
    assert (late.first.early, late.first.late) == pytest.approx((4 * ROUND, 6 * ROUND))  # type: ignore[union-attr]
    assert covered(jobs) == pytest.approx(1 / 3)  # of the three only b started inside its band
    assert covered(jobs, "every") == pytest.approx(1 / 3)
    assert width(jobs) == pytest.approx(1.5 / 3)  # the prior's 1.5 rounds over a 3-round wait, twice of three


def test_coverage_counts_only_forecasts_with_a_band_and_the_start_inside_counts() -> None:
    inside = JobOutcome("x", 0.0, 500.0, [Made(0.0, 400.0, 300.0, 600.0), Made(360.0, 450.0, 400.0, 480.0)])
    no_band = JobOutcome("y", 0.0, 700.0, [Made(0.0, None)])
    assert covered([inside, no_band]) == 1.0
    assert covered([inside, no_band], "every") == 0.5


def _recorded(policy: str) -> Run:
    r = Run("no-such-cluster", "paper", 3, policy, seconds=12.0, forecast_seconds=[1.5, 2.5])
    r.jobs = [_job(f"j{i}", 0.0, (i + 1) * ROUND, [(0.0, i * ROUND), (ROUND, (i + 1) * ROUND)]) for i in range(30)]
    r.jobs.append(JobOutcome("never", 0.0, 5 * ROUND, [Made(0.0, None)]))
    return r


def test_a_recorded_run_reads_back_with_its_band_made_again(tmp_path: Path) -> None:
    run = _recorded("hops")
    path = record_path(tmp_path, run.cluster, "gavel:a/b,c", run.seed, run.policy, 20.0)
    assert path.parent == tmp_path and "/" not in path.name[len(str(tmp_path)):]
    save_run(run, path)
    back = load_run(path)
    assert [(j.job_id, j.submit, j.start, [(m.at, m.start) for m in j.made]) for j in back.jobs] == \
        [(j.job_id, j.submit, j.start, [(m.at, m.start) for m in j.made]) for j in run.jobs]
    assert (back.seconds, back.forecast_seconds, back.cut_at) == (12.0, [1.5, 2.5], None)
    replay_band(run.jobs, ErrorBand(floor=ROUND))  # the band the run itself would have got
    assert [(m.early, m.late) for j in back.jobs for m in j.made] == [(m.early, m.late) for j in run.jobs for m in j.made]


def test_the_bench_writes_its_document_from_recorded_runs_without_simulating(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    records = tmp_path / "records"
    for policy in ("hops", "slurm-backfill"):  # a cluster no simulation can load: only the records can answer
        save_run(_recorded(policy), record_path(records, "no-such-cluster", "paper", 3, policy, 20.0))
    monkeypatch.setenv("HOPS_BENCH_FORECAST", "no-such-cluster:paper:3")
    monkeypatch.setenv("HOPS_BENCH_FORECAST_RECORDS", str(records))
    doc = run(tmp_path / "out").read_text()
    assert "| no-such-cluster paper | 3 | hops | 31 | 31 | 1 |" in doc
    assert "HOPS_BENCH_FORECAST_RECORDS=" in doc.splitlines()[0]
    assert "to the end, recorded at " in doc  # the commit each record was made at


def test_a_record_stopped_at_another_allowance_does_not_stand_for_this_one() -> None:
    whole, cut = _recorded("hops"), _recorded("hops")
    cut.cut_at, cut.allowance = 7200.0, 600.0
    assert usable(whole, None) and usable(whole, 600.0)  # ran to the end: whatever the allowance
    assert usable(cut, 600.0) and not usable(cut, 1500.0) and not usable(cut, None)


def test_the_summary_counts_the_runs_each_target_holds_on() -> None:
    hops, slurm = _recorded("hops"), _recorded("slurm-backfill")
    for j in slurm.jobs:  # Slurm's forecasts half a wait off: Hops's (exact but the first of each) are below
        j.made = [Made(j.submit, j.submit + 0.5 * j.wait)]
    replay_band(hops.jobs, ErrorBand(floor=ROUND))
    line = summary([hops, slurm])
    assert "on these 1 Hops runs" in line and "below Slurm's on 1;" in line
    slurm.jobs = []
    assert "below Slurm's on 0;" in summary([hops, slurm])  # nothing to be below


def test_runs_beside_with_other_expected_arrivals_get_a_section_of_their_own(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    records = tmp_path / "records"
    for policy in ("hops", "slurm-backfill"):
        save_run(_recorded(policy), record_path(records, "no-such-cluster", "paper", 3, policy, 20.0))
    knowing = _recorded("hops")
    for j in knowing.jobs:  # every forecast right: the one made at submission names the actual start
        j.made = [Made(m.at, j.start) for m in j.made]
    save_run(knowing, record_path(records, "no-such-cluster", "paper", 3, "hops", 20.0, Expected(oracle=True)))
    monkeypatch.setenv("HOPS_BENCH_FORECAST", "no-such-cluster:paper:3")
    monkeypatch.setenv("HOPS_BENCH_FORECAST_RECORDS", str(records))
    monkeypatch.setenv("HOPS_BENCH_FORECAST_BESIDE", "oracle")
    doc = run(tmp_path / "out").read_text()
    assert "HOPS_BENCH_FORECAST_BESIDE=oracle" in doc.splitlines()[0]
    section = doc[doc.index("## What the error is made of"):]
    rows = [line for line in section.splitlines() if line.startswith("| no-such-cluster paper |")]
    assert len(rows) == 2
    # each forecast a round early: 1 / (i + 1) of the wait of the job that starts i + 1 rounds after its submission
    assert "the jobs of now (the default) | 31 | 0.06 (0.33) | -0.06 |" in rows[0]
    assert "(oracle)" in rows[1] and "| 0.00 (0.00) | +0.00 |" in rows[1] and "| met | " in rows[1]
    assert "runs: the jobs of now (the default): 1 of 1; the run's later submissions (oracle): 1 of 1." in section
