"""Restart costs in the throughput store (estimator.restart_cost): put, the robust summary, bounds, and a
store file from before they were kept migrating to the current schema with its data."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator import restart_cost
from estimator.errors import StoreError
from estimator.store import SCHEMA_VERSION, ThroughputStore
from store_helpers import store_at_version


def test_no_observation_no_cost_then_the_median_of_what_was_seen(tmp_path: Path) -> None:
    with ThroughputStore(tmp_path / "s.db") as store:
        assert store.restart_cost("alice/abc") is None
        for seconds in (40.0, 50.0, 300.0):  # one slow start does not move the summary much
            store.put_restart_cost("alice/abc", seconds, measured_at=1_700_000_000.0)
        store.put_restart_cost("bob/abc", 5.0, measured_at="2024-01-01T00:00:00+00:00")
        assert store.restart_cost("alice/abc") == 50.0
        assert store.restart_cost("bob/abc") == 5.0  # per signature
        assert store.restart_cost("carol/xyz") is None


def test_the_summary_follows_the_last_observations_and_old_ones_are_dropped(tmp_path: Path) -> None:
    with ThroughputStore(tmp_path / "s.db") as store:
        for _ in range(restart_cost.KEEP):
            store.put_restart_cost("sig", 100.0, measured_at=0.0)
        for _ in range(restart_cost.SUMMARY_LAST // 2 + 1):  # the job got faster to start: most recent win
            store.put_restart_cost("sig", 20.0, measured_at=1.0)
        assert store.restart_cost("sig") == 20.0
        assert store.restart_cost("sig", last=restart_cost.KEEP) == 100.0
        count = store.db.execute("select count(*) from restart_cost where signature = 'sig'").fetchone()[0]
        assert count == restart_cost.KEEP


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf"), restart_cost.MAX_SECONDS + 1])
def test_an_impossible_restart_is_refused(tmp_path: Path, seconds: float) -> None:
    with ThroughputStore(tmp_path / "s.db") as store:
        with pytest.raises(ValueError, match="restart cost"):
            store.put_restart_cost("sig", seconds, measured_at=0.0)
        with pytest.raises(ValueError, match="signature"):
            store.put_restart_cost("", 10.0, measured_at=0.0)
        assert store.restart_cost("sig") is None


def test_readers_read_costs_and_cannot_write_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with ThroughputStore(path) as store:
        store.put_restart_cost("sig", 30.0, measured_at=0.0)
    with ThroughputStore(path, read_only=True) as reader:
        assert reader.restart_cost("sig") == 30.0
        with pytest.raises(StoreError, match="read-only"):
            reader.put_restart_cost("sig", 30.0, measured_at=0.0)


def test_a_version_2_store_migrates_and_keeps_its_measurements(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = store_at_version(path, 2)
    db["type_aggregated"].insert({"signature": "sig", "gpu_type": "v100", "gpus": 1, "nodes": 1, "per_gpu": 7.0})
    db.close()
    with ThroughputStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 5
        assert store.snapshot("sig").type_aggregated == {("v100", 1): 7.0}
        assert store.restart_cost("sig") is None
        store.put_restart_cost("sig", 12.0, measured_at=0.0)
        assert store.restart_cost("sig") == 12.0
