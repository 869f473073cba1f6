"""GPUs in use never above the cluster (issue 21, item 5): the accounting ends a requeued run when the
engine requeued it, a moving job counts once, a timeline above capacity is named (never clipped), and
``report --summary`` gives the same numbers whenever it is run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hops_slurm.core.ledger import JobLedger, account
from hops_slurm.cli import main
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report import metrics, timeline
from hops_slurm.report.summary import summarise

CAPACITY = 8  # two nodes of 4 GPUs


def _record(job_id: str, ledger: JobLedger) -> JobRecord:
    """The record the engine writes of a ledger (:func:`hops_slurm.engine.bookkeeping.job_record`)."""
    return JobRecord(job_id=job_id, submit=0.0, placements=[
        PlacementRecord(start=p["start"], end=p.get("end"), config=p["config"], preempted=bool(p.get("preempted")))
        for p in ledger.placements])


def _requeue_then_fill(requeue_known: bool) -> list[JobRecord]:
    """The demo's round: A (n1) and B (n2) run; at 100.3 the round requeues A and places C on n1, which
    Slurm starts at 102; the refresh at 130 sees A pending and C running."""
    a, b, c = JobLedger(last_seen=0.0), JobLedger(last_seen=0.0), JobLedger(last_seen=0.0)
    account(a, 10.0, "RUNNING", {"n1": 4}, started=5.0)
    account(b, 10.0, "RUNNING", {"n2": 4}, started=5.0)
    account(c, 10.0, "PENDING", {})
    account(a, 130.0, "PENDING", {}, stopped=100.3 if requeue_known else None)
    account(b, 130.0, "RUNNING", {"n2": 4}, started=5.0)
    account(c, 130.0, "RUNNING", {"n1": 4}, started=102.0)
    return [_record("A", a), _record("B", b), _record("C", c)]


def test_a_requeued_run_ends_when_the_engine_requeued_it_so_its_gpus_are_never_counted_twice() -> None:
    jobs = _requeue_then_fill(requeue_known=True)
    steps = timeline.gpus_in_use_steps(jobs, until=130.0)
    assert timeline.peak(steps) == CAPACITY
    assert timeline.timeline_problems(jobs, CAPACITY, 130.0) == []
    assert jobs[0].placements[0].end == 100.0  # Slurm's whole second, never after C's start on those GPUs
    # what the records said before the engine dated requeues: A held n1 until the refresh saw it pending
    before = _requeue_then_fill(requeue_known=False)
    assert timeline.peak(timeline.gpus_in_use_steps(before, until=130.0)) == 12
    assert timeline.above_capacity(timeline.gpus_in_use_steps(before, until=130.0), CAPACITY) == [(102.0, 130.0, 12)]


def test_the_requeued_time_is_wait_not_run_time() -> None:
    a = JobLedger(last_seen=0.0)
    account(a, 10.0, "RUNNING", {"n1": 4}, started=5.0)
    account(a, 130.0, "PENDING", {}, stopped=100.3)
    assert (a.run_time, a.gpu_seconds, a.wait) == pytest.approx((95.0, 380.0, 5.0 + 30.0))


def test_a_move_between_refreshes_ends_the_old_placement_at_the_requeue_before_the_new_start() -> None:
    a = JobLedger(last_seen=0.0)
    account(a, 10.0, "RUNNING", {"n1": 4}, started=5.0)
    account(a, 40.0, "RUNNING", {"n2": 2}, started=33.0, stopped=30.6)  # requeued at 30.6, started on n2 at 33
    assert [(p["start"], p["end"], p["config"]) for p in a.placements] == [
        (5.0, 30.0, {"n1": 4}), (33.0, None, {"n2": 2})]
    assert a.wait == pytest.approx(5.0 + 3.0)
    assert a.gpu_seconds == pytest.approx(25 * 4 + 7 * 2)


def test_a_job_ending_in_the_second_another_starts_on_its_gpus_is_not_counted_past_it() -> None:
    """The demo's 25-of-24 instant: A (n1, 2 GPUs) was last seen running at 160.3 and ended in that
    second (Slurm's end 160, truncated); B started on A's GPUs in the same second (Slurm's start 160)."""
    a, b = JobLedger(last_seen=0.0), JobLedger(last_seen=0.0)
    account(a, 10.0, "RUNNING", {"n1": 2}, started=5.0)
    account(b, 10.0, "PENDING", {})
    account(a, 160.3, "RUNNING", {"n1": 2}, started=5.0)
    account(b, 160.3, "PENDING", {})
    account(a, 165.0, "ENDED", {}, started=5.0, ended=160.0)
    account(b, 165.0, "RUNNING", {"n1": 2}, started=160.0)
    jobs = [_record("A", a), _record("B", b)]
    assert a.placements[0]["end"] == 160.0  # Slurm's second, as B's start is
    assert (a.run_time, a.gpu_seconds) == pytest.approx((155.0, 310.0))
    assert timeline.above_capacity(timeline.gpus_in_use_steps(jobs, until=165.0), 2) == []
    # an end time Slurm cannot mean for this run (before the refresh that saw it running, by more than
    # the truncation) is clamped as before
    c = JobLedger(last_seen=0.0)
    account(c, 10.0, "RUNNING", {"n1": 2}, started=5.0)
    account(c, 50.0, "RUNNING", {"n1": 2}, started=5.0)
    account(c, 60.0, "ENDED", {}, started=5.0, ended=30.0)
    assert c.placements[0]["end"] == 50.0


def test_a_requeue_of_an_earlier_run_is_not_taken_for_the_end_of_this_one() -> None:
    a = JobLedger(last_seen=0.0)
    account(a, 10.0, "RUNNING", {"n1": 4}, started=5.0)
    account(a, 40.0, "PENDING", {}, stopped=2.0)  # before this run began: Slurm requeued it, not the engine
    assert a.placements[0]["end"] == 40.0


def test_records_whose_own_placements_overlap_count_the_job_once_and_say_so() -> None:
    job = JobRecord(job_id="7", submit=0.0, end=100.0, state="COMPLETED", placements=[
        PlacementRecord(start=0.0, end=60.0, config={"n1": 4}, preempted=True),
        PlacementRecord(start=50.0, end=100.0, config={"n2": 4})])
    assert timeline.peak(timeline.gpus_in_use_steps([job], until=100.0)) == 4
    assert metrics.gpu_seconds(job.placements, 0.0, 100.0) == pytest.approx(400.0)
    assert timeline.timeline_problems([job], CAPACITY, 100.0) == ["job 7: its placements overlap for 10 s (counted once)"]


def test_a_timeline_above_the_cluster_is_named_never_clipped() -> None:
    jobs = [JobRecord(job_id=str(i), submit=0.0, placements=[PlacementRecord(start=10.0 * i, end=100.0, config={"n": 6})])
            for i in (1, 2)]
    steps = timeline.gpus_in_use_steps(jobs, until=100.0)
    assert steps == [(10.0, 6), (20.0, 12), (100.0, 0)]
    assert timeline.timeline_problems(jobs, CAPACITY, 100.0) == ["12 GPUs in use on a 8-GPU cluster from 20 to 100"]


# ----- report --summary: the records' own window -----------------------------------------------------
LIVE = [  # epoch-clock records of a finished run: 8 GPUs, 16:40 to 17:00
    JobRecord(job_id="1", submit=1_800_000_000.0, start=1_800_000_060.0, end=1_800_000_660.0, state="COMPLETED",
              age_estimate=300.0, placements=[PlacementRecord(start=1_800_000_060.0, end=1_800_000_660.0, config={"n1": 4})]),
    JobRecord(job_id="2", submit=1_800_000_000.0, start=1_800_000_000.0, end=1_800_001_200.0, state="COMPLETED",
              age_estimate=900.0, placements=[
                  PlacementRecord(start=1_800_000_000.0, end=1_800_000_600.0, config={"n2": 4}, preempted=True),
                  PlacementRecord(start=1_800_000_600.0, end=1_800_001_200.0, config={"n1": 2, "n2": 2})]),
]


def test_summary_utilisation_does_not_depend_on_when_it_is_computed() -> None:
    want = (600 * 4 + 600 * 4 + 600 * 4) / (8 * 1200)
    for now in (1_800_001_200.0, 1_800_005_000.0, 1_900_000_000.0):
        s = summarise(LIVE, [], now, total_gpus=8)
        assert (s.window_start, s.window_end, s.window) == (1_800_000_000.0, 1_800_001_200.0, None)
        assert s.gpu_utilisation == pytest.approx(want)
        assert s.all.finished == 2
    # an asked window still ends at "now": that one moves with the clock, by request
    assert summarise(LIVE, [], 1_800_005_000.0, window=86400.0, total_gpus=8).gpu_utilisation == pytest.approx(
        7200 / (8 * 5000))


def test_report_summary_is_the_same_whenever_it_is_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps({"kind": "job", **j.model_dump(mode="json")}) + "\n" for j in LIVE))
    got = []
    for wall in (1_800_001_300.0, 1_800_090_000.0, 1_850_000_000.0):
        monkeypatch.setattr("hops_slurm.cli.report_cmd.time.time", lambda wall=wall: wall)
        assert main(["report", "--records", str(path), "--summary", "--json", "--total-gpus", "8"]) == 0
        got.append(json.loads(capsys.readouterr().out)["summary"])
    assert [g["gpu_utilisation"] for g in got] == [pytest.approx(0.75)] * 3
    assert {(g["window_start"], g["window_end"]) for g in got} == {(1_800_000_000.0, 1_800_001_200.0)}
    assert main(["report", "--records", str(path), "--summary", "--utc", "--total-gpus", "8"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == ("Window 2027-01-15T08:00:00 .. 2027-01-15T08:20:00 "
                                    "(00:20:00, the records': first submission to last end)")
    assert "GPU utilisation      75.0% of 8 GPUs" in text
