"""Reading records: JSONL file, JSONL folder and SQLite through one interface."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from hops_slurm.records import JobRecord, PlacementRecord, RoundRecord
from hops_slurm.report.source import (
    JsonlSource,
    RecordSet,
    RecordsError,
    SqliteSource,
    open_source,
    write_jsonl,
    write_sqlite,
)


def test_jsonl_file_sorted_jobs_and_rounds(sim: RecordSet) -> None:
    assert [j.job_id for j in sim.jobs] == ["1", "6", "2", "3", "4", "5"]  # by submission
    assert [(r.time, r.plan_index) for r in sim.rounds] == [(0, 0), (1800, 0), (1800, 1), (3600, 0), (5400, 0)]
    assert sim.last_time() == 5400
    assert sim.total_gpus() == 8


def test_sqlite_round_trip_equals_jsonl(sim: RecordSet, tmp_path: Path) -> None:
    db = write_sqlite(tmp_path / "engine.sqlite", sim.jobs, sim.rounds)
    source = open_source(db)
    assert isinstance(source, SqliteSource)
    assert source.load() == sim


def test_sqlite_upserts_a_job_by_id(tmp_path: Path) -> None:
    db = tmp_path / "e.sqlite"
    write_sqlite(db, [JobRecord(job_id="7", submit=0)])
    done = JobRecord(
        job_id="7", submit=0, end=50, state="COMPLETED",
        placements=[PlacementRecord(start=10, end=50, config={"n": 1})],
    )
    write_sqlite(db, [done], [RoundRecord(time=10, total_gpus=4)])
    loaded = open_source(db).load()
    assert loaded.jobs == (done,)
    assert loaded.total_gpus() == 4


def test_jsonl_folder_later_lines_win(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", [JobRecord(job_id="1", submit=0, state="PENDING")])
    write_jsonl(tmp_path / "b.jsonl", [JobRecord(job_id="1", submit=0, end=9, state="COMPLETED")], [RoundRecord(time=3)])
    (tmp_path / "notes.txt").write_text("not a record file")
    loaded = open_source(tmp_path).load()
    assert isinstance(open_source(tmp_path), JsonlSource)
    assert [(j.job_id, j.state) for j in loaded.jobs] == [("1", "COMPLETED")]
    assert len(loaded.rounds) == 1


def test_untagged_lines_are_told_apart_by_shape(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps({"job_id": "x", "submit": 1}) + "\n\n" + json.dumps({"time": 2, "total_gpus": 16}) + "\n")
    loaded = open_source(f).load()
    assert loaded.jobs[0].job_id == "x"
    assert loaded.rounds[0].total_gpus == 16


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json\n", r"r.jsonl:1: not JSON"),
        ('{"job_id": "x"}\n', r"r.jsonl:1: invalid job record"),
        ('{"kind": "step", "time": 1}\n', r"unknown record kind 'step'"),
        ("[1, 2]\n", r"expected a JSON object"),
        ('{"job_id": "x", "submit": 0, "colour": "red"}\n', r"invalid job record"),
    ],
)
def test_bad_jsonl_names_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text(content)
    with pytest.raises(RecordsError, match=message):
        open_source(f).load()


def test_missing_paths_and_foreign_databases(tmp_path: Path) -> None:
    with pytest.raises(RecordsError, match="no such records file"):
        open_source(tmp_path / "nope.jsonl").load()
    with pytest.raises(RecordsError, match="no \\*.jsonl record files"):
        open_source(tmp_path).load()
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(RecordsError, match="no job_records table.*tables found: t"):
        open_source(other).load()
