"""The store's bounds: what any stream of records can leave in it, per signature.

Where it sits: tables of :class:`estimator.store.ThroughputStore` (schema version 4). Running-mode
records come from users' jobs (their recorders write them; the engine validates and ingests them), so
a job can write as many as the engine accepts. What they leave in the store is bounded whatever they
number:

- **measured throughput** (``type_aggregated``, ``type_distributed``, ``entity_aggregated``,
  ``entity_distributed``): one row per key, a running aggregate (``n`` records, ``total`` of their
  per-GPU throughputs, ``per_gpu`` their mean). A key is (signature, GPU type, GPUs, nodes), and the
  server for the entity tables: a signature has one row per (type, node, config) it was measured in,
  and the estimates (the mean of every record of a key) are the ones the store gave before the rows
  were folded (:func:`add_measured`);
- **samples** (data times and sync waits for eq. 3): fewer than :data:`KEEP_SAMPLES` + :data:`TRIM_EVERY`
  rows per (signature, GPU type, source): the store cuts them to the last :data:`KEEP_SAMPLES`
  (:func:`trim_samples`) whenever :data:`TRIM_EVERY` rows were added since the last cut; the eq. 3 fit
  reads at most the last :data:`KEEP_SAMPLES`, so what it fits on is unchanged;
- **restart costs**: the last :data:`estimator.restart_cost.KEEP` per signature (that module).

Version 4 (:func:`migrate`) folds the rows of an older store into these shapes. Pure: these functions
take the store's database.
"""

from __future__ import annotations

import sqlite_utils

#: rows of samples kept per (signature, GPU type, source): the eq. (3) fit reads at most this many
KEEP_SAMPLES = 20_000
#: rows added to a (signature, GPU type, source) between two cuts to KEEP_SAMPLES (one cut per record costs a
#: scan of the group's index; one per this many rows, a scan per thousands of rows)
TRIM_EVERY = 4096
#: the measured-throughput tables and the columns of their key
MEASURED_KEYS = {
    "type_aggregated": ("signature", "gpu_type", "gpus", "nodes"),
    "type_distributed": ("signature", "gpu_type", "gpus", "nodes"),
    "entity_aggregated": ("signature", "gpu_type", "gpus", "nodes", "server"),
    "entity_distributed": ("signature", "gpu_type", "gpus", "nodes", "server"),
}
_TYPES = {"signature": "TEXT NOT NULL", "gpu_type": "TEXT NOT NULL", "gpus": "INTEGER NOT NULL",
          "nodes": "INTEGER NOT NULL", "server": "TEXT NOT NULL"}


def migrate(db: sqlite_utils.Database) -> None:
    """Schema version 4: each measured table becomes one running aggregate per key; the samples of every
    (signature, GPU type, source) are cut to the last :data:`KEEP_SAMPLES`."""
    for table, key in MEASURED_KEYS.items():
        cols = ", ".join(key)
        db.execute(f"CREATE TABLE {table}_v4 (id INTEGER PRIMARY KEY, "
                   + ", ".join(f"{c} {_TYPES[c]}" for c in key)
                   + ", n INTEGER NOT NULL, total REAL NOT NULL, per_gpu REAL NOT NULL)")
        db.execute(f"INSERT INTO {table}_v4 ({cols}, n, total, per_gpu) SELECT {cols}, count(*), sum(per_gpu), "
                   f"avg(per_gpu) FROM {table} GROUP BY {cols} ORDER BY min(id)")
        db.execute(f"DROP TABLE {table}")
        db.execute(f"ALTER TABLE {table}_v4 RENAME TO {table}")
        db.execute(f"CREATE UNIQUE INDEX {table}_key ON {table} ({cols})")
    db.execute("CREATE INDEX IF NOT EXISTS samples_source ON samples (signature, gpu_type, source)")
    groups = db.execute("SELECT signature, gpu_type, source FROM samples GROUP BY 1, 2, 3 "
                        "HAVING count(*) > ?", [KEEP_SAMPLES]).fetchall()
    for signature, gpu_type, source in groups:
        trim_samples(db, signature, gpu_type, source)


def add_measured(db: sqlite_utils.Database, table: str, row: dict[str, object], per_gpu: float) -> None:
    """Fold one record's per-GPU throughput into its key's row of ``table`` (``row``: the key's columns)."""
    key = MEASURED_KEYS[table]
    cols = ", ".join(key)
    db.execute(f"INSERT INTO {table} ({cols}, n, total, per_gpu) VALUES ({', '.join('?' for _ in key)}, 1, ?, ?) "
               f"ON CONFLICT ({cols}) DO UPDATE SET n = n + 1, total = total + excluded.total, "
               "per_gpu = (total + excluded.total) / (n + 1)", [*(row[c] for c in key), per_gpu, per_gpu])


def trim_samples(db: sqlite_utils.Database, signature: str, gpu_type: str, source: str,
                 keep: int = KEEP_SAMPLES) -> None:
    """Delete all but the last ``keep`` sample rows of (signature, GPU type, source)."""
    db.execute("DELETE FROM samples WHERE signature = ? AND gpu_type = ? AND source = ? AND id <= ("
               "SELECT id FROM samples WHERE signature = ? AND gpu_type = ? AND source = ? "
               "ORDER BY id DESC LIMIT 1 OFFSET ?)", [signature, gpu_type, source] * 2 + [max(int(keep), 0)])


__all__ = ["KEEP_SAMPLES", "TRIM_EVERY", "MEASURED_KEYS", "add_measured", "migrate", "trim_samples"]
