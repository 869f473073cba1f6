"""Measurement records the profiler hands to the engine (as JSON files; the engine is the only writer
of the store and turns them into store rows with :mod:`profiler.ingest`).

* :class:`ProbeResult` / :class:`ProbeFailure`: one probe run (``python -m profiler.probe``).
* :class:`RuntimeRecord`: one window of running-mode measurements (:mod:`profiler.runtime`), written
  as one JSON line each to a job's metrics file.
* :class:`CalibrationRecord`: all-reduce time versus message size and the fitted bandwidth
  (``hops-slurm calibrate``).

All times are seconds; bandwidths are parameters (float32 values) per second, the unit of eq. 2.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SCHEMA_VERSION = 1


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int = SCHEMA_VERSION


class ProbeResult(_Record):
    """A successful probe: the basic time components of one training iteration on one GPU type."""

    kind: Literal["probe"] = "probe"
    model: str  # zoo name ("resnet18") or entrypoint ("pkg.module:build")
    source: Literal["zoo", "entrypoint"]
    size: str = ""  # zoo size setting ("tiny", "default", "full"); "" for entrypoints
    signature: str
    gpu_type: str  # "cpu" for CPU probes
    device: str  # "cpu" or "cuda:0"
    node: str
    batch_size: int = Field(gt=0)
    input_shape: tuple[int, ...]
    params: int = Field(ge=0)
    iterations: int = Field(gt=0)
    warmup: int = Field(ge=0)
    # Medians over the measured iterations (phase "components": every phase synchronised).
    t_data: float = Field(ge=0)  # intrinsic data time per batch (loader alone, incl. copy to device)
    t_forward: float = Field(ge=0)  # forward pass + loss
    t_backward: float = Field(ge=0)
    t_update: float = Field(ge=0)  # optimizer step + zero_grad
    t_iter_observed: float = Field(gt=0)  # free-running loop, median wall clock per iteration
    t_wait_observed: float = Field(ge=0)  # free-running loop, median wait for the next batch
    data_samples: list[float]  # per-batch data times (loader alone)
    forward_samples: list[float]
    backward_samples: list[float]
    update_samples: list[float]
    pattern: Literal[1, 2]
    pattern_determined: bool  # False: data time too small to tell the patterns apart (default 1)
    pattern_margin: float  # (P2 - P1) / P2 of the two eq. 1 predictions; how separable they were
    peak_memory_bytes: int = Field(ge=0)
    memory_source: Literal["cuda_max_allocated", "process_max_rss"]
    timing: Literal["cuda_events", "wall_clock_sync"]
    threads: int
    torch_version: str
    probe_seconds: float = Field(ge=0)
    measured_at: datetime = Field(default_factory=utc_now)

    @property
    def t_compute(self) -> float:
        return self.t_forward + self.t_backward + self.t_update


class ProbeFailure(_Record):
    """A probe that could not finish; ``reason`` says what to fix."""

    kind: Literal["probe_failure"] = "probe_failure"
    model: str
    gpu_type: str
    node: str
    error: Literal["bad_entrypoint", "out_of_memory", "time_limit", "error"]
    reason: str
    measured_at: datetime = Field(default_factory=utc_now)


class RuntimeRecord(_Record):
    """One window of running-mode measurements of a job (one process's view)."""

    kind: Literal["runtime"] = "runtime"
    signature: str
    gpu_type: str
    node: str
    rank: int = 0
    gpus: int = Field(gt=0)  # GPUs (processes) of the whole job
    nodes: int = Field(gt=0)
    batch_size: int = Field(gt=0)  # per process
    steps: int = Field(gt=0)
    window_seconds: float = Field(gt=0)
    throughput: float = Field(ge=0)  # samples/s of the whole job over the window
    data_times: list[float]  # per step: time blocked waiting for the next batch
    sync_waits: list[float]  # sampled: time waiting for the other processes
    step_times: list[float]  # per step: wall time of the step body
    measured_at: datetime = Field(default_factory=utc_now)


class CalibrationPoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    params: int = Field(gt=0)  # message size in float32 values
    seconds: float = Field(gt=0)  # median all-reduce time


class CalibrationRecord(_Record):
    """All-reduce time versus message size, and the eq. 2 bandwidth fitted to it.

    ``scope == "link"``: N processes on one node; eq. 2 reads T_c = params / B_link * (N-1)/N, so
    ``bandwidth`` is B_link = (N-1)/N / slope. ``scope == "net"``: processes on several nodes;
    T_c = params / B_net, so B_net = 1 / slope. ``slope`` and ``latency`` come from a least-squares
    line through the points (seconds per parameter and seconds).
    """

    kind: Literal["calibration"] = "calibration"
    gpu_type: str
    scope: Literal["link", "net"]
    backend: Literal["gloo", "nccl"]
    world_size: int = Field(ge=2)
    nodes: int = Field(ge=1)
    points: list[CalibrationPoint]
    slope: float = Field(gt=0)
    latency: float
    bandwidth: float = Field(gt=0)  # params/s in the sense of eq. 2 for this scope
    method: str  # how it was measured, for the store's provenance column
    measured_at: datetime = Field(default_factory=utc_now)


ProfilerRecord = Annotated[
    Union[ProbeResult, ProbeFailure, RuntimeRecord, CalibrationRecord], Field(discriminator="kind")
]
_ADAPTER: TypeAdapter[ProbeResult | ProbeFailure | RuntimeRecord | CalibrationRecord] = TypeAdapter(ProfilerRecord)


def parse_record(text: str) -> ProbeResult | ProbeFailure | RuntimeRecord | CalibrationRecord:
    """One record from its JSON text (the ``kind`` field picks the type)."""
    return _ADAPTER.validate_json(text)


def read_records(path: Path) -> list[ProbeResult | ProbeFailure | RuntimeRecord | CalibrationRecord]:
    """Every record in a file: one JSON document, or JSON lines (metrics files)."""
    text = Path(path).read_text(encoding="utf-8")
    stripped = text.strip()
    if not stripped:
        return []
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if len(lines) > 1 and all(ln.lstrip().startswith("{") and ln.rstrip().endswith("}") for ln in lines):
        try:
            return [parse_record(ln) for ln in lines]
        except ValueError:
            pass  # a pretty-printed single document
    return [parse_record(stripped)]


def write_record(record: _Record, path: Path) -> Path:
    """Write one record as a JSON document (atomically: temp file then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
