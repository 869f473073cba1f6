"""The SQLite store: layers, migrations, single writer, concurrent readers, clear errors."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlite_utils

from estimator.errors import SchemaVersionError, StoreCorruptError, StoreError, StoreLockedError
from estimator.store import MIGRATIONS, SCHEMA_VERSION, ThroughputStore

THEORY = dict(t_f=0.01, t_b=0.02, t_u=0.005, pattern=1, params=25e6, batch_size=32)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "throughput.db"


@pytest.fixture
def store(path: Path):
    s = ThroughputStore(path)
    yield s
    s.close()


def test_new_store_is_wal_and_current_schema(store, path):
    assert store.schema_version == SCHEMA_VERSION
    assert store.db.journal_mode == "wal"
    assert {"theory", "samples", "type_aggregated", "type_distributed", "entity_aggregated",
            "entity_distributed", "calibration", "meta"} <= set(store.db.table_names())


def test_theory_round_trip_and_reprofile_keeps_runtime_samples(store):
    store.put_theory("sig", "v100", **THEORY, data_samples=[0.1, 0.2], sync_samples=[])
    tc = store.theory("sig", "v100")
    assert (tc.t_f, tc.t_b, tc.t_u, tc.pattern, tc.params, tc.batch_size) == (0.01, 0.02, 0.005, 1, 25e6, 32)
    assert store.theory("sig", "k80") is None
    store.add_runtime_samples("sig", "v100", "n1", data_times=[0.3], sync_waits=[0.01], gpus=2, nodes=1)
    store.put_theory("sig", "v100", **{**THEORY, "t_f": 0.02}, data_samples=[0.4], sync_samples=[])
    data, sync, sync_data = store.samples("sig", "v100")
    assert sorted(data) == [0.3, 0.4]  # the first profile's samples replaced, the runtime one kept
    assert sync == [0.01] and sync_data == [0.3]
    assert store.theory("sig", "v100").t_f == 0.02
    assert store.signatures() == ["sig"]
    assert store.profiled_types("sig") == ["v100"]


def test_runtime_record_feeds_entity_and_type_layers_per_gpu(store):
    store.put_theory("sig", "v100", **THEORY)
    store.add_runtime_samples("sig", "v100", "n1", data_times=[0.01] * 3, sync_waits=[0.0] * 3,
                              gpus=4, nodes=1, throughput=400.0)
    store.add_runtime_samples("sig", "v100", "n1", gpus=4, nodes=1, throughput=480.0)
    store.add_runtime_samples("sig", "v100", "n2", gpus=8, nodes=2, throughput=560.0)
    snap = store.snapshot("sig")
    assert snap.type_aggregated == {("v100", 4): pytest.approx(110.0)}  # mean of 100 and 120 per GPU
    assert snap.entity_aggregated == {("n1", 4): pytest.approx(110.0)}
    assert snap.type_distributed == {("v100", 2): pytest.approx(70.0)}  # keyed by node count
    assert snap.entity_distributed == {("n2", 2): pytest.approx(70.0)}
    assert store.record_counts("sig")["samples"] == 3


def test_type_writes_stay_in_type_layer_entity_writes_mirror(store):
    store.put_type_throughput("sig", "k80", gpus=2, nodes=1, throughput=50.0)
    store.put_entity_throughput("sig", "k80", "n7", gpus=1, nodes=1, throughput=30.0)
    snap = store.snapshot("sig")
    assert snap.type_aggregated == {("k80", 2): 25.0, ("k80", 1): 30.0}
    assert snap.entity_aggregated == {("n7", 1): 30.0}


def test_calibration_round_trip(store):
    store.put_calibration("v100", b_link=2e9, b_net=5e8, method="allreduce sweep", measured_at=0)
    store.put_calibration("k80", b_link=1e9, b_net=2e8, method="manual", measured_at="2026-11-01T00:00:00")
    cal = store.calibration("v100")
    assert (cal.b_link, cal.b_net, cal.method) == (2e9, 5e8, "allreduce sweep")
    assert cal.measured_at.startswith("1970-01-01T00:00:00")
    assert set(store.calibrations()) == {"v100", "k80"}
    with pytest.raises(ValueError):
        store.put_calibration("p100", b_link=0, b_net=1e9, method="x", measured_at=0)


@pytest.mark.parametrize("kwargs", [dict(gpus=2, nodes=3, throughput=1.0), dict(gpus=2, nodes=1, throughput=-1.0)])
def test_invalid_measurements_are_rejected_and_nothing_written(store, kwargs):
    with pytest.raises(ValueError):
        store.add_runtime_samples("sig", "v100", "n1", data_times=[0.1], **kwargs)
    assert store.record_counts("sig")["samples"] == 0  # the transaction rolled back


def test_second_writer_is_refused_with_a_clear_error(store, path):
    with pytest.raises(StoreLockedError, match="already has a writer"):
        ThroughputStore(path)
    store.close()
    ThroughputStore(path).close()  # free again once the first writer closed


def test_reader_cannot_write_and_missing_store_is_an_error(store, path, tmp_path):
    reader = ThroughputStore(path, read_only=True)
    with pytest.raises(StoreError, match="read-only"):
        reader.put_calibration("v100", b_link=1, b_net=1, method="", measured_at=0)
    reader.close()
    with pytest.raises(StoreError, match="does not exist"):
        ThroughputStore(tmp_path / "nope.db", read_only=True)


def test_corrupt_file_is_reported(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not an sqlite database, just text" * 100)
    with pytest.raises(StoreCorruptError, match="corrupt"):
        ThroughputStore(bad)
    with pytest.raises(StoreCorruptError):
        ThroughputStore(bad, read_only=True)


def test_foreign_sqlite_database_is_reported(tmp_path):
    other = tmp_path / "other.db"
    sqlite_utils.Database(other)["users"].insert({"name": "x"})
    with pytest.raises(StoreCorruptError, match="not a hops-slurm throughput store"):
        ThroughputStore(other)


def test_newer_schema_is_refused(store, path):
    store.db["meta"].upsert({"key": "schema_version", "value": str(SCHEMA_VERSION + 5)}, pk="key")
    store.close()
    with pytest.raises(SchemaVersionError, match="newer"):
        ThroughputStore(path)
    with pytest.raises(SchemaVersionError):
        ThroughputStore(path, read_only=True)


def test_migrates_version_1_store_and_keeps_data(path):
    db = sqlite_utils.Database(path)
    db["meta"].create({"key": str, "value": str}, pk="key")
    MIGRATIONS[0](db)
    db["meta"].insert({"key": "schema_version", "value": "1"})
    db["calibration"].insert({"gpu_type": "v100", "b_link": 1e9, "b_net": 1e8, "method": "m", "measured_at": "t"})
    db.close()
    with pytest.raises(SchemaVersionError, match="migrate"):
        ThroughputStore(path, read_only=True)
    with ThroughputStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        assert s.calibration("v100").b_net == 1e8
        assert any(idx.columns == ["signature", "gpu_type"] for idx in s.db["samples"].indexes)


def test_locked_database_gives_locked_error(store, path):
    other = sqlite3.connect(path, timeout=0.0, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # e.g. an sqlite3 shell holding the write lock
    try:
        blocked = store
        blocked.db.conn.execute("PRAGMA busy_timeout = 50")
        with pytest.raises(StoreLockedError, match="locked"):
            blocked.put_calibration("v100", b_link=1, b_net=1, method="", measured_at=0)
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.put_calibration("v100", b_link=1, b_net=1, method="", measured_at=0)  # usable again


def test_readers_run_while_the_writer_writes(store, path):
    store.put_theory("sig", "v100", **THEORY, data_samples=[0.01] * 10)
    n_records = 150
    errors: list[BaseException] = []
    seen: list[list[int]] = [[], []]
    done = threading.Event()

    def write() -> None:
        try:
            for i in range(n_records):
                store.add_runtime_samples("sig", "v100", f"n{i % 3}", data_times=[0.01, 0.2], sync_waits=[0.0, 0.01],
                                          gpus=2, nodes=1, throughput=100.0 + i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    def read(k: int) -> None:
        try:
            with ThroughputStore(path, read_only=True) as reader:
                while True:
                    finished = done.is_set()
                    snap = reader.snapshot("sig")
                    assert snap.theory["v100"].components.batch_size == 32
                    seen[k].append(reader.record_counts("sig")["type_aggregated"])
                    if finished:
                        break
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read, args=(k,)) for k in range(2)]
    writer = threading.Thread(target=write)
    for t in readers:
        t.start()
    writer.start()
    writer.join(60)
    for t in readers:
        t.join(60)
    assert not errors, errors
    for counts in seen:
        assert counts == sorted(counts)  # every reader sees a growing, committed history
        assert counts[-1] == n_records
        assert len(set(counts)) > 1  # it read while the writer was still writing
    assert store.snapshot("sig").type_aggregated[("v100", 2)] == pytest.approx((100 + 100 + n_records - 1) / 2 / 2)


def test_constraint_violation_is_a_store_error_not_corruption(store):
    store.db.conn.execute("PRAGMA busy_timeout = 50")
    with pytest.raises(StoreError) as info:
        with store._guard("insert"):
            store.db.execute("insert into calibration (gpu_type, b_link, b_net) values ('x', NULL, 1)")
    assert not isinstance(info.value, StoreCorruptError)


def test_mixture_fit_uses_the_most_recent_samples(store):
    store.put_theory("sig", "v100", **THEORY, data_samples=[1.0] * 50)
    store.add_runtime_samples("sig", "v100", "n1", data_times=[0.01] * 30, gpus=1, nodes=1)
    assert store.snapshot("sig", max_samples=30).theory["v100"].data.mean == pytest.approx(0.01)
    assert store.snapshot("sig").theory["v100"].data.mean == pytest.approx((50 + 0.3) / 80)


_READER = r"""
import json, sys, time
from estimator.store import ThroughputStore
path, target = sys.argv[1], int(sys.argv[2])
seen = []
with ThroughputStore(path, read_only=True) as reader:
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        reader.snapshot("sig")
        seen.append(reader.record_counts("sig")["type_aggregated"])
        if seen[-1] >= target:
            break
print(json.dumps(seen), flush=True)
"""


def test_reader_in_another_process_while_the_writer_writes(store, path):
    import json
    import subprocess
    import sys

    store.put_theory("sig", "v100", **THEORY, data_samples=[0.01] * 10)
    n_records = 100
    proc = subprocess.Popen([sys.executable, "-c", _READER, str(path), str(n_records)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        for i in range(n_records):
            store.add_runtime_samples("sig", "v100", "n1", data_times=[0.01], sync_waits=[0.0],
                                      gpus=1, nodes=1, throughput=100.0 + i)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen == sorted(seen) and seen[-1] == n_records
