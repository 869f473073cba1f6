"""Plain, immutable views of one job's throughput knowledge: what :mod:`estimator.estimate` reads.

The SQLite store (:mod:`estimator.store`) builds a :class:`JobSnapshot` from its three layers; the
simulator can build one in memory (:class:`MemorySource`) from ground truth or synthetic profiles.
Either way the estimate functions stay pure: they never touch SQLite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from estimator.mixture import Mixture, fit_mixture
from estimator.model import TimeComponents


@dataclass(frozen=True)
class Calibration:
    """Per-GPU-type bandwidths for eq. (2), in parameters/s, with provenance."""

    gpu_type: str
    b_link: float  # within one node (ring all-reduce)
    b_net: float  # across nodes
    method: str = ""
    measured_at: str = ""


@dataclass(frozen=True)
class TypeTheory:
    """Theoretical layer for one (job, GPU type): stable components + the fitted T_d/T_w mixture."""

    components: TimeComponents
    data: Mixture

    @staticmethod
    def from_samples(
        components: TimeComponents,
        data_times: Sequence[float],
        sync_waits: Sequence[float] = (),
        *,
        sync_data_times: Sequence[float] | None = None,
    ) -> TypeTheory:
        """Fit eq. (3) to the samples (see :func:`estimator.mixture.fit_mixture` for the pairing rules);
        no data-time samples means T_d = 0 (data loading not measured), T_w the mean sync wait."""
        if len(data_times):
            mixture = fit_mixture(data_times, sync_waits, sync_data_times=sync_data_times)
        else:
            wait = sum(sync_waits) / len(sync_waits) if len(sync_waits) else 0.0
            mixture = Mixture.constant(0.0, wait)
        return TypeTheory(components, mixture)


@dataclass(frozen=True)
class Sibling:
    """Another job signature of the same family (same network, another per-GPU batch size) and its
    type-layer measurements, per-GPU samples/s keyed as :class:`JobSnapshot`'s (:mod:`estimator.family`)."""

    signature: str
    batch_size: int
    type_aggregated: Mapping[tuple[str, int], float] = field(default_factory=dict)  # (gpu_type, gpus)
    type_distributed: Mapping[tuple[str, int], float] = field(default_factory=dict)  # (gpu_type, nodes)

    def __post_init__(self) -> None:
        for name in ("type_aggregated", "type_distributed"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))


def _frozen(m: Mapping | None) -> Mapping:
    return dict(m or {})


@dataclass(frozen=True)
class JobSnapshot:
    """Everything known about one job signature, layer by layer.

    Measured values are per-GPU samples/s (the job's observed samples/s divided by its GPU count),
    averaged over the records of each key. Keys: aggregated tables by GPU count, distributed tables
    by node count; the type layer per GPU type, the entity layer per server.
    """

    signature: str
    theory: Mapping[str, TypeTheory] = field(default_factory=dict)
    type_aggregated: Mapping[tuple[str, int], float] = field(default_factory=dict)  # (gpu_type, gpus)
    type_distributed: Mapping[tuple[str, int], float] = field(default_factory=dict)  # (gpu_type, nodes)
    entity_aggregated: Mapping[tuple[str, int], float] = field(default_factory=dict)  # (server, gpus)
    entity_distributed: Mapping[tuple[str, int], float] = field(default_factory=dict)  # (server, nodes)
    #: how many records each type-layer key averages (keys as the tables'); a measured key missing here
    #: counts as one record (estimator.explore: model-only, one record, many)
    type_aggregated_n: Mapping[tuple[str, int], int] = field(default_factory=dict)
    type_distributed_n: Mapping[tuple[str, int], int] = field(default_factory=dict)
    #: the family key its probe named (:mod:`estimator.family`; empty: none) and what the family's other
    #: signatures measured (:mod:`estimator.family_refine` reads them)
    family: str = ""
    siblings: tuple[Sibling, ...] = ()

    def __post_init__(self) -> None:
        for name in ("theory", "type_aggregated", "type_distributed", "entity_aggregated", "entity_distributed",
                     "type_aggregated_n", "type_distributed_n"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))


class SnapshotSource(Protocol):
    """What an :class:`estimator.estimate.Estimator` reads from: the store, or memory."""

    def snapshot(self, signature: str) -> JobSnapshot: ...

    def calibrations(self) -> dict[str, Calibration]: ...


@dataclass
class MemorySource:
    """An in-memory :class:`SnapshotSource` (simulator, tests): jobs by signature, calibrations by type."""

    jobs: dict[str, JobSnapshot] = field(default_factory=dict)
    calibration: dict[str, Calibration] = field(default_factory=dict)
    factors: dict[str, float] = field(default_factory=dict)  # server -> entity speed factor

    def entity_factors(self) -> dict[str, float]:
        return dict(self.factors)

    def snapshot(self, signature: str) -> JobSnapshot:
        return self.jobs.get(signature, JobSnapshot(signature))

    def calibrations(self) -> dict[str, Calibration]:
        return dict(self.calibration)


class CachedSource:
    """A :class:`SnapshotSource` over another (the SQLite store) that reads each signature, the
    calibrations and the entity factors once and keeps them until :meth:`forget` is told of a write.
    Both the live engine and the simulator keep one and forget a signature when they ingest a record
    for it (each is its store's only writer of measurements); the live engine starts a new one when
    another process changed the store file (SQLite's ``data_version``) or it wrote calibrations."""

    def __init__(self, source: SnapshotSource) -> None:
        self.source = source
        self._snaps: dict[str, JobSnapshot] = {}
        self._stale: set[str] = set()  # cached snapshots whose siblings learned since they were read
        self._cal: dict[str, Calibration] | None = None
        self._factors: dict[str, float] | None = None
        self._peers: object = None  # estimator.peers.PeerTable once read

    def snapshot(self, signature: str) -> JobSnapshot:
        snap = self._snaps.get(signature)
        if snap is not None and signature in self._stale:
            self._stale.discard(signature)
            read = getattr(self.source, "siblings", None)
            snap = self._snaps[signature] = replace(snap, siblings=read(signature)) if callable(read) else None
        if snap is None:
            snap = self._snaps[signature] = self.source.snapshot(signature)
        return snap

    def calibrations(self) -> dict[str, Calibration]:
        if self._cal is None:
            self._cal = self.source.calibrations()
        return dict(self._cal)

    def entity_factors(self) -> dict[str, float]:
        if self._factors is None:
            read = getattr(self.source, "entity_factors", None)
            self._factors = read() if read is not None else {}
        return dict(self._factors)

    def peers(self) -> object:
        """The source's :class:`estimator.peers.PeerTable` (None: a source without one), read once."""
        if self._peers is None:
            read = getattr(self.source, "peers", None)
            self._peers = read() if callable(read) else None
        return self._peers

    def forget(self, signature: str) -> None:
        """A record of ``signature`` was written: its snapshot, the siblings of those of its family (they
        carry its measurements), the entity factors, the peer table (:mod:`estimator.peers`) and the
        calibrations (refitted from runtime records, :meth:`estimator.store.ThroughputStore.calibrations`)
        are read again."""
        snap = self._snaps.pop(signature, None)
        self._stale.discard(signature)
        fam = snap.family if snap is not None else ""
        if not fam:
            read = getattr(self.source, "family_of", None)
            fam = read(signature) if callable(read) else ""
        if fam:
            self._stale.update(s for s, v in self._snaps.items() if v.family == fam)
        self._factors = None
        self._cal = None
        self._peers = None

