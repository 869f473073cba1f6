"""tools.bench.forecast_bench: the band given after the run as the daemon gives it, and its coverage."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.forecast_arrivals import MARK
from hops_slurm.sim.runner import Options
from hops_slurm.sim.workload import load_workload
from hops_slurm.tools.bench.forecast_bench import (ROUND, Expected, JobOutcome, Made, Run, covered, later_submissions,
                                                   load_run, record_path, replay_band, run, save_run, summary, usable,
                                                   width)
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


def test_the_expected_arrivals_are_read_from_the_variable_and_name_their_record(tmp_path: Path) -> None:
    assert Expected.parse("0") == Expected() and Expected().tag == ""
    assert Expected.parse("3600") == Expected(3600.0) and Expected(3600.0).tag == "_a3600"
    assert Expected.parse("3600:10800").tag == "_a3600h10800"
    assert Expected.parse("oracle").oracle and Expected.parse("oracle").tag == "_oracle"
    for bad in ("an hour", "-5", "1:2:3", "1e9"):
        with pytest.raises(HopsError, match="HOPS_BENCH_FORECAST_ARRIVALS"):
            Expected.parse(bad)
    # the record of a Hops run names what it expected; Slurm's expected start has no arrivals to expect
    assert record_path(tmp_path, "c", "w", 0, "hops", 20.0, Expected(oracle=True)).name == "c_w_s0_hops_b20_oracle.json"
    assert record_path(tmp_path, "c", "w", 0, "slurm-backfill", 20.0, Expected(oracle=True)).name == \
        "c_w_s0_slurm-backfill_b20.json"


def test_the_oracle_knows_every_job_of_the_run_fresh_at_its_submission() -> None:
    cluster = load_cluster("paper-64")
    specs = load_workload("gavel:jobs=6,rate=6", 0, cluster_gpus=cluster.total_gpus)
    got = later_submissions(cluster, specs, Options(), "hops")
    assert sorted(v.job_id for v in got) == sorted(f"{s.job_id}{MARK}0" for s in specs)
    by_id = {s.job_id: s for s in specs}
    for v in got:
        spec = by_id[v.job_id.split(MARK)[0]]
        assert v.submit_time == pytest.approx(spec.arrival) and v.requirements == spec.requirements
        assert v.current is None and v.wait == 0.0 and v.done_samples == 0.0 and v.preemptions == 0
    assert [v.submit_time for v in got] == sorted(v.submit_time for v in got)
