"""The bandwidths runtime records imply, for refitting the calibration as records arrive (issue 22).

Where it sits: :meth:`estimator.store.ThroughputStore.calibrations` reads the measured pair of each GPU
type and, through :func:`record_bandwidths`, one point per multi-GPU measured key (the type layer's
running aggregate of a job's records on one GPU count in one server, or one node count across servers)
of jobs that have a profile on that type; :func:`estimator.calibration.refit` turns both into the pair
the estimator uses. A point is the bandwidth under which eq. (1)-(2) give the key's mean per-GPU rate
from the job's profile and its mean recorded data time and sync wait
(:func:`estimator.calibration.implied_bandwidth`); a stall implies nothing.

Bounded: at most :data:`REFIT_RECORDS` of the newest keys per type and scope count, and the memo keeps
each key's value per aggregate (a key whose records changed is computed again), so a read costs one
query per scope and the keys changed since the last read. Takes the store's database; writes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import sqlite_utils

from estimator.calibration import implied_bandwidth
from estimator.mixture import Mixture
from estimator.model import TimeComponents

#: per GPU type and scope (in-server, cross-server), the newest multi-GPU keys whose points count
REFIT_RECORDS = 200
#: rows read per scope (newest first): enough for REFIT_RECORDS keys of a few GPU types
_READ_ROWS = 16 * REFIT_RECORDS
#: memo entries kept before the memo is cleared (aggregates long replaced)
_MEMO_MAX = 64 * REFIT_RECORDS

_SCOPES = (("type_aggregated", 0, "a.gpus > 1 and a.nodes = 1"), ("type_distributed", 1, "a.nodes > 1"))


def _implied(db: sqlite_utils.Database, r: dict[str, Any], memo: dict[tuple, float | None]) -> float | None:
    key = (r["signature"], r["gpu_type"], r["gpus"], r["nodes"], r["n"], r["total"])
    if key in memo:
        return memo[key]
    means = db.execute("select avg(data_time), avg(sync_wait) from samples where signature = ? and gpu_type = ?",
                       [r["signature"], r["gpu_type"]]).fetchone()
    try:
        tc = TimeComponents(r["t_f"], r["t_b"], r["t_u"], r["pattern"], r["params"], r["batch_size"])
        data = Mixture.constant(max(float(means[0] or 0.0), 0.0), max(float(means[1] or 0.0), 0.0))
        value = implied_bandwidth(tc, float(r["total"]) / float(r["n"]), gpus=int(r["gpus"]), nodes=int(r["nodes"]),
                                  data=data)
    except (TypeError, ValueError, ZeroDivisionError):
        value = None  # a row eq. (1) cannot take says nothing of the bandwidth
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value
    return value


def record_bandwidths(db: sqlite_utils.Database, memo: dict[tuple, float | None]) -> dict[str, tuple[list[float], list[float]]]:
    """Per GPU type, (in-server points, cross-server points) of its newest multi-GPU measured keys
    (module docstring); ``memo`` is the caller's, kept across reads."""
    out: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for table, scope, where in _SCOPES:
        rows = db.query(
            f"select a.signature, a.gpu_type, a.gpus, a.nodes, a.n, a.total, t.t_f, t.t_b, t.t_u, t.pattern, "
            f"t.params, t.batch_size from {table} a join theory t on t.signature = a.signature and "
            f"t.gpu_type = a.gpu_type where {where} order by a.id desc limit ?", [_READ_ROWS])
        taken: dict[str, int] = defaultdict(int)
        for r in rows:
            if taken[r["gpu_type"]] >= REFIT_RECORDS or not r["n"]:
                continue
            taken[r["gpu_type"]] += 1
            value = _implied(db, r, memo)
            if value is not None:
                out[r["gpu_type"]][scope].append(value)
    return dict(out)


__all__ = ["REFIT_RECORDS", "record_bandwidths"]
