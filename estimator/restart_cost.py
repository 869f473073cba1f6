"""Restart costs per model signature: the store's table and its robust summary.

Where it sits: a table of :class:`estimator.store.ThroughputStore` (schema version 3). The live engine
(the store's only writer) measures, for every start of a job that has a signature, the seconds from
Slurm's start of that run to the first progress its runtime records show, plus the notice the previous
run was given before its requeue (:mod:`hops_slurm.core.processed`), and hands each observation to
:meth:`ThroughputStore.put_restart_cost`; the engine prices moves with
:meth:`ThroughputStore.restart_cost`, the median of the signature's last :data:`SUMMARY_LAST`
observations (one slow node start or one fast warm restart does not move it). Only the last
:data:`KEEP` observations of a signature are kept. Pure: these functions take the store's database.
"""

from __future__ import annotations

import math
import statistics

import sqlite_utils

TABLE = "restart_cost"
#: the summary is the median of this many most recent observations
SUMMARY_LAST = 16
#: observations kept per signature (older ones are dropped as new ones arrive)
KEEP = 64
#: an observation above this (seconds) is not a restart but a broken clock or record: refused
MAX_SECONDS = 86400.0


def migrate(db: sqlite_utils.Database) -> None:
    """Schema version 3: one row per observed restart."""
    db[TABLE].create({"id": int, "signature": str, "seconds": float, "measured_at": str}, pk="id",
                     not_null={"signature", "seconds"})
    db[TABLE].create_index(["signature", "id"], if_not_exists=True)


def check_seconds(seconds: float) -> float:
    value = float(seconds)
    if not math.isfinite(value) or not 0.0 <= value <= MAX_SECONDS:
        raise ValueError(f"a restart cost must be finite and within [0, {MAX_SECONDS:g}] s, got {value}")
    return value


def put(db: sqlite_utils.Database, signature: str, seconds: float, measured_at: str) -> None:
    """Append one observation of ``signature`` and drop those beyond the last :data:`KEEP`."""
    if not signature:
        raise ValueError("a restart cost needs a signature")
    db[TABLE].insert({"signature": signature, "seconds": check_seconds(seconds), "measured_at": measured_at})
    db.execute(f"delete from {TABLE} where signature = ? and id not in (select id from {TABLE} "
               "where signature = ? order by id desc limit ?)", [signature, signature, KEEP])


def observations(db: sqlite_utils.Database, signature: str, last: int = SUMMARY_LAST) -> list[float]:
    """The last ``last`` observations of ``signature``, oldest first."""
    rows = db.execute(f"select seconds from {TABLE} where signature = ? order by id desc limit ?",
                      [signature, max(int(last), 0)]).fetchall()
    return [float(r[0]) for r in reversed(rows)]


def summary(db: sqlite_utils.Database, signature: str, last: int = SUMMARY_LAST) -> float | None:
    """The median of the last ``last`` observations of ``signature``; None when there is none."""
    values = observations(db, signature, last)
    return statistics.median(values) if values else None


__all__ = ["KEEP", "MAX_SECONDS", "SUMMARY_LAST", "check_seconds", "migrate", "observations", "put", "summary"]
