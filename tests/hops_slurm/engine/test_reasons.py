"""Every pending Hops job has a reason at every moment, in one vocabulary: the engine's reasons
(hops_slurm/engine/reasons.py), the queue summary users read (queue_summary.py), the metric
``hops_pending_jobs{reason}``, the job records and the log (issue 35). Against the stand-in slurmctld."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine import queue_summary
from hops_slurm.engine.bookkeeping import job_record
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.reasons import LOG_CHANGES_MAX, Reasons, counts, waiting_reason
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_PROBING, JobState
from hops_slurm.slurm.api import SlurmJob
from planner.reasons import Code, Why
from standin import StandInSlurm

JOB4 = "gpus=4 samples=100000 batch-size=8 model=resnet18"


def _engine(tmp_path: Path, api: StandInSlurm, *, forecast: bool = False) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.3, "probe_size": "tiny", "forecast": forecast},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    e = Engine(config, api=api).open()
    assert e.state is not None
    e.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
    return e


def _state(job_id: str = "1", **kw: object) -> JobState:
    kw.setdefault("profile", PROFILE_DONE)
    return JobState(job_id=job_id, name="n", user="alice", directives="gpus=1", submit_time=0.0, first_seen=0.0,
                    last_seen=0.0, last_state="PENDING", **kw)  # type: ignore[arg-type]


def _seen(job_id: str = "1", **kw: object) -> SlurmJob:
    return SlurmJob(job_id=job_id, state="PENDING", **kw)  # type: ignore[arg-type]


def test_what_keeps_a_job_out_of_any_planning_comes_first() -> None:
    planned = Why(Code.OUTSIDE_WINDOW, "3 job(s) ahead")
    assert waiting_reason(_state(aside="bad directives"), _seen(reason="JobHeldUser"), planned, 0.0) \
        == Why(Code.SET_ASIDE, "bad directives")
    assert waiting_reason(_state(), _seen(reason="JobHeldUser"), planned, 0.0).code is Code.HELD_USER
    assert waiting_reason(_state(), _seen(dependency="afterok:12(unfulfilled)"), planned, 0.0).code is Code.DEPENDENCY
    assert waiting_reason(_state(), _seen(dependency="afterok:12(fulfilled)"), planned, 0.0) == planned
    assert waiting_reason(_state(), _seen(eligible_time=100.0), planned, 50.0).code is Code.BEGIN_TIME
    assert waiting_reason(_state(profile=PROFILE_PROBING), _seen(), planned, 0.0).code is Code.PROFILING
    assert waiting_reason(_state(), _seen(), planned, 0.0) == planned
    assert waiting_reason(_state(), _seen(), None, 0.0).code is Code.NEW  # never no reason


def test_reasons_follow_the_latest_planning_and_drop_ended_jobs(caplog: pytest.LogCaptureFixture) -> None:
    r = Reasons()
    r.take({"queue": ["2", "1"], "reasons": {"1": Why(Code.OUTSIDE_WINDOW, "1 job(s) ahead").as_dict(),
                                             "2": {"code": "bogus"}}})
    tracked = {"1": _state("1"), "2": _state("2"), "3": _state("3")}
    listing = {"1": _seen("1"), "2": _seen("2"), "3": SlurmJob(job_id="3", state="RUNNING")}
    now = r.current(tracked, listing, 0.0)
    assert now == {"1": Why(Code.OUTSIDE_WINDOW, "1 job(s) ahead"), "2": Why(Code.NEW)}  # the running one has none
    assert r.order == ["2", "1"]
    with caplog.at_level(logging.INFO, logger="hops_slurm.engine.reasons"):
        assert sorted(r.log_changes(now)) == ["1", "2"]
        assert r.log_changes(now) == []  # nothing changed: nothing logged
    assert "job 1 waits: HopsQueue" in caplog.text
    assert r.last_name("1") == "HopsQueue" and r.last_name("9") == ""
    r.current({"2": tracked["2"]}, listing, 0.0)
    assert "1" not in r.planned


def test_many_changes_are_logged_in_a_bounded_number_of_lines(caplog: pytest.LogCaptureFixture) -> None:
    many = {str(i): Why(Code.NEW) for i in range(500)}
    with caplog.at_level(logging.INFO, logger="hops_slurm.engine.reasons"):
        Reasons().log_changes(many)
    assert len(caplog.records) == LOG_CHANGES_MAX + 1 and "480 more jobs" in caplog.records[-1].getMessage()


def test_counts_name_every_code() -> None:
    got = counts([Why(Code.NEW), Why(Code.NEW), Why(Code.LIMIT, "AssocGrpGRES: x")])
    assert got[Code.NEW.value] == 2 and got[Code.LIMIT.value] == 1 and set(got) == {c.value for c in Code}


def test_the_summary_is_bounded_and_ordered_by_the_queue() -> None:
    tracked = {str(i): _state(str(i)) for i in range(5)}
    listing = {str(i): _seen(str(i), user="u\x1b[31m", name="x" * 999, partition="hops") for i in range(4)}
    listing["4"] = SlurmJob(job_id="4", state="RUNNING", nodes=("n1",), start_time=7.0)
    s = queue_summary.build(tracked, listing, {"2": Why(Code.NO_FIT, "needs 4 GPU(s)")}, ["2", "0"], 10.0, 30.0)
    assert [r.job_id for r in s.jobs] == ["2", "0", "1", "3", "4"]
    assert [r.position for r in s.jobs] == [1, 2, None, None, None]
    assert s.jobs[0].reason == "HopsResources" and s.jobs[1].reason == "HopsNew"  # never no reason
    assert s.jobs[4].reason == "None" and s.jobs[4].start == 7.0 and s.jobs[4].nodes == "n1"
    assert "\x1b" not in s.jobs[0].user and len(s.jobs[0].name) == queue_summary.TEXT_MAX


def test_the_summary_says_how_often_and_why_a_job_was_preempted() -> None:
    js = _state("1")
    js.placements = [{"start": 1.0, "end": 2.0, "config": {"n1": 4}, "preempted": True, "cause": "moved-type"},
                     {"start": 3.0, "end": 4.0, "config": {"n2": 4}, "preempted": True, "cause": "requeued"},
                     {"start": 5.0, "end": 6.0, "config": {"n2": 4}, "preempted": True}]  # kept before causes were
    fresh = _state("2")
    listing = {"1": _seen("1"), "2": _seen("2")}
    s = {r.job_id: r for r in queue_summary.build({"1": js, "2": fresh}, listing, {}, [], 10.0, 30.0).jobs}
    assert (s["1"].preemptions, s["1"].preempted) == (3, "")
    js.placements.pop()
    s = {r.job_id: r for r in queue_summary.build({"1": js, "2": fresh}, listing, {}, [], 10.0, 30.0).jobs}
    assert (s["1"].preemptions, s["1"].preempted) == (2, "requeued") and (s["2"].preemptions, s["2"].preempted) == (0, "")


def test_a_refresh_and_a_round_publish_every_pending_jobs_reason(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    api = StandInSlurm(starts=True, nodes=2, gpus_per_node=4)
    for j in ("1", "2", "3", "4"):
        api.submit(j, JOB4, user="root")
    api.submit("5", "gpus=64 samples=100000 batch-size=8 model=resnet18")  # more GPUs than the cluster has
    engine = _engine(tmp_path, api)
    try:
        with caplog.at_level(logging.INFO, logger="hops_slurm.engine.reasons"):
            engine.refresh()
            engine.round()
            engine.refresh()
        path = engine.state_dir / queue_summary.NAME
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644 and os.stat(path).st_uid == os.geteuid()
        summary = queue_summary.read(path)
        pending = {r.job_id: r for r in summary.jobs if r.state == "PENDING"}
        running = {r.job_id for r in summary.jobs if r.state == "RUNNING"}
        assert len(running) == 2 and set(pending) | running == {"1", "2", "3", "4", "5"}
        for row in pending.values():
            assert row.reason and Code(row.reason_code) and row.reason_code != Code.NEW.value
        assert {pending[j].reason_code for j in pending if j != "5"} <= {Code.OUTSIDE_WINDOW.value, Code.NO_FIT.value}
        assert pending["5"].reason_code in (Code.UNSERVABLE.value, Code.SET_ASIDE.value)
        # the metric counts the same reasons; the log named each job once
        total = sum(engine.metrics.registry.get_sample_value("hops_pending_jobs", {"reason": c.value}) or 0.0
                    for c in Code)
        assert total == len(pending)
        for j in pending:
            assert f"job {j} waits: " in caplog.text
        # nothing of the engine's own bookkeeping is in the file users read
        text = path.read_text()
        assert "directives" not in text and "resnet18" not in text and "samples" not in text
        assert json.loads(text)["hops_queue_summary"] == queue_summary.FORMAT
        # the records carry the reason of the jobs still pending
        record = job_record(engine.res, engine.tracked["3"])
        assert record.reason == pending["3"].reason
    finally:
        engine.close()


@pytest.mark.parametrize("on", [False, True])
def test_forecasts_only_when_switched_on(tmp_path: Path, on: bool) -> None:
    api = StandInSlurm(starts=True, nodes=1, gpus_per_node=4)
    for j in ("1", "2", "3"):
        api.submit(j, JOB4, user="root")
    engine = _engine(tmp_path, api, forecast=on)
    try:
        engine.refresh()
        engine.round()
        engine.refresh()
        engine.round()
        if on:  # the forecast runs beside the round, in its worker: the next summary step publishes it
            worker = engine.reasons.forecaster
            assert worker is not None
            end = time.monotonic() + 60.0
            while worker.child is not None and time.monotonic() < end:
                worker.poll()
                time.sleep(0.02)
            engine.refresh()
        rows = [r for r in queue_summary.read(engine.state_dir / queue_summary.NAME).jobs if r.state == "PENDING"]
        assert len(rows) == 2
        for row in rows:
            if not on:
                assert row.start is None and row.start_early is None and row.start_late is None
                continue
            # the queue's order: one 4-GPU job at a time, each after the one before it
            assert row.start is not None and row.start > engine.now() - 1.0, row
            assert row.start_early is not None and row.start_early <= row.start
            assert row.start_late is None or row.start <= row.start_late
        if on:
            assert rows[0].start < rows[1].start  # type: ignore[operator]
            # the job's record carries its first forecast start (the report and the demo show it)
            for row in rows:
                assert job_record(engine.res, engine.tracked[row.job_id]).forecast_start is not None
    finally:
        engine.close()
