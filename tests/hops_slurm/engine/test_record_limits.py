"""Runtime records against the job's allocation, its run time and its budgets, into a real SQLite store.

A job's recorder runs as its owner, so every record is a claim: these tests write records as a hostile
owner would (more GPUs than the job holds, windows longer than it ran, as many records as the engine
reads, a truncated file) and check what reaches the store and the job's progress: real ``ingest_job``,
real :class:`~estimator.store.ThroughputStore`, real :class:`~hops_slurm.engine.state.EngineState`.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from estimator.bounds import KEEP_SAMPLES, TRIM_EVERY
from estimator.store import ThroughputStore
from hops_slurm.engine import record_limits
from hops_slurm.engine.record_limits import RECORDS_PER_REFRESH, USER_RECORDS_PER_REFRESH, RefreshBudget
from hops_slurm.engine.runtime_records import MAX_LINE, RUNTIME_FILE, ingest_job
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner, make_place
from profiler.records import RuntimeRecord

ME = Owner("me", os.getuid(), os.getgid())
SIG = "me/abc"
T0 = 1_767_225_600.0
TYPES = {"n1": "a100", "n2": "a100"}


def record(*, gpus: int = 1, nodes: int = 1, node: str = "n1", rank: int = 0, window: float = 2.0, steps: int = 10,
           batch: int = 8, at: float = T0 + 60.0, values: int = 10) -> str:
    return RuntimeRecord(signature=SIG, gpu_type="a100", node=node, rank=rank, gpus=gpus, nodes=nodes, batch_size=batch,
                         steps=steps, window_seconds=window, throughput=steps * batch * gpus / window,
                         data_times=[0.25] * values, sync_waits=[0.5] * values, step_times=[0.1] * steps,
                         measured_at=datetime.fromtimestamp(at, tz=timezone.utc)).model_dump_json() + "\n"


def job(config: dict[str, int], run_time: float = 600.0, job_id: str = "7", user: str = "me") -> JobState:
    js = JobState(job_id=job_id, name="j", user=user, directives="", submit_time=T0, first_seen=T0, last_seen=T0 + run_time,
                  last_state="RUNNING", config=dict(config), signature=SIG, run_time=run_time,
                  gpu_seconds=run_time * sum(config.values()))
    js.placements = [{"start": T0, "end": None, "config": dict(config)}]
    return js


class World:
    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "metrics"
        self.state = EngineState(tmp / "engine.sqlite")
        self.store = ThroughputStore(tmp / "store.sqlite")
        self.path = tmp / "store.sqlite"
        for db in (self.state.db, self.store.db):  # a test's files: no need to survive a power cut (speed only)
            db.execute("PRAGMA synchronous = OFF")

    def write(self, js: JobState, text: str, mode: str = "a") -> None:
        place = make_place(self.root, js.job_id, ME)
        with open(place / RUNTIME_FILE, mode, encoding="utf-8") as fh:
            fh.write(text)

    def ingest(self, js: JobState, budget: RefreshBudget | None = None):  # type: ignore[no-untyped-def]
        return ingest_job(self.store, self.state, self.root, js, TYPES, ME.uid, budget)

    def close(self) -> None:
        self.store.close()
        self.state.close()


@pytest.fixture
def world(tmp_path: Path):  # type: ignore[no-untyped-def]
    w = World(tmp_path)
    yield w
    w.close()


def test_a_record_is_checked_against_the_allocation_the_job_holds(world: World) -> None:
    js = job({"n1": 1})
    world.write(js, record(gpus=1024, steps=1, window=1.0) + record(gpus=2, nodes=2) + record(rank=3) + record())
    report = world.ingest(js)
    assert report.accepted == 1
    assert [r.split(":")[0] for r in report.refused] == ["gpus=1024 nodes=1", "gpus=2 nodes=2", "rank 3"]
    assert "the job held 1 GPUs on 1 node(s) there" in report.refused[0]
    assert world.store.record_counts(SIG)["type_aggregated"] == 1


def test_a_record_of_an_earlier_run_is_checked_against_that_run() -> None:
    js = job({"n2": 4})
    js.placements = [{"start": T0, "end": T0 + 100, "config": {"n1": 2}}, {"start": T0 + 100, "end": None, "config": {"n2": 4}}]
    record_limits.check_allocation(RuntimeRecord.model_validate_json(record(gpus=2)), js)  # its first run, on n1
    with pytest.raises(ValueError, match="gpus=4 nodes=1: the job held 2 GPUs on 1 node"):
        record_limits.check_allocation(RuntimeRecord.model_validate_json(record(gpus=4, batch=2)), js)


def test_windows_cover_at_most_the_time_the_job_ran(world: World) -> None:
    """3,000 windows each claiming a day, from a job that has run 10 minutes: none is a day long; the ones
    that fit cover at most the 10 minutes (and the slack), and only those count for its progress."""
    js = job({"n1": 1}, run_time=600.0)
    world.write(js, "".join(record(window=86400.0, steps=1) for _ in range(3000)))
    refused: list[str] = []
    while (report := world.ingest(js)).refused:  # 1 MiB per refresh
        assert report.accepted == 0 and report.samples == 0.0
        refused += report.refused
    assert len(refused) == 3000 and "window_seconds 86400: the job has run 600 s" in refused[0]
    world.write(js, "".join(record(window=100.0, steps=1) for _ in range(10)))
    report = world.ingest(js)
    limit = 600.0 + record_limits.slack(600.0)
    assert report.seconds == pytest.approx(100.0 * int(limit // 100.0))
    assert len(report.refused) == 10 - int(limit // 100.0)
    assert "rank 0's records already cover 600 s of the 600 s the job ran" in report.refused[0]


def test_refusals_name_the_field_and_the_bound(world: World) -> None:
    js = job({"n1": 1})
    bad = json.loads(record())
    bad["window_seconds"] = 1e9
    world.write(js, json.dumps(bad) + "\n")
    (reason,) = world.ingest(js).refused
    assert reason.startswith("runtime.window_seconds: Input should be less than or equal to 86400")
    assert "validation error" not in reason


def test_records_reach_the_store_within_the_job_and_the_user_budgets(world: World) -> None:
    a, b = job({"n1": 1}, job_id="1", run_time=86400.0), job({"n1": 1}, job_id="2", run_time=86400.0)
    for js in (a, b):
        world.write(js, record(window=0.5) * (RECORDS_PER_REFRESH + 10))
    budget = RefreshBudget(per_user=RECORDS_PER_REFRESH + 20)
    first, second = world.ingest(a, budget), world.ingest(b, budget)
    assert (first.accepted, first.over_budget) == (RECORDS_PER_REFRESH, 10)
    assert (second.accepted, second.over_budget) == (20, RECORDS_PER_REFRESH - 10)
    assert len(first.windows) == RECORDS_PER_REFRESH + 10  # over budget: still the job's progress
    assert world.store.record_counts(SIG)["type_aggregated"] == RECORDS_PER_REFRESH + 20
    assert USER_RECORDS_PER_REFRESH >= 2 * RECORDS_PER_REFRESH


def test_a_job_stores_in_all_what_its_run_time_earns(world: World) -> None:
    js = job({"n1": 1}, run_time=100.0)
    world.write(js, record(window=0.1) * 200)
    assert world.ingest(js).accepted == RECORDS_PER_REFRESH  # this refresh's budget
    world.write(js, record(window=0.1) * 200)
    assert world.ingest(js).accepted == record_limits.RECORDS_BURST + 10 - RECORDS_PER_REFRESH  # 100 s earn 10
    world.write(js, record(window=0.1) * 10)
    assert world.ingest(js).accepted == 0  # until it runs longer


def test_a_stored_record_keeps_at_most_its_share_of_samples(world: World) -> None:
    js = job({"n1": 1})
    world.write(js, record(values=3000))  # a legal record: 64 KiB per line at most
    assert len(record(values=3000)) <= MAX_LINE
    assert world.ingest(js).accepted == 1
    assert world.store.record_counts(SIG)["samples"] == record_limits.STORED_SAMPLES


def test_a_truncated_file_is_read_on_from_its_new_end(world: World) -> None:
    js = job({"n1": 1})
    world.write(js, record() * 5)
    assert world.ingest(js).accepted == 5
    world.write(js, record(), mode="w")  # truncated by its owner, one line written again
    assert world.ingest(js).accepted == 0  # what it holds now was written over what was read
    world.write(js, record() * 2)  # appended after the truncation: read
    assert world.ingest(js).accepted == 2


# ----- the flood: the worst legal stream of a job for a simulated day -------------------------------
#: what docs/security.md says one flooding job leaves in the store after a day: rows, the store file, its WAL
DOC_ROWS = KEEP_SAMPLES + TRIM_EVERY + 8
DOC_BYTES = 4 * 1024 * 1024
DOC_WAL_BYTES = 5 * 1024 * 1024


def test_a_day_of_the_worst_legal_flood_leaves_the_store_under_the_documented_bound(world: World) -> None:
    """A job on 8 GPUs writes, every 30 s refresh for a day, more valid records than the engine stores, each
    carrying the most samples a stored record keeps, from every rank: the store ends under the bound that
    docs/security.md states (rows and bytes, not time), and it stored what the job's run time earned."""
    js = job({"n1": 8}, run_time=0.0)
    refresh, per_refresh = 30.0, 6  # the run time earns 3 stored records per refresh: the stream exceeds it
    for _ in range(int(86400 / refresh)):
        js.run_time += refresh
        js.gpu_seconds += refresh * 8
        lines = [record(gpus=8, rank=k % 8, window=refresh / per_refresh, steps=1, batch=1,
                        values=record_limits.STORED_SAMPLES, at=T0 + js.run_time) for k in range(per_refresh)]
        world.write(js, "".join(lines))
        report = world.ingest(js)
        assert not report.refused, report.refused
        assert report.accepted + report.over_budget == per_refresh
    counts = world.store.row_counts()
    wal = world.path.with_name(world.path.name + "-wal")
    sizes = (world.path.stat().st_size, wal.stat().st_size if wal.exists() else 0)
    assert sum(counts.values()) <= DOC_ROWS and sizes[0] <= DOC_BYTES and sizes[1] <= DOC_WAL_BYTES, (counts, sizes)
    assert counts["type_aggregated"] == counts["entity_aggregated"] == 1  # one aggregate for its one (node, config)
    stored = world.store.record_counts(SIG)["type_aggregated"]
    assert stored == record_limits.RECORDS_BURST + int(86400 / record_limits.RECORD_INTERVAL)
