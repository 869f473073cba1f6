"""The production estimator inside a simulation: a temporary SQLite throughput store, fed as a cluster
feeds it, read through :class:`estimator.estimate.Estimator` exactly as the live engine reads it.

Data flow: the simulated cluster (:mod:`hops_slurm.sim.sim_backend`) hands :class:`Knowledge` probe results
and runtime records (:mod:`hops_slurm.sim.measure`); they go into :class:`estimator.store.ThroughputStore`
through :mod:`profiler.ingest` (the engine's ingest functions); policies get
:meth:`Knowledge.throughput_fn`, and every job its eq. (9) age and eq. (10) sensitivity, through
:mod:`hops_slurm.core.jobview` (the live engine's job-view pipeline) over :attr:`Knowledge.estimator`
and :attr:`Knowledge.memo`. The entity key is the node (``Estimator.for_cluster``'s default, the
engine's): what Hops learns about a node it learns from that node's records only.

Speed: a snapshot is read from SQLite once per signature and kept until a record for that signature is
ingested; each signature's estimates in :attr:`Knowledge.memo` (its throughput function, which caches
per config, its age and sensitivity) are kept as long, and all of them until the entity factors change.
Ingesting only notes the signature: the caches are brought up to date once, when something next reads
them (:attr:`Knowledge.memo`, :attr:`Knowledge.estimator`), however many records arrived in between, by
the engine's rule (:class:`hops_slurm.core.learned.Learned`), and
the entity factors the comparison needs are kept up to date by the store row by row
(:mod:`estimator.entity_factors`): the work per record no longer grows with the records before it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from estimator.errors import EstimateUnavailable, fresh_copy
from estimator.estimate import Estimator
from estimator.snapshot import CachedSource
from estimator.store import ThroughputStore
from hops_slurm.core.jobview import Memo
from hops_slurm.core.learned import Learned
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.measure import calibration, probe_result
from planner.views import ClusterView, ThroughputFn
from profiler.ingest import ingest_probe, ingest_runtime
from profiler.records import RuntimeRecord


class Knowledge:
    """What Hops (and every policy) knows in one simulation; see the module docstring."""

    def __init__(self, cluster: ClusterView, truth: GroundTruth, *, store_path: Path | None = None) -> None:
        self._tmp = None
        if store_path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="hops-sim-store-")
            store_path = Path(self._tmp.name) / "store.sqlite"
        self.store = ThroughputStore(store_path)
        self.store.db.execute("PRAGMA synchronous=OFF")  # a temporary file: no need to survive a power cut
        self.truth = truth
        self.gpu_types = tuple(dict.fromkeys(n.gpu_type for n in cluster.nodes))
        for gpu_type in self.gpu_types:
            b_link, b_net = calibration(truth, gpu_type)
            self.store.put_calibration(gpu_type, b_link=b_link, b_net=b_net, measured_at=0.0,
                                       method="simulated: fitted to ground truth's 2-GPU runs (hops_slurm.sim.measure)")
        self.source = CachedSource(self.store)
        self._estimator = Estimator.for_cluster(self.source, cluster)
        #: the estimates of the job-view pipeline (hops_slurm.core.jobview), kept until the store changes
        self._memo: Memo = {}
        self.records = 0
        #: signatures with records ingested since the caches were last brought up to date
        self._learned = Learned()

    @property
    def memo(self) -> Memo:
        """The job-view pipeline's estimates, up to date with every record ingested so far."""
        self._learned.forget(self.source, self._memo)
        return self._memo

    @property
    def estimator(self) -> Estimator:
        """The production estimator over this simulation's store, up to date with every record so far."""
        self._learned.forget(self.source, self._memo)
        return self._estimator

    def close(self) -> None:
        self.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # ----- what the cluster reports ----------------------------------------------------------------------
    def profiled(self, signature: str) -> bool:
        return bool(self.store.profiled_types(signature))

    def probe(self, signature: str, model: str, *, at: float, probe_seconds: float,
              data_parallel: tuple[int, ...] = ()) -> None:
        """Probe ``model`` on every GPU type (the profiler partition) and ingest the results; ``data_parallel``:
        the counts its probe also runs data-parallel on one node (``engine.probe_data_parallel``)."""
        for gpu_type in self.gpu_types:
            result = probe_result(self.truth, model, gpu_type, signature, at=at, probe_seconds=probe_seconds,
                                  data_parallel=data_parallel)
            if result is not None:
                ingest_probe(self.store, result)
        self._learned.add(signature)

    def ingest(self, record: RuntimeRecord) -> None:
        ingest_runtime(self.store, record)
        self.records += 1
        self._learned.add(record.signature)

    # ----- what policies read -----------------------------------------------------------------------------
    def throughput_fn(self, signature: str) -> ThroughputFn:
        """The policies' throughput function of ``signature`` (the one its job views carry)."""
        memo = self.memo
        fn = memo.get(("fn", signature))
        if fn is None:
            fn = memo[("fn", signature)] = self._estimator.throughput_fn(signature)
        if isinstance(fn, EstimateUnavailable):
            raise fresh_copy(fn)
        return fn  # type: ignore[return-value]

    def per_gpu(self, signature: str, gpu_type: str, gpus: int, nodes: int, node: str) -> float:
        """The estimate the planner would use for one node (reports: estimate error over time)."""
        try:
            return self.estimator.per_gpu_throughput(signature, gpu_type, gpus, nodes, server=node)
        except EstimateUnavailable:
            return 0.0
