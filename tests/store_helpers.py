"""A throughput store as an earlier release wrote it: the migrations up to ``version`` applied to an
empty database (for the tests that an older store is migrated without losing its measurements)."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from estimator.store import MIGRATIONS


def store_at_version(path: Path, version: int) -> sqlite_utils.Database:
    """A new database at ``path`` with the schema of store ``version``; the caller fills and closes it."""
    db = sqlite_utils.Database(path)
    db["meta"].create({"key": str, "value": str}, pk="key")
    for migrate in MIGRATIONS[:version]:
        migrate(db)
    db["meta"].insert({"key": "schema_version", "value": str(version)})
    return db
