"""The engine's reads of the throughput store: one estimator, its answers reused while the store does not learn.

Where it sits: the engine opens one :class:`StoreReader` over its throughput store (it is the store's only
writer of measurements); the refresh's ``calibrate`` step calls :meth:`StoreReader.ensure_calibrations`,
its ``ingest`` step and the profiler call :meth:`StoreReader.ingested` for each signature that got new
records, and every step that needs an estimate (the round's ``views``, the refresh's ``ages`` and
``declarations``) calls :meth:`StoreReader.estimator` on the snapshot of the round. The simulator's fast
path reuses its estimates by the same rule (:mod:`hops_slurm.sim.knowledge`).
"""

from __future__ import annotations

import logging
from typing import Any

from hops_slurm.config import SiteConfig
from hops_slurm.core.learned import Learned
from hops_slurm.engine.calibration_files import CalibrationFiles
from hops_slurm.slurm.snapshot import Snapshot

log = logging.getLogger(__name__)


class StoreReader:
    """The store as the engine's steps read it (see the module docstring); ``store`` None (a dry run
    without a store file): no estimator, no calibration. :attr:`estimates`: the job-view pipeline's
    estimates (:func:`hops_slurm.core.jobview.estimate`), reused while the store does not learn about their
    signature."""

    def __init__(self, store: Any, config: SiteConfig, partitions: tuple[str, ...], now: Any, *, dry_run: bool) -> None:
        self.store, self.config, self.partitions, self.now, self.dry_run = store, config, partitions, now, dry_run
        self.estimates: dict[tuple[object, ...], object] = {}
        self._memo: tuple[object, object, object, Any] | None = None  # (store view, nodes, node key, estimator)
        self._learned = Learned()  # what the store learned since the last read (its one forgetting rule)
        self._source: tuple[int, Any] | None = None  # (data_version, the store's cached view)
        self._calibrated: set[str] = set()  # GPU types the store is known to have a calibration for
        #: what `hops-slurm calibrate` wrote into [paths] calibrations, read as it changes
        self.calibration_files = CalibrationFiles(config.paths.resolve(config.paths.calibrations))

    def estimator_for(self, cluster: Any) -> Any:
        """An estimator over the store's view for ``cluster`` (None without a store)."""
        from estimator.estimate import Estimator

        if self.store is None:
            return None
        return Estimator.for_cluster(self._store_view(), cluster)

    def _store_view(self) -> Any:
        """The store as the estimator reads it: each signature read once and reused until the engine ingests
        a record for it (:meth:`ingested`, :class:`hops_slurm.core.learned.Learned`), and read afresh whole
        when another process changed the file
        (``hops-slurm calibrate``: SQLite's ``data_version`` moves only for other connections' commits)."""
        from estimator.snapshot import CachedSource

        version = self.store.db.execute("PRAGMA data_version").fetchone()[0]
        if self._source is None or self._source[0] != version:
            self._source = (version, CachedSource(self.store))
        return self._source[1]

    def ingested(self, signature: str) -> None:
        """A probe result or runtime record of ``signature`` went into the store: its snapshot and
        estimates are forgotten before the next read (:meth:`estimator`)."""
        self._learned.add(signature)

    def estimator(self, snap: Snapshot) -> Any:
        """One estimator per store view and set of nodes of ``snap``, reused across refreshes, with its
        answers in :attr:`estimates`; what the store learned since the last call is forgotten first: the
        estimates of each signature with new records, all of them when the entity factors moved. None
        without a store or a usable GPU node."""
        nodes, memo = snap.nodes, self._memo
        source = self._store_view() if self.store is not None else None
        if memo is None or memo[0] is not source or memo[1] is not nodes:
            key = snap.gpu_nodes(self.partitions)  # the nodes of the cluster view, without working out free GPUs
            if memo is not None and memo[0] is source and memo[2] == key:
                made = memo[3]
            else:
                made = self.estimator_for(snap.cluster_view(fragment=False, partition=self.partitions)) if key else None
                self.estimates.clear()
            memo = self._memo = (source, nodes, key, made)
        if source is not None:
            self._learned.forget(source, self.estimates)
        return memo[3]

    # ----- calibrations ------------------------------------------------------------------------------
    def ensure_calibrations(self, gpu_types: set[str]) -> None:
        """Eq. 2 needs B_link and B_net per GPU type: until ``hops-slurm calibrate`` has measured a type,
        the configured defaults are stored (method says so), else every multi-GPU estimate would fail.
        The store is asked only while some type is not known to have one: the set of calibrated types
        only grows (a calibration is never deleted; records add types, never remove one), so a type seen
        calibrated stays so and refreshes do not refit every type's calibration to learn nothing.
        Then what ``hops-slurm calibrate`` wrote since the last look replaces them (:meth:`_take_measured`)."""
        if self.store is None or self.dry_run:
            return
        if not gpu_types <= self._calibrated:
            self._store_defaults(gpu_types)
        self._take_measured()

    def _take_measured(self) -> None:
        """Ingest the calibration records new in ``[paths] calibrations``, one GPU type at a time (a type that
        cannot be ingested is one warning; the others still are)."""
        from profiler.ingest import IngestError, ingest_calibration

        by_type: dict[str, list[Any]] = {}
        for record in self.calibration_files.new_records():
            by_type.setdefault(record.gpu_type, []).append(record)
        for gpu_type, records in sorted(by_type.items()):
            try:
                ingest_calibration(self.store, records)
            except IngestError as exc:
                log.warning("%s", exc)
                continue
            self._source = None  # its cached view read the calibrations before this one
            self._calibrated.add(gpu_type)
            cal = self.store.measured_calibrations()[gpu_type]
            log.info("GPU type %s: calibration measured by hops-slurm calibrate: B_link %.4g, B_net %.4g params/s",
                     gpu_type, cal.b_link, cal.b_net)

    def _store_defaults(self, gpu_types: set[str]) -> None:
        self._calibrated |= set(self.store.calibrations())
        for t in sorted(gpu_types - self._calibrated):
            e = self.config.engine
            self.store.put_calibration(t, b_link=e.default_b_link, b_net=e.default_b_net,
                                       method="default from hops.toml (not measured)", measured_at=self.now())
            self._source = None  # its cached view read the calibrations before this one
            self._calibrated.add(t)
            log.warning("GPU type %s has no calibration: using the defaults from hops.toml until "
                        "`hops-slurm calibrate` measures it", t)
