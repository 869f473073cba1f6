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

import statistics
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
    """Per server: the median of its ratios (see the module docstring); one per store connection."""

    def __init__(self) -> None:
        self._loaded = False
        self._version: object = None
        self._value: dict[RowKey, float] = {}
        self._probe: dict[tuple[str, str], float | None] = {}
        self._peers: dict[tuple[str, str, int], set[str]] = defaultdict(set)  # (sig, type, gpus) -> servers
        self._keys: dict[str, set[tuple[str, str, int]]] = defaultdict(set)  # server -> its (sig, type, gpus)
        self._factors: dict[str, float] = {}
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
        return dict(self._factors)

    def _set(self, key: RowKey, value: float | None) -> None:
        server, sig, t, g = key
        if value is None:
            self._value.pop(key, None)
            self._peers[(sig, t, g)].discard(server)
            self._keys[server].discard((sig, t, g))
        else:
            self._value[key] = float(value)
            self._peers[(sig, t, g)].add(server)
            self._keys[server].add((sig, t, g))

    def _load(self, db: Any) -> None:
        self.__init__()  # type: ignore[misc]
        for r in db.query(FULL_QUERY):
            self._set((r["server"], r["sig"], r["t"], int(r["gpus"])), r["v"])
            self._probe[(r["sig"], r["t"])] = r["probe"]
        for server in list(self._keys):
            self._recompute(server)
        self._loaded = True

    def _update(self, db: Any) -> None:
        servers: set[str] = set()
        for key in self._rows:
            self._set(key, db.execute(ROW_QUERY, list(key)).fetchone()[0])
            server, sig, t, g = key
            servers |= {server} if g == 1 else set(self._peers[(sig, t, g)]) | {server}
            if (sig, t) not in self._probe:  # the full read holds the probes of keys with rows only
                self._probes.add((sig, t))
        for sig, t in sorted(self._probes):
            self._probe[(sig, t)] = db.execute(PROBE_QUERY, [sig, t]).fetchone()[0]
            servers |= set(self._peers.get((sig, t, 1), ()))
        self._rows, self._probes = set(), set()
        for server in servers:
            self._recompute(server)

    def _recompute(self, server: str) -> None:
        ratios: list[float] = []
        for sig, t, g in self._keys.get(server, ()):
            v = self._value[(server, sig, t, g)]
            if g == 1:
                probe = self._probe.get((sig, t))
                if probe:
                    ratios.append(v / float(probe))
            else:
                peers = [self._value[(p, sig, t, g)] for p in self._peers[(sig, t, g)]]
                if len(peers) > 1 and max(peers) > 0:
                    ratios.append(v / max(peers))
        if ratios:
            self._factors[server] = statistics.median(ratios)
        else:
            self._factors.pop(server, None)
