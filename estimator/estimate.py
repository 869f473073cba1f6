"""Estimates the planner and the simulator call (Hops §3.5, eq. 9, eq. 10), with plain values.

Reads a :class:`~estimator.snapshot.JobSnapshot` (from the store or memory) and answers, top-down
(entity layer → type layer → the job's own rate at another count on the type carried with its family's
scaling, :mod:`estimator.family_refine` → the job's own communication time measured at another count on
the type, :mod:`estimator.refine` → theoretical layer with eq. 1-5 → what the job measured elsewhere,
:mod:`estimator.extrapolate`, for a job measured where it ran but never probed there):

Entity speed across jobs: where this job has no record on a server, the type or theoretical layer's
answer is scaled by the server's *entity factor* (``entity_factors``: how fast jobs ran on that server
relative to their type-level throughput, learned from every job's records; see
:meth:`estimator.store.ThroughputStore.entity_factors`), so a slow server learned from one job is
slow for the next job too. Unknown servers have factor 1.

A measured value that shows no progress (:mod:`estimator.progress`) answers 0 ("cannot run there"),
layer ``no_progress``. :meth:`Estimator.optimistic_fn` gives, beside the estimate, an upper bound where no
record measured the config yet (:mod:`estimator.explore`), for the planner's exploration.

- :func:`per_gpu_throughput`: samples/s per GPU of a job on one node for a GPU/node count;
- :func:`config_throughput`: a ``{node: gpus}`` config's samples/s = min per-GPU throughput × Σ GPUs;
- :func:`sensitivity`: eq. (10), thr({0:1}) / per-GPU thr({0:1, 1:1}) on one GPU type;
- :func:`expected_age`: eq. (9), Σ_j N_j/N · total_samples / (throughput_j · R_avg).
:class:`Estimator` binds a source and a node map and hands out :data:`planner.views.ThroughputFn`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from estimator.errors import CalibrationMissing, EstimateUnavailable
from estimator.explore import MODEL_ONLY, confidence, optimistic_per_gpu
from estimator.family_refine import FAMILY, family_per_gpu
from estimator.extrapolate import extrapolated_per_gpu
from estimator.model import per_gpu_theory_throughput
from estimator.peers import PEERS, PeerTable, peer_per_gpu
from estimator.progress import no_progress
from estimator.refine import REFINED, refined_per_gpu
from estimator.snapshot import Calibration, JobSnapshot, SnapshotSource
from planner.views import ClusterView, Config, ThroughputFn

log = logging.getLogger(__name__)

#: the layer of an estimate where the job's records show no measurable progress (:mod:`estimator.progress`)
NO_PROGRESS = "no_progress"


@dataclass(frozen=True)
class Estimate:
    """A per-GPU throughput (samples/s) and the layer that answered."""

    per_gpu: float
    layer: str


def per_gpu_estimate(
    snap: JobSnapshot,
    calibrations: Mapping[str, Calibration],
    *,
    gpu_type: str,
    gpus: int,
    nodes: int,
    server: str | None = None,
    entity_factors: Mapping[str, float] | None = None,
    refine: bool = True,
    family: bool = True,
    peers: PeerTable | None = None,
) -> Estimate:
    """Per-GPU throughput of the job on one node of ``gpu_type`` (entity ``server``), when the whole
    config has ``gpus`` GPUs over ``nodes`` nodes. Aggregated tables are keyed by GPU count (nodes == 1),
    distributed ones by node count. Below the entity layer the answer is scaled by ``server``'s entity
    factor (module docstring); ``refine`` False: without :mod:`estimator.refine` and
    :mod:`estimator.family_refine`, ``family`` False: without the latter (reports); ``peers``: what the
    type's other jobs measured (:mod:`estimator.peers`; None: without that layer). Without a profile on
    ``gpu_type`` the job's measurements are carried
    over (:func:`estimator.extrapolate.extrapolated_per_gpu`, layer ``extrapolated``). Raises
    :class:`EstimateUnavailable` when no layer can answer."""
    if gpus < 1 or not 1 <= nodes <= gpus:
        raise ValueError(f"need 1 <= nodes <= gpus, got gpus={gpus}, nodes={nodes}")
    aggregated = nodes == 1
    key_count = gpus if aggregated else nodes
    typed = (snap.type_aggregated if aggregated else snap.type_distributed).get((gpu_type, key_count))
    if typed is not None and no_progress(typed, snap):  # stalled there (estimator.progress): unusable
        return Estimate(0.0, NO_PROGRESS)
    if server:
        table = snap.entity_aggregated if aggregated else snap.entity_distributed
        value = table.get((server, key_count))
        if value is not None:
            return Estimate(0.0, NO_PROGRESS) if no_progress(value, snap) else Estimate(value, "entity")
    factor = float((entity_factors or {}).get(server, 1.0)) if server else 1.0
    if typed is not None:
        return Estimate(typed * factor, "type")
    theory = snap.theory.get(gpu_type)
    if theory is None:
        carried = extrapolated_per_gpu(snap, gpu_type, gpus=gpus, nodes=nodes)
        if carried is not None:
            return Estimate(carried * factor, "extrapolated")
        raise EstimateUnavailable(
            f"job {snap.signature}: nothing known on GPU type {gpu_type!r} (no profile, no measurement); "
            "profile the job on that type"
        )
    carried = family_per_gpu(snap, gpu_type, gpus=gpus, nodes=nodes) if refine and family and gpus > 1 else None
    if carried is not None:
        return Estimate(carried * factor, FAMILY)
    carried = peer_per_gpu(snap, peers, gpu_type, gpus=gpus, nodes=nodes) if refine and peers and gpus > 1 else None
    if carried is not None:
        return Estimate(carried * factor, PEERS)
    refined = refined_per_gpu(snap, gpu_type, gpus=gpus, nodes=nodes) if refine and gpus > 1 else None
    if refined is not None:
        return Estimate(refined * factor, REFINED)
    b_link = b_net = 0.0
    if gpus > 1:
        cal = calibrations.get(gpu_type)
        if cal is None:
            raise CalibrationMissing(
                f"GPU type {gpu_type!r} has no bandwidth calibration (B_link, B_net), needed to estimate "
                f"job {snap.signature} on {gpus} GPUs; run the profiler's calibration for that type"
            )
        b_link, b_net = cal.b_link, cal.b_net
    value = per_gpu_theory_throughput(
        theory.components, theory.data, gpus=gpus, nodes=nodes, b_link=b_link, b_net=b_net
    )
    return Estimate(value * factor, "theory")


def per_gpu_throughput(
    snap: JobSnapshot,
    calibrations: Mapping[str, Calibration],
    *,
    gpu_type: str,
    gpus: int,
    nodes: int = 1,
    server: str | None = None,
    entity_factors: Mapping[str, float] | None = None,
    refine: bool = True,
    family: bool = True,
    peers: PeerTable | None = None,
) -> float:
    """:func:`per_gpu_estimate`'s value (samples/s per GPU)."""
    return per_gpu_estimate(snap, calibrations, gpu_type=gpu_type, gpus=gpus, nodes=nodes, server=server,
                            entity_factors=entity_factors, refine=refine, family=family, peers=peers).per_gpu


def config_throughput(
    config: Mapping[str, int],
    snap: JobSnapshot,
    calibrations: Mapping[str, Calibration],
    nodes: Mapping[str, tuple[str, str]],
    entity_factors: Mapping[str, float] | None = None,
    refine: bool = True,
    family: bool = True,
    peers: PeerTable | None = None,
) -> float:
    """Samples/s of the job in ``config`` (node -> GPUs): min over its nodes of the per-GPU throughput,
    times the config's GPU count (§3.5: the slowest GPU paces synchronous data parallelism).

    ``nodes`` maps node name -> (gpu_type, server); server keys the entity layer. Empty config: 0.0.
    ``refine``, ``family``, ``peers``: as :func:`per_gpu_estimate`'s.
    """
    used = {n: int(g) for n, g in config.items() if g > 0}
    if not used:
        return 0.0
    total, n_nodes = sum(used.values()), len(used)
    slowest = float("inf")
    for node in used:
        if node not in nodes:
            raise EstimateUnavailable(f"config names node {node!r}, which the estimator's node map does not know")
        gpu_type, server = nodes[node]
        value = per_gpu_throughput(snap, calibrations, gpu_type=gpu_type, gpus=total, nodes=n_nodes, server=server,
                                   entity_factors=entity_factors, refine=refine, family=family, peers=peers)
        slowest = min(slowest, value)
    return slowest * total


def sensitivity(snap: JobSnapshot, calibrations: Mapping[str, Calibration], gpu_type: str) -> float:
    """Eq. (10): ρ = thr({0:1}) / per-GPU thr({0:1, 1:1}), both nodes of ``gpu_type`` (type level)."""
    agg = per_gpu_throughput(snap, calibrations, gpu_type=gpu_type, gpus=1, nodes=1)
    dis = per_gpu_throughput(snap, calibrations, gpu_type=gpu_type, gpus=2, nodes=2)
    return agg / dis


def expected_age(
    total_samples: float,
    per_gpu: Mapping[str, float],
    type_gpus: Mapping[str, int],
    requirements: Sequence[int],
) -> float:
    """Eq. (9): Σ_j P(type=j) · total_samples / (throughput_j · R_avg), P(type=j) = N_j / N_cluster.

    ``per_gpu``: the job's per-GPU samples/s per type; ``type_gpus``: GPUs per type in the cluster;
    ``requirements``: the job's acceptable GPU counts (R_avg is their mean). Types where the job cannot
    run (throughput 0 or unknown) are left out and P renormalised over the rest (a deviation: the paper
    sums over every type, which would make the age infinite).
    """
    if total_samples < 0:
        raise ValueError(f"total samples must be non-negative, got {total_samples}")
    if not requirements or any(r <= 0 for r in requirements):
        raise ValueError(f"requirements must be positive GPU counts, got {list(requirements)}")
    r_avg = sum(requirements) / len(requirements)
    usable = {t: n for t, n in type_gpus.items() if n > 0 and per_gpu.get(t, 0.0) > 0}
    n_usable = sum(usable.values())
    if not n_usable:
        raise EstimateUnavailable(f"no GPU type has a positive throughput for this job (types: {sorted(type_gpus)})")
    return sum(n / n_usable * total_samples / (per_gpu[t] * r_avg) for t, n in usable.items())


class Estimator:
    """Binds a :class:`SnapshotSource` (the store read-only, or memory) to a cluster's nodes.

    ``nodes`` maps node name -> (gpu_type, server); ``type_gpus`` (GPUs per type) is needed only for
    :meth:`expected_age`. Each :meth:`throughput_fn` reads one snapshot and calibration set, so a round
    sees consistent numbers; ask again next round to pick up new measurements.
    """

    def __init__(
        self,
        source: SnapshotSource,
        nodes: Mapping[str, tuple[str, str]],
        type_gpus: Mapping[str, int] | None = None,
        *,
        cross_model: bool = False,
    ) -> None:
        self.source = source
        self.nodes = dict(nodes)
        self.type_gpus = dict(type_gpus or {})
        #: use the cross-model layer (:mod:`estimator.peers`); off by default: it moves the learning curve
        #: 0.1 points (docs/results/estimator-learning.md) and has not been measured on the paper tables
        self.cross_model = cross_model

    @classmethod
    def for_cluster(cls, source: SnapshotSource, cluster: ClusterView, *, entity: str = "node") -> Estimator:
        """Node map from a :class:`ClusterView`: the entity key is the node name (``entity="node"``) or
        its ``server_class`` (``entity="server_class"``, pooling identical servers)."""
        if entity not in ("node", "server_class"):
            raise ValueError(f"entity must be 'node' or 'server_class', got {entity!r}")
        nodes = {n.name: (n.gpu_type, n.name if entity == "node" else n.server_class) for n in cluster.nodes}
        type_gpus: dict[str, int] = {}
        for n in cluster.nodes:
            type_gpus[n.gpu_type] = type_gpus.get(n.gpu_type, 0) + n.total_gpus
        return cls(source, nodes, type_gpus)

    def gpu_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for t, _ in self.nodes.values()))

    def throughput_fn(self, signature: str) -> ThroughputFn:
        """A :data:`ThroughputFn` for ``signature``: config -> the job's samples/s (cached per config).

        A config no layer can answer for (a GPU type the job's probe failed on, or a job with no data at
        all) answers 0.0, "cannot run there" in the planner's convention, and is logged; a job measured
        in place (runtime records, no probe) is answered on every type (:mod:`estimator.extrapolate`).
        A missing calibration (:class:`CalibrationMissing`) or a node outside the node map raises: those
        are setup errors, not properties of the job.
        """
        snap = self.source.snapshot(signature)
        calibrations = self.source.calibrations()
        factors = self.entity_factors()
        peers = self.peers()
        cache: dict[tuple[tuple[str, int], ...], float] = {}

        def fn(config: Config) -> float:
            key = tuple(sorted((n, int(g)) for n, g in config.items() if g > 0))
            if key not in cache:
                unknown = [n for n, _ in key if n not in self.nodes]
                if unknown:
                    raise EstimateUnavailable(f"config names nodes {unknown} that the estimator's node map lacks")
                try:
                    cache[key] = config_throughput(dict(key), snap, calibrations, self.nodes, factors, peers=peers)
                except CalibrationMissing:
                    raise
                except EstimateUnavailable as exc:
                    log.info("job %s: config %s answers 0 (%s)", signature, dict(key), exc)
                    cache[key] = 0.0
            return cache[key]

        return fn

    def optimistic_fn(self, signature: str) -> ThroughputFn:
        """Config -> an upper bound of the job's samples/s there when some node of it is on a key no
        record measured (:mod:`estimator.explore`: the single-GPU rate per GPU), 0.0 when every node's
        key is measured (nothing to explore) or no bound is known. Cached per config."""
        snap = self.source.snapshot(signature)
        calibrations = self.source.calibrations()
        factors = self.entity_factors()
        exact = self.throughput_fn(signature)
        cache: dict[tuple[tuple[str, int], ...], float] = {}

        def fn(config: Config) -> float:
            key = tuple(sorted((n, int(g)) for n, g in config.items() if g > 0))
            if key not in cache:
                cache[key] = self._optimistic(dict(key), snap, calibrations, factors, exact)
            return cache[key]

        return fn

    def _optimistic(self, used: dict[str, int], snap: JobSnapshot, calibrations: Mapping[str, Calibration],
                    factors: Mapping[str, float], exact: ThroughputFn) -> float:
        if not used or any(n not in self.nodes for n in used):
            return 0.0
        total, n_nodes = sum(used.values()), len(used)
        bounds: list[float] = []
        unmeasured = False
        for node in used:
            gpu_type, server = self.nodes[node]
            bound = optimistic_per_gpu(snap, calibrations, gpu_type=gpu_type, gpus=total, nodes=n_nodes,
                                       server=server, factor=float(factors.get(server, 1.0)))
            if bound is None and confidence(snap, gpu_type, gpus=total, nodes=n_nodes, server=server) == MODEL_ONLY:
                return 0.0  # nothing bounds it
            if bound is None:  # measured there: what it measured paces the config
                try:
                    bound = per_gpu_throughput(snap, calibrations, gpu_type=gpu_type, gpus=total, nodes=n_nodes,
                                               server=server, entity_factors=factors)
                except EstimateUnavailable:
                    return 0.0
            else:
                unmeasured = True
            bounds.append(bound)
        if not unmeasured:
            return 0.0
        return max(min(bounds) * total, float(exact(used)))

    def entity_factors(self) -> dict[str, float]:
        """The source's learned per-server speed factors (a source without them: none)."""
        read = getattr(self.source, "entity_factors", None)
        return dict(read()) if callable(read) else {}

    def peers(self) -> PeerTable | None:
        """What the source's jobs measured across counts (:mod:`estimator.peers`); None without
        :attr:`cross_model` or from a source without it."""
        read = getattr(self.source, "peers", None) if self.cross_model else None
        return read() if callable(read) else None

    def per_gpu_throughput(
        self, signature: str, gpu_type: str, gpus: int, nodes: int = 1, server: str | None = None
    ) -> float:
        snap = self.source.snapshot(signature)
        return per_gpu_throughput(
            snap, self.source.calibrations(), gpu_type=gpu_type, gpus=gpus, nodes=nodes, server=server,
            entity_factors=self.entity_factors() if server else None, peers=self.peers(),
        )

    def sensitivity(self, signature: str, gpu_type: str | None = None) -> float:
        """Eq. (10) on ``gpu_type``; by default the first type of the node map the job has data for (a
        profile, else a measurement)."""
        snap = self.source.snapshot(signature)
        if gpu_type is None:
            measured = {t for t, _ in (*snap.type_aggregated, *snap.type_distributed)}
            candidates = [t for t in self.gpu_types() if t in snap.theory] or \
                [t for t in self.gpu_types() if t in measured]
            if not candidates:
                raise EstimateUnavailable(f"job {signature}: not profiled on any GPU type of this cluster")
            gpu_type = candidates[0]
        return sensitivity(snap, self.source.calibrations(), gpu_type)

    def expected_age(self, signature: str, total_samples: float, requirements: Sequence[int]) -> float:
        """Eq. (9) with the 1-GPU per-GPU throughput of each type (the profiler's measurement)."""
        if not self.type_gpus:
            raise ValueError("expected_age needs GPUs per type: build the Estimator with type_gpus or for_cluster")
        snap = self.source.snapshot(signature)
        calibrations = self.source.calibrations()
        per_gpu: dict[str, float] = {}
        for gpu_type in self.type_gpus:
            try:
                per_gpu[gpu_type] = per_gpu_throughput(snap, calibrations, gpu_type=gpu_type, gpus=1)
            except EstimateUnavailable:
                continue
        return expected_age(total_samples, per_gpu, self.type_gpus, requirements)
