"""Families in the store: which job signatures run the same network, and what those siblings measured.

Where it sits: a table of :class:`estimator.store.ThroughputStore` (schema version 5). A job's signature
(:func:`profiler.signature.job_signature`) hashes its model name, parameter count, per-GPU batch size and
input shape, so the same network at another batch size is another signature with nothing learned. Its
*family* (:func:`profiler.signature.family_signature`: the same facts without the batch size, from what
the user's ``#HOPS model=`` / ``params`` directives and the probe say) is written beside the probe's
profile (:meth:`estimator.store.ThroughputStore.put_theory`), and a snapshot carries the type-layer
measurements of every other signature of its family (:func:`siblings`), for
:mod:`estimator.family_refine` to read how the family's per-GPU rate moves with the GPU count.

Bounded: one row per signature; a snapshot reads at most :data:`MAX_SIBLINGS` siblings (those nearest in
batch size). Pure: these functions take the store's database.
"""

from __future__ import annotations

import math

import sqlite_utils

from estimator.snapshot import Sibling

#: siblings a snapshot carries at most (nearest in batch size first)
MAX_SIBLINGS = 16


def migrate(db: sqlite_utils.Database) -> None:
    """Schema version 5: the ``family`` table (signature -> family key, batch size)."""
    db.execute("CREATE TABLE IF NOT EXISTS family (signature TEXT PRIMARY KEY, family TEXT NOT NULL, "
               "batch_size INTEGER NOT NULL)")
    db.execute("CREATE INDEX IF NOT EXISTS family_key ON family (family)")


def put(db: sqlite_utils.Database, signature: str, family: str, batch_size: int) -> None:
    """Note ``signature``'s family (empty: none known, the row is dropped)."""
    if not family:
        db.execute("DELETE FROM family WHERE signature = ?", [signature])
        return
    db.execute("INSERT INTO family (signature, family, batch_size) VALUES (?, ?, ?) ON CONFLICT (signature) "
               "DO UPDATE SET family = excluded.family, batch_size = excluded.batch_size",
               [signature, family, int(batch_size)])


def family_of(db: sqlite_utils.Database, signature: str) -> tuple[str, int] | None:
    """``signature``'s (family key, batch size); None when its probe named none."""
    row = db.execute("SELECT family, batch_size FROM family WHERE signature = ?", [signature]).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def siblings(db: sqlite_utils.Database, signature: str) -> tuple[str, tuple[Sibling, ...]]:
    """``signature``'s family key and the type-layer measurements of the other signatures of its family
    (at most :data:`MAX_SIBLINGS`, nearest in batch size; those with no measurement are left out). Three
    queries whatever the family's size."""
    own = family_of(db, signature)
    if own is None:
        return "", ()
    fam, batch = own
    members = "SELECT signature FROM family WHERE family = ? AND signature != ?"
    tables: list[dict[str, dict[tuple[str, int], float]]] = []
    for table, count in (("type_aggregated", "gpus"), ("type_distributed", "nodes")):
        rows = db.execute(f"SELECT signature, gpu_type, {count}, sum(total) / sum(n) FROM {table} "
                          f"WHERE signature IN ({members}) GROUP BY 1, 2, 3", [fam, signature]).fetchall()
        got: dict[str, dict[tuple[str, int], float]] = {}
        for sig, gpu_type, c, v in rows:
            got.setdefault(str(sig), {})[(str(gpu_type), int(c))] = float(v)
        tables.append(got)
    measured = set(tables[0]) | set(tables[1])
    if not measured:
        return fam, ()
    rows = [(str(r[0]), int(r[1])) for r in db.execute(
        "SELECT signature, batch_size FROM family WHERE family = ? AND signature != ?", [fam, signature]).fetchall()
        if str(r[0]) in measured]
    rows.sort(key=lambda r: (abs(math.log(max(r[1], 1) / max(batch, 1))), r[0]))
    return fam, tuple(Sibling(sig, b, tables[0].get(sig, {}), tables[1].get(sig, {})) for sig, b in rows[:MAX_SIBLINGS])


__all__ = ["MAX_SIBLINGS", "family_of", "migrate", "put", "siblings"]
