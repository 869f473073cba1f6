"""hops_slurm.engine.honesty_review without Slurm: processed samples from records and run time, the users'
history in engine.sqlite, the action on a job past its declaration, the queue columns, the job's budget.
The rules of processed samples per run are tested in test_processed.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from estimator.honesty import EXCEEDED, OK, REAGED, HonestyParams, Verdict
from hops_slurm.engine.honesty_review import (BUDGET_ENV, COMMENT_PREFIX, act, add_records, budget_env, processed_samples,
                                       record_outcome, review)
from hops_slurm.engine.known_jobs import known_job
from hops_slurm.core.jobview import Estimate, job_view
from hops_slurm.core.processed import Window
from hops_slurm.engine.queue import parse_format, queue_rows, render
from hops_slurm.engine.state import PROFILE_DONE, EngineState, JobState
from hops_slurm.slurm.api import SlurmJob

DIRECTIVES = "gpus=1,2,4 samples=1000 batch-size=8 model=resnet18 lr=0.1@4"  # declares 1000 samples


def _job(job_id: str = "7", user: str = "alice", run_time: float = 0.0) -> JobState:
    """A job submitted at 0; one that ran has been running on n1 since 0 (``run_time`` s by now)."""
    js = JobState(job_id=job_id, name="train", user=user, directives=DIRECTIVES, submit_time=0.0, first_seen=0.0,
                  last_seen=run_time, last_state="RUNNING" if run_time else "PENDING", run_time=run_time)
    if run_time:
        js.placements, js.config, js.first_start = [{"start": 0.0, "end": None, "config": {"n1": 4}}], {"n1": 4}, 0.0
    js.profile, js.age = PROFILE_DONE, 100.0
    return js


def _review(jobs: list[JobState], db: EngineState, rate: float | None, now: float = 100.0) -> dict[str, Verdict]:
    return review(jobs, db, HonestyParams(), lambda js, config: rate, now=now, restart_of=lambda js: 10.0)


def test_processed_counts_records_and_the_time_since_but_not_the_start() -> None:
    js = _job(run_time=50.0)
    # records: 600 samples in 20 s (30/s), the first window from 5 s after the start
    assert add_records(js, [Window(300.0, 10.0, end=15.0), Window(300.0, 10.0, end=25.0)], now=25.0) == [5.0]
    assert js.recorded_samples == 600.0 and js.recorded_seconds == 20.0
    rate = lambda config: 10.0  # noqa: E731 - the estimate is not needed: the records show the rate
    assert processed_samples(js, 50.0, rate, restart=60.0) == 600.0 + 30.0 * 25.0  # since its last record
    silent = _job(run_time=50.0)  # a job that writes no records at all: time less its restart x estimate
    assert processed_samples(silent, 50.0, lambda config: 40.0, restart=10.0) == 40.0 * 40.0
    assert processed_samples(silent, 50.0, lambda config: None, restart=10.0) == 0.0


def test_records_from_before_they_were_kept_per_run_still_count() -> None:
    js = _job(run_time=50.0)
    js.recorded_samples, js.recorded_seconds = 900.0, 30.0  # an engine state from before this version
    assert processed_samples(js, 50.0, lambda config: 30.0, restart=0.0) == 900.0  # not its time again
    add_records(js, [Window(300.0, 10.0, end=45.0)], now=45.0)
    assert processed_samples(js, 50.0, lambda config: 30.0, restart=0.0) == 900.0 + 300.0 + 30.0 * 5.0


def test_review_reages_an_overrunning_job_and_its_owners_pending_ones(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    liar, queued, other = _job("1", run_time=100.0), _job("2"), _job("3", user="bob")
    verdicts = _review([liar, queued, other], db, 30.0, now=110.0)  # (110 - 10 restart) x 30: 3000 of 1000
    assert verdicts["1"].verdict == EXCEEDED and liar.age_factor == pytest.approx(6.0)  # 3000 x 2 / 1000
    assert verdicts["2"].verdict == OK and queued.age_factor == pytest.approx(3.0)  # alice's history: ratio 3
    assert "history" in queued.honesty
    assert other.age_factor == 1.0 and other.honesty == ""
    assert db.meta("history:alice") == "x3" and db.meta("history:bob") == "-"
    view = job_view(known_job(queued, None), Estimate(age=100.0), 0.0, fallback_age=1.0)
    assert view.age == pytest.approx(300.0)


def test_history_survives_in_the_state_and_forgives_small_overruns(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    for i, ratio in enumerate((1.03, 0.5)):
        js = _job(str(i), run_time=10.0)
        add_records(js, [Window(1000.0 * ratio, 10.0, end=10.0)], now=10.0)
        js.placements[0]["end"], js.ended = 10.0, 100.0 + i
        record_outcome(db, js)
    never_ran = _job("9")
    never_ran.ended = 200.0
    record_outcome(db, never_ran)
    db.close()
    db = EngineState(tmp_path / "engine.sqlite")
    assert db.outcomes("alice", 20) == [(1000.0, pytest.approx(1030.0)), (1000.0, 500.0)]
    new = _job("5")
    _review([new], db, None)
    assert new.age_factor == 1.0


def test_an_old_state_database_gains_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "engine.sqlite"
    db = EngineState(path)
    db.save(_job())
    db.close()
    con = sqlite3.connect(path)
    for col in ("recorded_samples", "recorded_seconds", "processed", "age_factor", "honesty"):
        con.execute(f"ALTER TABLE jobs DROP COLUMN {col}")
    con.commit()
    con.close()
    js = EngineState(path).get("7")
    assert js is not None and js.age_factor == 1.0 and js.honesty == ""


def _verdict(kind: str) -> Verdict:
    return Verdict(age=600.0, verdict=kind, ratio=3.0, factor=6.0, reason="processed 3000 samples, 3x its declared 1000")


@pytest.mark.parametrize("action", ["none", "warn", "release", "requeue-hold"])
def test_action_on_a_job_past_its_declaration(action: str) -> None:
    calls: list[str] = []
    js = _job(run_time=100.0)
    done = act(js, _verdict(EXCEEDED), action, comment="", write_comment=lambda t: calls.append(f"comment {t}"),
               requeue_hold=lambda: calls.append("requeuehold"),
               set_aside=lambda j, r: calls.append(f"aside {r}"))
    reason = "declared samples exceeded: processed 3000 samples, 3x its declared 1000"
    expected = {"none": [], "warn": [f"comment {COMMENT_PREFIX}{reason}"], "release": [f"aside {reason}"],
                "requeue-hold": ["requeuehold", f"aside {reason}"]}[action]
    assert calls == expected and done == ("warned" if action == "warn" else "" if action == "none" else action)


def test_no_action_below_the_margin_and_no_second_warning() -> None:
    calls: list[str] = []
    kw = dict(write_comment=calls.append, requeue_hold=lambda: calls.append("rq"), set_aside=lambda j, r: calls.append(r))
    assert act(_job(), _verdict(REAGED), "requeue-hold", comment="", **kw) == ""  # type: ignore[arg-type]
    assert act(_job(), _verdict(EXCEEDED), "warn", comment=COMMENT_PREFIX + "declared samples exceeded: x",
               **kw) == ""  # type: ignore[arg-type]
    assert calls == []


def test_queue_shows_done_history_and_the_reason(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    liar = _job("1", run_time=100.0)
    _review([liar], db, 30.0, now=110.0)
    db.save(liar)
    db.set_meta("last_plan", json.dumps({"time": 1.0, "priorities": {}, "window": [], "assignments": {}}))
    rows = queue_rows(db, [SlurmJob(job_id="1", state="PENDING", priority=0)], now=0.0)
    text = render(rows, parse_format("jobid,estrun,done,history,plan"), parsable=True)
    assert text.splitlines()[0] == "JOBID|ESTRUN|DONE|HISTORY|PLAN"
    assert text.splitlines()[1].startswith("1|00:10:00|3.00|x3|- (declaration: processed 3000 samples, 3x its declared")


def test_the_job_environment_carries_its_budget() -> None:
    assert budget_env(_job()) == {BUDGET_ENV: "1000"}
    broken = _job()
    broken.directives = "garbage"
    assert budget_env(broken) == {}


def test_a_preempted_job_keeps_what_it_processed(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    js = _job(run_time=100.0)  # ran 100 s without records, its start 10 s, at 30/s: 2700
    _review([js], db, 30.0)
    assert js.processed == 2700.0
    _review([js], db, None)  # no estimate at this refresh, no records
    assert js.processed == 2700.0 and js.age_factor == pytest.approx(5.4)
