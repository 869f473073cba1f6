"""Ingestion: turn profiler records (probe results, runtime records, calibration records) into rows of
the estimator's throughput store. Called by the engine, the store's only writer.

Written against :class:`estimator.store.ThroughputStore` (``put_theory``, ``add_runtime_samples``,
``put_calibration``, ``calibration``); anything with those methods works (:class:`StoreWriter`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from estimator.calibration import physical_pair
from hops_slurm.errors import HopsError
from profiler.signature import family_signature
from profiler.records import CalibrationRecord, CheckpointMark, ProbeFailure, ProbeResult, RuntimeRecord, read_records

log = logging.getLogger(__name__)


class IngestError(HopsError):
    """A record cannot be turned into store rows."""


class StoreWriter(Protocol):
    def put_theory(
        self, signature: str, gpu_type: str, *, t_f: float, t_b: float, t_u: float, pattern: int, params: float,
        batch_size: int, data_samples: Sequence[float] = (), sync_samples: Sequence[float] = (), family: str = "",
    ) -> None: ...

    def add_runtime_samples(
        self, signature: str, gpu_type: str, node: str, *, data_times: Sequence[float] = (),
        sync_waits: Sequence[float] = (), gpus: int, nodes: int, throughput: float | None = None,
    ) -> None: ...

    def put_calibration(
        self, gpu_type: str, *, b_link: float, b_net: float, method: str, measured_at: float | str | datetime
    ) -> None: ...


@dataclass
class IngestSummary:
    probes: int = 0
    runtime: int = 0
    calibrations: int = 0
    failures: list[ProbeFailure] = field(default_factory=list)


def ingest_probe(store: StoreWriter, result: ProbeResult) -> None:
    """Theoretical layer: T_f, T_b, T_u, pattern, params, batch size and the probe's data-time samples
    (a single-process probe has no sync wait, so no sync samples), and the job's family (the probe's model,
    parameter count and input shape without the batch size: :func:`profiler.signature.family_signature`;
    an entrypoint's only among its owner's jobs, the ``<owner>/`` of the engine's signatures). Each of its
    data-parallel runs (``--data-parallel``) is stored as a runtime window of that many GPUs on the probe's
    node."""
    owner = result.signature.split("/", 1)[0] if result.source == "entrypoint" and "/" in result.signature else ""
    store.put_theory(
        result.signature, result.gpu_type, t_f=result.t_forward, t_b=result.t_backward, t_u=result.t_update,
        pattern=result.pattern, params=result.params, batch_size=result.batch_size,
        data_samples=list(result.data_samples), sync_samples=[],
        family=family_signature(result.model, int(result.params), result.input_shape, owner),
    )
    for point in result.data_parallel:  # its data-parallel runs: the type and entity layers, as a runtime window
        store.add_runtime_samples(result.signature, result.gpu_type, result.node, gpus=point.gpus, nodes=1,
                                  throughput=point.throughput)


def ingest_runtime(store: StoreWriter, record: RuntimeRecord) -> None:
    """Entity/type layers (throughput) and the data-time / sync-wait samples of one window."""
    store.add_runtime_samples(
        record.signature, record.gpu_type, record.node, data_times=list(record.data_times),
        sync_waits=list(record.sync_waits), gpus=record.gpus, nodes=record.nodes, throughput=record.throughput,
    )


def ingest_calibration(store: StoreWriter, records: Iterable[CalibrationRecord]) -> list[str]:
    """Store B_link and B_net per GPU type; returns the GPU types written.

    The newest record of each scope wins. A GPU type with only one scope measured takes the other from
    what the store already holds (``store.calibration(gpu_type)``); with neither, it is an error. The
    pair stored is physical (:func:`estimator.calibration.physical_pair`): B_link below B_net (noise, an
    adversarial record) stores both at their geometric mean.
    """
    latest: dict[tuple[str, str], CalibrationRecord] = {}
    for rec in records:
        key = (rec.gpu_type, rec.scope)
        if key not in latest or rec.measured_at > latest[key].measured_at:
            latest[key] = rec
    written: list[str] = []
    for gpu_type in sorted({g for g, _ in latest}):
        link, net = latest.get((gpu_type, "link")), latest.get((gpu_type, "net"))
        known: Any = getattr(store, "calibration", lambda _g: None)(gpu_type)
        b_link = link.bandwidth if link else getattr(known, "b_link", None)
        b_net = net.bandwidth if net else getattr(known, "b_net", None)
        if b_link is None or b_net is None:
            missing = "B_net (run `hops-slurm calibrate --launch env` across two nodes)" if b_net is None else \
                "B_link (run `hops-slurm calibrate` on one node)"
            raise IngestError(f"calibration of {gpu_type}: {missing} is not measured and the store has none")
        b_link, b_net = physical_pair(b_link, b_net)  # in-server at least cross-server (estimator.calibration)
        parts = [r.method for r in (link, net) if r]
        when = max(r.measured_at for r in (link, net) if r)
        store.put_calibration(gpu_type, b_link=b_link, b_net=b_net, method="; ".join(parts), measured_at=when)
        written.append(gpu_type)
    return written


def ingest_files(store: StoreWriter, paths: Iterable[Path]) -> IngestSummary:
    """Ingest every record in ``paths`` (probe results, metrics files of JSON lines, calibration files).

    Probe failures are not stored; they come back in the summary for the engine to report.
    """
    summary = IngestSummary()
    calibrations: list[CalibrationRecord] = []
    for path in paths:
        for rec in read_records(Path(path)):
            if isinstance(rec, ProbeResult):
                ingest_probe(store, rec)
                summary.probes += 1
            elif isinstance(rec, RuntimeRecord):
                ingest_runtime(store, rec)
                summary.runtime += 1
            elif isinstance(rec, CalibrationRecord):
                calibrations.append(rec)
            elif isinstance(rec, CheckpointMark):
                continue  # a job's preemption protocol (profiler.preempt): the engine reads it, not the store
            else:
                log.warning("probe of %s on %s failed (%s): %s", rec.model, rec.gpu_type, rec.error, rec.reason)
                summary.failures.append(rec)
    if calibrations:
        summary.calibrations = len(ingest_calibration(store, calibrations))
    return summary
