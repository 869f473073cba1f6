"""Reads that cannot write: the engine database opened read-only (``queue``, ``plan --dry-run``), a foreign
or newer one refused on one line, by readers and by the engine alike; only the engine migrates."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.state import _HONESTY_COLUMNS, SCHEMA_VERSION, EngineState, JobState, StateSchemaError
from hops_slurm.errors import HopsError
from standin import StandInSlurm


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (a read that writes anything changes this)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _foreign(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE accounts (name TEXT, balance REAL)")
    con.execute("INSERT INTO accounts VALUES ('alice', 3.5)")
    con.commit()
    con.close()


def test_a_foreign_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "engine.sqlite"
    _foreign(path)
    before = snapshot(tmp_path)
    for open_it in (EngineState.read_only, EngineState):  # the reader, and the engine itself: neither adopts it
        with pytest.raises(StateSchemaError, match="not the hops-slurm engine's .*tables: accounts"):
            open_it(path)
        assert snapshot(tmp_path) == before


def test_a_newer_schema_is_named_and_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "engine.sqlite"
    EngineState(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.execute("ALTER TABLE jobs ADD COLUMN from_the_future TEXT")
    con.commit()
    con.close()
    before = snapshot(tmp_path)
    for open_it in (EngineState.read_only, EngineState):
        with pytest.raises(StateSchemaError, match=f"schema version {SCHEMA_VERSION + 1}, newer than this hops-slurm"):
            open_it(path)
    assert snapshot(tmp_path) == before


def test_an_older_database_is_read_as_it_is_and_migrated_by_the_engine_only(tmp_path: Path) -> None:
    path = tmp_path / "engine.sqlite"
    first = EngineState(path)
    first.save(JobState(job_id="5", name="j", user="u", directives="gpus=1", submit_time=1, first_seen=1, last_seen=1,
                        last_state="PENDING"))
    first.close()
    con = sqlite3.connect(path)  # as the first release wrote it: before set-aside jobs and declarations
    for name in ("aside", *(n for n, _ in _HONESTY_COLUMNS)):
        con.execute(f"ALTER TABLE jobs DROP COLUMN {name}")
    con.execute("PRAGMA user_version = 0")
    con.execute("PRAGMA journal_mode = DELETE")
    con.commit()
    con.close()
    before = snapshot(tmp_path)
    reader = EngineState.read_only(path)
    assert reader.jobs()["5"].aside == "" and reader.meta("rounds", "0") == "0"
    with pytest.raises(sqlite3.OperationalError):
        reader.set_meta("rounds", "1")
    reader.close()
    assert snapshot(tmp_path) == before
    writer = EngineState(path)  # the engine migrates
    writer.save(JobState(job_id="6", name="k", user="u", directives="gpus=1", submit_time=2, first_seen=2, last_seen=2,
                         last_state="PENDING", aside="x"))
    writer.close()
    assert EngineState.read_only(path).jobs()["6"].aside == "x"


def test_a_missing_database_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(HopsError, match="no such engine database"):
        EngineState.read_only(tmp_path / "none.sqlite")
    assert list(tmp_path.iterdir()) == []


def test_plan_dry_run_reads_the_engines_files_and_writes_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = parse_config({"engine": {"settle_timeout": 0.5, "probe_size": "tiny"}, "paths": {"state_dir": str(state)}})
    api = StandInSlurm(starts=True)
    with Engine(config, api=api) as engine:  # the engine writes its files once, as the daemon would
        assert engine.state is not None
        engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])
        api.submit("1", "gpus=1,2 samples=1000 batch-size=8 model=resnet18")
        engine.full_round()
    before = snapshot(state)
    assert {"engine.sqlite", "store.sqlite", "journal.sqlite", "records.sqlite"} <= set(before)
    api.submit("2", "gpus=1 samples=1000 batch-size=8 model=resnet18")
    with Engine(config, api=api, dry_run=True) as dry:
        planning = dry.full_round()
    assert planning is not None and "1" in {j.job_id for j in planning.jobs}
    assert snapshot(state) == before
