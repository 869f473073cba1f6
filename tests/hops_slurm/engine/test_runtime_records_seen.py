"""A job's runtime file is opened only when it may hold something new (hops_slurm.engine.runtime_records.SeenFiles):
an unchanged file is not read again, an appended one is, a truncated one is read on from its new end, a read cut
at MAX_READ goes on at the next look, and a file replaced by another inode, a link or a FIFO is read (and refused)
as before."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

import hops_slurm.engine.runtime_records as rr
import profiler.ingest
from hops_slurm.engine.checkpoints import Marks
from hops_slurm.engine.runtime_records import MAX_READ, RUNTIME_FILE, SeenFiles, ingest_job
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner, UnsafeFile, make_place
from profiler.records import CheckpointMark, RuntimeRecord

ME = Owner("me", os.getuid(), os.getgid())
START = 1_800_000_000.0


def _record(steps: int) -> str:
    """A valid runtime record of job 7 on n1, ``steps`` steps (so each line is told apart by its samples)."""
    return RuntimeRecord(signature="me/sig", gpu_type="a100", node="n1", gpus=1, nodes=1, batch_size=8, steps=steps,
                         window_seconds=float(steps), throughput=8.0, data_times=[0.0] * steps, sync_waits=[],
                         step_times=[1.0] * steps,
                         measured_at=datetime.fromtimestamp(START + 50, timezone.utc)).model_dump_json() + "\n"


class Job:
    """Job 7 running on n1 since START, its place and runtime file, what the store received, and how often the
    file was opened."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = tmp_path / "metrics"
        self.state = EngineState(tmp_path / "engine.sqlite")
        self.js = JobState(job_id="7", name="j", user="me", directives="gpus=1 samples=1000 batch-size=8 model=resnet18",
                           submit_time=START - 60, first_seen=START - 60, last_seen=START + 3000, last_state="RUNNING",
                           config={"n1": 1}, placements=[{"start": START, "end": None, "config": {"n1": 1}}],
                           run_time=3000.0, gpu_seconds=3000.0, signature="me/sig")
        self.file = make_place(self.root, "7", ME) / RUNTIME_FILE
        self.file.touch()
        self.seen = SeenFiles()
        self.stored: list[int] = []  # steps of each record the store received
        self.opened = 0
        monkeypatch.setattr(profiler.ingest, "ingest_runtime", lambda store, rec: self.stored.append(rec.steps))
        real = rr.read_owned_stat

        def counting(*args: object, **kw: object) -> object:
            self.opened += 1
            return real(*args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(rr, "read_owned_stat", counting)

    def write(self, text: str, mode: str = "a") -> None:
        with self.file.open(mode) as fh:
            fh.write(text)

    def ingest(self) -> int:
        return ingest_job(object(), self.state, self.root, self.js, {"n1": "a100"}, ME.uid, seen=self.seen).accepted


def test_an_unchanged_file_is_not_opened_again_and_an_appended_one_is_read_on(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    j = Job(tmp_path, monkeypatch)
    j.file.unlink()
    assert j.ingest() == 0 and j.opened == 1  # no file yet: looked for once, and that is remembered
    assert j.ingest() == 0 and j.opened == 1
    j.write(_record(1) + _record(2))
    assert j.ingest() == 2 and j.stored == [1, 2] and j.opened == 2
    for _ in range(3):  # nothing new: the file is not opened again
        assert j.ingest() == 0
    assert j.opened == 2 and j.stored == [1, 2]
    j.write(_record(3))  # appended: read on from where the last read stopped
    assert j.ingest() == 1 and j.stored == [1, 2, 3] and j.opened == 3
    j.write(_record(4)[:20])  # an incomplete line: read, kept for later, and not read again while it stays so
    assert j.ingest() == 0 and j.opened == 4
    assert j.ingest() == 0 and j.opened == 4
    j.write(_record(4)[20:])  # completed
    assert j.ingest() == 1 and j.stored == [1, 2, 3, 4] and j.opened == 5
    # without the memo (the tests and tools that pass none) every call reads, with the same outcome
    assert ingest_job(object(), j.state, j.root, j.js, {"n1": "a100"}, ME.uid).accepted == 0 and j.opened == 6


def test_a_truncated_file_is_read_on_from_its_new_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = Job(tmp_path, monkeypatch)
    j.write(_record(1) + _record(2) + _record(3))
    assert j.ingest() == 3
    j.write(_record(5), mode="w")  # truncated by its owner, shorter than what was read: never read twice
    assert j.ingest() == 0 and j.stored == [1, 2, 3]
    assert j.ingest() == 0 and j.opened == 2  # nothing new since: not opened
    j.write(_record(6))  # what comes after the new end is read
    assert j.ingest() == 1 and j.stored == [1, 2, 3, 6]


def test_a_same_sized_replacement_with_the_same_times_is_read_as_another_file(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    j = Job(tmp_path, monkeypatch)
    j.write(_record(1))
    assert j.ingest() == 1
    st = j.file.stat()
    other = j.file.with_name("other")
    other.write_text(_record(1))  # the same bytes and mtime, another inode
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, j.file)
    assert j.ingest() == 0 and j.opened == 2  # a new inode: opened (its bytes are below the offset: nothing new)


def test_a_file_replaced_by_a_link_or_a_fifo_is_refused_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = Job(tmp_path, monkeypatch)
    j.write(_record(1))
    assert j.ingest() == 1
    secret = tmp_path / "secret"
    secret.write_text(_record(1) + _record(2))
    j.file.unlink()
    j.file.symlink_to(secret)
    with pytest.raises(UnsafeFile):
        j.ingest()
    with pytest.raises(UnsafeFile):  # refused at every look, not remembered as seen
        j.ingest()
    j.file.unlink()
    os.mkfifo(j.file)
    with pytest.raises(UnsafeFile):
        j.ingest()
    assert j.stored == [1]


def test_a_read_cut_at_max_read_goes_on_at_the_next_look_of_an_unchanged_file(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    j = Job(tmp_path, monkeypatch)
    line = _record(1)
    j.write(line * (MAX_READ // len(line) + 5))  # more than one read takes
    size = j.file.stat().st_size

    def offset() -> int:
        return int(j.state.meta("metrics:7", "0"))

    j.ingest()
    assert j.opened == 1 and 0 < offset() <= MAX_READ < size
    j.ingest()  # the file did not change, but the last read stopped before its end
    assert j.opened == 2 and offset() == size
    j.ingest()
    assert j.opened == 2


def test_checkpoint_marks_are_looked_at_only_when_the_file_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = Job(tmp_path, monkeypatch)
    owners: list[str] = []
    marks = Marks(j.state, j.root, lambda: {"7": j.js}, lambda user: owners.append(user) or ME, lambda: START + 100,
                  j.seen)
    mark = CheckpointMark(event="saved", measured_at=datetime.fromtimestamp(START + 40, timezone.utc), samples=40)
    j.write(mark.model_dump_json() + "\n")
    marks.read(j.js)
    assert j.js.checkpoint_at == START + 40 and j.opened == 1
    marks.read(j.js)
    marks.read(j.js)
    assert j.opened == 1 and len(owners) == 1  # unchanged: neither the owner looked up nor the file opened
    later = CheckpointMark(event="saved", measured_at=datetime.fromtimestamp(START + 90, timezone.utc), samples=90)
    j.write(later.model_dump_json() + "\n")
    marks.read(j.js)
    assert j.js.checkpoint_at == START + 90 and j.opened == 2
    assert j.ingest() == 0 and j.opened == 3  # the records' reader keeps its own look (marks are not records)
    j.seen.forget("7")
    assert j.seen.stamps == {}


def test_a_failed_ingest_is_not_remembered_as_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = Job(tmp_path, monkeypatch)
    j.write(_record(1))

    def broken(store: object, rec: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(profiler.ingest, "ingest_runtime", broken)
    with pytest.raises(OSError):
        j.ingest()
    monkeypatch.setattr(profiler.ingest, "ingest_runtime", lambda store, rec: j.stored.append(rec.steps))
    assert j.ingest() == 1 and j.stored == [1]  # the same unchanged file is read again: nothing lost
