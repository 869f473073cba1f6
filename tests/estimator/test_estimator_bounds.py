"""The store's bounds (estimator/bounds.py): whatever records arrive, each table keeps a bounded summary, and
the estimates it gives are those of every record; an older store is folded into that shape."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from estimator.bounds import KEEP_SAMPLES, TRIM_EVERY
from estimator.store import SCHEMA_VERSION, ThroughputStore, read_only_uri
from store_helpers import store_at_version


def test_measured_records_fold_into_one_row_per_key_with_the_mean_of_all(tmp_path: Path) -> None:
    values = [10.0, 20.0, 60.0, 30.0]
    with ThroughputStore(tmp_path / "s.db") as store:
        for v in values * 50:
            store.add_runtime_samples("sig", "v100", "n1", gpus=2, nodes=1, throughput=2 * v)
        store.add_runtime_samples("sig", "v100", "n2", gpus=2, nodes=1, throughput=2 * 99.0)
        store.add_runtime_samples("sig", "v100", "n1", gpus=4, nodes=2, throughput=4 * 7.0)
        rows = store.row_counts()
        snap = store.snapshot("sig")
        assert store.record_counts("sig")["entity_aggregated"] == 201
    assert (rows["type_aggregated"], rows["entity_aggregated"], rows["type_distributed"], rows["entity_distributed"]) == (1, 2, 1, 1)
    assert snap.entity_aggregated[("n1", 2)] == pytest.approx(sum(values) / len(values))
    assert snap.type_aggregated[("v100", 2)] == pytest.approx((sum(values) * 50 + 99.0) / 201)
    assert snap.type_distributed == {("v100", 2): pytest.approx(7.0)}


def test_samples_keep_the_most_recent_and_never_grow_past_the_bound(tmp_path: Path) -> None:
    with ThroughputStore(tmp_path / "s.db") as store:
        for i in range(30):
            store.add_runtime_samples("sig", "v100", "n1", data_times=[float(i)] * 1000, sync_waits=[], gpus=1, nodes=1)
            assert store.record_counts("sig")["samples"] < KEEP_SAMPLES + TRIM_EVERY
        data, _, _ = store.samples("sig", "v100", limit=KEEP_SAMPLES)
        assert len(data) == KEEP_SAMPLES and data[-1] == 29.0 and data[0] == 10.0  # the last 20 windows


def test_a_version_3_store_is_folded_into_aggregates_with_the_same_estimates(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = store_at_version(path, 3)
    for v in (1.0, 2.0, 6.0):
        db["entity_aggregated"].insert({"signature": "s", "gpu_type": "v100", "gpus": 1, "nodes": 1, "per_gpu": v, "server": "n1"})
        db["type_aggregated"].insert({"signature": "s", "gpu_type": "v100", "gpus": 1, "nodes": 1, "per_gpu": v})
    db["samples"].insert_all({"signature": "s", "gpu_type": "v100", "source": "runtime", "server": "n1",
                              "data_time": float(i), "sync_wait": None} for i in range(KEEP_SAMPLES + 50))
    db.close()
    with ThroughputStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 5
        snap = store.snapshot("s")
        assert snap.entity_aggregated == {("n1", 1): pytest.approx(3.0)} and snap.type_aggregated == {("v100", 1): pytest.approx(3.0)}
        assert store.row_counts()["entity_aggregated"] == 1 and store.record_counts("s")["entity_aggregated"] == 3
        assert store.record_counts("s")["samples"] == KEEP_SAMPLES
        assert store.samples("s", "v100")[0][0] == 50.0


def test_a_momentary_reader_creates_nothing_beside_a_wal_store(tmp_path: Path) -> None:
    with ThroughputStore(tmp_path / "s.db") as store:
        store.add_runtime_samples("sig", "v100", "n1", gpus=1, nodes=1, throughput=5.0)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert "s.db-wal" not in before  # the writer closed: checkpointed
    with ThroughputStore(tmp_path / "s.db", read_only=True, momentary=True) as reader:
        assert reader.snapshot("sig").type_aggregated == {("v100", 1): 5.0}
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    plain = tmp_path / "plain.db"
    con = sqlite3.connect(plain)
    con.execute("create table t (x)")
    con.commit()
    con.close()
    assert read_only_uri(plain).endswith("?mode=ro")  # a rollback-journal file is read with its locks
    assert "immutable=1" in read_only_uri(tmp_path / "s.db")
    odd = tmp_path / "a?b#c%20"
    os.mkdir(odd)
    assert "%3F" in read_only_uri(odd / "x.db") and "%23" in read_only_uri(odd / "x.db")
