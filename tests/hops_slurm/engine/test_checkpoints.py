"""The engine's side of preemption with notice (hops_slurm.engine.checkpoints): checkpoint marks read from a
job's runtime-record file (bounded, validated; what a job writes never stops the round), whether a run
listens and has answered its notice, the work a requeue would lose (KnownJob.unsaved), and the record
of each preemption (placement -> PlacementRecord -> records.sqlite -> hops-slurm report)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hops_slurm.engine.checkpoints import Marks, answered, listens, note_stops, placement_notice, unsaved
from hops_slurm.engine.known_jobs import known_job
from hops_slurm.engine.runtime_records import MAX_LINE, RUNTIME_FILE, ingest_job
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner, make_place
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report.accounting import build_rows
from hops_slurm.report.source import SqliteSource, write_sqlite
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.enact import EnactResult
from hops_slurm.slurm.notice import Notice
from profiler.records import CheckpointMark, RuntimeRecord

ME = Owner("me", os.getuid(), os.getgid())
START = 1_800_000_000.0  # the job's current run started here


def mark(event: str, at: float, **fields: object) -> str:
    return CheckpointMark(event=event, measured_at=datetime.fromtimestamp(at, timezone.utc), **fields).model_dump_json() + "\n"  # type: ignore[arg-type]


class Place:
    """A job's state, its place and runtime file, and :class:`Marks` over them."""

    def __init__(self, tmp_path: Path, now: float = START + 100) -> None:
        self.state = EngineState(tmp_path / "engine.sqlite")
        self.js = JobState(job_id="7", name="j", user="me", directives="gpus=1,2 samples=1000 batch-size=8 model=resnet18",
                           submit_time=START - 60, first_seen=START - 60, last_seen=START, last_state="RUNNING",
                           config={"n1": 1}, placements=[{"start": START, "end": None, "config": {"n1": 1}}])
        self.file = make_place(tmp_path / "metrics", "7", ME) / RUNTIME_FILE
        self.now = now
        self.marks = Marks(self.state, tmp_path / "metrics", lambda: {"7": self.js}, lambda user: ME, lambda: self.now)

    def write(self, text: str) -> None:
        with self.file.open("a") as fh:
            fh.write(text)

    def seen(self, restarts: int = 0) -> SlurmJob:
        return SlurmJob(job_id="7", state="RUNNING", start_time=START, restart_count=restarts, gpu_alloc={"n1": (0,)})


def test_marks_say_whether_this_run_listens_and_whether_a_notice_was_answered(tmp_path: Path) -> None:
    p = Place(tmp_path)
    assert not p.marks.listening(p.seen()) and not p.marks.answered("7", START + 50)
    p.write(mark("listening", START + 1, signal="USR1", run=1))
    assert p.marks.listening(p.seen(restarts=1)) and not p.marks.listening(p.seen(restarts=2))  # an earlier run
    p.write(mark("saved", START + 30, samples=300))
    assert not p.marks.answered("7", START + 50)  # a regular checkpoint, before the notice
    p.write(mark("saved", START + 52, samples=320, notice=True))
    assert p.marks.answered("7", START + 50) and not p.marks.answered("7", START + 80)  # not a later notice
    # what the marks said is saved with the job at once (the offsets already passed them)
    saved = p.state.get("7")
    assert saved is not None and (saved.listen_run, saved.checkpoint_at, saved.answer_at) == (1, START + 52, START + 52)
    assert p.marks.answered("unknown", 0.0) is False


def test_unsaved_is_the_work_since_the_last_checkpoint_and_none_after_an_answered_notice(tmp_path: Path) -> None:
    p = Place(tmp_path)
    now = START + 100
    assert unsaved(p.js, p.seen(), now) == 100  # no checkpoint in this run: since it started
    p.write(mark("saved", START - 500, samples=10))  # one of an earlier run: this run restarted from it
    p.marks.read(p.js)
    assert unsaved(p.js, p.seen(), now) == 100
    p.write(mark("saved", START + 70, samples=700))
    p.marks.read(p.js)
    assert unsaved(p.js, p.seen(), now) == 30
    assert known_job(p.js, p.seen(), now=now).unsaved == 30  # what the planner gets
    p.js.notice_at = START + 80  # given notice, answered with a checkpoint: it checkpoints on notice
    p.write(mark("listening", START + 1, signal="USR1") + mark("saved", START + 81, samples=800, notice=True))
    p.marks.read(p.js)
    assert listens(p.js, p.seen()) and answered(p.js, START + 80)
    assert unsaved(p.js, p.seen(), now) == 0
    assert unsaved(p.js, p.seen(restarts=1), now) == pytest.approx(19)  # a new run that has not said it listens
    assert unsaved(p.js, None, now) == 0 and unsaved(p.js, p.seen().model_copy(update={"state": "PENDING"}), now) == 0


def test_hostile_marks_are_refused_bounded_and_never_stop_the_refresh(tmp_path: Path) -> None:
    p = Place(tmp_path)
    p.write("not json at all\n")
    p.write('{"kind":"checkpoint","event":"saved","samples":1e400}\n')
    p.write('{"kind":"checkpoint","event":"saved","samples":-3}\n')
    p.write('{"kind":"checkpoint","event":"listening","samples":5,"signal":"USR1"}\n')
    p.write('{"kind":"checkpoint","event":"saved","pad":"' + "x" * (MAX_LINE + 10) + '"}\n')
    p.write(mark("saved", START + 10**7, samples=5))  # from the future: counted as now
    p.write('{"kind":"checkpoint","event":"saved","samp')  # incomplete: left for the next read
    p.marks.read(p.js)
    assert p.js.checkpoint_at == p.now and p.js.answer_at is None and p.js.listen_run == -1
    p.write('les":9,"notice":true,"measured_at":"2027-01-15T08:00:40Z"}\n')
    p.marks.read(p.js)
    assert p.js.answer_at == pytest.approx(datetime(2027, 1, 15, 8, 0, 40, tzinfo=timezone.utc).timestamp())


def test_the_runtime_reader_passes_marks_by_and_still_ingests_its_records(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import profiler.ingest

    p = Place(tmp_path)
    p.js.signature = "me/sig"
    rec = RuntimeRecord(signature="me/sig", gpu_type="a100", node="n1", gpus=1, nodes=1, batch_size=8, steps=10,
                        window_seconds=10.0, throughput=8.0, data_times=[0.0] * 10, sync_waits=[], step_times=[1.0] * 10)
    p.write(mark("listening", START + 1, signal="USR1") + rec.model_dump_json() + "\n" + mark("saved", START + 9, samples=80))
    stored: list[object] = []
    monkeypatch.setattr(profiler.ingest, "ingest_runtime", lambda store, record: stored.append(record))
    report = ingest_job(object(), p.state, tmp_path / "metrics", p.js, {"n1": "a100"}, ME.uid)
    assert report.accepted == 1 and not report.refused and stored == [rec]
    p.marks.read(p.js)  # its own offset: the marks are read too
    assert p.js.listen_run == 0 and p.js.checkpoint_at == START + 9


def test_each_preemption_records_its_notice_checkpoint_and_work_lost(tmp_path: Path) -> None:
    p = Place(tmp_path)
    other = JobState(job_id="8", name="k", user="me", directives="", submit_time=START, first_seen=START,
                     last_seen=START, last_state="RUNNING", placements=[{"start": START, "end": None, "config": {"n2": 1}}])
    third = JobState(job_id="9", name="l", user="me", directives="", submit_time=START, first_seen=START,
                     last_seen=START, last_state="RUNNING", placements=[{"start": START, "end": None, "config": {"n3": 1}}])
    p.write(mark("saved", START + 40, samples=400))
    result = EnactResult(preempted=["7", "8", "9"], notices={
        "7": Notice("7", given_at=START + 90, answered_at=START + 93, decided_at=START + 93),  # answered
        "8": Notice("8", given_at=START + 90, decided_at=START + 120),  # ignored it: requeued at the grace's end
        "9": Notice("9"),  # did not listen: requeued without notice
    })
    why = {"7": "requeued", "8": "moved-type", "9": "other"}
    changed = note_stops({"7": p.js, "8": other, "9": third}, result, p.marks, START + 125, lambda j: why[j])
    assert {js.job_id for js in changed} == {"7", "8", "9"}
    assert p.js.placements[-1] | {} == {"start": START, "end": None, "config": {"n1": 1}, "notice": 3.0,
                                         "checkpoint": True, "lost": 0.0, "cause": "requeued"}
    assert p.js.notice_at == START + 90 and other.notice_at == START + 90 and third.notice_at is None
    assert (other.placements[-1]["notice"], other.placements[-1]["checkpoint"], other.placements[-1]["lost"]) == (30.0, False, 120.0)
    assert (third.placements[-1]["notice"], third.placements[-1]["checkpoint"], third.placements[-1]["lost"]) == (None, False, 125.0)
    # closed as preempted by the next refresh's accounting, then a record, the database and the report
    for js in (p.js, other):
        js.placements[-1].update(end=START + 130, preempted=True)
    records = [JobRecord(job_id=js.job_id, submit=START - 60, state="RUNNING", placements=[
        PlacementRecord(start=pl["start"], end=pl["end"], config=pl["config"], preempted=pl["preempted"],
                        **placement_notice(pl)) for pl in js.placements]) for js in (p.js, other)]
    assert records[0].placements[0].checkpoint_seen and records[0].placements[0].work_lost == 0.0
    db = write_sqlite(tmp_path / "records.sqlite", records)
    loaded = {j.job_id: j for j in SqliteSource(db).load().jobs}
    assert loaded["8"].placements[0].notice == 30.0 and loaded["8"].placements[0].work_lost == 120.0
    rows = {r.job_id: r for r in build_rows(list(loaded.values()), START + 200, history=True)}
    assert (rows["7"].notice, rows["7"].checkpointed, rows["7"].lost) == (3.0, 1, 0.0)
    assert (rows["8.0"].notice, rows["8.0"].checkpointed, rows["8.0"].lost) == (30.0, 0, 120.0)
    # why each was preempted: the placement's reason in report --history (the job row's stays sacct's)
    assert (rows["7.0"].reason, rows["8.0"].reason, rows["8"].reason) == ("requeued", "moved-type", "None")
    assert placement_notice({"start": 1.0, "end": 2.0, "config": {}, "preempted": True, "cause": "grown"}) == {"cause": "grown"}
    assert placement_notice({"start": 1.0, "end": 2.0, "config": {}, "cause": "grown"}) == {}  # ended, not preempted
    # a second look at the same run (its placement still open) keeps the cause the requeuing plan gave
    fresh = JobState(job_id="5", name="m", user="me", directives="", submit_time=START, first_seen=START,
                     last_seen=START, last_state="RUNNING", placements=[{"start": START, "end": None, "config": {"n4": 1}}])
    for later in ("moved-type", "other"):
        note_stops({"5": fresh}, EnactResult(preempted=["5"]), None, START + 10, lambda j, c=later: c)
    assert fresh.placements[-1]["cause"] == "moved-type"
    assert placement_notice({"start": 1.0, "config": {}}) == {}  # a placement no planned requeue ended


def test_records_written_before_notices_existed_still_load(tmp_path: Path) -> None:
    old = '{"job_id":"3","submit":1.0,"state":"COMPLETED","placements":[{"start":2.0,"end":3.0,"config":{"n1":1},' \
          '"gpu_type":"a100","preempted":true}]}'
    rec = JobRecord.model_validate_json(old)
    assert rec.placements[0].notice is None and rec.placements[0].work_lost is None and not rec.placements[0].checkpoint_seen
    rows = build_rows([rec], 10.0)
    assert rows[0].notice is None and rows[0].lost is None


def test_a_job_that_listens_and_was_never_given_notice_loses_nothing_but_one_that_ignored_a_notice_does(
        tmp_path: Path) -> None:
    p = Place(tmp_path)
    now = START + 100
    p.write(mark("listening", START + 1, signal="USR1") + mark("saved", START + 40, samples=400))
    p.marks.read(p.js)
    assert listens(p.js, p.seen()) and p.js.notice_at is None
    assert unsaved(p.js, p.seen(), now) == 0  # it will checkpoint on notice
    p.js.notice_at = START + 80  # a notice it did not answer: it does not checkpoint on notice
    assert unsaved(p.js, p.seen(), now) == 60  # since its last checkpoint
