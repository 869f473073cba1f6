"""The 3-layer throughput store (Hops §3.3) in SQLite, through sqlite-utils.

Data flow: the engine (the single writer) ingests profiler results (:meth:`ThroughputStore.put_theory`,
:meth:`ThroughputStore.put_calibration`) and running-mode records (:meth:`ThroughputStore.add_runtime_samples`);
readers (reports, the planner through :class:`estimator.estimate.Estimator`) take a :class:`JobSnapshot`.

Layers, keyed by job signature:
- theoretical (``theory`` + ``samples``): per GPU type, T_f, T_b, T_u, pattern, parameter count,
  per-GPU batch, and every data-time / sync-wait sample (profile and running mode) for eq. (3);
- type (``type_aggregated`` by GPU count, ``type_distributed`` by node count): per-GPU samples/s;
- entity (``entity_aggregated``, ``entity_distributed``): the same per server (node);
- ``calibration``: B_link, B_net per GPU type, how and when measured; what readers get
  (:meth:`ThroughputStore.calibrations`) is that pair refitted with the bandwidths the newest multi-GPU
  runtime records imply (:func:`estimator.calibration.refit`: physical, median, within what was measured);
- ``restart_cost``: observed restart costs per signature (:mod:`estimator.restart_cost`,
  :meth:`ThroughputStore.put_restart_cost`, :meth:`ThroughputStore.restart_cost`);
- ``family``: per signature, the family key its probe named (:mod:`estimator.family`, schema version 5);
  across signatures, the type layer read as :mod:`estimator.peers`' table (no table of its own).

Bounded (:mod:`estimator.bounds`, schema version 4): the records come from users' jobs, as many as the
engine accepts, so every table keeps a bounded summary: one running aggregate per (signature, type,
node, config) in the measured layers, the last :data:`estimator.bounds.KEEP_SAMPLES` samples per
(signature, type, source), the last restart costs per signature.

The database is in WAL mode, so readers (``read_only=True``) run while the writer writes. Only one
writer may open a store: it holds an exclusive ``flock`` on ``<path>.writer.lock``; a second writer
gets :class:`StoreLockedError`. Locked, corrupt or too-new databases raise the errors of
:mod:`estimator.errors`; nothing falls back to a default silently.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import sqlite3
import urllib.parse
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path

import sqlite_utils

from estimator import bounds as _bounds, family as _family, peers as _peers, restart_cost as _restarts
from estimator import calibration_records as _records
from estimator.calibration import refit
from estimator.entity_factors import EntityFactors
from estimator.errors import SchemaVersionError, StoreCorruptError, StoreError, StoreLockedError
from estimator.model import TimeComponents
from estimator.snapshot import Calibration, JobSnapshot, Sibling, TypeTheory

log = logging.getLogger(__name__)

_MEASURED_COLUMNS = {"id": int, "signature": str, "gpu_type": str, "gpus": int, "nodes": int, "per_gpu": float}


def _migrate_1(db: sqlite_utils.Database) -> None:
    """Version 1: the three layers and the calibration table."""
    db["theory"].create(
        {
            "signature": str,
            "gpu_type": str,
            "t_f": float,
            "t_b": float,
            "t_u": float,
            "pattern": int,
            "params": float,
            "batch_size": int,
        },
        pk=("signature", "gpu_type"),
        not_null={"t_f", "t_b", "t_u", "pattern", "params", "batch_size"},
    )
    # One row per recorded iteration; data_time / sync_wait may be NULL when only one was recorded.
    db["samples"].create(
        {"id": int, "signature": str, "gpu_type": str, "source": str, "server": str,
         "data_time": float, "sync_wait": float},
        pk="id",
        not_null={"signature", "gpu_type", "source"},
    )
    for table in ("type_aggregated", "type_distributed"):
        db[table].create(dict(_MEASURED_COLUMNS), pk="id", not_null={"signature", "gpu_type", "per_gpu"})
    for table in ("entity_aggregated", "entity_distributed"):
        db[table].create(
            {**_MEASURED_COLUMNS, "server": str}, pk="id", not_null={"signature", "gpu_type", "server", "per_gpu"}
        )
    db["calibration"].create(
        {"gpu_type": str, "b_link": float, "b_net": float, "method": str, "measured_at": str},
        pk="gpu_type",
        not_null={"b_link", "b_net"},
    )


def _migrate_2(db: sqlite_utils.Database) -> None:
    """Version 2: indexes for the per-signature lookups every snapshot makes."""
    db["samples"].create_index(["signature", "gpu_type"], if_not_exists=True)
    for table in ("type_aggregated", "type_distributed", "entity_aggregated", "entity_distributed"):
        db[table].create_index(["signature"], if_not_exists=True)


#: Ordered migrations: MIGRATIONS[i] brings the schema from version i to i + 1 (3: :mod:`estimator.restart_cost`;
#: 4: the bounded layers of :mod:`estimator.bounds`; 5: the families of :mod:`estimator.family`).
MIGRATIONS: tuple[Callable[[sqlite_utils.Database], None], ...] = (_migrate_1, _migrate_2, _restarts.migrate,
                                                                   _bounds.migrate, _family.migrate)
SCHEMA_VERSION = len(MIGRATIONS)
#: The eq. (3) fit uses at most this many of a (job, type)'s most recent samples (as many as are kept).
MAX_FIT_SAMPLES = _bounds.KEEP_SAMPLES

_LOCKED_MARKERS = ("database is locked", "database table is locked", "busy")
_CORRUPT_MARKERS = ("not a database", "malformed", "no such table", "no such column", "corrupt")


def read_only_uri(path: str | os.PathLike[str]) -> str:
    """An SQLite URI that opens ``path`` for reading only and creates nothing beside it: ``mode=ro``, plus
    ``immutable=1`` for a WAL database without a ``-wal`` file (no connection has it open: SQLite would
    otherwise create ``-wal`` and ``-shm`` files to read it; a writer that opens it meanwhile writes its
    WAL, not the file read). A rollback-journal database is read with its locks, as any reader."""
    p = Path(path).resolve()
    try:
        with open(p, "rb") as fh:
            header = fh.read(20)
    except OSError:
        header = b""
    wal = len(header) == 20 and header.startswith(b"SQLite format 3\x00") and header[18:20] == b"\x02\x02"
    quiet = wal and not any(p.with_name(p.name + suffix).exists() for suffix in ("-wal", "-journal"))
    return f"file:{urllib.parse.quote(str(p))}?mode=ro" + ("&immutable=1" if quiet else "")


def _to_iso(when: float | str | datetime) -> str:
    if isinstance(when, datetime):
        return when.isoformat()
    if isinstance(when, (int, float)):
        return datetime.fromtimestamp(float(when), tz=timezone.utc).isoformat()
    return str(when)


def _check_positive(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value


class ThroughputStore:
    """The SQLite store. ``ThroughputStore(path)`` opens (creating and migrating) as the single writer;
    ``ThroughputStore(path, read_only=True)`` opens an existing store for reading only.

    ``busy_timeout`` (seconds) is how long SQLite waits for a lock before :class:`StoreLockedError`;
    ``momentary`` (read-only): a reader that reads at once and closes (a CLI command) and creates nothing
    beside the file (:func:`read_only_uri`); a long-lived reader sees the writer's commits without it.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False, busy_timeout: float = 5.0,
                 momentary: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock_fd: int | None = None
        self._untrimmed: dict[tuple[str, str, str], int] = {}  # sample rows added since the last cut
        self._entity = EntityFactors()  # the entity factors, updated by this store's own writes
        self._implied: dict[tuple, float | None] = {}  # calibration_records' memo: per measured key and aggregate
        if read_only:
            if not self.path.exists():
                raise StoreError(f"throughput store {self.path} does not exist; the engine creates it on first start")
            uri = read_only_uri(self.path) if momentary else f"file:{urllib.parse.quote(str(self.path.resolve()))}?mode=ro"
            conn = self._connect(lambda: sqlite3.connect(uri, uri=True, timeout=busy_timeout, check_same_thread=False))
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._take_writer_lock()
            try:
                conn = self._connect(
                    lambda: sqlite3.connect(str(self.path), timeout=busy_timeout, check_same_thread=False)
                )
            except BaseException:
                self._release_writer_lock()
                raise
        self.db = sqlite_utils.Database(conn)
        try:
            with self._guard("open"):
                self._check_integrity()
                if not read_only:
                    self.db.enable_wal()
                    self._migrate()
                else:
                    self._check_version(self.schema_version)
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- opening, errors, migrations
    def _connect(self, make: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
        try:
            return make()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open throughput store {self.path}: {exc}") from exc

    def _take_writer_lock(self) -> None:
        lock_path = self.path.with_name(self.path.name + ".writer.lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreLockedError(
                f"throughput store {self.path} already has a writer (pid {holder}, lock {lock_path}); "
                "only the engine writes the store: stop the other writer, or open with read_only=True"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def _release_writer_lock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = None

    @contextlib.contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Turn sqlite3 errors into store errors with a message a person can act on."""
        try:
            yield
        except sqlite3.Error as exc:
            text = str(exc).lower()
            if any(m in text for m in _LOCKED_MARKERS):
                raise StoreLockedError(
                    f"throughput store {self.path} is locked ({action}: {exc}); another process holds a "
                    "write lock beyond the busy timeout: check for a second engine or a stuck sqlite3 shell"
                ) from exc
            if any(m in text for m in _CORRUPT_MARKERS) or type(exc) is sqlite3.DatabaseError:
                raise StoreCorruptError(
                    f"throughput store {self.path} is corrupt or not a hops-slurm store ({action}: {exc}); "
                    "move it aside (measurements will be re-profiled) or restore it from a backup"
                ) from exc
            raise StoreError(f"throughput store {self.path}: {action} failed: {exc}") from exc

    def _check_integrity(self) -> None:
        row = self.db.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise StoreCorruptError(
                f"throughput store {self.path} failed SQLite's integrity check ({row[0] if row else 'no answer'}); "
                "move it aside (measurements will be re-profiled) or restore it from a backup"
            )
        tables = set(self.db.table_names())
        if tables and "meta" not in tables:
            raise StoreCorruptError(
                f"{self.path} is an SQLite database but not a hops-slurm throughput store (tables: "
                f"{', '.join(sorted(tables))}); point the store path at another file"
            )

    @property
    def schema_version(self) -> int:
        with self._guard("read schema version"):
            if "meta" not in self.db.table_names():
                return 0
            rows = list(self.db.query("select value from meta where key = 'schema_version'"))
        if not rows:
            raise StoreCorruptError(f"throughput store {self.path} has no schema version; move it aside")
        return int(rows[0]["value"])

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"throughput store {self.path} has schema version {version}, newer than this hops-slurm "
                f"understands ({SCHEMA_VERSION}); upgrade hops-slurm or point it at another store"
            )
        if self.read_only and version < SCHEMA_VERSION:
            raise SchemaVersionError(
                f"throughput store {self.path} has schema version {version} < {SCHEMA_VERSION}; "
                "open it once as the writer (start the engine) to migrate it"
            )

    def _migrate(self) -> None:
        with self.db.atomic():
            if not self.db.table_names():  # a new, empty file
                self.db["meta"].create({"key": str, "value": str}, pk="key")
                version = 0
            else:
                version = self.schema_version
            self._check_version(version)
            for target in range(version, SCHEMA_VERSION):
                log.info("throughput store %s: migrating schema %d -> %d", self.path, target, target + 1)
                MIGRATIONS[target](self.db)
                self.db["meta"].upsert({"key": "schema_version", "value": str(target + 1)}, pk="key")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.db.close()
        self._release_writer_lock()

    def __enter__(self) -> ThroughputStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError(f"throughput store {self.path} was opened read-only; only the engine writes it")

    # ---------------------------------------------------------------- writers
    def put_theory(
        self,
        signature: str,
        gpu_type: str,
        *,
        t_f: float,
        t_b: float,
        t_u: float,
        pattern: int,
        params: float,
        batch_size: int,
        data_samples: Sequence[float] = (),
        sync_samples: Sequence[float] = (),
        family: str = "",
    ) -> None:
        """Record a profile: the stable components and the profile's data-time / sync-wait samples;
        ``family``: the job's family key (:mod:`estimator.family`; empty: none).

        Replaces an earlier profile of the same (signature, GPU type) and its profile samples; samples
        recorded in running mode are kept. Paired samples (equal lengths) are stored row by row so T_w
        can be conditioned on the data-time component.
        """
        self._writable()
        tc = TimeComponents(t_f, t_b, t_u, int(pattern), float(params), int(batch_size))  # validates
        with self._guard("put_theory"), self.db.atomic():
            self.db["theory"].upsert(
                {"signature": signature, "gpu_type": gpu_type, "t_f": tc.t_f, "t_b": tc.t_b, "t_u": tc.t_u,
                 "pattern": tc.pattern, "params": tc.params, "batch_size": tc.batch_size},
                pk=("signature", "gpu_type"),
            )
            self._entity.touch_probe(signature, gpu_type)
            self.db.execute(
                "delete from samples where signature = ? and gpu_type = ? and source = 'profile'", [signature, gpu_type]
            )
            self._insert_samples(signature, gpu_type, "profile", "", data_samples, sync_samples)
            _family.put(self.db, signature, family, tc.batch_size)

    def _insert_samples(
        self, signature: str, gpu_type: str, source: str, server: str,
        data_times: Sequence[float], sync_waits: Sequence[float],
    ) -> None:
        data, sync = [float(x) for x in data_times], [float(x) for x in sync_waits]
        for name, values in (("data time", data), ("sync wait", sync)):
            if any(not math.isfinite(v) or v < 0 for v in values):
                raise ValueError(f"{name} samples must be finite and non-negative")
        rows: list[tuple[float | None, float | None]]
        if len(data) == len(sync):
            rows = list(zip(data, sync))
        else:
            rows = [(d, None) for d in data] + [(None, s) for s in sync]
        if rows:
            rows = rows[-_bounds.KEEP_SAMPLES:]
            self.db.conn.executemany(
                "insert into samples (signature, gpu_type, source, server, data_time, sync_wait) values (?, ?, ?, ?, ?, ?)",
                [(signature, gpu_type, source, server, d, w) for d, w in rows])
            key = (signature, gpu_type, source)  # cut to the last KEEP_SAMPLES every TRIM_EVERY rows (and at first)
            added = self._untrimmed.get(key, _bounds.TRIM_EVERY) + len(rows)
            if added >= _bounds.TRIM_EVERY:
                _bounds.trim_samples(self.db, signature, gpu_type, source)
                added = 0
            self._untrimmed[key] = added

    def add_runtime_samples(
        self,
        signature: str,
        gpu_type: str,
        node: str,
        *,
        data_times: Sequence[float] = (),
        sync_waits: Sequence[float] = (),
        gpus: int,
        nodes: int,
        throughput: float | None = None,
    ) -> None:
        """Append a running-mode record from ``node`` of a job running on ``gpus`` GPUs over ``nodes`` nodes.

        ``throughput`` is the whole job's observed samples/s in that configuration (None if not
        measured); its per-GPU value (throughput / gpus) goes into the entity layer of ``node`` and the
        type layer of ``gpu_type`` (aggregated table if nodes == 1, else distributed), and the samples
        refine the eq. (3) mixture of the theoretical layer.
        """
        self._writable()
        with self._guard("add_runtime_samples"), self.db.atomic():
            self._insert_samples(signature, gpu_type, "runtime", node, data_times, sync_waits)
            if throughput is not None:
                self._put_measured(signature, gpu_type, node, gpus=gpus, nodes=nodes, throughput=throughput)

    def _put_measured(
        self, signature: str, gpu_type: str, server: str | None, *, gpus: int, nodes: int, throughput: float
    ) -> None:
        gpus, nodes = int(gpus), int(nodes)
        if not 1 <= nodes <= gpus:
            raise ValueError(f"need 1 <= nodes <= gpus, got gpus={gpus}, nodes={nodes}")
        per_gpu = _check_positive("throughput", throughput) / gpus
        layout = "aggregated" if nodes == 1 else "distributed"
        row: dict[str, object] = {"signature": signature, "gpu_type": gpu_type, "gpus": gpus, "nodes": nodes}
        _bounds.add_measured(self.db, f"type_{layout}", row, per_gpu)  # one row per key: a running mean
        if server:
            _bounds.add_measured(self.db, f"entity_{layout}", {**row, "server": server}, per_gpu)
            if layout == "aggregated":
                self._entity.touch_row(server, signature, gpu_type, gpus)

    def put_type_throughput(self, signature: str, gpu_type: str, *, gpus: int, nodes: int, throughput: float) -> None:
        """Record a measured whole-job throughput (samples/s) on ``gpu_type`` in the type layer only."""
        self._writable()
        with self._guard("put_type_throughput"), self.db.atomic():
            self._put_measured(signature, gpu_type, None, gpus=gpus, nodes=nodes, throughput=throughput)

    def put_entity_throughput(
        self, signature: str, gpu_type: str, server: str, *, gpus: int, nodes: int, throughput: float
    ) -> None:
        """Record a measured whole-job throughput on ``server`` (entity layer; mirrored into the type layer,
        since every entity record also belongs to its type, §3.3)."""
        self._writable()
        if not server:
            raise ValueError("put_entity_throughput: server name is empty")
        with self._guard("put_entity_throughput"), self.db.atomic():
            self._put_measured(signature, gpu_type, server, gpus=gpus, nodes=nodes, throughput=throughput)

    def put_calibration(
        self, gpu_type: str, *, b_link: float, b_net: float, method: str, measured_at: float | str | datetime
    ) -> None:
        """Record eq. (2)'s bandwidths for ``gpu_type`` in parameters/s (``measured_at``: epoch s or ISO)."""
        self._writable()
        row = {"gpu_type": gpu_type, "b_link": _check_positive("b_link", b_link),
               "b_net": _check_positive("b_net", b_net), "method": method, "measured_at": _to_iso(measured_at)}
        with self._guard("put_calibration"), self.db.atomic():
            self.db["calibration"].upsert(row, pk="gpu_type")

    def put_restart_cost(self, signature: str, seconds: float, *, measured_at: float | str | datetime) -> None:
        """Record one observed restart of a job of ``signature``: seconds from its start to its first
        progress, plus the notice before its requeue (``measured_at``: epoch s or ISO)."""
        self._writable()
        with self._guard("put_restart_cost"), self.db.atomic():
            _restarts.put(self.db, signature, seconds, _to_iso(measured_at))

    # ---------------------------------------------------------------- readers
    def restart_cost(self, signature: str, *, last: int = _restarts.SUMMARY_LAST) -> float | None:
        """The median of ``signature``'s last ``last`` observed restart costs (s); None if none was observed."""
        with self._guard("read restart costs"):
            return _restarts.summary(self.db, signature, last)

    def signatures(self) -> list[str]:
        with self._guard("list signatures"):
            return [r["signature"] for r in self.db.query("select distinct signature from theory order by 1")]

    def profiled_types(self, signature: str) -> list[str]:
        """GPU types with a theoretical-layer profile for ``signature`` (a re-submitted model skips these)."""
        with self._guard("read theory"):
            return [r["gpu_type"] for r in self.db.query("select gpu_type from theory where signature = ? order by 1",
                                                         [signature])]

    def theory(self, signature: str, gpu_type: str) -> TimeComponents | None:
        with self._guard("read theory"):
            rows = list(self.db.query("select * from theory where signature = ? and gpu_type = ?", [signature, gpu_type]))
        return TimeComponents(*(rows[0][k] for k in ("t_f", "t_b", "t_u", "pattern", "params", "batch_size"))) \
            if rows else None

    def samples(
        self, signature: str, gpu_type: str, *, limit: int | None = None
    ) -> tuple[list[float], list[float], list[float] | None]:
        """(data times, sync waits, data times of those sync waits' iterations or None), oldest first;
        ``limit`` keeps only the most recent rows.

        When some rows hold both values, the sync waits are those rows' (paired, so T_w can be
        conditioned); otherwise every recorded sync wait, unpaired (third item None).
        """
        with self._guard("read samples"):
            rows = list(self.db.query(
                "select data_time, sync_wait from samples where signature = ? and gpu_type = ? "
                "order by id desc limit ?", [signature, gpu_type, -1 if limit is None else int(limit)]))
        rows.reverse()
        data = [r["data_time"] for r in rows if r["data_time"] is not None]
        pairs = [
            (r["data_time"], r["sync_wait"]) for r in rows if r["data_time"] is not None and r["sync_wait"] is not None
        ]
        if pairs:
            return data, [w for _, w in pairs], [d for d, _ in pairs]
        return data, [r["sync_wait"] for r in rows if r["sync_wait"] is not None], None

    def calibration(self, gpu_type: str) -> Calibration | None:
        return self.calibrations().get(gpu_type)

    def measured_calibrations(self) -> dict[str, Calibration]:
        """The ``calibration`` table as written (``hops-slurm calibrate``, the simulator's calibration)."""
        with self._guard("read calibrations"):
            return {r["gpu_type"]: Calibration(r["gpu_type"], r["b_link"], r["b_net"], r["method"] or "",
                                               r["measured_at"] or "")
                    for r in self.db.query("select * from calibration")}

    def calibrations(self) -> dict[str, Calibration]:
        """Per GPU type, the measured pair refitted with the bandwidths the type's newest multi-GPU runtime
        records imply (:func:`estimator.calibration.refit`; :data:`estimator.calibration_records.REFIT_RECORDS`
        keys per scope), always physical; a type with records but no measured pair gets a calibration
        from its records once both scopes have one. The method says how many records took part."""
        measured = self.measured_calibrations()
        points = self.record_bandwidths()
        out: dict[str, Calibration] = {}
        for gpu_type in sorted(set(measured) | set(points)):
            cal = measured.get(gpu_type)
            links, nets = points.get(gpu_type, ([], []))
            fit = refit((cal.b_link, cal.b_net) if cal else None, links, nets)  # physical even without records
            if fit.b_link is None or fit.b_net is None:
                continue
            how = f"refit with {len(links)} in-server and {len(nets)} cross-server runtime record(s)" \
                if links or nets else ""
            method = "; ".join(m for m in ((cal.method if cal else ""), how) if m)
            out[gpu_type] = Calibration(gpu_type, fit.b_link, fit.b_net, method, cal.measured_at if cal else "")
        return out

    def record_bandwidths(self) -> dict[str, tuple[list[float], list[float]]]:
        """Per GPU type, (in-server, cross-server) bandwidths the newest multi-GPU runtime records imply
        (:func:`estimator.calibration_records.record_bandwidths`)."""
        with self._guard("read runtime records for the calibration"):
            return _records.record_bandwidths(self.db, self._implied)

    def _means(self, table: str, key: str, count: str, signature: str) -> dict[tuple[str, int], float]:
        with self._guard(f"read {table}"):
            rows = self.db.query(
                f"select {key} as k, {count} as c, sum(total) / sum(n) as v from {table} "
                "where signature = ? group by k, c", [signature])
            return {(r["k"], int(r["c"])): float(r["v"]) for r in rows}

    def _counts(self, table: str, key: str, count: str, signature: str) -> dict[tuple[str, int], int]:
        with self._guard(f"count {table}"):
            rows = self.db.query(
                f"select {key} as k, {count} as c, count(*) as n from {table} where signature = ? group by k, c",
                [signature])
            return {(r["k"], int(r["c"])): int(r["n"]) for r in rows}

    def snapshot(self, signature: str, *, max_samples: int = MAX_FIT_SAMPLES) -> JobSnapshot:
        """Everything known about ``signature``; the eq. (3) mixture is fitted on its most recent
        ``max_samples`` iterations (so a job with years of running-mode records stays cheap)."""
        theory: dict[str, TypeTheory] = {}
        for gpu_type in self.profiled_types(signature):
            tc = self.theory(signature, gpu_type)
            assert tc is not None
            data, sync, sync_data = self.samples(signature, gpu_type, limit=max_samples)
            theory[gpu_type] = TypeTheory.from_samples(tc, data, sync, sync_data_times=sync_data)
        with self._guard("read the family"):
            family, siblings = _family.siblings(self.db, signature)
        return JobSnapshot(
            signature,
            theory=theory,
            type_aggregated=self._means("type_aggregated", "gpu_type", "gpus", signature),
            type_distributed=self._means("type_distributed", "gpu_type", "nodes", signature),
            type_aggregated_n=self._counts("type_aggregated", "gpu_type", "gpus", signature),
            type_distributed_n=self._counts("type_distributed", "gpu_type", "nodes", signature),
            entity_aggregated=self._means("entity_aggregated", "server", "gpus", signature),
            entity_distributed=self._means("entity_distributed", "server", "nodes", signature),
            family=family, siblings=siblings,
        )

    def siblings(self, signature: str) -> tuple[Sibling, ...]:
        """What the other signatures of ``signature``'s family measured (:mod:`estimator.family`)."""
        with self._guard("read the family"):
            return _family.siblings(self.db, signature)[1]

    def peers(self) -> _peers.PeerTable:
        """Every signature's type-layer rates across GPU counts (:mod:`estimator.peers`, bounded)."""
        with self._guard("read the peer table"):
            return _peers.read(self.db)

    def family_of(self, signature: str) -> str:
        """``signature``'s family key (:mod:`estimator.family`; empty: none)."""
        with self._guard("read the family"):
            return (_family.family_of(self.db, signature) or ("",))[0]

    def entity_factors(self) -> dict[str, float]:
        """Per server: how fast jobs ran there, over every job (§3.3's entity layer, shared across jobs).

        Single-node records only (a multi-node run is paced by its slowest node while the recorder
        names one). A 1-GPU record is compared with the job's probe on that GPU type (batch / (T_f +
        T_b + T_u)); a record on more GPUs with the same job on the same GPU count on the fastest other
        server of that type, when at least two servers ran it. A server's factor is the median of its
        ratios; servers without such records have none.
        """
        with self._guard("read entity factors"):
            # the GROUP BY once, then only the rows this store's own writes touched (estimator.entity_factors)
            return self._entity.factors(self.db)

    def record_counts(self, signature: str) -> dict[str, int]:
        """How many records each layer holds for ``signature`` (reports, tests): sample rows, and the
        records folded into the measured layers' aggregates."""
        out: dict[str, int] = defaultdict(int)
        with self._guard("count records"):
            out["samples"] = self.db.execute("select count(*) from samples where signature = ?", [signature]).fetchone()[0]
            for table in _bounds.MEASURED_KEYS:
                out[table] = self.db.execute(
                    f"select coalesce(sum(n), 0) from {table} where signature = ?", [signature]).fetchone()[0]
        return dict(out)

    def row_counts(self) -> dict[str, int]:
        """Rows per table, over every signature (the store's size: docs/security.md, the flood test)."""
        with self._guard("count rows"):
            return {t: self.db.execute(f"select count(*) from [{t}]").fetchone()[0] for t in self.db.table_names()}
