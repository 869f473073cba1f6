"""The entity layer's per-server speed factors, kept up to date record by record.

Where it sits: inside :class:`estimator.store.ThroughputStore`, behind its ``entity_factors()`` (what
:class:`estimator.estimate.Estimator` scales its per-server estimates by). The factors are defined by one
GROUP BY over ``entity_aggregated`` joined with ``theory`` (the store's docstring of ``entity_factors``
says how a ratio is formed); run again after every ingested record, as the simulator did, that made a
run quadratic in its records. :class:`EntityFactors` reads the whole table once, then, told which rows
and probes the store's own writes touched (:meth:`EntityFactors.touch_row`, :meth:`EntityFactors.touch_probe`),
re-reads only those keys and recomputes only the servers whose ratios they enter: the same answer as the
full query, in time proportional to what changed. A commit by another connection (SQLite's
``data_version`` moves) makes it read everything again.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

#: (server, signature, GPU type, GPUs): one row of entity_aggregated
RowKey = tuple[str, str, str, int]

FULL_QUERY = ("select e.server as server, e.signature as sig, e.gpu_type as t, e.gpus as gpus, "
              "sum(e.total) / sum(e.n) as v, "
              "max(th.batch_size / (th.t_f + th.t_b + th.t_u)) as probe "
              "from entity_aggregated e left join theory th on th.signature = e.signature and th.gpu_type = e.gpu_type "
              "and th.t_f + th.t_b + th.t_u > 0 group by e.server, e.signature, e.gpu_type, e.gpus")
ROW_QUERY = ("select sum(total) / sum(n) from entity_aggregated "
             "where server = ? and signature = ? and gpu_type = ? and gpus = ?")
PROBE_QUERY = ("select max(batch_size / (t_f + t_b + t_u)) from theory "
               "where signature = ? and gpu_type = ? and t_f + t_b + t_u > 0")


class EntityFactors:
    """Per server: the median of its ratios (see the module docstring); one per store connection. Each
    server's ratios are kept sorted, so a record costs one ratio per server it concerns (the peers of a
    multi-GPU key) and a median read, not a pass over every row."""

    def __init__(self) -> None:
        self._loaded = False
        self._version: object = None
        self._value: dict[RowKey, float] = {}
        self._probe: dict[tuple[str, str], float | None] = {}
        self._peers: dict[tuple[str, str, int], set[str]] = defaultdict(set)  # (sig, type, gpus) -> servers
        self._ratio: dict[str, dict[tuple[str, str, int], float]] = defaultdict(dict)  # server -> key -> ratio
        self._sorted: dict[str, list[float]] = defaultdict(list)  # server -> its ratios, ascending
        self._rows: set[RowKey] = set()
        self._probes: set[tuple[str, str]] = set()

    def touch_row(self, server: str, signature: str, gpu_type: str, gpus: int) -> None:
        """The store wrote (or may have written) this entity_aggregated row."""
        self._rows.add((server, signature, gpu_type, int(gpus)))

    def touch_probe(self, signature: str, gpu_type: str) -> None:
        """The store wrote this theory row (the 1-GPU probe the 1-GPU ratios divide by)."""
        self._probes.add((signature, gpu_type))

    def factors(self, db: Any) -> dict[str, float]:
        """The factors now; ``db``: the store's sqlite_utils database (read with its own connection)."""
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if not self._loaded or version != self._version:
            self._load(db)
        elif self._rows or self._probes:
            self._update(db)
        self._version = version
        return {server: _median(values) for server, values in self._sorted.items() if values}

    def _set_ratio(self, server: str, key: tuple[str, str, int], ratio: float | None) -> None:
        ratios, ordered = self._ratio[server], self._sorted[server]
        old = ratios.pop(key, None)
        if old is not None:
            del ordered[bisect.bisect_left(ordered, old)]
        if ratio is not None:
            ratios[key] = ratio
            bisect.insort(ordered, ratio)

    def _rate(self, key: tuple[str, str, int], servers: set[str] | None = None) -> None:
        """Recompute the ratios of ``key`` for ``servers`` (default: every server with a row of it)."""
        sig, t, g = key
        peers = self._peers.get(key, set())
        if g == 1:
            probe = self._probe.get((sig, t))
            for server in peers if servers is None else servers:
                v = self._value.get((server, sig, t, g))
                self._set_ratio(server, key, v / float(probe) if v is not None and probe else None)
            return
        values = [self._value[(p, sig, t, g)] for p in peers]
        top = max(values) if values else 0.0
        for server in peers | (servers or set()):
            v = self._value.get((server, sig, t, g))
            self._set_ratio(server, key, v / top if v is not None and len(values) > 1 and top > 0 else None)

    def _set(self, key: RowKey, value: float | None) -> None:
        server, sig, t, g = key
        if value is None:
            self._value.pop(key, None)
            self._peers[(sig, t, g)].discard(server)
        else:
            self._value[key] = float(value)
            self._peers[(sig, t, g)].add(server)

    def _load(self, db: Any) -> None:
        self.__init__()  # type: ignore[misc]
        for r in db.query(FULL_QUERY):
            self._set((r["server"], r["sig"], r["t"], int(r["gpus"])), r["v"])
            self._probe[(r["sig"], r["t"])] = r["probe"]
        for key in list(self._peers):
            self._rate(key)
        self._loaded = True

    def _update(self, db: Any) -> None:
        keys: dict[tuple[str, str, int], set[str]] = defaultdict(set)
        for row in self._rows:
            self._set(row, db.execute(ROW_QUERY, list(row)).fetchone()[0])
            server, sig, t, g = row
            keys[(sig, t, g)].add(server)
            if (sig, t) not in self._probe:  # the full read holds the probes of keys with rows only
                self._probes.add((sig, t))
        for sig, t in sorted(self._probes):
            self._probe[(sig, t)] = db.execute(PROBE_QUERY, [sig, t]).fetchone()[0]
            keys[(sig, t, 1)] |= self._peers.get((sig, t, 1), set())
        self._rows, self._probes = set(), set()
        for key, servers in keys.items():
            self._rate(key, servers if key[2] == 1 else None)


def _median(ordered: list[float]) -> float:
    """statistics.median of an already sorted list (the same arithmetic)."""
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
