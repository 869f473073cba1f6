"""A refresh writes a job's state row and JobRecord only when the job changed beyond the clock
(hops_slurm.engine.written): an unchanged job is not rewritten, a change of anything else is, an ended job
always is, the clock fields at least once per round length, and a restart in between loses nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.state import JobState
from hops_slurm.engine.written import Written, fingerprint
from standin import StandInSlurm

JOB = "gpus=1,2 samples=1000 batch-size=8 model=resnet18"
T0 = 10_000.0


def _job(**kw: object) -> JobState:
    base: dict[str, object] = dict(job_id="7", name="j", user="u", directives=JOB, submit_time=0.0, first_seen=0.0,
                                   last_seen=100.0, last_state="RUNNING", config={"n1": 2},
                                   placements=[{"start": 50.0, "end": None, "config": {"n1": 2}}])
    base.update(kw)
    return JobState(**base)  # type: ignore[arg-type]


def test_only_a_change_beyond_the_clock_or_a_round_makes_a_job_due() -> None:
    w = Written(every=360.0)
    js = _job()
    assert [j for j, _ in w.due([js], 100.0)] == [js]  # never written: due
    w.wrote(w.due([js], 100.0), 100.0)
    js.last_seen, js.run_time, js.gpu_seconds, js.processed = 130.0, 80.0, 160.0, 5e4  # the clock alone
    assert w.due([js], 130.0) == []
    js.placements[-1]["rec_samples"] = 800.0  # a change inside a placement (in place, as note_window makes it)
    due = w.due([js], 160.0)
    assert [j for j, _ in due] == [js]
    w.wrote(due, 160.0)
    assert w.due([js], 490.0) == []
    assert [j for j, _ in w.due([js], 520.0)] == [js]  # a round since it was written: the clock fields go out
    for change in ({"aside": "bad"}, {"age_factor": 2.0}, {"profile": "done"}, {"last_state": "PENDING"},
                   {"config": {"n1": 1}}, {"checkpoint_at": 120.0}):
        other = _job(**change)
        assert fingerprint(other) != fingerprint(_job()), change
    ended = _job(ended=170.0)
    w.wrote(w.due([ended], 170.0), 170.0)
    assert w.rows == {}  # ended: written and forgotten
    assert fingerprint(_job(wait=5.0, last_seen=1.0, run_time=9.0, gpu_seconds=9.0, processed=3.0)) == fingerprint(_job())


def _engine(tmp_path: Path, api: StandInSlurm) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.3, "probe_size": "tiny"},
                           "scheduler": {"round_length": 360, "queue_refresh": 30},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    e = Engine(config, api=api).open()
    assert e.state is not None
    e.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
    return e


def _row(tmp_path: Path, job_id: str) -> tuple[float, float, float | None]:
    """(last_seen, run_time, ended) of the job's row on disk, as another process reads it."""
    db = sqlite3.connect(tmp_path / "state" / "engine.sqlite")
    try:
        return db.execute("SELECT last_seen, run_time, ended FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
    finally:
        db.close()


def _record(tmp_path: Path, job_id: str) -> str:
    db = sqlite3.connect(tmp_path / "state" / "records.sqlite")
    try:
        return db.execute("SELECT record FROM job_records WHERE job_id = ?", (job_id,)).fetchone()[0]
    finally:
        db.close()


def test_an_unchanged_job_is_not_rewritten_until_a_round_passed_and_a_restart_loses_no_time(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True)
    api.clock = T0
    api.submit("1", JOB)
    api.submit("2", JOB)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh()
        engine.round()
        api.clock = T0 + 30
        engine.refresh()  # both run now: their rows and records change
        started = _row(tmp_path, "1")
        record = _record(tmp_path, "1")
        assert started[0] == T0 + 30 and engine.tracked["1"].last_state == "RUNNING"
        for k in range(2, 6):  # refreshes that only move the clock: nothing written
            api.clock = T0 + 30 * k
            engine.refresh()
            assert _row(tmp_path, "1") == started and _record(tmp_path, "1") == record
        assert engine.tracked["1"].last_seen == T0 + 150  # while the engine's own view moved on
        api.end("2")
        api.clock = T0 + 180
        engine.refresh()  # job 2 ended: written at once; job 1 still the same
        assert _row(tmp_path, "2")[2] is not None and _row(tmp_path, "1") == started
        api.clock = T0 + 30 + 360
        engine.refresh()  # a round since job 1 was written: its clock fields go out
        assert _row(tmp_path, "1")[0] == T0 + 390
        api.clock = T0 + 420
        engine.refresh()
        behind = _row(tmp_path, "1")
        assert behind[0] == T0 + 390
        run_time = engine.tracked["1"].run_time
    finally:
        engine.close()
    # a new engine process on the same state: it accounts from the last_seen it finds, the same seconds in all
    again = _engine(tmp_path, api)
    try:
        api.clock = T0 + 450
        again.refresh()
        assert again.tracked["1"].run_time == run_time + 30.0  # what one engine never restarted would hold
    finally:
        again.close()
